//! Leader election with a coordination.k8s.io/v1 Lease `kube-system/kplane-syncer-<target>`
//! in the SyncTarget's logical cluster (reached through the sync endpoint), so two syncers
//! for one target never both sync. As client-go's leader election: a Lease held by another
//! identity is taken over only after it went unrenewed for its whole duration, measured on
//! this syncer's clock from when it last saw the record change (no clock skew between
//! syncers matters); the holder renews every third of the duration and gives up when it
//! could not renew for two thirds of it.

use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{json, Value};

use crate::error::{is_status, KubeContext as _, Result};

/// See the module docs.
#[derive(Debug)]
pub struct LeaderElector {
    api: Api<DynamicObject>,
    name: String,
    identity: String,
    duration: Duration,
    /// The last record seen held by someone else (holder, renewTime) and when it was seen.
    observed: Option<(String, Instant)>,
}

fn lease_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease"),
        "leases",
    )
}

fn micro_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

impl LeaderElector {
    /// `client` is the SyncTarget cluster's client.
    pub fn new(client: kube::Client, name: String, identity: String, duration: Duration) -> Self {
        LeaderElector {
            api: Api::namespaced_with(client, "kube-system", &lease_resource()),
            name,
            identity,
            duration,
            observed: None,
        }
    }

    /// How often the holder renews (and a waiting syncer tries again).
    pub fn retry_period(&self) -> Duration {
        self.duration / 3
    }

    /// How long the holder keeps syncing without a successful renewal.
    pub fn renew_deadline(&self) -> Duration {
        self.duration * 2 / 3
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits until this syncer holds the Lease.
    pub async fn acquire(&mut self) -> Result<()> {
        let mut waiting_logged = String::new();
        loop {
            match self.try_acquire_or_renew().await {
                Ok(None) => {
                    tracing::info!(lease = %self.name, identity = %self.identity, "acquired the leader Lease");
                    return Ok(());
                }
                Ok(Some(holder)) => {
                    if holder != waiting_logged {
                        tracing::info!(lease = %self.name, %holder, "another syncer holds the leader Lease; waiting");
                        waiting_logged = holder;
                    }
                }
                Err(e) => {
                    tracing::warn!(lease = %self.name, error = %e, "leader election failed; retrying")
                }
            }
            tokio::time::sleep(self.retry_period()).await;
        }
    }

    /// Renews the Lease: `Ok(true)` while this syncer holds it.
    pub async fn renew(&mut self) -> Result<bool> {
        Ok(self.try_acquire_or_renew().await?.is_none())
    }

    /// Gives the Lease up (on shutdown), so another syncer need not wait for it to expire.
    pub async fn release(&mut self) {
        let Ok(Some(lease)) = self.api.get_opt(&self.name).await else {
            return;
        };
        let lease = serde_json::to_value(&lease).unwrap_or(Value::Null);
        if lease
            .pointer("/spec/holderIdentity")
            .and_then(Value::as_str)
            != Some(&self.identity)
        {
            return;
        }
        let patch = json!({
            "metadata": {"resourceVersion": lease.pointer("/metadata/resourceVersion")},
            "spec": {"holderIdentity": null, "leaseDurationSeconds": 1, "renewTime": micro_time(Utc::now())},
        });
        match self
            .api
            .patch(
                &self.name,
                &Default::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => tracing::info!(lease = %self.name, "released the leader Lease"),
            Err(e) => {
                tracing::warn!(lease = %self.name, error = %e, "releasing the leader Lease failed")
            }
        }
    }

    /// `Ok(None)` when this syncer holds the Lease afterwards, else the other holder.
    async fn try_acquire_or_renew(&mut self) -> Result<Option<String>> {
        let now = Utc::now();
        let secs = i64::try_from(self.duration.as_secs())
            .unwrap_or(i64::MAX)
            .max(1);
        let current = self
            .api
            .get_opt(&self.name)
            .await
            .ctx(|| format!("reading Lease kube-system/{}", self.name))?;
        let Some(current) = current else {
            let lease: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": "kube-system"},
                "spec": {
                    "holderIdentity": self.identity,
                    "leaseDurationSeconds": secs,
                    "acquireTime": micro_time(now),
                    "renewTime": micro_time(now),
                    "leaseTransitions": 0,
                },
            }))
            .map_err(|e| crate::Error::Config(format!("building the Lease: {e}")))?;
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(None),
                Err(e) if is_status(&e, 409) => Ok(Some("(someone else)".into())),
                Err(e) => Err(e).ctx(|| format!("creating Lease kube-system/{}", self.name)),
            };
        };
        let mut lease = serde_json::to_value(&current).unwrap_or(Value::Null);
        let holder = lease
            .pointer("/spec/holderIdentity")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let renew = lease
            .pointer("/spec/renewTime")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let their_secs = lease
            .pointer("/spec/leaseDurationSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(self.duration.as_secs());
        let ours = holder == self.identity;
        if !ours && !holder.is_empty() {
            let record = format!("{holder}\n{renew}");
            let since = match &self.observed {
                Some((r, t)) if *r == record => *t,
                _ => {
                    self.observed = Some((record, Instant::now()));
                    Instant::now()
                }
            };
            if since.elapsed() < Duration::from_secs(their_secs) {
                return Ok(Some(holder));
            }
            tracing::info!(lease = %self.name, previous = %holder, "the leader Lease expired; taking it over");
        }
        let spec = lease.get_mut("spec").and_then(Value::as_object_mut);
        let Some(spec) = spec else {
            return Ok(Some("(a Lease without spec)".into()));
        };
        if !ours {
            let transitions = spec
                .get("leaseTransitions")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            spec.insert("holderIdentity".into(), json!(self.identity));
            spec.insert("acquireTime".into(), json!(micro_time(now)));
            spec.insert("leaseTransitions".into(), json!(transitions + 1));
        }
        spec.insert("leaseDurationSeconds".into(), json!(secs));
        spec.insert("renewTime".into(), json!(micro_time(now)));
        let lease: DynamicObject = serde_json::from_value(lease)
            .map_err(|e| crate::Error::Config(format!("building the Lease: {e}")))?;
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                self.observed = None;
                Ok(None)
            }
            Err(e) if is_status(&e, 409) => Ok(Some("(someone else, just now)".into())),
            Err(e) => Err(e).ctx(|| format!("updating Lease kube-system/{}", self.name)),
        }
    }
}
