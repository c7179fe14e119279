//! What differs between synced resource types, behind one trait: which fields the host sets
//! itself (and so must not be sent), which spec changes are pushed down to an existing host
//! object, and which status fields come back. The rest of the syncer is generic over
//! `DynamicObject` + `ApiResource`; a new type (Deployments) is a new implementation here.

use std::sync::Arc;

use kube::api::{ApiResource, GroupVersionKind};
use serde_json::{Map, Value};

use crate::naming::{CLUSTER_ANNOTATION, TARGET_ANNOTATION};

/// One synced resource type.
pub trait SyncedKind: Send + Sync + std::fmt::Debug {
    /// The group, version, kind and plural.
    fn api_resource(&self) -> ApiResource;
    /// JSON pointer of the pod spec whose references are copied, if the type has one.
    fn pod_spec_pointer(&self) -> Option<&'static str>;
    /// The object to create on the host: `apiVersion`, `kind`, user labels and annotations
    /// and the spec, without anything the host sets itself. Name, namespace and the
    /// syncer's marks are added by the caller.
    fn host_object(&self, source: &Value) -> Value;
    /// A merge patch that brings the host object's mutable spec fields to the source's, or
    /// `None` when they already agree.
    fn push_down(&self, source: &Value, host: &Value) -> Option<Value>;
    /// A merge patch of the source's `status` (the body of a `/status` patch) that carries
    /// the host's status back, with the `Synced` condition; `None` when the source already
    /// shows it. `synced_message` is the condition's message, `now` an RFC 3339 time.
    fn status_patch(
        &self,
        source: &Value,
        host: &Value,
        synced_message: &str,
        now: &str,
    ) -> Option<Value>;
}

/// The synced type of `group`/`version`/`resource`, when the syncer knows it.
pub fn kind_for(group: &str, version: &str, resource: &str) -> Option<Arc<dyn SyncedKind>> {
    match (group, version, resource) {
        ("batch", "v1", "jobs") => Some(Arc::new(Job)),
        _ => None,
    }
}

/// Annotations the syncer never copies: kplane's own marks (set again by the syncer) and
/// kubectl's record of the last applied configuration.
fn copied_annotation(key: &str) -> bool {
    key != CLUSTER_ANNOTATION
        && key != TARGET_ANNOTATION
        && key != "kubectl.kubernetes.io/last-applied-configuration"
        && !key.starts_with("batch.kubernetes.io/")
}

/// Labels the Job controller generates (and the host refuses to receive from a client).
fn generated_job_label(key: &str) -> bool {
    key == "controller-uid" || key == "job-name" || key.starts_with("batch.kubernetes.io/")
}

fn filtered(map: Option<&Value>, keep: impl Fn(&str) -> bool) -> Option<Value> {
    let map = map?.as_object()?;
    let out: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!out.is_empty()).then_some(Value::Object(out))
}

/// `v` without empty values (null, 0, "", [], {}) at any depth: how the
/// stored forms of two servers may differ for the same status.
pub(crate) fn normalize(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(a) if a.is_empty() => None,
        Value::Array(a) => Some(Value::Array(
            a.iter()
                .map(|x| normalize(x).unwrap_or(Value::Null))
                .collect(),
        )),
        Value::Object(o) => {
            let out: Map<String, Value> = o
                .iter()
                .filter_map(|(k, x)| normalize(x).map(|x| (k.clone(), x)))
                .collect();
            (!out.is_empty()).then_some(Value::Object(out))
        }
        other => Some(other.clone()),
    }
}

/// The merge-patch value that makes a field holding `have` hold `want` exactly: an object
/// is merged key by key, so each key `have` has and `want` lacks is set to null (a map
/// emptied on the host, such as `uncountedTerminatedPods` going from `{succeeded: [uid]}`
/// to `{}`, is emptied here too, not merged into); anything else replaces whole.
fn replacing(have: Option<&Value>, want: Option<&Value>) -> Value {
    match (have, want) {
        (Some(Value::Object(h)), Some(Value::Object(w))) => {
            let mut out: Map<String, Value> = w
                .iter()
                .map(|(k, v)| (k.clone(), replacing(h.get(k), Some(v))))
                .collect();
            for k in h.keys() {
                if !w.contains_key(k) {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(out)
        }
        (_, Some(w)) => w.clone(),
        (_, None) => Value::Null,
    }
}

/// batch/v1 Jobs.
#[derive(Debug, Clone, Copy)]
pub struct Job;

/// Status fields carried from the host Job to the source (conditions are handled apart).
const JOB_STATUS_FIELDS: [&str; 10] = [
    "active",
    "ready",
    "succeeded",
    "failed",
    "terminating",
    "startTime",
    "completionTime",
    "uncountedTerminatedPods",
    "completedIndexes",
    "failedIndexes",
];

/// Every key of the status fields that are maps: a merge patch must null each key the
/// host does not have, whatever the syncer last saw of the source.
fn map_keys(field: &str) -> Option<&'static [&'static str]> {
    match field {
        "uncountedTerminatedPods" => Some(&["succeeded", "failed"]),
        _ => None,
    }
}

/// The condition the syncer writes on every status write-back.
pub const SYNCED_CONDITION: &str = "Synced";

/// What makes two conditions the same for the syncer (times aside).
fn condition_key(c: &Value) -> [String; 4] {
    ["type", "status", "reason", "message"].map(|f| {
        c.get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    })
}

impl SyncedKind for Job {
    fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("batch", "v1", "Job"), "jobs")
    }

    fn pod_spec_pointer(&self) -> Option<&'static str> {
        Some("/spec/template/spec")
    }

    fn host_object(&self, source: &Value) -> Value {
        let mut spec = source
            .get("spec")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
        let keep_label = |k: &str| manual || !generated_job_label(k);
        if let Some(spec) = spec.as_object_mut() {
            if !manual {
                spec.remove("selector");
            }
            // kplane removes the finished Job (and so the host Job) after the TTL; the host
            // must not remove it first, before its status came back.
            spec.remove("ttlSecondsAfterFinished");
            if let Some(meta) = spec
                .get_mut("template")
                .and_then(|t| t.get_mut("metadata"))
                .and_then(Value::as_object_mut)
            {
                meta.remove("creationTimestamp");
                match filtered(meta.get("labels"), keep_label) {
                    Some(l) => meta.insert("labels".into(), l),
                    None => meta.remove("labels"),
                };
            }
        }
        let meta = source.get("metadata");
        let mut out_meta = Map::new();
        if let Some(l) = filtered(meta.and_then(|m| m.get("labels")), keep_label) {
            out_meta.insert("labels".into(), l);
        }
        if let Some(a) = filtered(meta.and_then(|m| m.get("annotations")), copied_annotation) {
            out_meta.insert("annotations".into(), a);
        }
        serde_json::json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": out_meta,
            "spec": spec,
        })
    }

    fn push_down(&self, source: &Value, host: &Value) -> Option<Value> {
        let empty = Value::Null;
        let s = source.get("spec").unwrap_or(&empty);
        let h = host.get("spec").unwrap_or(&empty);
        let indexed = s.get("completionMode").and_then(Value::as_str) == Some("Indexed");
        let mut fields = vec!["suspend", "parallelism", "activeDeadlineSeconds"];
        if indexed {
            // Only Indexed Jobs may change completions (with parallelism, as elastic Jobs).
            fields.push("completions");
        }
        let mut patch = Map::new();
        for f in fields {
            let sv = s.get(f).unwrap_or(&Value::Null);
            let hv = h.get(f).unwrap_or(&Value::Null);
            let differs = match f {
                "suspend" => sv.as_bool().unwrap_or(false) != hv.as_bool().unwrap_or(false),
                "parallelism" => sv.as_i64().unwrap_or(1) != hv.as_i64().unwrap_or(1),
                _ => sv != hv,
            };
            if differs {
                patch.insert(f.to_owned(), sv.clone());
            }
        }
        (!patch.is_empty()).then(|| serde_json::json!({ "spec": patch }))
    }

    fn status_patch(
        &self,
        source: &Value,
        host: &Value,
        synced_message: &str,
        now: &str,
    ) -> Option<Value> {
        let empty = Value::Null;
        let current = source.get("status").unwrap_or(&empty);
        let host_status = host.get("status").unwrap_or(&empty);
        let mut patch = Map::new();
        let mut differs = false;
        for f in JOB_STATUS_FIELDS {
            let want = host_status.get(f).and_then(normalize);
            let have = current.get(f).and_then(normalize);
            if want != have {
                differs = true;
            }
            let mut value = replacing(current.get(f), host_status.get(f));
            // The source seen here may lag behind what is stored (the watch event of the
            // syncer's own last write not yet in): a map's keys are nulled whether or not
            // this view of the source still shows them.
            if let (Some(keys), Some(map)) = (map_keys(f), value.as_object_mut()) {
                for k in keys {
                    map.entry(*k).or_insert(Value::Null);
                }
            }
            patch.insert(f.to_owned(), value);
        }
        let current_conditions: Vec<Value> = current
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let previous_synced = current_conditions
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(SYNCED_CONDITION));
        let transition = match previous_synced {
            Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => c
                .get("lastTransitionTime")
                .cloned()
                .unwrap_or_else(|| Value::String(now.to_owned())),
            _ => Value::String(now.to_owned()),
        };
        let mut conditions: Vec<Value> = host_status
            .get("conditions")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter(|c| c.get("type").and_then(Value::as_str) != Some(SYNCED_CONDITION))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        conditions.push(serde_json::json!({
            "type": SYNCED_CONDITION,
            "status": "True",
            "reason": "Synced",
            "message": synced_message,
            "lastProbeTime": transition.clone(),
            "lastTransitionTime": transition,
        }));
        let want: Vec<[String; 4]> = conditions.iter().map(condition_key).collect();
        let have: Vec<[String; 4]> = current_conditions.iter().map(condition_key).collect();
        if want != have {
            differs = true;
        }
        patch.insert("conditions".into(), Value::Array(conditions));
        differs.then(|| serde_json::json!({ "status": patch }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source_job() -> Value {
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "pi", "namespace": "default", "uid": "u-1", "resourceVersion": "42",
                "generation": 1, "creationTimestamp": "2026-11-24T10:00:00Z",
                "managedFields": [{"manager": "kubectl"}],
                "finalizers": ["sync.kplane.io/syncer"],
                "ownerReferences": [{"kind": "CronJob", "name": "c", "uid": "x", "apiVersion": "batch/v1"}],
                "labels": {"app": "pi", "controller-uid": "u-1", "job-name": "pi",
                           "batch.kubernetes.io/controller-uid": "u-1", "batch.kubernetes.io/job-name": "pi"},
                "annotations": {"team": "a", "kplane.io/cluster": "root:a",
                                "sync.kplane.io/target": "root/east",
                                "batch.kubernetes.io/job-tracking": ""},
            },
            "spec": {
                "parallelism": 1, "completions": 1, "backoffLimit": 6,
                "ttlSecondsAfterFinished": 100,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}},
                "template": {
                    "metadata": {"creationTimestamp": null,
                                 "labels": {"app": "pi", "controller-uid": "u-1", "job-name": "pi",
                                            "batch.kubernetes.io/controller-uid": "u-1"}},
                    "spec": {"containers": [{"name": "pi", "image": "perl"}], "restartPolicy": "Never"}
                }
            },
            "status": {"active": 1}
        })
    }

    #[test]
    fn host_jobs_carry_no_server_set_fields() {
        let host = Job.host_object(&source_job());
        assert_eq!(
            host["metadata"],
            json!({"labels": {"app": "pi"}, "annotations": {"team": "a"}})
        );
        assert!(host.get("status").is_none());
        let spec = &host["spec"];
        assert!(spec.get("selector").is_none());
        assert!(spec.get("ttlSecondsAfterFinished").is_none());
        assert_eq!(spec["backoffLimit"], 6);
        assert_eq!(
            spec["template"]["metadata"],
            json!({"labels": {"app": "pi"}})
        );
        assert_eq!(spec["template"]["spec"]["containers"][0]["image"], "perl");
    }

    #[test]
    fn a_manual_selector_is_kept_with_its_labels() {
        let mut src = source_job();
        src["spec"]["manualSelector"] = json!(true);
        src["spec"]["selector"] = json!({"matchLabels": {"job-name": "pi"}});
        let host = Job.host_object(&src);
        assert_eq!(
            host["spec"]["selector"],
            json!({"matchLabels": {"job-name": "pi"}})
        );
        assert_eq!(
            host["spec"]["template"]["metadata"]["labels"]["job-name"],
            "pi"
        );
    }

    #[test]
    fn mutable_spec_fields_are_pushed_down() {
        let src = source_job();
        let host = Job.host_object(&src);
        assert_eq!(Job.push_down(&src, &host), None);
        let mut suspended = src.clone();
        suspended["spec"]["suspend"] = json!(true);
        suspended["spec"]["activeDeadlineSeconds"] = json!(60);
        assert_eq!(
            Job.push_down(&suspended, &host),
            Some(json!({"spec": {"suspend": true, "activeDeadlineSeconds": 60}}))
        );
        // completions only for Indexed Jobs.
        let mut more = src.clone();
        more["spec"]["completions"] = json!(3);
        assert_eq!(Job.push_down(&more, &host), None);
        more["spec"]["completionMode"] = json!("Indexed");
        assert_eq!(
            Job.push_down(&more, &host),
            Some(json!({"spec": {"completions": 3}}))
        );
        // Defaults are the same as absent values.
        let mut h = host.clone();
        h["spec"]["suspend"] = json!(false);
        if let Some(s) = h["spec"].as_object_mut() {
            s.remove("parallelism");
        }
        assert_eq!(Job.push_down(&src, &h), None);
    }

    #[test]
    fn host_status_comes_back_with_the_synced_condition() {
        let src = source_job();
        let host = json!({"status": {
            "succeeded": 1, "startTime": "2026-11-24T10:00:01Z",
            "completionTime": "2026-11-24T10:00:05Z",
            "uncountedTerminatedPods": {},
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastTransitionTime": "2026-11-24T10:00:05Z", "lastProbeTime": "2026-11-24T10:00:05Z"},
                {"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastTransitionTime": "2026-11-24T10:00:05Z", "lastProbeTime": "2026-11-24T10:00:05Z"}
            ]
        }});
        let now = "2026-11-24T10:00:06Z";
        let patch = Job
            .status_patch(&src, &host, "synced", now)
            .expect("a status change");
        let st = &patch["status"];
        assert_eq!(st["succeeded"], 1);
        assert_eq!(
            st["active"],
            Value::Null,
            "the stale active count is removed"
        );
        assert_eq!(st["completionTime"], "2026-11-24T10:00:05Z");
        let types: Vec<&str> = st["conditions"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["type"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(types, ["SuccessCriteriaMet", "Complete", "Synced"]);
        let synced = &st["conditions"][2];
        assert_eq!(synced["status"], "True");
        assert_eq!(synced["reason"], "Synced");
        assert_eq!(synced["lastTransitionTime"], now);

        // Applied (as the server would store it), the same host status needs no new write,
        // even later and with empty values stored differently.
        let mut applied = src.clone();
        applied["status"] = st.clone();
        if let Some(s) = applied["status"].as_object_mut() {
            s.retain(|_, v| !v.is_null());
            s.remove("uncountedTerminatedPods");
        }
        assert_eq!(
            Job.status_patch(&applied, &host, "synced", "2026-11-24T11:00:00Z"),
            None
        );

        // A stale mark written by kplane is replaced, with a new transition time.
        let mut stale = applied.clone();
        stale["status"]["conditions"][2] = json!({"type": "Synced", "status": "False", "reason": "SyncerHeartbeatTimeout", "message": "status is stale", "lastTransitionTime": now});
        let later = "2026-11-24T12:00:00Z";
        let again = Job
            .status_patch(&stale, &host, "synced", later)
            .expect("rewritten");
        assert_eq!(again["status"]["conditions"][2]["status"], "True");
        assert_eq!(
            again["status"]["conditions"][2]["lastTransitionTime"],
            later
        );
    }

    #[test]
    fn a_new_host_job_marks_the_source_synced() {
        let mut src = source_job();
        src["status"] = json!({});
        let patch = Job
            .status_patch(&src, &json!({"status": {}}), "synced", "t")
            .expect("the Synced condition is new");
        assert_eq!(patch["status"]["conditions"][0]["type"], "Synced");
        assert!(kind_for("batch", "v1", "jobs").is_some());
        assert!(kind_for("apps", "v1", "deployments").is_none());
    }

    /// The status sequences a real kube-controller-manager 1.32.6 writes on a Job that
    /// succeeds and one that fails (../shared/fixtures/job-status/).
    fn recorded_sequences() -> Vec<(String, Vec<Value>)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/fixtures/job-status");
        ["succeeded", "failed"]
            .iter()
            .map(|name| {
                let path = dir.join(format!("{name}.json"));
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let steps: Vec<Value> = serde_json::from_str(&text).expect("a JSON list");
                assert!(steps.len() >= 3, "{name}: {} steps", steps.len());
                (name.to_string(), steps)
            })
            .collect()
    }

    /// Replays `steps` (host statuses) into a source Job as the syncer writes them back (a
    /// merge patch of `/status`); the source's final status.
    fn replay(steps: &[&Value]) -> Value {
        let mut src = source_job();
        src["status"] = json!({});
        for (i, st) in steps.iter().enumerate() {
            let host = json!({ "status": st });
            if let Some(patch) = Job.status_patch(&src, &host, "synced", &format!("t{i}")) {
                json_patch::merge(&mut src, &patch);
            }
            // A second delivery of the same host status needs no write.
            assert_eq!(Job.status_patch(&src, &host, "synced", "later"), None);
        }
        src["status"].clone()
    }

    /// `status` without the syncer's own `Synced` condition.
    fn without_synced(status: &Value) -> Value {
        let mut s = status.clone();
        if let Some(cs) = s.get_mut("conditions").and_then(Value::as_array_mut) {
            cs.retain(|c| c["type"] != SYNCED_CONDITION);
            if cs.is_empty() {
                if let Some(o) = s.as_object_mut() {
                    o.remove("conditions");
                }
            }
        }
        s
    }

    #[test]
    fn recorded_host_sequences_end_with_the_host_status_in_every_delivery_order() {
        for (name, steps) in recorded_sequences() {
            let last = steps.last().expect("steps");
            let n = steps.len();
            // Every subsequence that ends with the final status (steps skipped), each step
            // also delivered twice (steps repeated).
            for mask in 0..(1u32 << (n - 1)) {
                let mut seq: Vec<&Value> = (0..n - 1)
                    .filter(|i| mask & (1 << i) != 0)
                    .map(|i| &steps[i])
                    .collect();
                seq.push(last);
                let twice: Vec<&Value> = seq.iter().flat_map(|s| [*s, *s]).collect();
                for order in [&seq, &twice] {
                    let got = replay(order);
                    assert_eq!(
                        normalize(&without_synced(&got)),
                        normalize(last),
                        "{name}, steps {mask:b}: {got:#}"
                    );
                    // The emptied map is empty, not merged into.
                    assert_eq!(
                        got.get("uncountedTerminatedPods").and_then(normalize),
                        None,
                        "{name}, steps {mask:b}: {got:#}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_map_emptied_on_the_host_is_emptied_by_the_patch() {
        let mut src = source_job();
        src["status"] = json!({"uncountedTerminatedPods": {"succeeded": ["a"], "failed": ["b"]}});
        let host =
            json!({"status": {"succeeded": 1, "uncountedTerminatedPods": {"failed": ["b"]}}});
        let patch = Job.status_patch(&src, &host, "m", "t").expect("a change");
        assert_eq!(
            patch["status"]["uncountedTerminatedPods"],
            json!({"failed": ["b"], "succeeded": null})
        );
        json_patch::merge(&mut src, &patch);
        assert_eq!(
            src["status"]["uncountedTerminatedPods"],
            json!({"failed": ["b"]})
        );
        // A view of the source that lags behind (it does not show the stored map yet): the
        // patch still empties every key.
        let mut lagging = source_job();
        lagging["status"] = json!({});
        let host = json!({"status": {"failed": 1, "uncountedTerminatedPods": {}}});
        let patch = Job
            .status_patch(&lagging, &host, "m", "t")
            .expect("a change");
        assert_eq!(
            patch["status"]["uncountedTerminatedPods"],
            json!({"failed": null, "succeeded": null})
        );
        let mut stored = source_job();
        stored["status"] = json!({"uncountedTerminatedPods": {"failed": ["b"]}});
        json_patch::merge(&mut stored, &patch);
        assert_eq!(stored["status"]["uncountedTerminatedPods"], json!({}));
        // A field the host no longer has is removed.
        let gone = json!({"status": {"succeeded": 1}});
        let patch = Job.status_patch(&src, &gone, "m", "t").expect("a change");
        assert_eq!(patch["status"]["uncountedTerminatedPods"], Value::Null);
    }
}
