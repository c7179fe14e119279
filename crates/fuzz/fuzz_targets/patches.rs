//! JSON, merge and strategic merge patches applied to a ConfigMap and a Job. Input: the
//! first byte picks the patch type, the rest is the patch document (JSON).
#![no_main]
use kplane_registry::patch::{self, Document, PatchType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(body) else {
        return;
    };
    let ty = match kind % 3 {
        0 => PatchType::Json,
        1 => PatchType::Merge,
        _ => PatchType::Strategic,
    };
    let Ok(parsed) = patch::parse(ty, Document::new(doc)) else {
        return;
    };
    let targets = [
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"k": "v"}}),
        serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j"}, "spec": {"template": {"spec": {
                "containers": [{"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]}],
                "restartPolicy": "Never"}}}}),
    ];
    let types = kplane_registry::builtin_types::builtin();
    for obj in &targets {
        let plural = if obj["kind"] == "Job" {
            "jobs"
        } else {
            "configmaps"
        };
        if let Some(rt) = types.iter().find(|t| t.plural == plural) {
            let _ = patch::apply(&parsed, obj, rt);
        }
    }
});
