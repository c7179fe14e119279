//! The quota model: limits, usage counts per logical cluster, and the checks a write
//! passes ([`Quotas`]), kept by the storage decorator (`storage`).

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// The name a refusal gives a limit of the Workspace's `spec.quota`.
pub const WORKSPACE_QUOTA: &str = "workspace";
/// The name a refusal gives a limit of the server's default.
pub const DEFAULT_QUOTA: &str = "server-default";
/// The quota resource name of the total object count.
pub const OBJECTS: &str = "count/*";
/// The quota resource name of the stored bytes.
pub const BYTES: &str = "storage/bytes";

/// Limits of one logical cluster; `None` (or no entry) is no limit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Objects in all.
    pub objects: Option<u64>,
    /// Bytes of the stored objects (their serialized JSON).
    pub bytes: Option<u64>,
    /// Objects per resource, keyed by `<resource>` (core) or `<resource>.<group>`.
    pub resources: BTreeMap<String, u64>,
}

impl Limits {
    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        self.objects.is_none() && self.bytes.is_none() && self.resources.is_empty()
    }

    /// A Workspace's `spec.quota` (`None` when it has none). Errors name the field.
    pub fn from_workspace(ws: &Value) -> Result<Option<Limits>, (String, String)> {
        let q = match ws.pointer("/spec/quota") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(q)) => q,
            Some(_) => return Err(("spec.quota".into(), "must be an object".into())),
        };
        let count = |field: &str, v: &Value| {
            v.as_u64().ok_or_else(|| {
                (
                    field.to_string(),
                    "must be a non-negative integer".to_string(),
                )
            })
        };
        let mut l = Limits::default();
        if let Some(v) = q.get("objects").filter(|v| !v.is_null()) {
            l.objects = Some(count("spec.quota.objects", v)?);
        }
        if let Some(v) = q.get("bytes").filter(|v| !v.is_null()) {
            l.bytes = Some(count("spec.quota.bytes", v)?);
        }
        match q.get("resources") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    let field = format!("spec.quota.resources[{k}]");
                    if k.is_empty() || k.contains('/') {
                        return Err((field, "must be <resource> or <resource>.<group>".into()));
                    }
                    l.resources.insert(k.clone(), count(&field, v)?);
                }
            }
            Some(_) => {
                return Err((
                    "spec.quota.resources".into(),
                    "must be a map of resource names to counts".into(),
                ))
            }
        }
        Ok(Some(l))
    }
}

/// The quota resource name of a storage resource (`"<group>/<resource>"`): `configmaps`,
/// `deployments.apps`.
pub fn resource_name(storage_resource: &str) -> String {
    match storage_resource.split_once('/') {
        Some(("", r)) => r.to_string(),
        Some((g, r)) => format!("{r}.{g}"),
        None => storage_resource.to_string(),
    }
}

/// What a logical cluster holds, as counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub objects: u64,
    pub bytes: u64,
    /// Objects per quota resource name ([`resource_name`]); resources with none are absent.
    pub resources: BTreeMap<String, u64>,
}

impl Usage {
    /// By quota resource name, as `status.quota.used` shows it.
    pub fn by_name(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::from([
            (OBJECTS.to_string(), self.objects),
            (BYTES.to_string(), self.bytes),
        ]);
        for (r, n) in &self.resources {
            out.insert(format!("count/{r}"), *n);
        }
        out
    }
}

/// One cluster's counts: derived from storage once (`init`), then kept by the decorator.
#[derive(Debug, Default)]
pub(crate) struct ClusterUsage {
    pub(crate) init: tokio::sync::OnceCell<()>,
    counts: Mutex<Usage>,
    /// Set by every change, taken by the status controller (`status.rs`).
    changed: AtomicBool,
}

/// A change of one cluster's usage by one write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Delta {
    /// The quota resource name of the object written.
    pub(crate) resource: String,
    /// +1 create, -1 delete, 0 update.
    pub(crate) objects: i64,
    pub(crate) bytes: i64,
}

impl Delta {
    pub(super) fn inverse(&self) -> Delta {
        Delta {
            resource: self.resource.clone(),
            objects: -self.objects,
            bytes: -self.bytes,
        }
    }
}

pub(super) fn add(v: u64, d: i64) -> u64 {
    if d >= 0 {
        v.saturating_add(d.unsigned_abs())
    } else {
        v.saturating_sub(d.unsigned_abs())
    }
}

impl ClusterUsage {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The counts now.
    pub(crate) fn snapshot(&self) -> Usage {
        self.lock().clone()
    }

    /// Applies `d` unconditionally (the derivation, a delete, a release).
    pub(crate) fn apply(&self, d: &Delta) {
        apply(&mut self.lock(), d);
        self.changed.store(true, Ordering::Relaxed);
    }

    /// Applies `d` if no limit of `limits` it increases is exceeded; otherwise changes
    /// nothing and says why, in upstream's words. Checked and applied under one lock:
    /// of two writes racing for the last slot, exactly one gets it.
    pub(crate) fn reserve(&self, d: &Delta, limits: &Effective) -> Result<(), String> {
        let mut u = self.lock();
        if d.objects > 0 {
            let used = u.resources.get(&d.resource).copied().unwrap_or(0);
            if let Some((limit, name)) = limits.resource(&d.resource) {
                if add(used, d.objects) > limit {
                    let r = format!("count/{}", d.resource);
                    return Err(exceeded(name, &r, d.objects, used, limit));
                }
            }
            if let Some((limit, name)) = limits.objects {
                if add(u.objects, d.objects) > limit {
                    return Err(exceeded(name, OBJECTS, d.objects, u.objects, limit));
                }
            }
        }
        if d.bytes > 0 {
            if let Some((limit, name)) = limits.bytes {
                if add(u.bytes, d.bytes) > limit {
                    return Err(exceeded(name, BYTES, d.bytes, u.bytes, limit));
                }
            }
        }
        apply(&mut u, d);
        self.changed.store(true, Ordering::Relaxed);
        Ok(())
    }
}

pub(super) fn apply(u: &mut Usage, d: &Delta) {
    u.objects = add(u.objects, d.objects);
    u.bytes = add(u.bytes, d.bytes);
    let left = {
        let r = u.resources.entry(d.resource.clone()).or_default();
        *r = add(*r, d.objects);
        *r
    };
    if left == 0 {
        u.resources.remove(&d.resource);
    }
}

/// Upstream's ResourceQuota refusal (`controller.go`, `checkRequest`).
pub(super) fn exceeded(
    quota: &str,
    resource: &str,
    requested: i64,
    used: u64,
    limit: u64,
) -> String {
    format!(
        "exceeded quota: {quota}, requested: {resource}={requested}, used: {resource}={used}, limited: {resource}={limit}"
    )
}

/// The limits in force for one cluster, each with the name of the quota it comes from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Effective {
    objects: Option<(u64, &'static str)>,
    bytes: Option<(u64, &'static str)>,
    set: Option<Arc<Limits>>,
    default: Arc<Limits>,
}

impl Effective {
    pub(super) fn resource(&self, r: &str) -> Option<(u64, &'static str)> {
        if let Some(l) = self.set.as_ref().and_then(|s| s.resources.get(r)) {
            return Some((*l, WORKSPACE_QUOTA));
        }
        self.default.resources.get(r).map(|l| (*l, DEFAULT_QUOTA))
    }
}

/// Every cluster's limits and counts, shared by the registry and its [`QuotaStorage`].
#[derive(Debug, Default)]
pub struct Quotas {
    /// The server's default, for every cluster but `root`.
    default: RwLock<Arc<Limits>>,
    /// Limits from Workspaces, by cluster.
    set: RwLock<HashMap<String, Arc<Limits>>>,
    /// Counts, by cluster (an entry is made on the first write after start-up).
    usage: RwLock<HashMap<String, Arc<ClusterUsage>>>,
    /// Refused writes, by quota resource name (for `/metrics`).
    rejections: Mutex<BTreeMap<String, u64>>,
}

impl Quotas {
    /// Sets the server's default limits.
    pub fn set_default(&self, limits: Limits) {
        *self.default.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(limits);
    }

    /// The server's default limits.
    pub fn default_limits(&self) -> Arc<Limits> {
        self.default
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Sets (or, with `None`, clears) the limits a Workspace gives `cluster`.
    pub fn set_limits(&self, cluster: &str, limits: Option<Limits>) {
        let mut set = self.set.write().unwrap_or_else(PoisonError::into_inner);
        match limits {
            Some(l) => {
                set.insert(cluster.to_string(), Arc::new(l));
            }
            None => {
                set.remove(cluster);
            }
        }
    }

    /// The limits a Workspace gives `cluster`, if any.
    pub fn limits(&self, cluster: &str) -> Option<Arc<Limits>> {
        self.set
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cluster)
            .cloned()
    }

    /// The limits in force for `cluster`: its Workspace's, field by field over the
    /// server's default; none for `root`.
    pub(crate) fn effective(&self, cluster: &str) -> Effective {
        if cluster == "root" {
            return Effective::default();
        }
        let default = self.default_limits();
        let set = self.limits(cluster);
        let pick = |own: Option<u64>, def: Option<u64>| match own {
            Some(v) => Some((v, WORKSPACE_QUOTA)),
            None => def.map(|v| (v, DEFAULT_QUOTA)),
        };
        Effective {
            objects: pick(set.as_ref().and_then(|s| s.objects), default.objects),
            bytes: pick(set.as_ref().and_then(|s| s.bytes), default.bytes),
            set,
            default,
        }
    }

    /// The counts of `cluster` (made, not yet derived, when there are none).
    pub(crate) fn entry(&self, cluster: &str) -> Arc<ClusterUsage> {
        if let Some(u) = self
            .usage
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cluster)
        {
            return u.clone();
        }
        self.usage
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(cluster.to_string())
            .or_default()
            .clone()
    }

    /// Forgets the counts of `cluster` (its keys were deleted, or a write's outcome is
    /// unknown): the next write derives them from storage again.
    pub(crate) fn forget(&self, cluster: &str) {
        self.usage
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(cluster);
    }

    /// What `cluster` holds, when counted since start-up (`None` before its first write).
    pub fn usage(&self, cluster: &str) -> Option<Usage> {
        let u = self
            .usage
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cluster)
            .cloned()?;
        u.init.initialized().then(|| u.snapshot())
    }

    /// The clusters whose counts changed since the last call (counted ones only).
    pub(crate) fn take_changed(&self) -> Vec<String> {
        let usage = self.usage.read().unwrap_or_else(PoisonError::into_inner);
        usage
            .iter()
            .filter(|(_, u)| u.init.initialized() && u.changed.swap(false, Ordering::Relaxed))
            .map(|(c, _)| c.clone())
            .collect()
    }

    /// Marks `cluster`'s counts changed again (its status write failed: retried later).
    pub(crate) fn mark_changed(&self, cluster: &str) {
        if let Some(u) = self
            .usage
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cluster)
        {
            u.changed.store(true, Ordering::Relaxed);
        }
    }

    /// The limits in force for `cluster` by quota resource name (`count/*`,
    /// `storage/bytes`, `count/<resource>`), as `status.quota.hard` shows them.
    pub fn hard(&self, cluster: &str) -> BTreeMap<String, u64> {
        let e = self.effective(cluster);
        let mut out = BTreeMap::new();
        if let Some((n, _)) = e.objects {
            out.insert(OBJECTS.to_string(), n);
        }
        if let Some((n, _)) = e.bytes {
            out.insert(BYTES.to_string(), n);
        }
        let names = e.default.resources.keys();
        let names = names.chain(e.set.iter().flat_map(|s| s.resources.keys()));
        for r in names {
            if let Some((n, _)) = e.resource(r) {
                out.insert(format!("count/{r}"), n);
            }
        }
        out
    }

    /// Counts a refusal for `/metrics`.
    pub(crate) fn count_rejection(&self, resource: &str) {
        *self
            .rejections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(resource.to_string())
            .or_default() += 1;
    }

    /// Refused writes so far, by quota resource name of the object refused.
    pub fn rejections(&self) -> BTreeMap<String, u64> {
        self.rejections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
