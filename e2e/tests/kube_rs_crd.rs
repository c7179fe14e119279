//! kube-rs against custom resources: a typed `#[derive(CustomResource)]` kind installed from
//! `Foo::crd()`, typed CRUD and subresources, raw watches and `watcher`, and a small
//! `kube::runtime::Controller` that reconciles the status.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use futures::{Stream, StreamExt as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kplane_e2e::fixtures::{error_code, string_map};
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::GroupVersionKind;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

const FOOS: &str = "foos.kplane.example.io";
const TIMEOUT: Duration = Duration::from_secs(30);

/// The desired state of a Foo.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "kplane.example.io",
    version = "v1",
    kind = "Foo",
    namespaced,
    status = "FooStatus",
    shortname = "fo",
    category = "kplane",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas"
    ),
    printcolumn(name = "Message", type_ = "string", json_path = ".spec.message")
)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// What the Foo says.
    pub message: String,
    /// How many copies of the Foo there should be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// The observed state of a Foo, written by the controller.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<FooCondition>,
}

/// One condition of a Foo.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub observed_generation: i64,
}

fn new_foo(name: &str, message: &str) -> Foo {
    Foo::new(
        name,
        FooSpec {
            message: message.to_owned(),
            replicas: None,
        },
    )
}

/// Creates the CRD from `Foo::crd()` and waits (through the API) until it is Established.
async fn install_foo_crd(client: &Client) -> Result<CustomResourceDefinition> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Foo::crd();
    assert_eq!(crd.metadata.name.as_deref(), Some(FOOS));
    crds.create(&PostParams::default(), &crd)
        .await
        .context("creating the Foo CRD")?;
    let established = tokio::time::timeout(
        TIMEOUT,
        await_condition(crds.clone(), FOOS, conditions::is_crd_established()),
    )
    .await
    .context("the Foo CRD was not Established in time")??;
    established.context("the Foo CRD disappeared")
}

/// The next item of `stream`, failing after [`TIMEOUT`] or at its end.
async fn next<S, T, E>(stream: &mut S, what: &str) -> Result<T>
where
    S: Stream<Item = Result<T, E>> + Unpin,
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(TIMEOUT, stream.next()).await {
        Err(_) => bail!("nothing within {TIMEOUT:?} while waiting for {what}"),
        Ok(None) => bail!("stream ended while waiting for {what}"),
        Ok(Some(item)) => item.with_context(|| format!("stream error while waiting for {what}")),
    }
}

#[tokio::test]
async fn typed_custom_resource_crd_from_derive_and_crud() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    let crd = install_foo_crd(&client).await?;
    let status = crd.status.context("CRD without status")?;
    let accepted = status.accepted_names.context("no acceptedNames")?;
    assert_eq!(accepted.kind, "Foo");
    assert_eq!(accepted.plural, "foos");
    assert_eq!(accepted.short_names, Some(vec!["fo".to_owned()]));
    assert_eq!(status.stored_versions, Some(vec!["v1".to_owned()]));

    // Discovery knows the kind and its subresources.
    let gvk = GroupVersionKind::gvk("kplane.example.io", "v1", "Foo");
    let (resource, caps) = kube::discovery::pinned_kind(&client, &gvk).await?;
    assert_eq!(resource.plural, "foos");
    let subresources: Vec<&str> = caps
        .subresources
        .iter()
        .map(|(r, _)| r.plural.as_str())
        .collect();
    ensure!(
        subresources.contains(&"status") && subresources.contains(&"scale"),
        "subresources: {subresources:?}"
    );

    let foos: Api<Foo> = Api::namespaced(client.clone(), "default");
    let created = foos
        .create(&PostParams::default(), &new_foo("one", "hello"))
        .await?;
    assert_eq!(created.spec.message, "hello");
    assert_eq!(created.metadata.generation, Some(1));
    let mut two = new_foo("two", "world");
    two.metadata.labels = Some(string_map(&[("pick", "me")]));
    foos.create(&PostParams::default(), &two).await?;
    let err = foos
        .create(&PostParams::default(), &new_foo("one", "again"))
        .await
        .err()
        .context("duplicate create succeeded")?;
    assert_eq!(error_code(&err), Some(409), "{err}");

    let got = foos.get("one").await?;
    assert_eq!(got.spec, created.spec);
    assert_eq!(got.uid(), created.uid());

    let list = foos.list(&ListParams::default()).await?;
    let names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    assert_eq!(names, ["one", "two"]);
    let picked = foos.list(&ListParams::default().labels("pick=me")).await?;
    assert_eq!(picked.items.len(), 1);
    assert_eq!(picked.items[0].name_any(), "two");
    let page = foos.list(&ListParams::default().limit(1)).await?;
    assert_eq!(page.items.len(), 1);
    ensure!(page.metadata.continue_.is_some(), "no continue token");

    // Merge patch of the spec bumps generation.
    let patched = foos
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"message": "patched", "replicas": 2}})),
        )
        .await?;
    assert_eq!(patched.spec.message, "patched");
    assert_eq!(patched.spec.replicas, Some(2));
    assert_eq!(patched.metadata.generation, Some(2));

    // The status subresource: replace_status writes status only.
    let mut with_status = patched.clone();
    with_status.status = Some(FooStatus {
        observed_generation: Some(2),
        replicas: Some(1),
        conditions: Vec::new(),
    });
    with_status.spec.message = "ignored by /status".to_owned();
    let after = foos
        .replace_status("one", &PostParams::default(), &with_status)
        .await?;
    assert_eq!(after.spec.message, "patched");
    assert_eq!(after.status.as_ref().and_then(|s| s.replicas), Some(1));
    assert_eq!(after.metadata.generation, Some(2));
    let status_view = foos.get_status("one").await?;
    assert_eq!(status_view.status, after.status);

    // The scale subresource maps spec.replicas and status.replicas.
    let scale = foos.get_scale("one").await?;
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(2));
    assert_eq!(scale.status.as_ref().map(|s| s.replicas), Some(1));
    foos.patch_scale(
        "one",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await?;
    assert_eq!(foos.get("one").await?.spec.replicas, Some(5));

    // A schema violation from the derived schema (message must be a string).
    let err = foos
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"message": 7}})),
        )
        .await
        .err()
        .context("a number was accepted for a string field")?;
    assert_eq!(error_code(&err), Some(422), "{err}");

    // Delete.
    foos.delete("one", &DeleteParams::default()).await?;
    let err = foos
        .get("one")
        .await
        .err()
        .context("deleted Foo still there")?;
    assert_eq!(error_code(&err), Some(404));
    let left = foos.list(&ListParams::default()).await?;
    assert_eq!(left.items.len(), 1);
    Ok(())
}

struct Ctx {
    client: Client,
}

/// Writes `status.observedGeneration` and a `Ready` condition for the Foo's current generation.
async fn reconcile(obj: Arc<Foo>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let generation = obj.metadata.generation.unwrap_or_default();
    let observed = obj.status.as_ref().and_then(|s| s.observed_generation);
    if observed == Some(generation) {
        return Ok(Action::await_change());
    }
    let ns = obj.namespace().unwrap_or_default();
    let api: Api<Foo> = Api::namespaced(ctx.client.clone(), &ns);
    let status = json!({"status": {
        "observedGeneration": generation,
        "conditions": [{
            "type": "Ready",
            "status": "True",
            "reason": "Reconciled",
            "message": format!("says {}", obj.spec.message),
            "observedGeneration": generation,
        }],
    }});
    api.patch_status(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::Merge(status),
    )
    .await?;
    Ok(Action::await_change())
}

fn error_policy(_foo: Arc<Foo>, _err: &kube::Error, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(500))
}

/// Waits until the stored Foo `name` has observedGeneration == its generation and a Ready
/// condition with `message`.
async fn wait_reconciled(
    foos: &Api<Foo>,
    name: &str,
    generation: i64,
    message: &str,
) -> Result<()> {
    eventually(
        TIMEOUT,
        &format!("the controller to reconcile {name} at generation {generation}"),
        || async move {
            let current = foos.get(name).await?;
            ensure!(
                current.metadata.generation == Some(generation),
                "generation is {:?}",
                current.metadata.generation
            );
            let Some(status) = current.status else {
                return Ok(false);
            };
            let ready = status
                .conditions
                .iter()
                .find(|c| c.type_ == "Ready" && c.status == "True");
            Ok(status.observed_generation == Some(generation)
                && ready
                    .is_some_and(|c| c.message == message && c.observed_generation == generation))
        },
    )
    .await
}

#[tokio::test]
async fn controller_reconciles_the_status_after_a_spec_change() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    install_foo_crd(&client).await?;
    let foos: Api<Foo> = Api::namespaced(client.clone(), "default");
    foos.create(&PostParams::default(), &new_foo("ctl", "hello"))
        .await?;

    let controller = Controller::new(Api::<Foo>::all(client.clone()), watcher::Config::default())
        .run(
            reconcile,
            error_policy,
            Arc::new(Ctx {
                client: client.clone(),
            }),
        )
        .for_each(|_| async {});
    let task = tokio::spawn(controller);

    let outcome = async {
        wait_reconciled(&foos, "ctl", 1, "says hello").await?;

        // A spec change: new generation, reconciled again.
        foos.patch(
            "ctl",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"message": "changed"}})),
        )
        .await?;
        wait_reconciled(&foos, "ctl", 2, "says changed").await?;

        // An object created while the controller runs is picked up as well.
        foos.create(&PostParams::default(), &new_foo("late", "later"))
            .await?;
        wait_reconciled(&foos, "late", 1, "says later").await?;

        // The status writes did not bump generation (checked inside wait_reconciled) and
        // did not touch the spec.
        let ctl = foos.get("ctl").await?;
        assert_eq!(ctl.spec.message, "changed");
        anyhow::Ok(())
    }
    .await;
    task.abort();
    outcome
}

#[tokio::test]
async fn watch_and_watcher_receive_custom_resource_events() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    install_foo_crd(&client).await?;
    let foos: Api<Foo> = Api::namespaced(client.clone(), "default");
    foos.create(&PostParams::default(), &new_foo("before", "x"))
        .await?;

    // Raw watch from the list's resourceVersion.
    let list = foos.list(&ListParams::default()).await?;
    let rv = list.metadata.resource_version.context("list without RV")?;
    let mut raw = foos
        .watch(&WatchParams::default().timeout(60), &rv)
        .await?
        .boxed();

    // watcher: initial list, then live events.
    let mut events = watcher(foos.clone(), watcher::Config::default()).boxed();
    let mut initial = Vec::new();
    loop {
        match next(&mut events, "the watcher's initial list").await? {
            watcher::Event::Init => {}
            watcher::Event::InitApply(o) => initial.push(o.name_any()),
            watcher::Event::InitDone => break,
            other => bail!("unexpected event before InitDone: {other:?}"),
        }
    }
    assert_eq!(initial, ["before"]);

    foos.create(&PostParams::default(), &new_foo("w", "one"))
        .await?;
    foos.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"message": "two"}})),
    )
    .await?;
    foos.patch_status(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 3}})),
    )
    .await?;
    foos.delete("w", &DeleteParams::default()).await?;

    // The raw watch sees every change in order, with typed objects.
    let mut seen = Vec::new();
    while seen.len() < 4 {
        match next(&mut raw, "raw watch events").await? {
            WatchEvent::Added(o) => seen.push(("ADDED", o.name_any(), o.spec.message)),
            WatchEvent::Modified(o) => seen.push(("MODIFIED", o.name_any(), o.spec.message)),
            WatchEvent::Deleted(o) => seen.push(("DELETED", o.name_any(), o.spec.message)),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => bail!("watch error: {e:?}"),
        }
    }
    let want = [
        ("ADDED", "w", "one"),
        ("MODIFIED", "w", "two"),
        ("MODIFIED", "w", "two"),
        ("DELETED", "w", "two"),
    ];
    let got: Vec<(&str, &str, &str)> = seen
        .iter()
        .map(|(t, n, m)| (*t, n.as_str(), m.as_str()))
        .collect();
    assert_eq!(got, want);

    // The watcher reports the object being applied (possibly coalesced) and then deleted.
    let mut last_applied = None;
    loop {
        match next(&mut events, "watcher events for w").await? {
            watcher::Event::Apply(o) => last_applied = Some(o),
            watcher::Event::Delete(o) => {
                assert_eq!(o.name_any(), "w");
                break;
            }
            _ => {}
        }
    }
    let applied = last_applied.context("no Apply event for w")?;
    assert_eq!(applied.name_any(), "w");
    Ok(())
}

#[tokio::test]
async fn server_side_apply_of_spec_and_status_are_owned_separately() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    install_foo_crd(&client).await?;
    let foos: Api<Foo> = Api::namespaced(client, "default");
    let cfg = |extra: serde_json::Value| {
        let mut v = json!({"apiVersion": "kplane.example.io/v1", "kind": "Foo",
            "metadata": {"name": "ss"}});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    };
    // The author applies spec (and a status the main resource must ignore).
    foos.patch(
        "ss",
        &PatchParams::apply("author"),
        &Patch::Apply(cfg(json!({"spec": {"message": "hi", "replicas": 2},
            "status": {"replicas": 9}}))),
    )
    .await?;
    // The controller applies status through /status (and a spec /status must ignore).
    foos.patch_status(
        "ss",
        &PatchParams::apply("ctl"),
        &Patch::Apply(cfg(json!({"spec": {"message": "ignored"},
            "status": {"replicas": 2}}))),
    )
    .await?;
    let foo = foos.get("ss").await?;
    assert_eq!(foo.spec.message, "hi");
    assert_eq!(foo.status.as_ref().and_then(|s| s.replicas), Some(2));
    let entries = foo.metadata.managed_fields.clone().unwrap_or_default();
    let entry = |m: &str| {
        entries
            .iter()
            .find(|e| e.manager.as_deref() == Some(m))
            .cloned()
            .with_context(|| format!("no entry for {m}: {entries:?}"))
    };
    let author = entry("author")?;
    let ctl = entry("ctl")?;
    assert_eq!(author.operation.as_deref(), Some("Apply"));
    assert_eq!(author.subresource, None);
    assert_eq!(ctl.operation.as_deref(), Some("Apply"));
    assert_eq!(ctl.subresource.as_deref(), Some("status"));
    let fields = |e: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry| {
        serde_json::to_string(&e.fields_v1).unwrap_or_default()
    };
    ensure!(
        fields(&author).contains("f:spec") && !fields(&author).contains("f:status"),
        "author owns {}",
        fields(&author)
    );
    ensure!(
        fields(&ctl).contains("f:status") && !fields(&ctl).contains("f:spec"),
        "ctl owns {}",
        fields(&ctl)
    );
    // The controller's status is not the author's to remove: the author re-applying
    // without status leaves it alone.
    foos.patch(
        "ss",
        &PatchParams::apply("author"),
        &Patch::Apply(cfg(json!({"spec": {"message": "hi again", "replicas": 2}}))),
    )
    .await?;
    let foo = foos.get("ss").await?;
    assert_eq!(foo.spec.message, "hi again");
    assert_eq!(foo.status.and_then(|s| s.replicas), Some(2));
    Ok(())
}
