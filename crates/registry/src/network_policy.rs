//! The NetworkPolicy (networking.k8s.io/v1) rules, as kube-apiserver 1.32 has them
//! (`pkg/apis/networking/v1/defaults.go`, `pkg/apis/networking/validation/validation.go`):
//! the defaults (a port's protocol, the policy types) and the validation of the spec on
//! create and update (selectors, peers, ports and port ranges, IP blocks, policy types).
//!
//! On update upstream validates the spec twice (`ValidateNetworkPolicy` and
//! `ValidateNetworkPolicyUpdate` each do), so an update's causes list every spec error
//! twice; the Status message lists each once.

use kplane_types::{Cause, CauseType};
use serde_json::{json, Value};

use super::go_cidr::Cidr;
use super::json_map::{each_struct, set_default};
use super::label_selector::validate_label_selector;
use super::pod_template::{port_name_errors, required};
use kplane_types::validation::go_quote;

const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];
const POLICY_TYPES: &[&str] = &["Ingress", "Egress"];
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// The rule lists of a spec with the name of their peer list.
const RULES: &[(&str, &str)] = &[("ingress", "from"), ("egress", "to")];

/// `SetObjectDefaults_NetworkPolicy`: `policyTypes` defaults to `["Ingress"]`, plus
/// `"Egress"` when there are egress rules; every port without a protocol gets TCP.
pub fn default(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    if o.get("spec").is_none_or(Value::is_null) {
        o.insert("spec".into(), json!({}));
    }
    let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if non_empty_array(spec.get("policyTypes")).is_none() {
        let mut types = vec![json!("Ingress")];
        if non_empty_array(spec.get("egress")).is_some() {
            types.push(json!("Egress"));
        }
        spec.insert("policyTypes".into(), Value::Array(types));
    }
    for (rules, _) in RULES {
        for rule in each_struct(spec, rules) {
            for port in each_struct(rule, "ports") {
                set_default(port, "protocol", json!("TCP"));
            }
        }
    }
}

/// `ValidateNetworkPolicySpec` on create (`old` None) and, twice, on update; the
/// ObjectMeta rules are the caller's.
pub fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let Some(old) = old else {
        return validate_spec(spec, false, "spec");
    };
    // `ValidationOptionsForNetworking`: a stored pod selector that does not validate lets
    // every selector of the update keep values that are not label values.
    let old_selector = old.pointer("/spec/podSelector").unwrap_or(&Value::Null);
    let allow = !validate_label_selector(old_selector, "", false).is_empty();
    let once = validate_spec(spec, allow, "spec");
    let mut causes = once.clone();
    causes.extend(once);
    causes
}

fn validate_spec(spec: &Value, allow_invalid_values: bool, path: &str) -> Vec<Cause> {
    let mut causes = validate_label_selector(
        spec.get("podSelector").unwrap_or(&Value::Null),
        &format!("{path}.podSelector"),
        allow_invalid_values,
    );
    for (rules, peers) in RULES {
        for (i, rule) in items(spec.get(*rules)).iter().enumerate() {
            let rule_path = format!("{path}.{rules}[{i}]");
            for (j, port) in items(rule.get("ports")).iter().enumerate() {
                causes.extend(validate_port(port, &format!("{rule_path}.ports[{j}]")));
            }
            for (j, peer) in items(rule.get(*peers)).iter().enumerate() {
                causes.extend(validate_peer(
                    peer,
                    allow_invalid_values,
                    &format!("{rule_path}.{peers}[{j}]"),
                ));
            }
        }
    }
    causes.extend(validate_policy_types(
        spec.get("policyTypes"),
        &format!("{path}.policyTypes"),
    ));
    causes
}

/// `ValidateNetworkPolicyPort`: the protocol, a numeric port with an optional `endPort`
/// not below it, or a named port without one.
fn validate_port(port: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(p) = present(port, "protocol") {
        if !p.as_str().is_some_and(|s| PROTOCOLS.contains(&s)) {
            causes.push(Cause::not_supported(
                format!("{path}.protocol"),
                p,
                PROTOCOLS,
            ));
        }
    }
    let end = present(port, "endPort").and_then(Value::as_i64);
    let end_path = format!("{path}.endPort");
    match present(port, "port") {
        Some(Value::String(name)) => {
            if let Some(end) = end {
                causes.push(Cause::invalid(
                    &end_path,
                    &json!(end),
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for msg in port_name_errors(name) {
                causes.push(Cause::invalid(format!("{path}.port"), &json!(name), &msg));
            }
        }
        Some(n) => {
            let n = n.as_i64().unwrap_or(0);
            if !valid_port_number(n) {
                causes.push(Cause::invalid(
                    format!("{path}.port"),
                    &json!(n),
                    PORT_RANGE,
                ));
            }
            if let Some(end) = end {
                if end < n {
                    // Upstream shows the port, not the end port, in this one.
                    causes.push(Cause::invalid(
                        &end_path,
                        &json!(n),
                        "must be greater than or equal to `port`",
                    ));
                }
                if !valid_port_number(end) {
                    causes.push(Cause::invalid(&end_path, &json!(end), PORT_RANGE));
                }
            }
        }
        None => {
            if let Some(end) = end {
                causes.push(Cause::invalid(
                    &end_path,
                    &json!(end),
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
    causes
}

fn valid_port_number(n: i64) -> bool {
    (1..=65535).contains(&n)
}

/// `ValidateNetworkPolicyPeer`: selectors or an IP block, at least one, and an IP block
/// alone.
fn validate_peer(peer: &Value, allow_invalid_values: bool, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut count = 0;
    for sel in ["podSelector", "namespaceSelector"] {
        if let Some(s) = present(peer, sel) {
            count += 1;
            causes.extend(validate_label_selector(
                s,
                &format!("{path}.{sel}"),
                allow_invalid_values,
            ));
        }
    }
    let ip_block = present(peer, "ipBlock");
    if let Some(b) = ip_block {
        count += 1;
        causes.extend(validate_ip_block(b, &format!("{path}.ipBlock")));
    }
    if count == 0 {
        causes.push(required(path, "must specify a peer"));
    } else if count > 1 && ip_block.is_some() {
        causes.push(Cause::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
    causes
}

/// `ValidateIPBlock`: a valid CIDR, and each exception a valid CIDR strictly inside it.
fn validate_ip_block(block: &Value, path: &str) -> Vec<Cause> {
    let cidr = block.get("cidr").and_then(Value::as_str).unwrap_or("");
    let cidr_path = format!("{path}.cidr");
    if cidr.is_empty() {
        return vec![required(cidr_path, "")];
    }
    let Some(net) = Cidr::parse(cidr) else {
        return vec![invalid_cidr(&cidr_path, cidr)];
    };
    let mut causes = Vec::new();
    for (i, except) in items(block.get("except")).iter().enumerate() {
        let except_path = format!("{path}.except[{i}]");
        let s = except.as_str().unwrap_or("");
        let Some(inner) = Cidr::parse(s) else {
            causes.push(invalid_cidr(&except_path, s));
            continue;
        };
        if !net.contains_network_of(&inner) || net.prefix_len() >= inner.prefix_len() {
            causes.push(Cause::invalid(
                &except_path,
                &json!(s),
                "must be a strict subset of `cidr`",
            ));
        }
    }
    causes
}

fn invalid_cidr(path: &str, value: &str) -> Cause {
    Cause::invalid(
        path,
        &json!(value),
        "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
    )
}

/// At most two policy types, each Ingress or Egress.
fn validate_policy_types(types: Option<&Value>, path: &str) -> Vec<Cause> {
    let types = items(types);
    if types.len() > POLICY_TYPES.len() {
        // Upstream prints the list with Go's %#v of its internal type.
        let shown: Vec<String> = types
            .iter()
            .map(|t| go_quote(t.as_str().unwrap_or("")))
            .collect();
        return vec![Cause::new(
            CauseType::FieldValueInvalid,
            path,
            format!(
                "Invalid value: []networking.PolicyType{{{}}}: may not specify more than two policyTypes",
                shown.join(", ")
            ),
        )];
    }
    types
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.as_str().is_some_and(|s| POLICY_TYPES.contains(&s)))
        .map(|(i, t)| Cause::not_supported(format!("{path}[{i}]"), t, POLICY_TYPES))
        .collect()
}

/// The field `key` of `v` when it is present and not null (a Go pointer that is set).
fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// The items of an optional array.
fn items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[][..], Vec::as_slice)
}

fn non_empty_array(v: Option<&Value>) -> Option<&Vec<Value>> {
    v.and_then(Value::as_array).filter(|a| !a.is_empty())
}

#[cfg(test)]
mod tests;
