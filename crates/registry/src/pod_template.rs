//! Pod templates held by workload objects (a Job's `spec.template`): the defaults
//! `pkg/apis/core/v1/defaults.go` gives a pod spec and the part of upstream's
//! `ValidatePodTemplateSpec` a user of a control plane without nodes meets: template
//! labels and annotations, containers and init containers (names, images, pull and
//! termination-message policies, ports, env names, volume mounts, resource quantities),
//! volumes' names, restart and DNS policies, node selector, service account name,
//! hostname/subdomain, active deadline, no ephemeral containers. Field paths and messages
//! are upstream's. What is left out is listed in docs/compatibility.md.

use std::collections::HashSet;

use super::json_map::set_default;
use kplane_types::{validation, Cause, CauseType};
use serde_json::{json, Map, Value};

/// `SetObjectDefaults_PodTemplate`: a core/v1 PodTemplate's `template.spec` takes the pod
/// spec defaults (the template and its spec are structs, so they are there to default).
pub fn default_pod_template(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    let template = o.entry("template").or_insert_with(|| json!({}));
    if template.is_null() {
        *template = json!({});
    }
    let Some(t) = template.as_object_mut() else {
        return;
    };
    let spec = t.entry("spec").or_insert_with(|| json!({}));
    if spec.is_null() {
        *spec = json!({});
    }
    if let Some(spec) = spec.as_object_mut() {
        default_pod_spec(spec);
    }
}

/// `ValidatePodTemplate` and `ValidatePodTemplateUpdate` past the object metadata (checked
/// by the generic path): the template is validated the same way on create and update.
pub fn validate_pod_template(obj: &Value) -> Vec<Cause> {
    let empty = json!({});
    validate_template(obj.get("template").unwrap_or(&empty), "template")
}

/// Sets the pod spec defaults kube-apiserver applies to a template.
pub fn default_pod_spec(pod: &mut Map<String, Value>) {
    set_default(pod, "restartPolicy", json!("Always"));
    set_default(pod, "terminationGracePeriodSeconds", json!(30));
    set_default(pod, "dnsPolicy", json!("ClusterFirst"));
    set_default(pod, "securityContext", json!({}));
    set_default(pod, "schedulerName", json!("default-scheduler"));
    for list in ["containers", "initContainers"] {
        if let Some(Value::Array(cs)) = pod.get_mut(list) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                default_container(c);
            }
        }
    }
    super::pod_defaults::default_pod_spec_parts(pod);
}

fn default_container(c: &mut Map<String, Value>) {
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    if c.get("resources").is_none() {
        c.insert("resources".into(), json!({}));
    }
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let last = image.rsplit('/').next().unwrap_or("");
    let tag = if last.contains('@') {
        None
    } else {
        last.split_once(':').map(|(_, t)| t)
    };
    let policy = match tag {
        None if !last.contains('@') => "Always",
        Some("latest") => "Always",
        _ => "IfNotPresent",
    };
    set_default(c, "imagePullPolicy", json!(policy));
    if let Some(Value::Array(ports)) = c.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(p, "protocol", json!("TCP"));
        }
    }
}

/// `Required value: <detail>` (upstream `field.Required` with a detail).
pub(super) fn required(field: impl Into<String>, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    Cause::new(CauseType::FieldValueRequired, field, message)
}

/// `Invalid value: <shown>: <detail>` with the value already rendered as Go prints it.
pub(super) fn invalid_shown(field: impl Into<String>, shown: &str, detail: &str) -> Cause {
    Cause::new(
        CauseType::FieldValueInvalid,
        field,
        format!("Invalid value: {shown}: {detail}"),
    )
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn array<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn dns_label(value: &str, field: &str, causes: &mut Vec<Cause>) {
    for msg in validation::is_dns1123_label(value) {
        causes.push(Cause::invalid(field, &json!(value), &msg));
    }
}

fn one_of(value: &str, field: &str, allowed: &[&str], causes: &mut Vec<Cause>) {
    if value.is_empty() {
        causes.push(Cause::required(field));
    } else if !allowed.contains(&value) {
        causes.push(Cause::not_supported(field, &json!(value), allowed));
    }
}

/// Validates a pod template at `path` (e.g. `spec.template`).
pub fn validate_template(t: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(Value::Object(l)) = t.pointer("/metadata/labels") {
        causes.extend(validation::validate_labels(l, &format!("{path}.labels")));
    }
    if let Some(Value::Object(a)) = t.pointer("/metadata/annotations") {
        causes.extend(validation::validate_annotations(
            a,
            &format!("{path}.annotations"),
        ));
    }
    let empty = json!({});
    let spec = t.get("spec").unwrap_or(&empty);
    causes.extend(validate_pod_spec(spec, &format!("{path}.spec")));
    if !array(spec, "ephemeralContainers").is_empty() {
        causes.push(Cause::forbidden(
            format!("{path}.spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    causes
}

/// Validates a pod spec at `path` (a template's `spec.template.spec`, a pod's `spec`).
pub(super) fn validate_pod_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if spec
        .get("terminationGracePeriodSeconds")
        .is_none_or(Value::is_null)
    {
        causes.push(Cause::required(format!(
            "{path}.terminationGracePeriodSeconds"
        )));
    }
    let volumes = validate_volumes(
        array(spec, "volumes"),
        &format!("{path}.volumes"),
        &mut causes,
    );
    let containers = array(spec, "containers");
    let cpath = format!("{path}.containers");
    if containers.is_empty() {
        causes.push(Cause::required(&cpath));
    }
    let mut names = HashSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = format!("{cpath}[{i}]");
        validate_container(c, &p, &volumes, &mut causes);
        let name = str_of(c, "name");
        if !names.insert(name.to_string()) {
            causes.push(Cause::duplicate(format!("{p}.name"), &json!(name)));
        }
        if c.get("restartPolicy").is_some_and(|v| !v.is_null()) {
            causes.push(Cause::forbidden(
                format!("{p}.restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    for (i, c) in array(spec, "initContainers").iter().enumerate() {
        let p = format!("{path}.initContainers[{i}]");
        validate_container(c, &p, &volumes, &mut causes);
        let name = str_of(c, "name");
        if !names.insert(name.to_string()) {
            causes.push(Cause::duplicate(format!("{p}.name"), &json!(name)));
        }
        if let Some(rp) = c.get("restartPolicy").and_then(Value::as_str) {
            if rp != "Always" {
                causes.push(Cause::not_supported(
                    format!("{p}.restartPolicy"),
                    &json!(rp),
                    &["Always"],
                ));
            }
        }
    }
    one_of(
        str_of(spec, "restartPolicy"),
        &format!("{path}.restartPolicy"),
        &["Always", "OnFailure", "Never"],
        &mut causes,
    );
    one_of(
        str_of(spec, "dnsPolicy"),
        &format!("{path}.dnsPolicy"),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        &mut causes,
    );
    if let Some(Value::Object(ns)) = spec.get("nodeSelector") {
        causes.extend(validation::validate_labels(
            ns,
            &format!("{path}.nodeSelector"),
        ));
    }
    let sa = str_of(spec, "serviceAccountName");
    if !sa.is_empty() {
        for msg in validation::is_dns1123_subdomain(sa) {
            causes.push(Cause::invalid(
                format!("{path}.serviceAccountName"),
                &json!(sa),
                &msg,
            ));
        }
    }
    if let Some(v) = spec.get("activeDeadlineSeconds").filter(|v| !v.is_null()) {
        if v.as_i64()
            .is_none_or(|n| !(1..=i64::from(i32::MAX)).contains(&n))
        {
            causes.push(Cause::invalid(
                format!("{path}.activeDeadlineSeconds"),
                v,
                "must be between 1 and 2147483647, inclusive",
            ));
        }
    }
    for f in ["hostname", "subdomain"] {
        let v = str_of(spec, f);
        if !v.is_empty() {
            dns_label(v, &format!("{path}.{f}"), &mut causes);
        }
    }
    causes
}

/// Checks volume names (required, DNS-1123 label, unique) and returns them.
fn validate_volumes(vols: &[Value], path: &str, causes: &mut Vec<Cause>) -> HashSet<String> {
    let mut names = HashSet::new();
    for (i, v) in vols.iter().enumerate() {
        let name = str_of(v, "name");
        let p = format!("{path}[{i}].name");
        if name.is_empty() {
            causes.push(Cause::required(&p));
        } else {
            dns_label(name, &p, causes);
        }
        if !name.is_empty() && !names.insert(name.to_string()) {
            causes.push(Cause::duplicate(&p, &json!(name)));
        }
    }
    names
}

fn validate_container(c: &Value, path: &str, volumes: &HashSet<String>, causes: &mut Vec<Cause>) {
    let name = str_of(c, "name");
    if name.is_empty() {
        causes.push(Cause::required(format!("{path}.name")));
    } else {
        dns_label(name, &format!("{path}.name"), causes);
    }
    if str_of(c, "image").is_empty() {
        causes.push(Cause::required(format!("{path}.image")));
    }
    one_of(
        str_of(c, "terminationMessagePolicy"),
        &format!("{path}.terminationMessagePolicy"),
        &["File", "FallbackToLogsOnError"],
        causes,
    );
    validate_ports(array(c, "ports"), &format!("{path}.ports"), causes);
    validate_env(array(c, "env"), &format!("{path}.env"), causes);
    validate_mounts(
        array(c, "volumeMounts"),
        &format!("{path}.volumeMounts"),
        volumes,
        causes,
    );
    one_of(
        str_of(c, "imagePullPolicy"),
        &format!("{path}.imagePullPolicy"),
        &["Always", "IfNotPresent", "Never"],
        causes,
    );
    if let Some(r) = c.get("resources") {
        validate_resources(r, &format!("{path}.resources"), causes);
    }
}

fn validate_ports(ports: &[Value], path: &str, causes: &mut Vec<Cause>) {
    let mut names = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let ip = format!("{path}[{i}]");
        let name = str_of(p, "name");
        if !name.is_empty() {
            let msgs = port_name_errors(name);
            if !msgs.is_empty() {
                for m in msgs {
                    causes.push(Cause::invalid(format!("{ip}.name"), &json!(name), &m));
                }
            } else if !names.insert(name.to_string()) {
                causes.push(Cause::duplicate(format!("{ip}.name"), &json!(name)));
            }
        }
        match p.get("containerPort").and_then(Value::as_i64) {
            None | Some(0) => causes.push(Cause::required(format!("{ip}.containerPort"))),
            Some(n) if !(1..=65535).contains(&n) => causes.push(Cause::invalid(
                format!("{ip}.containerPort"),
                &json!(n),
                "must be between 1 and 65535, inclusive",
            )),
            _ => {}
        }
        if let Some(n) = p.get("hostPort").and_then(Value::as_i64) {
            if n != 0 && !(1..=65535).contains(&n) {
                causes.push(Cause::invalid(
                    format!("{ip}.hostPort"),
                    &json!(n),
                    "must be between 1 and 65535, inclusive",
                ));
            }
        }
        one_of(
            str_of(p, "protocol"),
            &format!("{ip}.protocol"),
            &["SCTP", "TCP", "UDP"],
            causes,
        );
    }
}

/// `IsValidPortName`: an IANA service name (an empty one fails the charset rule too).
pub(super) fn port_name_errors(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push(validation::max_len_error(15));
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// Env names as 1.32 checks them (`RelaxedEnvironmentVariableValidation` is on): any
/// printable ASCII but `=`.
fn validate_env(env: &[Value], path: &str, causes: &mut Vec<Cause>) {
    for (i, e) in env.iter().enumerate() {
        let p = format!("{path}[{i}].name");
        let name = str_of(e, "name");
        if name.is_empty() {
            causes.push(Cause::required(&p));
        } else if !name.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'=') {
            causes.push(Cause::invalid(
                &p,
                &json!(name),
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
    }
}

fn validate_mounts(
    mounts: &[Value],
    path: &str,
    volumes: &HashSet<String>,
    causes: &mut Vec<Cause>,
) {
    let mut paths = HashSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let name = str_of(m, "name");
        if name.is_empty() {
            causes.push(Cause::required(format!("{p}.name")));
        }
        if !volumes.contains(name) {
            causes.push(Cause::new(
                CauseType::FieldValueNotFound,
                format!("{p}.name"),
                format!("Not found: {}", validation::go_quote(name)),
            ));
        }
        let mp = str_of(m, "mountPath");
        if mp.is_empty() {
            causes.push(Cause::required(format!("{p}.mountPath")));
        } else if !paths.insert(mp.to_string()) {
            causes.push(Cause::invalid(
                format!("{p}.mountPath"),
                &json!(mp),
                "must be unique",
            ));
        }
    }
}

/// Requests and limits: quantities parse and are not negative, integer resources are
/// whole, a request is at most its limit.
fn validate_resources(r: &Value, path: &str, causes: &mut Vec<Cause>) {
    let limits = r.get("limits").and_then(Value::as_object);
    for (which, map) in [
        ("limits", limits),
        ("requests", r.get("requests").and_then(Value::as_object)),
    ] {
        let Some(map) = map else { continue };
        for (res, q) in map {
            let fp = format!("{path}.{which}[{res}]");
            let shown = q.as_str().map_or_else(|| q.to_string(), str::to_string);
            let Some(v) = quantity_value(q) else {
                causes.push(Cause::invalid(
                    &fp,
                    &json!(shown),
                    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                ));
                continue;
            };
            if v < 0.0 {
                causes.push(Cause::invalid(
                    &fp,
                    &json!(shown),
                    "must be greater than or equal to 0",
                ));
            }
            // Extended resources (`example.com/gpu`) are whole and cannot be overcommitted.
            let extended = res.contains('/') && !res.starts_with("kubernetes.io/");
            let overcommit = !extended && !res.starts_with("hugepages-");
            if extended && v.fract() != 0.0 {
                causes.push(invalid_shown(&fp, &shown, "must be an integer"));
            }
            if which != "requests" {
                continue;
            }
            match limits.and_then(|l| l.get(res)) {
                Some(lq) => {
                    let Some(lv) = quantity_value(lq) else {
                        continue;
                    };
                    let lshown = lq.as_str().map_or_else(|| lq.to_string(), str::to_string);
                    let detail = if v != lv && !overcommit {
                        format!("must be equal to {res} limit of {lshown}")
                    } else if v > lv {
                        format!("must be less than or equal to {res} limit of {lshown}")
                    } else {
                        continue;
                    };
                    causes.push(Cause::invalid(
                        format!("{path}.requests"),
                        &json!(shown),
                        &detail,
                    ));
                }
                None if !overcommit => causes.push(required(
                    format!("{path}.limits"),
                    "Limit must be set for non overcommitable resources",
                )),
                None => {}
            }
        }
    }
}

/// The numeric value of a resource quantity (`resource.ParseQuantity`), None when it
/// does not parse. Precision is that of f64: enough to order requests and limits.
pub fn quantity_value(q: &Value) -> Option<f64> {
    let s = match q {
        Value::String(s) => s.as_str(),
        Value::Number(n) => return n.as_f64(),
        _ => return None,
    };
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let (sign, digits) = match num.as_bytes().first() {
        Some(b'+') => (1.0, &num[1..]),
        Some(b'-') => (-1.0, &num[1..]),
        _ => (1.0, num),
    };
    if digits.is_empty()
        || digits.matches('.').count() > 1
        || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || digits == "."
    {
        return None;
    }
    let base: f64 = digits.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => {
            let exp: i32 = e[1..].parse().ok()?;
            10f64.powi(exp)
        }
        _ => return None,
    };
    Some(sign * base * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(spec: Value) -> Value {
        let mut t = json!({"metadata": {"labels": {"a": "b"}}, "spec": spec});
        if let Some(p) = t.get_mut("spec").and_then(Value::as_object_mut) {
            default_pod_spec(p);
        }
        t
    }

    fn messages(t: &Value) -> Vec<String> {
        validate_template(t, "spec.template")
            .iter()
            .map(Cause::render)
            .collect()
    }

    #[test]
    fn pod_template_rules_report_upstreams_paths_and_messages() {
        let ok =
            json!({"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"});
        let cases: &[(&str, Value, &[&str])] = &[
            ("valid", ok.clone(), &[]),
            ("no containers", json!({"containers": []}), &["spec.template.spec.containers: Required value"]),
            (
                "name and image missing",
                json!({"containers": [{"name": ""}]}),
                &["spec.template.spec.containers[0].name: Required value", "spec.template.spec.containers[0].image: Required value"],
            ),
            (
                "bad container name",
                json!({"containers": [{"name": "Bad_Name", "image": "x"}]}),
                &["spec.template.spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"],
            ),
            (
                "duplicate names across init and regular",
                json!({"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}], "initContainers": [{"name": "c", "image": "z"}]}),
                &["spec.template.spec.containers[1].name: Duplicate value: \"c\"", "spec.template.spec.initContainers[0].name: Duplicate value: \"c\""],
            ),
            (
                "restart policy",
                json!({"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Sometimes"}),
                &["spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""],
            ),
            (
                "pull policy",
                json!({"containers": [{"name": "c", "image": "x", "imagePullPolicy": "Maybe"}]}),
                &["spec.template.spec.containers[0].imagePullPolicy: Unsupported value: \"Maybe\": supported values: \"Always\", \"IfNotPresent\", \"Never\""],
            ),
            (
                "env name with =",
                json!({"containers": [{"name": "c", "image": "x", "env": [{"name": "A=B"}, {"name": ""}, {"name": "my.env-1"}]}]}),
                &["spec.template.spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='", "spec.template.spec.containers[0].env[1].name: Required value"],
            ),
            (
                "ports",
                json!({"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 0}, {"containerPort": 70000, "protocol": "ICMP"}]}]}),
                &["spec.template.spec.containers[0].ports[0].containerPort: Required value", "spec.template.spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive", "spec.template.spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""],
            ),
            (
                "mount of an undeclared volume",
                json!({"containers": [{"name": "c", "image": "x", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}], "volumes": [{"name": "other", "emptyDir": {}}]}),
                &["spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"data\""],
            ),
            (
                "resources",
                json!({"containers": [{"name": "c", "image": "x", "resources": {"limits": {"cpu": "500m", "ephemeral-storage": "x1"}, "requests": {"cpu": "1", "memory": "-1Gi", "nvidia.com/gpu": "1.5"}}}]}),
                &[
                    "spec.template.spec.containers[0].resources.limits[ephemeral-storage]: Invalid value: \"x1\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                    "spec.template.spec.containers[0].resources.requests: Invalid value: \"1\": must be less than or equal to cpu limit of 500m",
                    "spec.template.spec.containers[0].resources.requests[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
                    "spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: 1.5: must be an integer",
                    "spec.template.spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
                ],
            ),
            (
                "ephemeral containers",
                json!({"containers": [{"name": "c", "image": "x"}], "ephemeralContainers": [{"name": "e", "image": "x"}]}),
                &["spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"],
            ),
        ];
        for (what, spec, want) in cases {
            let got = messages(&template(spec.clone()));
            assert_eq!(got, *want, "{what}");
        }
    }

    #[test]
    fn quantities_parse_like_resource_parse_quantity() {
        for (q, want) in [
            ("1", Some(1.0)),
            ("500m", Some(0.5)),
            ("1Ki", Some(1024.0)),
            ("2e3", Some(2000.0)),
            ("-1", Some(-1.0)),
            (".5", Some(0.5)),
        ] {
            assert_eq!(quantity_value(&json!(q)), want, "{q}");
        }
        for q in ["", "x", "1x", "1..2", "Mi", "1 Mi"] {
            assert_eq!(quantity_value(&json!(q)), None, "{q}");
        }
        assert_eq!(quantity_value(&json!(3)), Some(3.0));
    }
}
