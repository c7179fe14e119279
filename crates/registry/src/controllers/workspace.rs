//! The workspace controller: brings the logical cluster of a Workspace into being and takes
//! it away again.
//!
//! - A new Workspace NAME in cluster P: the child cluster `P:NAME` is bootstrapped (its
//!   default namespaces; from then on it exists, see `clusters.rs`), its template
//!   (`spec.template`) applied (`workspace_template`; a failure turns it Failed for good),
//!   then the Workspace's
//!   `/status` turns Ready with the child's URL (the server's external base URL +
//!   `/clusters/P:NAME`) and a `Ready` condition. Until the server knows its URL the item
//!   waits.
//! - A Workspace marked for deletion (Terminating): writes into the child and its
//!   descendants are refused (from the marking write on: the strategy's hook), the key
//!   ranges of the descendants (deepest first, found through the Workspace objects each
//!   cluster holds) and then of the child are deleted with
//!   [`kplane_storage::Storage::delete_cluster`] in bounded batches, each key with its own
//!   `Deleted` event whose value is the object's last state at the delete's
//!   resourceVersion; the clusters are forgotten (they no longer exist: 404) with their
//!   catalogs, and the `tenancy.kplane.io/workspace` finalizer is dropped, which removes
//!   the Workspace when no other finalizer holds it.
//!
//! Deletion is resumable: a descendant's Workspace object lives in its parent's key range,
//! which is deleted only after that descendant is gone, so a rerun (after an error or a
//! restart, where the leader's informer handler `PendingFeed` queues every deleting
//! Workspace its replay shows)
//! finds exactly the clusters that still hold keys.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kplane_storage::{Key, Prefix};
use kplane_types::{Cause, ClusterName, ClusterScope, Status};
use serde_json::{json, Value};

use super::write_failed;
use super::{Controller, Named};
use crate::cluster_states::ClusterPhase;
use crate::error::{ApiError, ApiResult};
use crate::hooks::{Together, WriteHooks};
use crate::options::WriteParams;
use crate::strategies::workspace::Workspace;
use crate::strategies::workspace::{
    ready_condition, ready_status, TENANCY_GROUP, WORKSPACE_FINALIZER, WORKSPACE_RESOURCE,
};
use crate::{meta, Registry, ResourceType, Target};

/// The controller's name in logs and its field manager.
pub(super) const CONTROLLER: &str = "kplane-workspace-controller";

pub(crate) fn workspace_type(reg: &Registry) -> ApiResult<Arc<ResourceType>> {
    reg.builtin_catalog()
        .get(TENANCY_GROUP, "v1alpha1", "workspaces")
        .cloned()
        .ok_or_else(|| ApiError::internal("workspaces are not registered"))
}

/// Brings Workspace `name` of `cluster` to what it should be; `Ok(false)` to retry.
pub(crate) async fn sync_workspace(
    reg: &Registry,
    cluster: &ClusterName,
    name: &str,
) -> ApiResult<bool> {
    let key = Key::new(cluster, WORKSPACE_RESOURCE, "", name);
    let moved_to = match cluster.child(name).and_then(|c| reg.cluster_phase(&c)) {
        Some(ClusterPhase::Moved { location }) => Some(location),
        _ => None,
    };
    let Some((_, obj)) = reg.get_decoded(&key).await? else {
        if let (Some(child), Some(_)) = (cluster.child(name), &moved_to) {
            // A moved cluster without a Workspace here: its keys go all the same.
            remove_moved_cluster(reg, &child).await?;
        }
        return Ok(true);
    };
    let Some(child) = cluster.child(name) else {
        // Refused at create; a stored one is damaged.
        tracing::warn!(%cluster, name, "workspace with an invalid child path; skipped");
        return Ok(true);
    };
    let t = Target {
        cluster: ClusterScope::One(cluster.clone()),
        rt: workspace_type(reg)?,
        namespace: None,
    };
    if meta::is_deleting(&obj) {
        return paced_deletion(reg, delete_workspace_cluster(reg, &t, name, &child, obj)).await;
    }
    if let Some(location) = moved_to {
        let t = Target {
            cluster: ClusterScope::One(cluster.clone()),
            rt: workspace_type(reg)?,
            namespace: None,
        };
        remove_moved_cluster(reg, &child).await?;
        return report_workspace_moved(reg, &t, name, obj, &location).await;
    }
    if obj.pointer("/status/phase") == Some(&json!("Failed")) {
        // Failed for good (its template did not apply): only deletion changes it.
        return Ok(true);
    }
    let Some(base) = reg.external_url() else {
        return Ok(false);
    };
    let url = format!("{base}/clusters/{child}");
    let status = obj.get("status").cloned().unwrap_or(Value::Null);
    let ready = status
        .pointer("/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    if status["phase"] == "Ready" && status["URL"] == url.as_str() && ready {
        // Run again (queued twice at its creation, or a cluster brought in by an
        // import): only a missing default namespace is written, and checking for one
        // costs reads, not four refused creates through the storage writer.
        if !reg.has_default_namespaces(&child).await? {
            reg.bootstrap_cluster(&child).await?;
        }
        return Ok(true);
    }
    // The owner's binding is written with the default namespaces (one commit for
    // both), before the Workspace turns Ready.
    let w = WriteParams::controller_named(CONTROLLER);
    let binding = reg.workspace_owner_binding(&child, &obj)?;
    let extra = binding
        .into_iter()
        .map(|(t, b)| (t, b, w.clone()))
        .collect();
    reg.bootstrap_cluster_with(&child, extra).await?;
    if let Some(failure) =
        crate::controllers::workspace_template::apply_workspace_template(reg, cluster, &child, &obj)
            .await?
    {
        return crate::controllers::workspace_template::report_workspace_failed(
            reg, &t, name, obj, failure,
        )
        .await;
    }
    let mut next = obj;
    next["status"] = ready_status(&child, &url, Some(&status));
    // `next` carries the resourceVersion it was read at: the update's precondition.
    match reg.update(&t, name, Some("status"), next, &w).await {
        Ok(_) => Ok(true),
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => {
            write_failed(CONTROLLER, cluster.as_str(), &t.rt, "", name, &e);
            Ok(false)
        }
    }
}

/// What a new Workspace `obj` of `cluster` is created together with, in one commit
/// that stores it Ready: its child cluster's bootstrap (the default namespaces, the
/// owner's binding, each namespace's objects), as [`sync_workspace`] would
/// write it next. `None` leaves the child to the controller: a template to apply, no
/// URL known yet, or a child that exists already, is terminating or has a state of its
/// own (moved, being imported), or a Workspace of that name stored already (its
/// controller's work).
pub(crate) async fn workspace_created_together(
    reg: &Registry,
    cluster: &ClusterName,
    obj: &Value,
) -> ApiResult<Option<Together<Registry>>> {
    let templated = obj
        .pointer("/spec/template")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    let name = meta::name_of(obj);
    let (Some(child), Some(base)) = (cluster.child(name), reg.external_url()) else {
        return Ok(None);
    };
    if templated
        || reg.is_marked(&child)
        || reg.is_terminating(&child)
        || reg.cluster_phase(&child).is_some()
    {
        return Ok(None);
    }
    let workspaces = Target::new(cluster, workspace_type(reg)?, None);
    if reg.get_stored(&workspaces, name).await?.is_some() {
        return Ok(None);
    }
    // As the controller's bootstrap: the SyncTargets first, then the mark, pinned
    // while the keys are written; only the one who marked it goes on.
    reg.cache_sync_targets_of_new_cluster(&child).await;
    if !reg.pin_cluster(&child) {
        return Ok(None);
    }
    let w = WriteParams::controller_named(CONTROLLER);
    let items = reg
        .workspace_owner_binding(&child, obj)
        .map(|b| b.into_iter().map(|(t, b)| (t, b, w.clone())).collect())
        .and_then(|extra| reg.bootstrap_items(&child, true, extra));
    let items = match items {
        Ok(items) => items,
        Err(e) => {
            reg.unmark_cluster(&child);
            return Err(e);
        }
    };
    let url = format!("{base}/clusters/{child}");
    let mut ready = obj.clone();
    ready["status"] = ready_status(&child, &url, obj.get("status"));
    let finish = Box::new(move |reg: &Registry, written: bool| {
        if written {
            reg.unpin_cluster(&child);
        } else {
            reg.unmark_cluster(&child);
        }
    });
    Ok(Some(Together {
        obj: ready,
        items,
        finish,
    }))
}

/// Deletes the child cluster of a Terminating Workspace and its descendants, then
/// drops the workspace finalizer.
async fn delete_workspace_cluster(
    reg: &Registry,
    t: &Target,
    name: &str,
    child: &ClusterName,
    obj: Value,
) -> ApiResult<bool> {
    if !meta::finalizers(&obj)
        .iter()
        .any(|f| f == WORKSPACE_FINALIZER)
    {
        // Already done: the Workspace waits for other parties' finalizers only.
        return Ok(true);
    }
    reg.set_terminating(child, true);
    for c in subtree(reg, child).await? {
        reg.erase_cluster(&c).await?;
        if c != *child {
            // Its Workspace object went with its parent's keys, without a hook. The
            // child's own mark stays until its Workspace is gone (the strategy's
            // `after_delete`).
            reg.set_terminating(&c, false);
        }
    }
    // A moved child: its name starts afresh once its Workspace is gone.
    reg.clear_cluster_phase(child).await?;
    let mut next = obj;
    if let Some(Value::Array(fins)) = next.pointer_mut("/metadata/finalizers") {
        fins.retain(|f| f != WORKSPACE_FINALIZER);
    }
    let w = WriteParams::controller_named(CONTROLLER);
    let cluster = t.cluster()?;
    match reg.update(t, name, None, next, &w).await {
        Ok(_) => {}
        Err(e) if e.code() == 404 => {}
        Err(e) => {
            write_failed(CONTROLLER, cluster.as_str(), &t.rt, "", name, &e);
            return Ok(false);
        }
    }
    Ok(true)
}

/// Removes the keys of a moved cluster (it answers 410 from the moment it was marked,
/// whatever is left) and forgets it. Resumable: the state stays, so a rerun (or the
/// start-up, `cluster_states.rs`) deletes what is left.
async fn remove_moved_cluster(reg: &Registry, child: &ClusterName) -> ApiResult<()> {
    reg.erase_cluster(child).await
}

/// Records in a Workspace's status that its cluster moved: `status.URL` is the new
/// location, the `Moved` condition names it, `Ready` is False.
async fn report_workspace_moved(
    reg: &Registry,
    t: &Target,
    name: &str,
    obj: Value,
    location: &str,
) -> ApiResult<bool> {
    let status = obj.get("status").cloned().unwrap_or(Value::Null);
    let has_moved = status
        .pointer("/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Moved" && c["status"] == "True" && c["message"] == location)
        });
    if has_moved && status["URL"] == location {
        return Ok(true);
    }
    let mut conditions: Vec<Value> = status
        .pointer("/conditions")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter(|c| c["type"] != "Ready" && c["type"] != "Moved")
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    conditions.push(ready_condition(
        "False",
        "Moved",
        &format!("the logical cluster has moved to {location}"),
    ));
    conditions.push(json!({
        "type": "Moved",
        "status": "True",
        "reason": "MovedToServer",
        "message": location,
        "lastTransitionTime": meta::now_time(),
    }));
    let mut next = obj;
    next["status"] = json!({"phase": "Ready", "URL": location, "conditions": conditions});
    let w = WriteParams::controller_named(CONTROLLER);
    match reg.update(t, name, Some("status"), next, &w).await {
        Ok(_) => Ok(true),
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => {
            write_failed(CONTROLLER, t.cluster()?.as_str(), &t.rt, "", name, &e);
            Ok(false)
        }
    }
}

/// `root` and every descendant that still holds keys, deepest first, `root` last:
/// children are found through the Workspace objects of each cluster, and through the
/// clusters known to exist (also those created on a first write, without a Workspace).
async fn subtree(reg: &Registry, root: &ClusterName) -> ApiResult<Vec<ClusterName>> {
    let mut found = vec![root.clone()];
    found.extend(reg.existing_descendants(root));
    let mut i = 0;
    while i < found.len() {
        let c = found[i].clone();
        i += 1;
        let res = reg
            .list_by_prefix(
                &Prefix::resource(&c, WORKSPACE_RESOURCE),
                &Default::default(),
                None,
            )
            .await?;
        for kv in res.items {
            if let Some(grandchild) = c.child(&kv.key.name) {
                if !found.contains(&grandchild) {
                    found.push(grandchild);
                }
            }
        }
    }
    // Deepest first; `root` (the shallowest) last.
    found.sort_by(|a, b| b.depth().cmp(&a.depth()).then_with(|| a.cmp(b)));
    Ok(found)
}

/// The Workspace controller: bootstraps a Workspace's logical cluster and reports it Ready, or deletes the cluster of a Terminating one. Its items run on the concurrent pool: a deletion in the background, a bootstrap on the foreground (its creator waits for Ready).
pub struct Workspaces {
    /// Workspace deletions running at once ([`WORKSPACE_DELETIONS`]).
    pub(super) deletions: tokio::sync::Semaphore,
}

impl Default for Workspaces {
    fn default() -> Workspaces {
        Workspaces {
            deletions: tokio::sync::Semaphore::new(WORKSPACE_DELETIONS),
        }
    }
}

impl Controller<Registry> for Workspaces {
    type Key = Named;

    fn name(&self) -> &'static str {
        CONTROLLER
    }

    async fn reconcile(&self, registry: &Registry, key: &Named) -> ApiResult<bool> {
        sync_workspace(registry, &key.cluster, &key.name).await
    }

    fn pooled(&self) -> bool {
        true
    }

    fn in_foreground(&self, registry: &Registry, key: &Named) -> bool {
        let deleting = key
            .cluster
            .child(&key.name)
            .is_some_and(|child| registry.is_terminating(&child));
        !deleting
    }
}

#[async_trait::async_trait]
impl WriteHooks<Registry> for Workspace {
    /// The child path (`<cluster>:<name>`) must be a valid logical cluster name: at most
    /// 253 characters. (A name that is not a DNS-1123 label is refused by the name rule.)
    async fn controller_status(
        &self,
        _reg: &Registry,
        cluster: &ClusterName,
        obj: &mut Value,
    ) -> ApiResult<()> {
        let name = meta::name_of(obj);
        if meta::is_deleting(obj)
            || !kplane_types::validation::is_dns1123_label(name).is_empty()
            || cluster.child(name).is_some()
        {
            return Ok(());
        }
        let most = 253usize.saturating_sub(cluster.as_str().len() + 1);
        let cause = Cause::invalid(
            "metadata.name",
            &json!(name),
            &format!(
                "must be no more than {most} characters: the logical cluster path \"{cluster}:{name}\" would be longer than 253 characters"
            ),
        );
        Err(ApiError::from(Status::invalid(
            TENANCY_GROUP,
            "Workspace",
            name,
            vec![cause],
        )))
    }

    /// A Workspace without a template is stored Ready in the commit that creates its
    /// logical cluster (`controllers::workspace::workspace_created_together`).
    async fn created_together(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        obj: &Value,
    ) -> ApiResult<Option<Together<Registry>>> {
        workspace_created_together(reg, cluster, obj).await
    }

    async fn after_create(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        name: &str,
    ) -> ApiResult<()> {
        reg.refresh_workspace_quota(cluster, name).await?;
        reg.enqueue::<Workspaces>(Named::new(cluster.clone(), name));
        Ok(())
    }

    async fn after_update(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        name: &str,
        deleting: bool,
    ) -> ApiResult<()> {
        reg.refresh_workspace_quota(cluster, name).await?;
        if deleting {
            // From the marking write on, nothing new is written into the child.
            if let Some(child) = cluster.child(name) {
                reg.set_terminating(&child, true);
            }
            reg.enqueue::<Workspaces>(Named::new(cluster.clone(), name));
        }
        Ok(())
    }

    /// The Workspace is gone (its child's key range went before it): the child's name may
    /// be used again.
    async fn after_delete(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        name: &str,
    ) -> ApiResult<()> {
        if let Some(child) = cluster.child(name) {
            reg.set_terminating(&child, false);
            reg.quotas().set_limits(child.as_str(), None);
        }
        Ok(())
    }
}

/// Workspace deletions (a child cluster and its descendants) run at once.
pub const WORKSPACE_DELETIONS: usize = 2;

/// After a deletion its slot stays idle for the deletion's time divided by this.
const PAUSE_DIVISOR: u32 = 2;

/// Longest pause after one deletion.
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// Runs the deletion `f` in one of the [`WORKSPACE_DELETIONS`] slots of the registered
/// Workspace controller, then keeps the slot idle for a part of the time it took (at most
/// [`MAX_PAUSE`]).
pub(crate) async fn paced_deletion<T>(
    reg: &Registry,
    f: impl std::future::Future<Output = T>,
) -> T {
    // The semaphore is never closed; without a permit the deletion still runs.
    let workspaces = reg.controller::<Workspaces>();
    let _permit = match &workspaces {
        Some(w) => w.deletions.acquire().await.ok(),
        None => None,
    };
    let started = Instant::now();
    let out = f.await;
    tokio::time::sleep((started.elapsed() / PAUSE_DIVISOR).min(MAX_PAUSE)).await;
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use kplane_storage::Storage;

    use kplane_types::StatusReason;

    use super::super::run_worker;
    use super::*;
    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use crate::options::WriteParams;
    use crate::DeleteParams;

    const URL: &str = "https://kplane.test:6443";

    fn name(s: &str) -> ClusterName {
        ClusterName::parse(s).unwrap()
    }

    /// A registry over `storage` whose worker runs (when `worker`), started as the server
    /// starts one: the cluster state loaded from storage, `root` bootstrapped.
    async fn registry(
        storage: Arc<dyn Storage>,
        worker: bool,
    ) -> (Arc<Registry>, tokio::sync::watch::Sender<bool>) {
        registry_at(storage, worker, Some(URL)).await
    }

    /// A registry that knows its URL only when `url` is given.
    async fn registry_at(
        storage: Arc<dyn Storage>,
        worker: bool,
        url: Option<&str>,
    ) -> (Arc<Registry>, tokio::sync::watch::Sender<bool>) {
        let (tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, queue) = Registry::new(storage, catalog, String::new(), shutdown);
        if let Some(url) = url {
            reg.set_external_url(url);
        }
        reg.load_cluster_state().await.unwrap();
        reg.ensure_cluster(&ClusterName::root()).await.unwrap();
        if worker {
            tokio::spawn(run_worker(reg.clone(), queue));
        }
        (reg, tx)
    }

    fn open() -> Arc<dyn Storage> {
        crate::testing::memory_store()
    }

    fn target(
        reg: &Registry,
        cluster: &str,
        group: &str,
        plural: &str,
        ns: Option<&str>,
    ) -> Target {
        let rt = reg
            .builtin_catalog()
            .all()
            .iter()
            .find(|rt| rt.group == group && rt.plural == plural)
            .unwrap()
            .clone();
        Target::new(&name(cluster), rt, ns.map(str::to_string))
    }

    fn workspaces(reg: &Registry, cluster: &str) -> Target {
        target(reg, cluster, "tenancy.kplane.io", "workspaces", None)
    }

    async fn create_ws(reg: &Registry, cluster: &str, ws: &str) -> Value {
        let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                         "metadata": {"name": ws}});
        let out = reg
            .create(&workspaces(reg, cluster), obj, &WriteParams::default())
            .await
            .unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    async fn get_ws(reg: &Registry, cluster: &str, ws: &str) -> Option<Value> {
        match reg.get(&workspaces(reg, cluster), ws).await {
            Ok(b) => Some(serde_json::from_slice(&b).unwrap()),
            Err(e) if e.code() == 404 => None,
            Err(e) => panic!("{e:?}"),
        }
    }

    async fn wait_ready(reg: &Registry, cluster: &str, ws: &str) -> Value {
        crate::testing::until("workspace ready", || async {
            get_ws(reg, cluster, ws)
                .await
                .is_some_and(|w| w["status"]["phase"] == "Ready")
        })
        .await;
        get_ws(reg, cluster, ws).await.unwrap()
    }

    async fn keys(reg: &Registry, cluster: &str) -> u64 {
        reg.storage()
            .count(&Prefix::cluster(cluster))
            .await
            .unwrap()
    }

    async fn create_cm(reg: &Registry, cluster: &str, cm: &str) -> ApiResult<Bytes> {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm}});
        reg.create(
            &target(reg, cluster, "", "configmaps", Some("default")),
            obj,
            &WriteParams::default(),
        )
        .await
    }

    /// A Workspace without a template is created Ready: its create is one commit with its
    /// child cluster's bootstrap, and the controller finds nothing left to do.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_workspace_is_created_ready_with_its_child() {
        let (reg, _tx) = registry(open(), true).await;
        let groups = || reg.storage().stats().commit_groups;
        let before = groups();
        let created = create_ws(&reg, "root", "acme").await;
        assert_eq!(
            groups() - before,
            1,
            "one commit for the Workspace and its child"
        );
        assert_eq!(created["status"]["phase"], "Ready");
        assert_eq!(
            created["status"]["URL"],
            format!("{URL}/clusters/root:acme")
        );
        assert_eq!(
            created["metadata"]["finalizers"],
            json!([WORKSPACE_FINALIZER])
        );
        let cond = &created["status"]["conditions"][0];
        assert_eq!(
            (&cond["type"], &cond["status"], &cond["reason"]),
            (
                &json!("Ready"),
                &json!("True"),
                &json!("LogicalClusterReady")
            )
        );
        assert_eq!(created["status"]["conditions"].as_array().unwrap().len(), 1);
        // The child has its default namespaces, each with its own objects.
        let ns = target(&reg, "root:acme", "", "namespaces", None);
        for n in crate::namespaces::DEFAULT_NAMESPACES {
            reg.get(&ns, n).await.unwrap();
            let cm = target(&reg, "root:acme", "", "configmaps", Some(n));
            reg.get(&cm, "kube-root-ca.crt").await.unwrap();
        }
        // The controller's run (queued by the create) writes nothing more.
        let keys_now = keys(&reg, "root:acme").await;
        assert!(sync_workspace(&reg, &name("root"), "acme").await.unwrap());
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert_eq!(get_ws(&reg, "root", "acme").await.unwrap(), created);
        assert_eq!(keys(&reg, "root:acme").await, keys_now);
        // The same name again: 409, and nothing changes.
        let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                         "metadata": {"name": "acme"}});
        let again = reg
            .create(&workspaces(&reg, "root"), obj, &WriteParams::default())
            .await
            .unwrap_err();
        assert_eq!(again.code(), 409);
        assert_eq!(keys(&reg, "root:acme").await, keys_now);
        // Nested: a workspace inside the child.
        let nested = create_ws(&reg, "root:acme", "team-a").await;
        assert_eq!(nested["status"]["phase"], "Ready");
        assert_eq!(
            nested["status"]["URL"],
            format!("{URL}/clusters/root:acme:team-a")
        );
    }

    /// A Workspace created before the server knows its URL starts Initializing; the
    /// controller bootstraps its child once the URL is known and reports it Ready (three
    /// commits: the create, the bootstrap, the status).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_workspace_created_before_the_url_is_known_is_made_ready_by_the_controller() {
        let (reg, _tx) = registry_at(open(), true, None).await;
        let groups = || reg.storage().stats().commit_groups;
        let before = groups();
        let created = create_ws(&reg, "root", "acme").await;
        assert_eq!(created["status"]["phase"], "Initializing");
        assert_eq!(
            created["metadata"]["finalizers"],
            json!([WORKSPACE_FINALIZER])
        );
        assert_eq!(created["status"]["conditions"][0]["status"], "False");
        assert!(!reg.is_marked(&name("root:acme")));
        reg.set_external_url(URL);
        let ws = wait_ready(&reg, "root", "acme").await;
        assert_eq!(groups() - before, 3, "create, bootstrap, status");
        assert_eq!(ws["status"]["URL"], format!("{URL}/clusters/root:acme"));
        let cond = &ws["status"]["conditions"][0];
        assert_eq!(
            (&cond["type"], &cond["status"]),
            (&json!("Ready"), &json!("True"))
        );
        assert_eq!(cond["reason"], "LogicalClusterReady");
        let ns = target(&reg, "root:acme", "", "namespaces", None);
        for n in crate::namespaces::DEFAULT_NAMESPACES {
            reg.get(&ns, n).await.unwrap();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_cluster_is_bootstrapped_in_one_commit() {
        let (reg, _tx) = registry(open(), true).await;
        let groups = || reg.storage().stats().commit_groups;
        let before = groups();
        create_ws(&reg, "root", "acme").await;
        wait_ready(&reg, "root", "acme").await;
        assert_eq!(groups() - before, 1, "the create, with the bootstrap");
        let ns_type = target(&reg, "root", "", "namespaces", None);
        reg.create(
            &ns_type,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "alone"}}),
            &WriteParams::default(),
        )
        .await
        .unwrap();
        let objects = |cluster: &'static str, ns: &'static str| {
            let reg = &reg;
            async move {
                let sa = target(reg, cluster, "", "serviceaccounts", Some(ns));
                let cm = target(reg, cluster, "", "configmaps", Some(ns));
                let sa: Value =
                    serde_json::from_slice(&reg.get(&sa, "default").await.unwrap()).unwrap();
                let cm: Value =
                    serde_json::from_slice(&reg.get(&cm, "kube-root-ca.crt").await.unwrap())
                        .unwrap();
                (sa, cm)
            }
        };
        let (alone_sa, alone_cm) = objects("root", "alone").await;
        let shape = |v: &Value| {
            let mut v = v.clone();
            let m = v["metadata"].as_object_mut().unwrap();
            for k in ["uid", "resourceVersion", "creationTimestamp", "namespace"] {
                m.remove(k);
            }
            if let Some(Value::Array(fields)) = m.get_mut("managedFields") {
                for f in fields {
                    f.as_object_mut().unwrap().remove("time");
                }
            }
            v
        };
        for ns in crate::namespaces::DEFAULT_NAMESPACES {
            let (sa, cm) = objects("root:acme", ns).await;
            assert_eq!(sa["metadata"]["namespace"], *ns);
            assert_eq!(shape(&sa), shape(&alone_sa), "{ns}");
            assert_eq!(cm["metadata"]["namespace"], *ns);
            assert_eq!(shape(&cm), shape(&alone_cm), "{ns}");
        }
    }

    /// A Ready Workspace's item run again (it is queued twice at its creation: by the
    /// create and by the informer) leaves its cluster as it is, and brings back a default
    /// namespace that has gone, with that namespace's own objects.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_ready_workspace_run_again_restores_only_a_missing_default_namespace() {
        let (reg, _tx) = registry(open(), true).await;
        create_ws(&reg, "root", "acme").await;
        let ready = wait_ready(&reg, "root", "acme").await;
        let child = name("root:acme");
        assert!(reg.has_default_namespaces(&child).await.unwrap());
        let before = keys(&reg, "root:acme").await;
        let ns = target(&reg, "root:acme", "", "namespaces", None);
        let lease_ns: Value =
            serde_json::from_slice(&reg.get(&ns, "kube-node-lease").await.unwrap()).unwrap();
        assert!(sync_workspace(&reg, &name("root"), "acme").await.unwrap());
        assert_eq!(keys(&reg, "root:acme").await, before);
        let again: Value =
            serde_json::from_slice(&reg.get(&ns, "kube-node-lease").await.unwrap()).unwrap();
        assert_eq!(again, lease_ns, "an existing namespace is left alone");
        assert_eq!(get_ws(&reg, "root", "acme").await.unwrap(), ready);

        reg.delete(&ns, "kube-node-lease", &Default::default())
            .await
            .unwrap();
        // The item's second run (queued at the creation) may come only now and bring the
        // namespace back before a poll sees it gone: wait for the one read above to go.
        crate::testing::until("kube-node-lease gone", || async {
            match reg.get(&ns, "kube-node-lease").await {
                Err(_) => true,
                Ok(b) => {
                    let now: Value = serde_json::from_slice(&b).unwrap();
                    now["metadata"]["uid"] != lease_ns["metadata"]["uid"]
                }
            }
        })
        .await;
        assert!(sync_workspace(&reg, &name("root"), "acme").await.unwrap());
        let back: Value =
            serde_json::from_slice(&reg.get(&ns, "kube-node-lease").await.unwrap()).unwrap();
        assert_ne!(back["metadata"]["uid"], lease_ns["metadata"]["uid"]);
        let cm = target(&reg, "root:acme", "", "configmaps", Some("kube-node-lease"));
        crate::testing::until("the namespace's root CA", || async {
            reg.get(&cm, "kube-root-ca.crt").await.is_ok()
        })
        .await;
        assert!(reg.has_default_namespaces(&child).await.unwrap());
        assert_eq!(keys(&reg, "root:acme").await, before);
    }

    #[tokio::test]
    async fn a_name_that_is_no_label_or_makes_too_long_a_path_is_invalid() {
        let (reg, _tx) = registry(open(), false).await;
        // Workspaces in deep clusters no Workspace created.
        reg.set_auto_create_clusters(true);
        for bad in ["Acme", "a.b", "a_b", "-a"] {
            let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                             "metadata": {"name": bad}});
            let e = reg
                .create(&workspaces(&reg, "root"), obj, &WriteParams::default())
                .await
                .unwrap_err();
            assert_eq!(e.code(), 422, "{bad}");
            let s = &e.0;
            assert_eq!(s.reason, StatusReason::Invalid, "{bad}");
            let d = s.details.as_ref().unwrap();
            assert_eq!(d.kind, "Workspace");
            assert_eq!(d.group, "tenancy.kplane.io");
            assert_eq!(d.name, bad);
            assert_eq!(d.causes[0].field, "metadata.name");
        }
        // root:<63>:<63>:<63> is 196 characters; a 63-character child would make 260.
        let seg = "a".repeat(63);
        let parent = format!("root:{seg}:{seg}:{seg}");
        let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                         "metadata": {"name": seg}});
        let e = reg
            .create(&workspaces(&reg, &parent), obj, &WriteParams::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), 422);
        let d = e.0.details.as_ref().unwrap();
        assert_eq!(d.causes[0].field, "metadata.name");
        assert!(e.0.message.contains("253 characters"), "{}", e.0.message);
        // A shorter name fits.
        create_ws(&reg, &parent, &"b".repeat(56)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deleting_a_workspace_empties_its_cluster_and_descendants_and_the_name_is_reusable() {
        let (reg, _tx) = registry(open(), true).await;
        // For the descendant created by a first write (as older kplane versions did).
        reg.set_auto_create_clusters(true);
        create_ws(&reg, "root", "acme").await;
        wait_ready(&reg, "root", "acme").await;
        create_ws(&reg, "root:acme", "team-a").await;
        wait_ready(&reg, "root:acme", "team-a").await;
        create_ws(&reg, "root:acme:team-a", "deep").await;
        wait_ready(&reg, "root:acme:team-a", "deep").await;
        create_cm(&reg, "root:acme", "x").await.unwrap();
        create_cm(&reg, "root:acme:team-a", "y").await.unwrap();
        create_cm(&reg, "root:acme:team-a:deep", "z").await.unwrap();
        // A descendant created by a first write, without a Workspace.
        create_cm(&reg, "root:acme:adhoc", "w").await.unwrap();
        // A sibling that must survive.
        create_ws(&reg, "root", "other").await;
        wait_ready(&reg, "root", "other").await;
        create_cm(&reg, "root:other", "x").await.unwrap();
        let other_keys = keys(&reg, "root:other").await;

        let out = reg
            .delete(&workspaces(&reg, "root"), "acme", &DeleteParams::default())
            .await
            .unwrap();
        match out {
            crate::DeleteOutcome::Marked(b) => {
                let v: Value = serde_json::from_slice(&b).unwrap();
                assert_eq!(v["status"]["phase"], "Terminating");
                assert!(v["metadata"]["deletionTimestamp"].is_string());
            }
            other => panic!("not marked: {other:?}"),
        }
        crate::testing::until("workspace gone", || async {
            get_ws(&reg, "root", "acme").await.is_none()
        })
        .await;
        for c in [
            "root:acme",
            "root:acme:team-a",
            "root:acme:team-a:deep",
            "root:acme:adhoc",
        ] {
            assert_eq!(keys(&reg, c).await, 0, "{c} not empty");
        }
        assert_eq!(keys(&reg, "root:other").await, other_keys);
        assert!(get_ws(&reg, "root", "other").await.is_some());

        // The name is reusable and the new cluster starts empty (but bootstrapped).
        create_ws(&reg, "root", "acme").await;
        wait_ready(&reg, "root", "acme").await;
        let cms = target(&reg, "root:acme", "", "configmaps", Some("default"));
        assert_eq!(reg.get(&cms, "x").await.unwrap_err().code(), 404);
        assert!(get_ws(&reg, "root:acme", "team-a").await.is_none());
        reg.get(
            &target(&reg, "root:acme", "", "namespaces", None),
            "default",
        )
        .await
        .unwrap();
        create_cm(&reg, "root:acme", "x").await.unwrap();
    }

    #[tokio::test]
    async fn writes_into_a_terminating_cluster_and_its_descendants_are_refused() {
        let (reg, _tx) = registry(open(), false).await;
        reg.set_auto_create_clusters(true);
        create_cm(&reg, "root:acme:team-a", "before").await.unwrap();
        reg.set_terminating(&name("root:acme"), true);
        for c in ["root:acme", "root:acme:team-a"] {
            let e = create_cm(&reg, c, "after").await.unwrap_err();
            assert_eq!(e.code(), 403, "{c}");
            assert!(e.0.message.contains("being deleted"), "{}", e.0.message);
        }
        let e = reg
            .delete(
                &target(&reg, "root:acme:team-a", "", "configmaps", Some("default")),
                "before",
                &DeleteParams::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), 403);
        // A sibling with the same prefix is not within it.
        create_cm(&reg, "root:acmex", "ok").await.unwrap();
        reg.set_terminating(&name("root:acme"), false);
        create_cm(&reg, "root:acme", "after").await.unwrap();
    }

    /// A Workspace marked for deletion while no controller ran: its cluster refuses writes
    /// from the delete on, also after a restart (before any controller runs), and the next
    /// run (the informer's replay through `PendingFeed`) deletes it; it is never reported Ready, and afterwards
    /// the cluster does not exist.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deletion_resumes_after_a_restart() {
        let storage = open();
        {
            let (reg, _tx) = registry(storage.clone(), false).await;
            create_ws(&reg, "root", "acme").await;
            reg.bootstrap_cluster(&name("root:acme")).await.unwrap();
            create_cm(&reg, "root:acme", "x").await.unwrap();
            reg.delete(&workspaces(&reg, "root"), "acme", &DeleteParams::default())
                .await
                .unwrap();
            let ws = get_ws(&reg, "root", "acme").await.unwrap();
            assert_eq!(ws["status"]["phase"], "Terminating");
            // At once, without the controller.
            let e = create_cm(&reg, "root:acme", "y").await.unwrap_err();
            assert_eq!(e.code(), 403, "{e:?}");
        }
        // The restart: nothing ran the deletion yet.
        let (reg, _tx) = registry(storage.clone(), false).await;
        assert!(keys(&reg, "root:acme").await > 0);
        assert!(reg.cluster_exists(&name("root:acme")));
        let e = create_cm(&reg, "root:acme", "y").await.unwrap_err();
        assert_eq!(e.code(), 403, "{e:?}");
        assert!(e.0.message.contains("being deleted"), "{}", e.0.message);
        drop(reg);

        let (reg, _tx) = registry(storage, true).await;
        crate::controllers::leader::replay_pending(&reg).await;
        // Gone, and its `after_delete` hook (which unmarks the cluster) has run.
        crate::testing::until("workspace gone", || async {
            match get_ws(&reg, "root", "acme").await {
                None => !reg.is_terminating(&name("root:acme")),
                Some(ws) => {
                    assert_ne!(ws["status"]["phase"], "Ready", "{ws}");
                    false
                }
            }
        })
        .await;
        assert_eq!(keys(&reg, "root:acme").await, 0);
        let scope = ClusterScope::One(name("root:acme"));
        let e = reg.check_cluster(&scope).unwrap_err();
        assert_eq!(e.code(), 404);
        assert_eq!(e.0.message, "logical cluster \"root:acme\" does not exist");
        // Writes into it are 404 (not 403) now, and the name can be used again.
        assert_eq!(
            create_cm(&reg, "root:acme", "y").await.unwrap_err().code(),
            404
        );
        assert!(!reg.is_terminating(&name("root:acme")));
        create_ws(&reg, "root", "acme").await;
        wait_ready(&reg, "root", "acme").await;
        create_cm(&reg, "root:acme", "y").await.unwrap();
    }

    /// A deleted workspace's cluster (and a descendant's) is a 404 once its deletion
    /// finishes; other clusters keep existing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_deleted_workspace_cluster_stops_existing() {
        let (reg, _tx) = registry(open(), true).await;
        for (parent, ws) in [("root", "acme"), ("root:acme", "team-a"), ("root", "other")] {
            create_ws(&reg, parent, ws).await;
            wait_ready(&reg, parent, ws).await;
        }
        for c in ["root:acme", "root:acme:team-a", "root:other"] {
            assert!(reg.cluster_exists(&name(c)), "{c}");
        }
        reg.delete(&workspaces(&reg, "root"), "acme", &DeleteParams::default())
            .await
            .unwrap();
        // The deletion finishes with the Workspace's `after_delete` hook, which unmarks
        // the cluster just after the delete is stored.
        crate::testing::until("workspace gone", || async {
            get_ws(&reg, "root", "acme").await.is_none() && !reg.is_terminating(&name("root:acme"))
        })
        .await;
        for c in ["root:acme", "root:acme:team-a"] {
            assert!(!reg.cluster_exists(&name(c)), "{c}");
            let scope = ClusterScope::One(name(c));
            assert_eq!(reg.check_cluster(&scope).unwrap_err().code(), 404, "{c}");
            assert!(!reg.is_terminating(&name(c)), "{c}");
        }
        assert!(reg.cluster_exists(&name("root:other")));
        reg.check_cluster(&ClusterScope::One(name("root:other")))
            .unwrap();
    }

    /// A `/status` write to a Workspace being deleted cannot report it Ready.
    #[tokio::test]
    async fn a_deleting_workspace_stays_terminating() {
        let (reg, _tx) = registry(open(), false).await;
        create_ws(&reg, "root", "acme").await;
        reg.delete(&workspaces(&reg, "root"), "acme", &DeleteParams::default())
            .await
            .unwrap();
        let mut ws = get_ws(&reg, "root", "acme").await.unwrap();
        ws["status"]["phase"] = json!("Ready");
        let out = reg
            .update(
                &workspaces(&reg, "root"),
                "acme",
                Some("status"),
                ws,
                &WriteParams::default(),
            )
            .await
            .unwrap();
        let out: Value = serde_json::from_slice(&out.0).unwrap();
        assert_eq!(out["status"]["phase"], "Terminating", "{out}");
        let ws = get_ws(&reg, "root", "acme").await.unwrap();
        assert_eq!(ws["status"]["phase"], "Terminating", "{ws}");
    }

    /// Range deletes carry each object's last state at the delete's resourceVersion.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watchers_see_each_deleted_object_at_its_delete_revision() {
        let (reg, _tx) = registry(open(), true).await;
        create_ws(&reg, "root", "acme").await;
        wait_ready(&reg, "root", "acme").await;
        create_cm(&reg, "root:acme", "x").await.unwrap();
        let from = reg.storage().current_revision();
        let mut w = reg
            .storage()
            .watch(&Prefix::resource("root:acme", "/configmaps"), from, None)
            .await
            .unwrap();
        reg.delete(&workspaces(&reg, "root"), "acme", &DeleteParams::default())
            .await
            .unwrap();
        let mut seen = Vec::new();
        while seen.len() < 2 {
            let ev = tokio::time::timeout(Duration::from_secs(10), w.recv())
                .await
                .unwrap()
                .unwrap();
            let kplane_storage::WatchEvent::Event(ev) = ev else {
                continue;
            };
            if ev.event_type == kplane_storage::EventType::Deleted {
                let kv = &ev.kv;
                let v: Value = serde_json::from_slice(&kv.value).unwrap();
                assert_eq!(
                    v["metadata"]["resourceVersion"],
                    kv.mod_revision.to_string(),
                    "{v}"
                );
                seen.push(v["metadata"]["name"].as_str().unwrap().to_string());
            }
        }
        seen.sort();
        assert_eq!(seen, ["kube-root-ca.crt", "x"]);
    }
}
