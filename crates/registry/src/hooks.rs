//! What runs around a committed write of a built-in type, beside its pure strategy
//! ([`crate::strategy`]): the status a controller would write, computed in the same write
//! (CRDs, Workspaces); objects created in the same commit ([`Together`]); and the work
//! after a create, update or delete (a cache of the cluster dropped, a key queued, a new
//! namespace's bootstrap objects). Hooks are registered per built-in type when the
//! registry is assembled ([`Table`]); a custom resource has none.

use std::fmt;
use std::sync::Arc;

use kplane_types::ClusterName;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::cluster_cache::Invalidate;
use crate::error::ApiResult;

/// What a new object is created together with, in the same storage commit
/// ([`WriteHooks::created_together`]), in a registry `R`.
pub struct Together<R> {
    /// The new object's stored form when it is written with `items` (a Workspace: Ready).
    pub obj: Value,
    /// The objects, in order, each admitted, validated and hooked as by a create of its
    /// own with its own write parameters. If any is refused before the commit, the new
    /// object is written alone, as it was before [`WriteHooks::created_together`].
    pub items: Vec<BatchCreate>,
    /// Runs once the commit is over or given up, told whether any of `items` was written.
    pub finish: TogetherDone<R>,
}

/// The end of a [`Together`]: told whether any of its objects was written.
pub type TogetherDone<R> = Box<dyn FnOnce(&R, bool) + Send>;

/// One object of a batch of creates (`Registry::create_batch`, a [`Together`]): admitted,
/// validated and hooked as by a create of its own, with its own write parameters.
pub struct BatchCreate {
    pub t: crate::Target,
    pub obj: Value,
    pub w: crate::options::WriteParams,
    /// The index, in the same batch, of the Namespace the object is created in, when that
    /// namespace is created by the batch (before the object): admission takes it as
    /// existing, as it is when the object is. If that namespace cannot be prepared, the
    /// object is refused as in a missing namespace; if its write fails (it exists
    /// already), the object is written all the same: use it for a new cluster's
    /// namespaces only.
    pub in_new_namespace: Option<usize>,
    /// Whether the type's `after_create` hook runs once the object is stored; false when
    /// the batch carries what the hook would create (a new namespace's bootstrap objects).
    pub hook: bool,
}

impl BatchCreate {
    /// An object created as by `Registry::create`.
    pub fn new(t: crate::Target, obj: Value, w: crate::options::WriteParams) -> BatchCreate {
        BatchCreate {
            t,
            obj,
            w,
            in_new_namespace: None,
            hook: true,
        }
    }
}

/// One built-in type's work around its writes, given the registry `R` it is registered
/// with (kplane's `Registry`; this contract names none). Every method does nothing by
/// default; the three `after_*` methods call [`WriteHooks::after_write`] unless a type
/// overrides them.
#[async_trait::async_trait]
pub trait WriteHooks<R: Sync>: Send + Sync + fmt::Debug {
    /// The status a controller would write, computed in the same write (CRDs).
    async fn controller_status(
        &self,
        _reg: &R,
        _cluster: &ClusterName,
        _obj: &mut Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Objects to create in the same commit as a new object of this type (a create with
    /// an explicit name, not a dry run), once `obj` (its stored form) has passed admission
    /// and validation; `None`, the default, writes it alone.
    async fn created_together(
        &self,
        _reg: &R,
        _cluster: &ClusterName,
        _obj: &Value,
    ) -> ApiResult<Option<Together<R>>> {
        Ok(None)
    }

    /// After any committed write of an object of the type in `cluster` (what the three
    /// hooks below do unless a type overrides them): a type whose objects feed a
    /// per-cluster cache drops the cluster's entry here, so the writer's next request
    /// sees the change.
    fn after_write(&self, _reg: &R, _cluster: &ClusterName) {}

    /// After a create is committed.
    async fn after_create(&self, reg: &R, cluster: &ClusterName, _name: &str) -> ApiResult<()> {
        self.after_write(reg, cluster);
        Ok(())
    }

    /// After an update (or a delete that marked the object) is committed; `deleting`
    /// when the object carries a deletionTimestamp.
    async fn after_update(
        &self,
        reg: &R,
        cluster: &ClusterName,
        _name: &str,
        _deleting: bool,
    ) -> ApiResult<()> {
        self.after_write(reg, cluster);
        Ok(())
    }

    /// After the object is gone from storage.
    async fn after_delete(&self, reg: &R, cluster: &ClusterName, _name: &str) -> ApiResult<()> {
        self.after_write(reg, cluster);
        Ok(())
    }
}

/// The hooks of a type whose objects feed a per-cluster cache (compiled RBAC, webhooks,
/// admission policies): the cluster's entry is dropped after every committed write, so
/// the writer's next request sees the change. They need nothing of the registry.
#[derive(Debug)]
pub struct DropCached(pub Arc<dyn Invalidate>);

impl<R: Sync> WriteHooks<R> for DropCached {
    fn after_write(&self, _reg: &R, cluster: &ClusterName) {
        self.0.invalidate(cluster.as_str());
    }
}

/// The hooks of a type that has none.
#[derive(Debug)]
struct NoHooks;

impl<R: Sync> WriteHooks<R> for NoHooks {}

static NO_HOOKS: NoHooks = NoHooks;

/// The built-in types' hooks, by group and plural (a handful: a scan compares a few
/// strings and allocates nothing).
#[derive(Debug)]
pub struct Table<R: Sync>(Vec<(String, String, Arc<dyn WriteHooks<R>>)>);

impl<R: Sync> Default for Table<R> {
    fn default() -> Self {
        Table(Vec::new())
    }
}

impl<R: Sync> Table<R> {
    /// Registers the hooks of built-in type `group`/`plural`.
    pub fn with(mut self, group: &str, plural: &str, hooks: Arc<dyn WriteHooks<R>>) -> Table<R> {
        self.0.push((group.to_string(), plural.to_string(), hooks));
        self
    }

    /// The (group, plural) of each type with hooks.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(g, p, _)| (g.as_str(), p.as_str()))
    }

    /// The hooks of `rt`: a custom resource has none, even where its group and plural
    /// are those of a built-in type's.
    pub fn of(&self, rt: &ResourceType) -> &dyn WriteHooks<R> {
        if rt.is_custom() {
            return &NO_HOOKS;
        }
        match self
            .0
            .iter()
            .find(|(g, p, _)| *g == rt.group && *p == rt.plural)
        {
            Some((_, _, h)) => h.as_ref(),
            None => &NO_HOOKS,
        }
    }
}
