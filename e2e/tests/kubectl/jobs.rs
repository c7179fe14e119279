//! Jobs as kube-apiserver's Job strategy treats them: the generated selector and labels on
//! create, validation of the spec and pod template, immutable fields on update.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::fixtures::error_code;
use kplane_e2e::KplaneServer;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::json;

use super::get_json;

/// The error line(s) kubectl prints for a refused write.
fn refused(server: &KplaneServer, args: &[&str]) -> Result<String> {
    let out = server.kubectl(args)?;
    ensure!(!out.success(), "kubectl {args:?} succeeded: {}", out.stdout);
    Ok(out.stderr)
}

#[tokio::test]
async fn job_create_generates_selector_and_update_refuses_immutable_fields() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "job", "x", "--image=busybox"])?;
    let job = get_json(&server, &["get", "job", "x"])?;
    let uid = job["metadata"]["uid"]
        .as_str()
        .context("no uid")?
        .to_string();
    let spec = &job["spec"];
    assert_eq!(
        spec["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    let labels = json!({
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "x",
        "controller-uid": uid,
        "job-name": "x",
    });
    assert_eq!(spec["template"]["metadata"]["labels"], labels);
    assert_eq!(job["metadata"]["labels"], labels);
    for (k, v) in [
        ("backoffLimit", json!(6)),
        ("completionMode", json!("NonIndexed")),
        ("completions", json!(1)),
        ("manualSelector", json!(false)),
        ("parallelism", json!(1)),
        ("podReplacementPolicy", json!("TerminatingOrFailed")),
        ("suspend", json!(false)),
    ] {
        assert_eq!(spec[k], v, "spec.{k}");
    }

    // What may change does.
    server.kubectl_ok(&[
        "patch",
        "job",
        "x",
        "-p",
        r#"{"spec":{"parallelism":2,"activeDeadlineSeconds":60}}"#,
    ])?;

    let err = refused(
        &server,
        &[
            "patch",
            "job",
            "x",
            "--type=merge",
            "-p",
            r#"{"spec":{"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"abc"}}}}"#,
        ],
    )?;
    let sel = r#"v1.LabelSelector{MatchLabels:map[string]string{"batch.kubernetes.io/controller-uid":"abc"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#;
    let want = format!(
        "The Job \"x\" is invalid: \n\
         * spec.selector: Invalid value: {sel}: `selector` not auto-generated\n\
         * spec.template.metadata.labels: Invalid value: map[string]string{{\"batch.kubernetes.io/controller-uid\":\"{uid}\", \"batch.kubernetes.io/job-name\":\"x\", \"controller-uid\":\"{uid}\", \"job-name\":\"x\"}}: `selector` does not match template `labels`\n\
         * spec.selector: Invalid value: {sel}: field is immutable\n"
    );
    assert_eq!(err, want);

    let err = refused(&server, &["set", "image", "job/x", "x=nginx"])?;
    ensure!(
        err.starts_with("error: failed to patch image update to pod template: Job.batch \"x\" is invalid: spec.template: Invalid value: {")
            && err.trim_end().ends_with("}: field is immutable"),
        "set image: {err}"
    );
    let err = refused(
        &server,
        &[
            "patch",
            "job",
            "x",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/spec/completions","value":3}]"#,
        ],
    )?;
    assert_eq!(
        err.trim_end(),
        "The Job \"x\" is invalid: spec.completions: Invalid value: 3: field is immutable"
    );
    let err = refused(
        &server,
        &[
            "patch",
            "job",
            "x",
            "-p",
            r#"{"spec":{"completionMode":"Indexed"}}"#,
        ],
    )?;
    assert_eq!(
        err.trim_end(),
        "The Job \"x\" is invalid: spec.completionMode: Invalid value: \"Indexed\": field is immutable"
    );

    // The 422 Status carries one cause per error, with upstream's fields and reasons.
    let ar = ApiResource::erase::<k8s_openapi::api::batch::v1::Job>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(server.client().await?, "default", &ar);
    let patch = json!({"spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "x", "image": "nginx"}]}}}});
    let err = api
        .patch("x", &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .err()
        .context("the template change was accepted")?;
    assert_eq!(error_code(&err), Some(422), "{err}");
    let kube::Error::Api(status) = &err else {
        anyhow::bail!("not an API error: {err}");
    };
    assert_eq!(status.reason, "Invalid");
    let details = status.details.as_ref().context("no details")?;
    assert_eq!(
        (
            details.group.as_str(),
            details.kind.as_str(),
            details.name.as_str()
        ),
        ("batch", "Job", "x")
    );
    let causes: Vec<(&str, &str)> = details
        .causes
        .iter()
        .map(|c| (c.field.as_str(), c.reason.as_str()))
        .collect();
    assert_eq!(
        causes,
        [
            ("spec.template.spec.restartPolicy", "FieldValueRequired"),
            ("spec.template.spec.restartPolicy", "FieldValueRequired"),
            ("spec.template", "FieldValueInvalid"),
        ],
        "{:?}",
        details.causes
    );
    assert_eq!(
        details.causes[0].message,
        "Required value: valid values: \"OnFailure\", \"Never\""
    );
    let after = get_json(&server, &["get", "job", "x"])?;
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"][0]["image"],
        "busybox"
    );
    assert_eq!(after["spec"]["parallelism"], 2);
    Ok(())
}

const INVALID_JOB: &str = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: bad}
spec:
  parallelism: -1
  template:
    spec:
      restartPolicy: Always
      containers:
      - {name: Bad_Name, image: ""}
      - {name: Bad_Name, image: busybox, imagePullPolicy: Sometimes, env: [{name: "A=B"}], volumeMounts: [{name: data, mountPath: /d}]}
"#;

#[test]
fn invalid_job_is_refused_with_every_cause() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_stdin(&["create", "-f", "-"], INVALID_JOB)?;
    ensure!(
        !out.success(),
        "the invalid Job was accepted: {}",
        out.stdout
    );
    let c = "spec.template.spec.containers";
    let label = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    let want = format!(
        "The Job \"bad\" is invalid: \n\
         * spec.parallelism: Invalid value: -1: must be greater than or equal to 0\n\
         * {c}[0].name: Invalid value: \"Bad_Name\": {label}\n\
         * {c}[0].image: Required value\n\
         * {c}[1].name: Invalid value: \"Bad_Name\": {label}\n\
         * {c}[1].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='\n\
         * {c}[1].volumeMounts[0].name: Not found: \"data\"\n\
         * {c}[1].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"\n\
         * {c}[1].name: Duplicate value: \"Bad_Name\"\n\
         * spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"\n"
    );
    assert_eq!(out.stderr, want);
    ensure!(
        !server.kubectl(&["get", "job", "bad"])?.success(),
        "the refused Job was stored"
    );

    // A manual selector is kept as given and must match the template.
    let manual = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: manual}
spec:
  manualSelector: true
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: mine}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"#;
    let out = server.kubectl_stdin(&["create", "-f", "-"], manual)?;
    assert_eq!(
        out.stderr.trim_end(),
        "The Job \"manual\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"mine\"}: `selector` does not match template `labels`"
    );
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        &manual.replace("app: other", "app: mine"),
    )?;
    ensure!(
        out.success(),
        "a matching manual selector was refused: {}",
        out.stderr
    );
    let job = get_json(&server, &["get", "job", "manual"])?;
    assert_eq!(
        job["spec"]["selector"],
        json!({"matchLabels": {"app": "mine"}})
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"],
        json!({"app": "mine"})
    );

    // A name that is a subdomain but not a DNS label is accepted with upstream's warning.
    let dotted = manual
        .replace("name: manual", "name: my.job")
        .replace("app: other", "app: mine")
        .replace(
            "  manualSelector: true\n  selector: {matchLabels: {app: mine}}\n",
            "",
        );
    let out = server.kubectl_stdin(&["create", "-f", "-"], &dotted)?;
    ensure!(out.success(), "my.job refused: {}", out.stderr);
    assert_eq!(
        out.stderr.trim_end(),
        "Warning: metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]"
    );
    Ok(())
}

/// The causes of a refused status patch, as (field, message).
async fn status_refused(
    api: &Api<DynamicObject>,
    status: serde_json::Value,
) -> Result<Vec<(String, String)>> {
    let err = api
        .patch_status(
            "s",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "status": status })),
        )
        .await
        .err()
        .context("the status patch was accepted")?;
    assert_eq!(error_code(&err), Some(422), "{err}");
    let kube::Error::Api(s) = &err else {
        anyhow::bail!("not an API error: {err}");
    };
    let details = s.details.as_ref().context("no details")?;
    Ok(details
        .causes
        .iter()
        .map(|c| (c.field.clone(), c.message.clone()))
        .collect())
}

#[tokio::test]
async fn job_status_writes_follow_upstreams_status_rules() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "job", "s", "--image=busybox"])?;
    let ar = ApiResource::erase::<k8s_openapi::api::batch::v1::Job>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(server.client().await?, "default", &ar);
    let (t0, t1) = ("2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z");
    let pp = PatchParams::default();

    api.patch_status(
        "s",
        &pp,
        &Patch::Merge(&json!({"status": {"active": 1, "ready": 1, "startTime": t0}})),
    )
    .await?;
    let causes = status_refused(
        &api,
        json!({"conditions": [{"type": "Complete", "status": "True"}]}),
    )
    .await?;
    let want = [
        ("status.completionTime", "Required value: completionTime is required for Complete jobs"),
        ("status.conditions", "Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition"),
        ("status.active", "Invalid value: 1: active>0 is invalid for finished job"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(f, m)| (f.to_string(), m.to_string()))
        .collect();
    assert_eq!(causes, want);

    // A completion as the job controller writes it is accepted.
    let done = json!({"status": {
        "active": 0, "ready": 0, "succeeded": 1, "completionTime": t1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"},
            {"type": "Complete", "status": "True"},
        ],
    }});
    api.patch_status("s", &pp, &Patch::Merge(&done)).await?;
    let causes = status_refused(&api, json!({"succeeded": 0})).await?;
    assert_eq!(
        causes,
        [(
            "status.succeeded".to_string(),
            "Invalid value: 0: cannot decrease the succeeded counter".to_string()
        )]
    );
    let job = get_json(&server, &["get", "job", "s"])?;
    assert_eq!(job["status"]["succeeded"], 1);
    let out = server.kubectl_ok(&["get", "job", "s", "--no-headers"])?;
    ensure!(
        out.contains("Complete"),
        "kubectl does not show the Job complete: {out}"
    );
    Ok(())
}
