//! The SyncTarget as the syncer sees it: its spec (which resources to sync), its deletion
//! (drain), and the status the syncer writes: the heartbeat (lastHeartbeatTime,
//! syncerVersion, syncerIdentity, syncedObjects, Ready=True HeartbeatReceived) and
//! Drained=True once the host objects are gone.

use std::sync::Arc;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{json, Value};

use crate::error::{KubeContext as _, Result};
use crate::kinds::{kind_for, SyncedKind};

/// The SyncTarget API of the target's cluster.
#[derive(Debug, Clone)]
pub struct TargetApi {
    api: Api<DynamicObject>,
    name: String,
}

fn synctarget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("sync.kplane.io", "v1alpha1", "SyncTarget"),
        "synctargets",
    )
}

/// The conditions `existing` with the condition `cond` (same type replaced); the
/// transition time is kept when the status did not change.
pub fn with_condition(existing: &[Value], mut cond: Value, now: &str) -> Vec<Value> {
    let ty = cond.get("type").cloned().unwrap_or(Value::Null);
    let previous = existing.iter().find(|c| c.get("type") == Some(&ty));
    let transition = match previous {
        Some(p) if p.get("status") == cond.get("status") => p
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or_else(|| json!(now)),
        _ => json!(now),
    };
    if let Some(c) = cond.as_object_mut() {
        c.insert("lastTransitionTime".into(), transition);
    }
    let mut out: Vec<Value> = existing
        .iter()
        .filter(|c| c.get("type") != Some(&ty))
        .cloned()
        .collect();
    out.push(cond);
    out
}

/// The synced types the SyncTarget's spec lists (default: batch/v1 jobs); those the syncer
/// does not know are logged and skipped.
pub fn synced_kinds(target: &Value) -> Vec<Arc<dyn SyncedKind>> {
    let listed = target.pointer("/spec/resources").and_then(Value::as_array);
    let default = vec![json!({"group": "batch", "version": "v1", "resource": "jobs"})];
    let listed = match listed {
        Some(l) if !l.is_empty() => l.clone(),
        _ => default,
    };
    let mut out: Vec<Arc<dyn SyncedKind>> = Vec::new();
    for r in listed {
        let f = |k: &str| {
            r.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let (g, v, res) = (f("group"), f("version"), f("resource"));
        match kind_for(&g, &v, &res) {
            Some(k) => out.push(k),
            None => {
                tracing::warn!(group = %g, version = %v, resource = %res, "this syncer cannot sync this resource; skipped")
            }
        }
    }
    out
}

impl TargetApi {
    pub fn new(client: kube::Client, name: &str) -> Self {
        TargetApi {
            api: Api::all_with(client, &synctarget_resource()),
            name: name.to_owned(),
        }
    }

    /// The SyncTarget, `None` when it does not exist.
    pub async fn get(&self) -> Result<Option<Value>> {
        let t = self
            .api
            .get_opt(&self.name)
            .await
            .ctx(|| format!("reading SyncTarget {}", self.name))?;
        Ok(t.map(|t| serde_json::to_value(t).unwrap_or(Value::Null)))
    }

    /// Writes one heartbeat; `current` is the SyncTarget as just read.
    pub async fn heartbeat(
        &self,
        current: &Value,
        identity: &str,
        version: &str,
        synced: usize,
        now: &str,
    ) -> Result<()> {
        let existing = conditions(current);
        let ready = json!({
            "type": "Ready", "status": "True", "reason": "HeartbeatReceived",
            "message": format!("syncer {identity} is syncing"),
        });
        let patch = json!({"status": {
            "lastHeartbeatTime": now,
            "syncerVersion": version,
            "syncerIdentity": identity,
            "syncedObjects": synced,
            "conditions": with_condition(&existing, ready, now),
        }});
        self.patch_status(&patch).await
    }

    /// Sets Drained=True (after every host object of the target is gone).
    pub async fn drained(&self, current: &Value, now: &str) -> Result<()> {
        let drained = json!({
            "type": "Drained", "status": "True", "reason": "HostObjectsRemoved",
            "message": "the syncer removed every host object of this target",
        });
        let patch = json!({"status": {
            "syncedObjects": 0,
            "conditions": with_condition(&conditions(current), drained, now),
        }});
        self.patch_status(&patch).await
    }

    async fn patch_status(&self, patch: &Value) -> Result<()> {
        self.api
            .patch_status(&self.name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .ctx(|| format!("writing the status of SyncTarget {}", self.name))?;
        Ok(())
    }
}

fn conditions(target: &Value) -> Vec<Value> {
    target
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_transition_time_while_unchanged() {
        let existing = vec![
            json!({"type": "Ready", "status": "True", "reason": "HeartbeatReceived", "lastTransitionTime": "t0"}),
            json!({"type": "Other", "status": "True"}),
        ];
        let ready = json!({"type": "Ready", "status": "True", "reason": "HeartbeatReceived"});
        let out = with_condition(&existing, ready, "t1");
        assert_eq!(out.len(), 2);
        assert_eq!(out[1]["lastTransitionTime"], "t0");
        let back = with_condition(
            &[json!({"type": "Ready", "status": "False", "lastTransitionTime": "t0"})],
            json!({"type": "Ready", "status": "True"}),
            "t2",
        );
        assert_eq!(back[0]["lastTransitionTime"], "t2");
    }

    #[test]
    fn resources_default_to_jobs() {
        let kinds = synced_kinds(&json!({"spec": {}}));
        assert_eq!(kinds.len(), 1);
        assert_eq!(kinds[0].api_resource().plural, "jobs");
        let none = synced_kinds(
            &json!({"spec": {"resources": [{"group": "apps", "version": "v1", "resource": "deployments"}]}}),
        );
        assert!(none.is_empty());
    }
}
