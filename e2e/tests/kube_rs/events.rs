//! kube-runtime's event `Recorder` writes `events.k8s.io/v1` Events; kubectl reads core/v1.

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as EventsV1;
use kplane_e2e::fixtures::{configmap, create_namespace};
use kplane_e2e::{KplaneServer, Table};
use kube::api::{ListParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Api, Resource as _};

const NS: &str = "evt";
const REASON: &str = "ConfigSynced";
const NOTE: &str = "synced by the e2e recorder";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorder_event_is_listed_by_kubectl_and_events_api() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    create_namespace(&client, NS).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let cm = cms
        .create(
            &PostParams::default(),
            &configmap("watched-config", &[("a", "1")]),
        )
        .await?;

    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "e2e-controller".into(),
            instance: Some("e2e-controller-0".into()),
        },
    );
    let event = Event {
        type_: EventType::Normal,
        reason: REASON.into(),
        note: Some(NOTE.into()),
        action: "Sync".into(),
        secondary: None,
    };
    recorder.publish(&event, &cm.object_ref(&())).await?;

    // events.k8s.io/v1, as written.
    let events: Api<EventsV1> = Api::namespaced(client.clone(), NS);
    let list = events.list(&ListParams::default()).await?;
    let ev = list
        .items
        .iter()
        .find(|e| e.reason.as_deref() == Some(REASON))
        .with_context(|| format!("no {REASON} event in events.k8s.io list: {:?}", list.items))?;
    assert_eq!(ev.note.as_deref(), Some(NOTE));
    assert_eq!(ev.type_.as_deref(), Some("Normal"));
    assert_eq!(ev.action.as_deref(), Some("Sync"));
    assert_eq!(ev.reporting_controller.as_deref(), Some("e2e-controller"));
    let regarding = ev.regarding.as_ref().context("event without regarding")?;
    assert_eq!(regarding.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(regarding.name.as_deref(), Some("watched-config"));
    assert_eq!(regarding.uid, cm.metadata.uid);
    ensure!(ev.event_time.is_some(), "eventTime lost: {ev:?}");

    // core/v1 through kubectl (blocking; nothing else runs on this runtime meanwhile).
    let out = server.kubectl_ok(&["get", "events", "-n", NS])?;
    let table = Table::parse(&out)?;
    assert_eq!(table.cell("REASON", REASON, "TYPE")?, "Normal");
    assert_eq!(
        table.cell("REASON", REASON, "OBJECT")?,
        "configmap/watched-config"
    );
    assert_eq!(table.cell("REASON", REASON, "MESSAGE")?, NOTE);

    let core = server.kubectl_ok(&["get", "events", "-n", NS, "-o", "json"])?;
    let core: serde_json::Value = serde_json::from_str(&core)?;
    let item = core["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["reason"] == REASON))
        .with_context(|| format!("no {REASON} in core/v1 events: {core}"))?;
    assert_eq!(item["message"], NOTE);
    assert_eq!(item["involvedObject"]["kind"], "ConfigMap");
    assert_eq!(item["involvedObject"]["name"], "watched-config");
    assert_eq!(item["involvedObject"]["namespace"], NS);
    Ok(())
}
