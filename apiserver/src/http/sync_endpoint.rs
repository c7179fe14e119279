//! The sync endpoint: `/services/sync/<cluster>/<target>/<kubernetes path>`, the virtual
//! API one syncer uses (issue 15, docs/sync.md). This module owns the HTTP side: splitting
//! the path, authentication (as for any request), authorization of the verb `sync` on
//! `synctargets/<target>` in `<cluster>` (the ordinary authorizer, with a synthetic
//! `RequestInfo`), the allowlist of inner requests ([`classify`]: everything else is 404,
//! other methods on allowed paths 405), and serving what passes through the ordinary
//! resource handlers as the target's internal identity; and the target's pod log requests
//! ([`logs`]). The object rules (assigned?
//! referenced? finalizer-only change?) live in the registry (`kplane_registry::sync`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::sync::{
    self as rules, refs::RefKind, TargetRef, TargetSpec, SYNC_GROUP, SYNC_TARGETS, SYNC_VERB,
    SYNC_VERSION,
};
use kplane_types::{ClusterName, ClusterScope, RequestInfo, Status, Verb};

use super::error::StatusResponse;
use super::request_info::{self, ApiPath, ResourcePath};
use super::resources::AnnotationFilter;
use super::{filters, health, negotiation, resources, AppState};

mod logs;
mod pods;

/// The path prefix of every sync endpoint.
pub const PREFIX: &str = "/services/sync/";

/// What an allowed inner request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Allowed {
    /// List or watch `clusters/*/.../<resource>` of a synced resource: the assigned objects.
    AssignedCollection,
    /// Get, update or patch an object of a synced resource (or its status), if assigned.
    AssignedObject,
    /// Get a Secret, ConfigMap or ServiceAccount, if an assigned object refers to it.
    Referenced(RefKind),
    /// Create a token (TokenRequest) of a ServiceAccount an assigned object runs as: the
    /// credential of its pods' in-cluster API access (docs/sync.md).
    Token,
    /// List the NetworkPolicies of a namespace that holds an assigned object (they govern
    /// its pods on the host).
    NamespacePolicies,
    /// Get, update, patch or delete a Pod reflecting one of the target's host pods (its
    /// annotation names the target), or get, update or patch its status.
    ReflectedPod,
    /// Create a Pod in a namespace: the reflection of a host pod of a Job assigned to the
    /// target (annotation and controller ownerReference, checked on the body).
    PodCreate,
    /// The SyncTarget itself (get) and its status (get, update, patch).
    Heartbeat,
    /// The syncer's Lease (get, update, patch; create through the collection).
    Lease,
}
// Besides these, the endpoint serves its target's pod log requests ([`logs`]).

/// Splits `/services/sync/<cluster>/<target>/<rest>` into the target and the inner path
/// (`/` when nothing follows). `None` when the path is not one.
fn split(path: &str) -> Option<(TargetRef, String)> {
    let after = path.strip_prefix(PREFIX)?;
    let mut parts = after.splitn(3, '/');
    let cluster = parts.next()?;
    let name = parts.next()?;
    let rest = parts.next().unwrap_or("");
    let cluster = ClusterName::parse(&request_info::decode_cluster_segment(cluster))?;
    if !kplane_types::validation::is_dns1123_subdomain(name).is_empty() {
        return None;
    }
    Some((
        TargetRef {
            cluster,
            name: name.to_string(),
        },
        format!("/{rest}"),
    ))
}

fn method_not_allowed(method: &Method, rp: &ResourcePath) -> ApiError {
    ApiError::from(Status::method_not_allowed(method.as_str(), &rp.resource))
}

/// Which allowed request `info` (the inner path's attributes) is, for target `t` with
/// `spec`: 404 for anything outside the allowlist, 405 for a method an allowed path does
/// not serve.
fn classify(
    t: &TargetRef,
    spec: &TargetSpec,
    method: &Method,
    info: &RequestInfo,
    rp: &ResourcePath,
) -> ApiResult<Allowed> {
    let verb = &info.verb;
    let sub = rp.subresource.as_deref();
    let one = info.cluster.one();
    let own_cluster = one == Some(&t.cluster);
    let synced = spec.syncs(&rp.group, &rp.version, &rp.resource);
    let pods = rules::pods::is_pods(&rp.group, &rp.version, &rp.resource);
    let allow = |ok: bool, what: Allowed| {
        if ok {
            Ok(what)
        } else {
            Err(method_not_allowed(method, rp))
        }
    };
    if (synced || pods)
        && info.cluster == ClusterScope::Wildcard
        && rp.namespace.is_none()
        && rp.name.is_none()
    {
        return allow(
            matches!(verb, Verb::List | Verb::Watch),
            Allowed::AssignedCollection,
        );
    }
    let covered = one.is_some_and(|c| rules::covers(spec, &t.cluster, c));
    if pods && covered && rp.namespace.is_some() {
        return match (rp.name.as_deref(), sub) {
            (Some(_), None) => allow(
                matches!(verb, Verb::Get | Verb::Update | Verb::Patch | Verb::Delete),
                Allowed::ReflectedPod,
            ),
            (Some(_), Some("status")) => allow(
                matches!(verb, Verb::Get | Verb::Update | Verb::Patch),
                Allowed::ReflectedPod,
            ),
            (None, None) if *method == Method::POST => Ok(Allowed::PodCreate),
            _ => Err(ApiError::not_found_path()),
        };
    }
    if synced
        && covered
        && rp.namespace.is_some()
        && rp.name.is_some()
        && matches!(sub, None | Some("status"))
    {
        return allow(
            matches!(verb, Verb::Get | Verb::Update | Verb::Patch),
            Allowed::AssignedObject,
        );
    }
    if let Some(kind) = RefKind::from_resource(&rp.group, &rp.version, &rp.resource) {
        if covered && rp.namespace.is_some() && rp.name.is_some() && sub.is_none() {
            return allow(*verb == Verb::Get, Allowed::Referenced(kind));
        }
        if kind == RefKind::ServiceAccount
            && covered
            && rp.namespace.is_some()
            && rp.name.is_some()
            && sub == Some("token")
        {
            return allow(*verb == Verb::Create, Allowed::Token);
        }
    }
    if covered
        && rp.group == "networking.k8s.io"
        && rp.version == "v1"
        && rp.resource == "networkpolicies"
        && rp.namespace.is_some()
        && rp.name.is_none()
    {
        return allow(*verb == Verb::List, Allowed::NamespacePolicies);
    }
    if own_cluster
        && rp.group == SYNC_GROUP
        && rp.version == SYNC_VERSION
        && rp.resource == SYNC_TARGETS
        && rp.namespace.is_none()
        && rp.name.as_deref() == Some(t.name.as_str())
    {
        return match sub {
            None => allow(*verb == Verb::Get, Allowed::Heartbeat),
            Some("status") => allow(
                matches!(verb, Verb::Get | Verb::Update | Verb::Patch),
                Allowed::Heartbeat,
            ),
            Some(_) => Err(ApiError::not_found_path()),
        };
    }
    if own_cluster
        && rp.group == "coordination.k8s.io"
        && rp.version == "v1"
        && rp.resource == "leases"
        && rp.namespace.as_deref() == Some("kube-system")
        && sub.is_none()
    {
        match rp.name.as_deref() {
            Some(n) if n == rules::lease_name(&t.name) => {
                return allow(
                    matches!(verb, Verb::Get | Verb::Update | Verb::Patch),
                    Allowed::Lease,
                )
            }
            None if *method == Method::POST => return Ok(Allowed::Lease),
            _ => {}
        }
    }
    Err(ApiError::not_found_path())
}

/// The attributes authorized for every request to `t`'s endpoint: verb `sync` on
/// `synctargets/<name>` (group `sync.kplane.io`) in the target's cluster.
fn sync_attributes(t: &TargetRef, path: &str) -> RequestInfo {
    RequestInfo {
        cluster: ClusterScope::One(t.cluster.clone()),
        path: path.to_string(),
        verb: Verb::Other(SYNC_VERB.to_string()),
        is_resource_request: true,
        api_group: SYNC_GROUP.to_string(),
        api_version: SYNC_VERSION.to_string(),
        namespace: None,
        resource: SYNC_TARGETS.to_string(),
        subresource: None,
        name: Some(t.name.clone()),
    }
}

/// A request under [`PREFIX`]: its target, its inner path, and the attributes authorized
/// for it ([`sync_attributes`], impersonation's too).
#[derive(Clone, Debug)]
pub(super) struct Route {
    target: TargetRef,
    /// The inner path, parsed.
    pub inner: request_info::RequestTarget,
    /// Verb `sync` on the target.
    pub attrs: Arc<RequestInfo>,
}

impl Route {
    /// The route of `path` (the whole path, under [`PREFIX`]); `None` when it is not one
    /// (a 404).
    pub(super) fn parse(path: &str) -> Option<Route> {
        let (target, inner) = split(path)?;
        let inner = request_info::parse(&inner).ok()?;
        let attrs = Arc::new(sync_attributes(&target, path));
        Some(Route {
            target,
            inner,
            attrs,
        })
    }
}

/// Whether `path` (the inner path) is the target's pod log requests' ([`logs`]).
pub(super) fn is_log_path(path: &str) -> bool {
    logs::is_log_path(path)
}

/// Serves an inner request once the filters ([`super::chain`]) have passed it: [`checked`]
/// while the request's seats (`waiter`) are lent to others as it waits for the store.
pub(super) async fn serve(
    state: &Arc<AppState>,
    req: Request<Body>,
    route: Route,
    info: &RequestInfo,
    waiter: Option<Arc<dyn kplane_storage::io_wait::IoWait>>,
) -> Response {
    let handled = checked(state, req, &route.target, route.inner.api, info);
    match filters::handle(waiter, handled).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

/// After authorization: the target must exist; then the allowlist and the object checks,
/// then the ordinary handler as the target's identity.
async fn checked(
    state: &Arc<AppState>,
    mut req: Request<Body>,
    t: &TargetRef,
    api: Option<ApiPath>,
    info: &RequestInfo,
) -> ApiResult<Response> {
    state
        .registry
        .logical_clusters()
        .check(&ClusterScope::One(t.cluster.clone()))?;
    let spec = state.registry.sync_checks().target_spec(t).await?;
    let Some(ApiPath::Resource(rp)) = api else {
        if logs::is_log_path(&info.path) {
            return logs::serve(state, req, t, &info.path).await;
        }
        return match info.path.trim_end_matches('/') {
            "/version" if *req.method() == Method::GET => Ok(health::version(&state.version)),
            _ => Err(ApiError::not_found_path()),
        };
    };
    let method = req.method().clone();
    let allowed = classify(t, &spec, &method, info, &rp)?;
    let mut info = info.clone();
    match allowed {
        Allowed::AssignedCollection => {
            info.cluster = rules::list_scope(&t.cluster);
            req.extensions_mut().insert(AnnotationFilter(
                rules::TARGET_ANNOTATION.to_string(),
                t.id(),
            ));
        }
        Allowed::AssignedObject | Allowed::ReflectedPod => {
            let (cluster, rt) = resource_in(state, &info, &rp).await?;
            let target = kplane_registry::Target::new(&cluster, rt, rp.namespace.clone());
            let name = rp.name.as_deref().unwrap_or_default();
            state
                .registry
                .sync_checks()
                .check_assigned(&target, name, t)
                .await?;
        }
        Allowed::Referenced(_) | Allowed::Token => {
            let kind = match allowed {
                Allowed::Referenced(kind) => kind,
                _ => RefKind::ServiceAccount,
            };
            let cluster = one_cluster(&info)?;
            state
                .registry
                .sync_checks()
                .check_referenced(
                    &cluster,
                    rp.namespace.as_deref().unwrap_or_default(),
                    kind,
                    rp.name.as_deref().unwrap_or_default(),
                    t,
                    &spec,
                )
                .await?;
            if allowed == Allowed::Token {
                let (checked, obj) = read_object(req).await?;
                rules::check_token_request(&obj, rp.name.as_deref().unwrap_or_default())?;
                req = checked;
            }
        }
        Allowed::NamespacePolicies => {
            let cluster = one_cluster(&info)?;
            state
                .registry
                .sync_checks()
                .check_namespace_assigned(
                    &cluster,
                    rp.namespace.as_deref().unwrap_or_default(),
                    t,
                    &spec,
                )
                .await?;
        }
        Allowed::PodCreate => req = pods::checked_create(state, req, t, &info, &rp).await?,
        Allowed::Heartbeat => {}
        Allowed::Lease if rp.name.is_none() => req = lease_create(req, t).await?,
        Allowed::Lease => {}
    }
    let accept = negotiation::parse_accept(
        req.headers()
            .get(axum::http::header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    let identity = t.user();
    let started = std::time::Instant::now();
    let apply = req
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/apply-patch+yaml");
    let labels = crate::metrics::RequestLabels::of(&info, apply);
    let resp = resources::handle(state.clone(), rp, &info, &identity, accept, req).await;
    state.metrics.observe_request(
        labels,
        resp.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    Ok(resp)
}

/// The one logical cluster an inner request addresses (404 for a wildcard).
fn one_cluster(info: &RequestInfo) -> ApiResult<ClusterName> {
    info.cluster
        .one()
        .cloned()
        .ok_or_else(ApiError::not_found_path)
}

/// The one cluster and resource type of an object request.
async fn resource_in(
    state: &AppState,
    info: &RequestInfo,
    rp: &ResourcePath,
) -> ApiResult<(ClusterName, Arc<kplane_registry::ResourceType>)> {
    let cluster = one_cluster(info)?;
    let catalog = state.registry.catalog_for(&info.cluster).await?;
    let rt = catalog
        .get(&rp.group, &rp.version, &rp.resource)
        .cloned()
        .ok_or_else(ApiError::not_found_path)?;
    Ok((cluster, rt))
}

/// A Lease create: only the target's own Lease name (read from the body, which is put
/// back for the handler).
async fn lease_create(req: Request<Body>, t: &TargetRef) -> ApiResult<Request<Body>> {
    let (req, obj) = read_object(req).await?;
    let want = rules::lease_name(&t.name);
    let name = obj
        .pointer("/metadata/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    if name != want {
        return Err(ApiError::from(Status::forbidden(
            "coordination.k8s.io",
            "leases",
            name,
            &format!(
                "the sync endpoint of {} serves only the Lease {want}",
                t.id()
            ),
        )));
    }
    Ok(req)
}

/// The request's body decoded (for a check before the ordinary handler), and the
/// request with the body put back.
pub(super) async fn read_object(
    req: Request<Body>,
) -> ApiResult<(Request<Body>, serde_json::Value)> {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, negotiation::MAX_BODY_BYTES)
        .await
        .map_err(|e| super::resources::body_error(&e))?;
    let ct = parts
        .headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let obj = negotiation::decode_object(&bytes, negotiation::body_type(ct)?)?;
    Ok((Request::from_parts(parts, Body::from(bytes)), obj))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_types::UserInfo;
    use serde_json::json;

    fn east() -> TargetRef {
        TargetRef {
            cluster: ClusterName::parse("root:acme").unwrap(),
            name: "east".into(),
        }
    }

    #[test]
    fn paths_split_into_target_and_inner_path() {
        let (t, inner) =
            split("/services/sync/root:acme/east/clusters/*/apis/batch/v1/jobs").unwrap();
        assert_eq!(t, east());
        assert_eq!(inner, "/clusters/*/apis/batch/v1/jobs");
        let (t, inner) = split("/services/sync/root%3Aacme/east").unwrap();
        assert_eq!(t, east());
        assert_eq!(inner, "/");
        assert_eq!(
            split("/services/sync/root:acme/east/version").unwrap().1,
            "/version"
        );
        for bad in [
            "/services/sync/",
            "/services/sync/root",
            "/services/sync/root/",
            "/services/sync/Not_A_Cluster/east/api",
            "/services/sync/root/Bad_Name/api",
            "/services/other/root/east",
        ] {
            assert!(split(bad).is_none(), "{bad}");
        }
    }

    /// How `classify` answers `method path` for `east` (in root:acme) with `spec`:
    /// the allowed kind, or the status code.
    fn class(spec: &TargetSpec, method: Method, path: &str) -> Result<Allowed, u16> {
        let (path, query) = match path.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path, None),
        };
        let target = request_info::parse(path).unwrap();
        let info = request_info::request_info(&method, &target, query);
        let Some(ApiPath::Resource(rp)) = target.api else {
            return Err(0);
        };
        classify(&east(), spec, &method, &info, &rp).map_err(|e| e.code())
    }

    #[test]
    fn only_the_allowlist_is_served() {
        let spec = TargetSpec::of(&json!({"spec": {}}));
        let desc = TargetSpec::of(&json!({"spec": {"includeDescendants": true}}));
        let g = Method::GET;
        use Allowed::*;
        let jobs = "/clusters/*/apis/batch/v1/jobs";
        assert_eq!(class(&spec, g.clone(), jobs), Ok(AssignedCollection));
        assert_eq!(
            class(&spec, g.clone(), &format!("{jobs}?watch=true")),
            Ok(AssignedCollection)
        );
        assert_eq!(class(&spec, Method::POST, jobs), Err(405));
        assert_eq!(class(&spec, Method::DELETE, jobs), Err(405));
        // Not synced, namespaced collections, one cluster's collection: 404.
        for p in [
            "/clusters/*/api/v1/secrets",
            "/clusters/*/apis/apps/v1/deployments",
            "/clusters/*/apis/batch/v1/namespaces/d/jobs",
            "/clusters/root:acme/apis/batch/v1/jobs",
            "/clusters/root:acme:*/apis/batch/v1/jobs",
        ] {
            assert_eq!(class(&spec, g.clone(), p), Err(404), "{p}");
        }
        let job = "/clusters/root:acme/apis/batch/v1/namespaces/d/jobs/j";
        for m in [Method::GET, Method::PUT, Method::PATCH] {
            assert_eq!(class(&spec, m.clone(), job), Ok(AssignedObject));
            assert_eq!(
                class(&spec, m, &format!("{job}/status")),
                Ok(AssignedObject)
            );
        }
        assert_eq!(class(&spec, Method::DELETE, job), Err(405));
        assert_eq!(
            class(&spec, g.clone(), &format!("{job}?watch=true")),
            Err(405)
        );
        assert_eq!(class(&spec, g.clone(), &format!("{job}/other")), Err(404));
        // A descendant's object: only with includeDescendants; a sibling's never.
        let child = "/clusters/root:acme:team/apis/batch/v1/namespaces/d/jobs/j";
        assert_eq!(class(&spec, g.clone(), child), Err(404));
        assert_eq!(class(&desc, g.clone(), child), Ok(AssignedObject));
        let sibling = "/clusters/root:acmex/apis/batch/v1/namespaces/d/jobs/j";
        assert_eq!(class(&desc, g.clone(), sibling), Err(404));
        // Referenced objects: read only, named, namespaced.
        for (p, k) in [
            ("secrets", RefKind::Secret),
            ("configmaps", RefKind::ConfigMap),
            ("serviceaccounts", RefKind::ServiceAccount),
        ] {
            let one = format!("/clusters/root:acme/api/v1/namespaces/d/{p}/x");
            assert_eq!(class(&spec, g.clone(), &one), Ok(Referenced(k)));
            assert_eq!(class(&spec, Method::PUT, &one), Err(405));
            assert_eq!(class(&spec, Method::DELETE, &one), Err(405));
            let list = format!("/clusters/root:acme/api/v1/namespaces/d/{p}");
            assert_eq!(class(&spec, g.clone(), &list), Err(404));
        }
        // A namespace's NetworkPolicies: listed only (not watched, not one by name).
        let netpols = "/clusters/root:acme/apis/networking.k8s.io/v1/namespaces/d/networkpolicies";
        assert_eq!(class(&spec, g.clone(), netpols), Ok(NamespacePolicies));
        assert_eq!(
            class(&spec, g.clone(), &format!("{netpols}?watch=true")),
            Err(405)
        );
        assert_eq!(class(&spec, Method::POST, netpols), Err(405));
        assert_eq!(class(&spec, g.clone(), &format!("{netpols}/x")), Err(404));
        assert_eq!(
            class(
                &spec,
                g.clone(),
                "/clusters/*/apis/networking.k8s.io/v1/networkpolicies"
            ),
            Err(404)
        );
        assert_eq!(
            class(
                &spec,
                g.clone(),
                "/clusters/root:other/apis/networking.k8s.io/v1/namespaces/d/networkpolicies"
            ),
            Err(404)
        );
        // A ServiceAccount's token: created only, and only through the token subresource.
        let token = "/clusters/root:acme/api/v1/namespaces/d/serviceaccounts/x/token";
        assert_eq!(class(&spec, Method::POST, token), Ok(Token));
        assert_eq!(class(&spec, g.clone(), token), Err(405));
        assert_eq!(
            class(
                &spec,
                Method::POST,
                "/clusters/root:acme/api/v1/namespaces/d/secrets/x/token"
            ),
            Err(404)
        );
        assert_eq!(
            class(
                &spec,
                Method::POST,
                "/clusters/root:acmex/api/v1/namespaces/d/serviceaccounts/x/token"
            ),
            Err(404)
        );
        // Pods: the reflections of the target's host pods, whatever the synced resources.
        let pods = "/clusters/*/api/v1/pods";
        assert_eq!(class(&spec, g.clone(), pods), Ok(AssignedCollection));
        assert_eq!(
            class(&spec, g.clone(), &format!("{pods}?watch=true")),
            Ok(AssignedCollection)
        );
        assert_eq!(class(&spec, Method::POST, pods), Err(405));
        let pod = "/clusters/root:acme/api/v1/namespaces/d/pods/x";
        for m in [Method::GET, Method::PUT, Method::PATCH, Method::DELETE] {
            assert_eq!(class(&spec, m, pod), Ok(ReflectedPod));
        }
        for m in [Method::GET, Method::PUT, Method::PATCH] {
            assert_eq!(class(&spec, m, &format!("{pod}/status")), Ok(ReflectedPod));
        }
        assert_eq!(
            class(&spec, Method::DELETE, &format!("{pod}/status")),
            Err(405)
        );
        assert_eq!(class(&spec, Method::POST, pod), Err(405));
        for sub in ["log", "exec", "binding", "eviction", "ephemeralcontainers"] {
            assert_eq!(
                class(&spec, g.clone(), &format!("{pod}/{sub}")),
                Err(404),
                "{sub}"
            );
        }
        let ns_pods = "/clusters/root:acme/api/v1/namespaces/d/pods";
        assert_eq!(class(&spec, Method::POST, ns_pods), Ok(PodCreate));
        assert_eq!(class(&spec, g.clone(), ns_pods), Err(404));
        assert_eq!(class(&spec, Method::DELETE, ns_pods), Err(404));
        assert_eq!(
            class(&spec, g.clone(), "/clusters/root:acme/api/v1/pods"),
            Err(404)
        );
        assert_eq!(
            class(
                &spec,
                Method::POST,
                "/clusters/root:acme:team/api/v1/namespaces/d/pods"
            ),
            Err(404)
        );
        assert_eq!(
            class(
                &desc,
                Method::POST,
                "/clusters/root:acme:team/api/v1/namespaces/d/pods"
            ),
            Ok(PodCreate)
        );
        assert_eq!(
            class(
                &spec,
                g.clone(),
                "/clusters/root:other/api/v1/namespaces/d/pods/x"
            ),
            Err(404)
        );
        // The SyncTarget: itself read only, its status read and written; no other target.
        let st = "/clusters/root:acme/apis/sync.kplane.io/v1alpha1/synctargets";
        assert_eq!(
            class(&spec, g.clone(), &format!("{st}/east")),
            Ok(Heartbeat)
        );
        assert_eq!(class(&spec, Method::PUT, &format!("{st}/east")), Err(405));
        assert_eq!(
            class(&spec, Method::PATCH, &format!("{st}/east/status")),
            Ok(Heartbeat)
        );
        assert_eq!(
            class(&spec, Method::PUT, &format!("{st}/east/status")),
            Ok(Heartbeat)
        );
        assert_eq!(class(&spec, g.clone(), &format!("{st}/west")), Err(404));
        assert_eq!(class(&spec, g.clone(), st), Err(404));
        assert_eq!(
            class(
                &spec,
                g.clone(),
                "/clusters/root/apis/sync.kplane.io/v1alpha1/synctargets/east"
            ),
            Err(404)
        );
        // The Lease: its own name only; created through the collection.
        let leases =
            "/clusters/root:acme/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
        assert_eq!(
            class(&spec, g.clone(), &format!("{leases}/kplane-syncer-east")),
            Ok(Lease)
        );
        assert_eq!(
            class(&spec, Method::PUT, &format!("{leases}/kplane-syncer-east")),
            Ok(Lease)
        );
        assert_eq!(
            class(
                &spec,
                Method::DELETE,
                &format!("{leases}/kplane-syncer-east")
            ),
            Err(405)
        );
        assert_eq!(class(&spec, Method::POST, leases), Ok(Lease));
        assert_eq!(class(&spec, g.clone(), leases), Err(404));
        assert_eq!(
            class(&spec, g.clone(), &format!("{leases}/kplane-syncer-west")),
            Err(404)
        );
        assert_eq!(
            class(&spec, g, "/clusters/root:acme/apis/coordination.k8s.io/v1/namespaces/default/leases/kplane-syncer-east"),
            Err(404)
        );
    }

    #[test]
    fn the_authorized_attributes_name_the_target() {
        let a = sync_attributes(&east(), "/services/sync/root:acme/east/version");
        let user = UserInfo {
            username: "bob".into(),
            ..Default::default()
        };
        let s = super::super::authz::forbidden(&user, &a, "");
        assert_eq!(
            s.message,
            r#"synctargets.sync.kplane.io "east" is forbidden: User "bob" cannot sync resource "synctargets" in API group "sync.kplane.io" at the cluster scope"#
        );
        assert_eq!(s.code, 403);
    }
}
