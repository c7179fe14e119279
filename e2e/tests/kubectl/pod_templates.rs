//! core/v1 PodTemplates through the real kubectl (apply both ways, the Table, YAML with
//! upstream's defaults, a 422) and kube-rs's typed client with k8s-openapi's type,
//! including lists in pages of 17 over 400 templates as upstream's chunking spec does.

use anyhow::{ensure, Context as _, Result};
use futures::{stream, StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplate, PodTemplateSpec};
use kplane_e2e::fixtures::string_map;
use kplane_e2e::{KplaneServer, Table};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use serde_json::json;

use super::get_json;

const WEB: &str = r#"
apiVersion: v1
kind: PodTemplate
metadata:
  name: web
template:
  metadata:
    labels: {app: web, tier: front}
  spec:
    containers:
    - name: nginx
      image: nginx:1.27
      ports: [{containerPort: 80}]
    - name: sidecar
      image: busybox
"#;

const WORKER: &str = r#"
apiVersion: v1
kind: PodTemplate
metadata:
  name: worker
template:
  spec:
    restartPolicy: Never
    containers:
    - {name: work, image: busybox}
"#;

const INVALID: &str = r#"
apiVersion: v1
kind: PodTemplate
metadata:
  name: bad
template:
  metadata:
    labels: {"-bad": x}
  spec:
    restartPolicy: Sometimes
    containers:
    - {name: Work, image: busybox}
"#;

#[test]
fn kubectl_applies_prints_and_refuses_pod_templates() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    let out = k.ok_stdin(&["apply", "-f", "-"], WEB)?;
    assert_eq!(out.trim(), "podtemplate/web created");
    let out = k.ok_stdin(&["apply", "--server-side", "-f", "-"], WORKER)?;
    assert_eq!(out.trim(), "podtemplate/worker serverside-applied");

    // The Table: upstream's columns (no age), containers and images joined, sorted labels.
    let table = Table::parse(&server.kubectl_ok(&["get", "podtemplates"])?)?;
    assert_eq!(
        table.headers,
        ["NAME", "CONTAINERS", "IMAGES", "POD LABELS"]
    );
    assert_eq!(table.cell("NAME", "web", "CONTAINERS")?, "nginx,sidecar");
    assert_eq!(table.cell("NAME", "web", "IMAGES")?, "nginx:1.27,busybox");
    assert_eq!(
        table.cell("NAME", "web", "POD LABELS")?,
        "app=web,tier=front"
    );
    assert_eq!(table.cell("NAME", "worker", "POD LABELS")?, "<none>");

    // Upstream's pod spec defaults and stored form.
    let yaml = server.kubectl_ok(&["get", "podtemplate", "web", "-o", "yaml"])?;
    for want in [
        "kind: PodTemplate",
        "generation: 1",
        "  metadata:\n    creationTimestamp: null\n",
        "    dnsPolicy: ClusterFirst\n",
        "    restartPolicy: Always\n",
        "    schedulerName: default-scheduler\n",
        "    terminationGracePeriodSeconds: 30\n",
        "    - containerPort: 80\n        protocol: TCP\n",
        "      imagePullPolicy: IfNotPresent\n",
        "      imagePullPolicy: Always\n",
    ] {
        ensure!(yaml.contains(want), "{want:?} missing from:\n{yaml}");
    }

    // A changed template bumps the generation; a label on the object does not.
    k.ok(&["label", "podtemplate", "web", "team=a"])?;
    let web = get_json(&server, &["get", "podtemplate", "web"])?;
    assert_eq!(web["metadata"]["generation"], 1, "{web}");
    let changed = WEB.replace("nginx:1.27", "nginx:1.28");
    let out = k.ok_stdin(&["apply", "-f", "-"], &changed)?;
    assert_eq!(out.trim(), "podtemplate/web configured");
    let web = get_json(&server, &["get", "podtemplate", "web"])?;
    assert_eq!(web["metadata"]["generation"], 2, "{web}");

    let out = k.run_stdin(&["apply", "-f", "-"], INVALID)?;
    ensure!(!out.success(), "the invalid template was accepted");
    let want = "The PodTemplate \"bad\" is invalid: \n\
         * template.labels: Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')\n\
         * template.spec.containers[0].name: Invalid value: \"Work\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\n\
         * template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"\n";
    assert_eq!(out.stderr, want);
    let names = Table::parse(&server.kubectl_ok(&["get", "podtemplates"])?)?;
    assert_eq!(names.values("NAME")?, ["web", "worker"]);
    Ok(())
}

fn template(name: String) -> PodTemplate {
    PodTemplate {
        metadata: ObjectMeta {
            name: Some(name),
            ..ObjectMeta::default()
        },
        template: Some(PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(string_map(&[("app", "chunked")])),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "test".into(),
                    image: Some("busybox".into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        }),
    }
}

/// Upstream's "should return chunks of results for list calls": 400 templates listed 17 at
/// a time, each page but the last with a continue token and the count still to come, and
/// the same pages as Tables through kubectl's `--chunk-size`.
#[tokio::test]
async fn four_hundred_pod_templates_list_in_pages_of_seventeen() -> Result<()> {
    const COUNT: usize = 400;
    const PAGE: u32 = 17;
    let server = KplaneServer::start()?;
    let api: Api<PodTemplate> = Api::namespaced(server.client().await?, "default");
    stream::iter(0..COUNT)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(
                    &PostParams::default(),
                    &template(format!("template-{i:04}")),
                )
                .await
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;

    let mut names = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut lp = ListParams::default().limit(PAGE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await?;
        pages += 1;
        names.extend(page.items.iter().filter_map(|t| t.metadata.name.clone()));
        let remaining = COUNT - names.len();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(next) => {
                assert_eq!(page.items.len(), PAGE as usize, "page {pages}");
                assert_eq!(
                    page.metadata.remaining_item_count,
                    Some(remaining as i64),
                    "page {pages}"
                );
                token = Some(next);
            }
            None => {
                assert_eq!(remaining, 0, "the last page left {remaining} out");
                assert_eq!(page.metadata.remaining_item_count, None);
                break;
            }
        }
    }
    assert_eq!(pages, COUNT.div_ceil(PAGE as usize));
    let want: Vec<String> = (0..COUNT).map(|i| format!("template-{i:04}")).collect();
    assert_eq!(names, want);

    let out = server.kubectl_ok(&["get", "podtemplates", "--chunk-size=17"])?;
    let table = Table::parse(&out)?;
    assert_eq!(table.values("NAME")?, want);
    let raw = server.kubectl_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/podtemplates?limit=17",
    ])?;
    let list: serde_json::Value = serde_json::from_str(&raw).context("list JSON")?;
    assert_eq!(list["metadata"]["remainingItemCount"], json!(COUNT - 17));
    Ok(())
}
