//! `ttlSecondsAfterFinished` for Jobs, as kube-controller-manager's ttl-after-finished
//! controller: a Job with the field set that has finished (a Complete or Failed condition
//! with status True) is deleted, with `propagationPolicy: Foreground` and its uid as
//! precondition, once the TTL has passed since it finished (the condition's
//! `lastTransitionTime`; for Complete without one, `status.completionTime`). A Job whose
//! finish time is unknown, or that is already being deleted, is left alone.
//!
//! Fed by the shared informer ([`Feed`]): every change of a Job sets or clears its
//! deadline in the controllers' timers (`timers`); when it comes, [`JobTtl`] reads
//! the Job again and deletes it if it still expired (a Job changed meanwhile may have a
//! later deadline, or none). Nothing polls the Jobs.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use kplane_storage::{Key, KeyValue};
use serde_json::Value;

use super::informer::InformerHandler;
use super::timers::instant_at;
use super::Controller;
use super::{write_failed, ObjRef};
use crate::error::ApiResult;
use crate::write::DeleteParams;
use crate::{meta, Registry, Target};

/// The controller's name (logs, and its internal user).
pub const CONTROLLER: &str = "ttl-after-finished-controller";

/// The internal user the controller deletes as.
pub const USER: &str = "system:kplane:ttl-after-finished-controller";

/// The stored form of batch/v1 Jobs.
pub(crate) const JOBS: &str = "batch/jobs";

fn time_at(v: &Value, pointer: &str) -> Option<DateTime<Utc>> {
    let s = v.pointer(pointer)?.as_str()?;
    Some(DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&Utc))
}

/// When a finished Job finished (upstream's `jobFinishTime`); `None` when it has not, or
/// the time is not recorded.
pub(crate) fn finish_time(job: &Value) -> Option<DateTime<Utc>> {
    let conds = job.pointer("/status/conditions")?.as_array()?;
    let c = conds.iter().find(|c| {
        matches!(
            c.get("type").and_then(Value::as_str),
            Some("Complete" | "Failed")
        ) && c.get("status").and_then(Value::as_str) == Some("True")
    })?;
    time_at(c, "/lastTransitionTime").or_else(|| {
        (c.get("type").and_then(Value::as_str) == Some("Complete"))
            .then(|| time_at(job, "/status/completionTime"))
            .flatten()
    })
}

/// When the Job expires: finished plus `ttlSecondsAfterFinished`; `None` when it does not
/// (no TTL, not finished, or already being deleted).
pub(crate) fn expires_at(job: &Value) -> Option<DateTime<Utc>> {
    let ttl = job.pointer("/spec/ttlSecondsAfterFinished")?.as_i64()?;
    if ttl < 0 || meta::is_deleting(job) {
        return None;
    }
    Some(finish_time(job)? + chrono::Duration::seconds(ttl))
}

/// Deletes the Job of `r` if it expired; reschedules it when not yet.
pub(super) async fn job_ttl(reg: &Registry, r: &ObjRef) -> ApiResult<bool> {
    let key = Key::new(
        r.cluster.as_str(),
        JOBS,
        r.namespace.as_str(),
        r.name.as_str(),
    );
    let Some(kv) = reg.get_by_key(&key).await? else {
        return Ok(true);
    };
    let Ok(job) = serde_json::from_slice::<Value>(&kv.value) else {
        return Ok(true);
    };
    let Some(at) = expires_at(&job) else {
        return Ok(true);
    };
    if at > Utc::now() {
        if let Some(w) = reg.work::<JobTtl>(r.clone()) {
            reg.controllers.timers.schedule(w, instant_at(at));
        }
        return Ok(true);
    }
    let Some(rt) = reg.builtin_catalog().get("batch", "v1", "jobs").cloned() else {
        return Ok(true);
    };
    let t = Target::new(&r.cluster, rt.clone(), Some(r.namespace.clone()));
    let d = DeleteParams {
        precondition_uid: meta::meta_str(&job, "uid").map(str::to_string),
        propagation_policy: Some("Foreground".into()),
        user: Some(kplane_types::UserInfo {
            username: USER.into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    match reg.delete(&t, &r.name, &d).await {
        Ok(_) => {
            tracing::info!(cluster = %r.cluster.as_str(), namespace = %r.namespace, name = %r.name, "finished Job deleted after its ttlSecondsAfterFinished");
            Ok(true)
        }
        // Gone, or another Job of the name (uid precondition): nothing to do.
        Err(e) if e.code() == 404 || e.code() == 409 => Ok(true),
        Err(e) => {
            write_failed(
                CONTROLLER,
                r.cluster.as_str(),
                &rt,
                &r.namespace,
                &r.name,
                &e,
            );
            Ok(false)
        }
    }
}

/// The controller's [`InformerHandler`]: sets or clears each Job's deadline.
pub(crate) struct Feed(pub(crate) Arc<Registry>);

impl InformerHandler for Feed {
    fn on_resync(&self) {}

    fn on_object(&self, kv: &KeyValue, deleted: bool, _replay: bool) {
        if kv.key.resource != JOBS {
            return;
        }
        let Some(r) = ObjRef::of(kv) else {
            return;
        };
        let Some(work) = self.0.work::<JobTtl>(r) else {
            return;
        };
        let timers = &self.0.controllers.timers;
        // Most Jobs have no TTL: those are not decoded.
        let at = if deleted || memchr::memmem::find(&kv.value, b"ttlSecondsAfterFinished").is_none()
        {
            None
        } else {
            serde_json::from_slice::<Value>(&kv.value)
                .ok()
                .and_then(|v| expires_at(&v))
        };
        match at {
            Some(at) => timers.schedule(work, instant_at(at)),
            None => timers.cancel(&work),
        }
    }
}

/// The TTL-after-finished controller, for one finished Job.
pub struct JobTtl;

impl Controller<Registry> for JobTtl {
    type Key = ObjRef;

    fn name(&self) -> &'static str {
        CONTROLLER
    }

    async fn reconcile(&self, registry: &Registry, key: &ObjRef) -> ApiResult<bool> {
        job_ttl(registry, key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_finished_job_expires_its_ttl_after_it_finished() {
        let job = |ttl: Value, conds: Value| {
            json!({"metadata": {"name": "j", "uid": "u"}, "spec": {"ttlSecondsAfterFinished": ttl},
                   "status": {"completionTime": "2026-01-01T00:00:05Z", "conditions": conds}})
        };
        let complete = json!([{"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"},
                              {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:00:04Z"}]);
        let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        assert_eq!(
            expires_at(&job(json!(10), complete.clone())),
            Some(t("2026-01-01T00:00:14Z"))
        );
        assert_eq!(
            expires_at(&job(json!(0), complete.clone())),
            Some(t("2026-01-01T00:00:04Z"))
        );
        // Complete without a transition time: the completion time.
        let bare = json!([{"type": "Complete", "status": "True"}]);
        assert_eq!(
            expires_at(&job(json!(1), bare)),
            Some(t("2026-01-01T00:00:06Z"))
        );
        let failed = json!([{"type": "Failed", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"}]);
        assert_eq!(
            expires_at(&job(json!(1), failed)),
            Some(t("2026-01-01T00:01:01Z"))
        );
        // Failed without a time, not finished, no TTL, being deleted: never.
        assert_eq!(
            expires_at(&job(
                json!(1),
                json!([{"type": "Failed", "status": "True"}])
            )),
            None
        );
        assert_eq!(
            expires_at(&job(
                json!(1),
                json!([{"type": "Complete", "status": "False", "lastTransitionTime": "2026-01-01T00:00:04Z"}])
            )),
            None
        );
        assert_eq!(expires_at(&job(Value::Null, complete.clone())), None);
        let mut deleting = job(json!(1), complete);
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:09Z");
        assert_eq!(expires_at(&deleting), None);
    }

    /// A Job whose TTL passed after it completed is deleted (in the foreground: the
    /// garbage collector lets it go); one with a long TTL and one not finished stay.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn finished_jobs_go_after_their_ttl() {
        use crate::builtin_types::builtin;
        use crate::catalog::Catalog;
        use crate::options::WriteParams;
        use crate::testing::{create_namespace, target};
        use kplane_storage::Storage;
        use std::time::Duration;

        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, queue) = Registry::new(storage.clone(), catalog, String::new(), shutdown);
        reg.ensure_cluster(&kplane_types::ClusterName::root())
            .await
            .unwrap();
        let controllers = super::super::start(&reg, queue, Duration::from_secs(3600), None);
        create_namespace(&reg, "d").await;
        let t = target(&reg, "batch", "jobs", Some("d"));
        let w = WriteParams::default();
        for (name, ttl) in [("short", 1), ("long", 3600), ("running", 0)] {
            let job = json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name},
                "spec": {"ttlSecondsAfterFinished": ttl, "template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
            reg.create(&t, job, &w).await.unwrap();
        }
        let now = meta::now_time();
        for name in ["short", "long"] {
            let kv = reg.get_stored(&t, name).await.unwrap().unwrap();
            let mut job: Value = serde_json::from_slice(&kv.value).unwrap();
            job["status"] = json!({"startTime": now, "completionTime": now, "succeeded": 1,
                "conditions": [
                    {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
                    {"type": "Complete", "status": "True", "lastTransitionTime": now}]});
            reg.update(&t, name, Some("status"), job, &w).await.unwrap();
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while reg.get_stored(&t, "short").await.unwrap().is_some() {
            assert!(tokio::time::Instant::now() < deadline, "never deleted");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(reg.get_stored(&t, "long").await.unwrap().is_some());
        assert!(reg.get_stored(&t, "running").await.unwrap().is_some());
        let long = reg
            .work::<JobTtl>(ObjRef {
                cluster: kplane_types::ClusterName::root(),
                resource: JOBS.into(),
                namespace: "d".into(),
                name: "long".into(),
            })
            .unwrap();
        assert!(reg.controllers.timers.deadline(&long).is_some());
        // Deleted otherwise: its deadline goes.
        reg.delete(&t, "long", &Default::default()).await.unwrap();
        while reg.controllers.timers.deadline(&long).is_some() {
            assert!(tokio::time::Instant::now() < deadline, "deadline kept");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop(controllers);
        storage.shutdown().await.unwrap();
    }
}
