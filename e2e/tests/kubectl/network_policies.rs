//! networking.k8s.io/v1 NetworkPolicies through the real kubectl (client-side and
//! server-side apply, the Table, YAML with upstream's defaults, describe, a 422, watch),
//! kube-rs's typed client with k8s-openapi's type, and a protobuf request body.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kplane_e2e::fixtures::{error_code, string_map};
use kplane_e2e::{KplaneServer, Table};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use serde_json::{json, Value};

use super::get_json;

const DB_POLICY: &str = r#"
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: db
spec:
  podSelector:
    matchLabels: {app: db}
  ingress:
  - from:
    - podSelector:
        matchLabels: {role: api}
    - ipBlock:
        cidr: 10.0.0.0/8
        except: [10.1.0.0/16]
    ports:
    - port: 5432
  egress:
  - to:
    - namespaceSelector: {}
    ports:
    - protocol: UDP
      port: 53
    - port: 8000
      endPort: 8080
"#;

const OPEN_POLICY: &str = r#"
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web
spec:
  podSelector: {}
  ingress:
  - {}
"#;

const INVALID_POLICY: &str = r#"
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: bad
spec:
  podSelector:
    matchExpressions:
    - {key: app, operator: Near}
  ingress:
  - from:
    - podSelector: {}
      ipBlock: {cidr: 10.0.0.0/8, except: [192.168.0.0/16]}
    - ipBlock: {cidr: 10.0.0.0}
    ports:
    - {port: 0}
    - {protocol: ICMP, port: http, endPort: 90}
    - {endPort: 90}
    - {port: 90, endPort: 80}
  policyTypes: [Ingress, Sideways]
"#;

/// Whitespace runs collapsed, so that tab-aligned output compares as words.
fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn kubectl_applies_prints_describes_and_refuses_network_policies() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    let out = k.ok_stdin(&["apply", "-f", "-"], DB_POLICY)?;
    assert_eq!(out.trim(), "networkpolicy.networking.k8s.io/db created");
    let out = k.ok_stdin(&["apply", "--server-side", "-f", "-"], OPEN_POLICY)?;
    assert_eq!(
        out.trim(),
        "networkpolicy.networking.k8s.io/web serverside-applied"
    );

    // The Table: upstream's columns, the pod selector as FormatLabelSelector prints it.
    let table = Table::parse(&server.kubectl_ok(&["get", "netpol"])?)?;
    assert_eq!(table.headers, ["NAME", "POD-SELECTOR", "AGE"]);
    assert_eq!(table.cell("NAME", "db", "POD-SELECTOR")?, "app=db");
    assert_eq!(table.cell("NAME", "web", "POD-SELECTOR")?, "<none>");

    // Upstream's defaults: TCP on ports without a protocol, the policy types.
    let yaml = server.kubectl_ok(&["get", "networkpolicies", "db", "-o", "yaml"])?;
    for want in [
        "apiVersion: networking.k8s.io/v1",
        "kind: NetworkPolicy",
        "generation: 1",
        "  policyTypes:\n  - Ingress\n  - Egress\n",
        "    - port: 5432\n      protocol: TCP\n",
        "    - endPort: 8080\n      port: 8000\n      protocol: TCP\n",
    ] {
        ensure!(yaml.contains(want), "{want:?} missing from:\n{yaml}");
    }
    let web = get_json(
        &server,
        &["get", "networkpolicy", "web", "--show-managed-fields"],
    )?;
    assert_eq!(
        web["spec"],
        json!({"podSelector": {}, "ingress": [{}], "policyTypes": ["Ingress"]})
    );
    let managed = web["metadata"]["managedFields"]
        .as_array()
        .context("managedFields")?;
    let entries: Vec<(&Value, &Value, &Value)> = managed
        .iter()
        .map(|m| (&m["manager"], &m["operation"], &m["fieldsV1"]))
        .collect();
    assert_eq!(
        entries,
        [(
            &json!("kubectl"),
            &json!("Apply"),
            &json!({"f:spec": {"f:ingress": {}, "f:podSelector": {}}})
        )],
        "{web}"
    );

    // A changed spec bumps the generation. Re-applying the same manifest sends a patch
    // again, as it does to kube-apiserver (the rule lists are atomic and the stored ones
    // hold the defaulted protocol), but the spec it leaves is the same: no new generation.
    let changed = DB_POLICY.replace("port: 5432", "port: 5433");
    for _ in 0..2 {
        let out = k.ok_stdin(&["apply", "-f", "-"], &changed)?;
        assert_eq!(out.trim(), "networkpolicy.networking.k8s.io/db configured");
        let db = get_json(&server, &["get", "netpol", "db"])?;
        assert_eq!(db["metadata"]["generation"], 2, "{db}");
    }
    let db = get_json(&server, &["get", "netpol", "db"])?;
    assert_eq!(
        db["spec"]["ingress"][0]["ports"],
        json!([{"port": 5433, "protocol": "TCP"}])
    );

    let described = words(&server.kubectl_ok(&["describe", "networkpolicy", "db"])?);
    for want in [
        "Name: db",
        "Namespace: default",
        "Spec: PodSelector: app=db",
        "Allowing ingress traffic: To Port: 5433/TCP From: PodSelector: role=api From: IPBlock: CIDR: 10.0.0.0/8 Except: 10.1.0.0/16",
        "Allowing egress traffic: To Port: 53/UDP To Port Range: 8000-8080/TCP To: NamespaceSelector: <none>",
        "Policy Types: Ingress, Egress",
    ] {
        ensure!(described.contains(want), "{want:?} missing from: {described}");
    }
    let described = words(&server.kubectl_ok(&["describe", "netpol", "web"])?);
    ensure!(
        described.contains(
            "PodSelector: <none> (Allowing the specific traffic to all pods in this namespace)"
        ),
        "{described}"
    );

    // Every error, with upstream's paths and messages.
    let out = k.run_stdin(&["apply", "-f", "-"], INVALID_POLICY)?;
    ensure!(
        !out.success(),
        "the invalid policy was accepted: {}",
        out.stdout
    );
    let p = "spec.ingress[0].ports";
    let f = "spec.ingress[0].from";
    let want = format!(
        "The NetworkPolicy \"bad\" is invalid: \n\
         * spec.podSelector.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator\n\
         * {p}[0].port: Invalid value: 0: must be between 1 and 65535, inclusive\n\
         * {p}[1].protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"\n\
         * {p}[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric\n\
         * {p}[2].endPort: Invalid value: 90: may not be specified when `port` is not specified\n\
         * {p}[3].endPort: Invalid value: 90: must be greater than or equal to `port`\n\
         * {f}[0].ipBlock.except[0]: Invalid value: \"192.168.0.0/16\": must be a strict subset of `cidr`\n\
         * {f}[0]: Forbidden: may not specify both ipBlock and another peer\n\
         * {f}[1].ipBlock.cidr: Invalid value: \"10.0.0.0\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)\n\
         * spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"\n"
    );
    assert_eq!(out.stderr, want);
    let names = Table::parse(&server.kubectl_ok(&["get", "netpol"])?)?;
    assert_eq!(names.values("NAME")?, ["db", "web"]);
    Ok(())
}

#[test]
fn kubectl_watches_network_policies() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    k.ok(&["create", "namespace", "w"])?;
    let mut watch = k.spawn_watch(&["get", "netpol", "-n", "w", "-w", "--output-watch-events"])?;
    let event = |kind: &'static str, selector: &'static str| {
        move |line: &str| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            cells.first() == Some(&kind)
                && cells.get(1) == Some(&"p")
                && cells.get(2) == Some(&selector)
        }
    };
    let timeout = Duration::from_secs(30);
    k.ok_stdin(
        &["apply", "-n", "w", "-f", "-"],
        &OPEN_POLICY.replace("name: web", "name: p"),
    )?;
    watch.wait_for_line(timeout, "ADDED p", event("ADDED", "<none>"))?;
    k.ok(&[
        "patch",
        "netpol",
        "p",
        "-n",
        "w",
        "--type=merge",
        "-p",
        r#"{"spec":{"podSelector":{"matchLabels":{"app":"x"}}}}"#,
    ])?;
    watch.wait_for_line(timeout, "MODIFIED p", event("MODIFIED", "app=x"))?;
    k.ok(&["delete", "netpol", "p", "-n", "w"])?;
    watch.wait_for_line(timeout, "DELETED p", event("DELETED", "app=x"))?;
    Ok(())
}

fn port(n: i32) -> NetworkPolicyPort {
    NetworkPolicyPort {
        port: Some(IntOrString::Int(n)),
        ..NetworkPolicyPort::default()
    }
}

#[tokio::test]
async fn kube_rs_creates_and_lists_typed_network_policies() -> Result<()> {
    let server = KplaneServer::start()?;
    let api: Api<NetworkPolicy> = Api::namespaced(server.client().await?, "default");
    let policy = NetworkPolicy {
        metadata: ObjectMeta {
            name: Some("typed".into()),
            ..ObjectMeta::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(string_map(&[("app", "typed")])),
                ..LabelSelector::default()
            }),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector::default()),
                    ..NetworkPolicyPeer::default()
                }]),
                ports: Some(vec![port(80), port(443)]),
            }]),
            ..NetworkPolicySpec::default()
        }),
    };
    let created = api.create(&PostParams::default(), &policy).await?;
    assert_eq!(created.metadata.generation, Some(1));
    let spec = created.spec.as_ref().context("no spec")?;
    assert_eq!(
        spec.policy_types.as_deref(),
        Some(&["Ingress".to_string()][..])
    );
    let protocols: Vec<Option<&str>> = spec.ingress.as_ref().context("no ingress")?[0]
        .ports
        .as_ref()
        .context("no ports")?
        .iter()
        .map(|p| p.protocol.as_deref())
        .collect();
    assert_eq!(protocols, [Some("TCP"), Some("TCP")]);

    let listed = api.list(&ListParams::default()).await?;
    let names: Vec<Option<&str>> = listed
        .items
        .iter()
        .map(|p| p.metadata.name.as_deref())
        .collect();
    assert_eq!(names, [Some("typed")]);
    assert_eq!(listed.items[0].spec, created.spec);
    let selected = api
        .list(&ListParams::default().fields("metadata.name=typed"))
        .await?;
    assert_eq!(selected.items.len(), 1);

    // A second create is a conflict; an invalid one a 422 with upstream's causes.
    let err = api
        .create(&PostParams::default(), &policy)
        .await
        .err()
        .context("second create accepted")?;
    assert_eq!(error_code(&err), Some(409), "{err}");
    let mut bad = policy.clone();
    bad.metadata.name = Some("bad".into());
    if let Some(rule) = bad
        .spec
        .as_mut()
        .and_then(|s| s.ingress.as_mut())
        .and_then(|i| i.first_mut())
    {
        rule.ports = Some(vec![NetworkPolicyPort {
            end_port: Some(90),
            ..port(100)
        }]);
    }
    let err = api
        .create(&PostParams::default(), &bad)
        .await
        .err()
        .context("invalid policy accepted")?;
    let kube::Error::Api(status) = &err else {
        anyhow::bail!("not an API error: {err}");
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let details = status.details.as_ref().context("no details")?;
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("networking.k8s.io", "NetworkPolicy")
    );
    let causes: Vec<(&str, &str, &str)> = details
        .causes
        .iter()
        .map(|c| (c.reason.as_str(), c.field.as_str(), c.message.as_str()))
        .collect();
    assert_eq!(
        causes,
        [(
            "FieldValueInvalid",
            "spec.ingress[0].ports[0].endPort",
            "Invalid value: 100: must be greater than or equal to `port`"
        )]
    );
    Ok(())
}

/// The protobuf messages of a NetworkPolicy body (`k8s.io/api/networking/v1/generated.proto`,
/// `runtime.Unknown`), the fields this test sends.
mod pb {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Unknown {
        #[prost(message, optional, tag = "1")]
        pub type_meta: Option<TypeMeta>,
        #[prost(bytes = "vec", optional, tag = "2")]
        pub raw: Option<Vec<u8>>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TypeMeta {
        #[prost(string, optional, tag = "1")]
        pub api_version: Option<String>,
        #[prost(string, optional, tag = "2")]
        pub kind: Option<String>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ObjectMeta {
        #[prost(string, optional, tag = "1")]
        pub name: Option<String>,
        #[prost(string, optional, tag = "3")]
        pub namespace: Option<String>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NetworkPolicy {
        #[prost(message, optional, tag = "1")]
        pub metadata: Option<ObjectMeta>,
        #[prost(message, optional, tag = "2")]
        pub spec: Option<Spec>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Spec {
        #[prost(message, optional, tag = "1")]
        pub pod_selector: Option<LabelSelector>,
        #[prost(message, repeated, tag = "3")]
        pub egress: Vec<EgressRule>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LabelSelector {
        #[prost(btree_map = "string, string", tag = "1")]
        pub match_labels: std::collections::BTreeMap<String, String>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct EgressRule {
        #[prost(message, repeated, tag = "1")]
        pub ports: Vec<Port>,
        #[prost(message, repeated, tag = "2")]
        pub to: Vec<Peer>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Port {
        #[prost(string, optional, tag = "1")]
        pub protocol: Option<String>,
        #[prost(message, optional, tag = "2")]
        pub port: Option<IntOrString>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct IntOrString {
        #[prost(int64, optional, tag = "1")]
        pub kind: Option<i64>,
        #[prost(int32, optional, tag = "2")]
        pub int_val: Option<i32>,
        #[prost(string, optional, tag = "3")]
        pub str_val: Option<String>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Peer {
        #[prost(message, optional, tag = "3")]
        pub ip_block: Option<IpBlock>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct IpBlock {
        #[prost(string, optional, tag = "1")]
        pub cidr: Option<String>,
        #[prost(string, repeated, tag = "2")]
        pub except: Vec<String>,
    }
}

/// `k8s\0` + `runtime.Unknown` around a NetworkPolicy, as client-go sends it.
fn protobuf_body() -> Vec<u8> {
    use prost::Message as _;
    let policy = pb::NetworkPolicy {
        metadata: Some(pb::ObjectMeta {
            name: Some("from-pb".into()),
            namespace: Some("default".into()),
        }),
        spec: Some(pb::Spec {
            pod_selector: Some(pb::LabelSelector {
                match_labels: [("app".to_string(), "pb".to_string())].into(),
            }),
            egress: vec![pb::EgressRule {
                ports: vec![pb::Port {
                    protocol: None,
                    port: Some(pb::IntOrString {
                        kind: Some(1),
                        int_val: Some(0),
                        str_val: Some("dns".into()),
                    }),
                }],
                to: vec![pb::Peer {
                    ip_block: Some(pb::IpBlock {
                        cidr: Some("10.0.0.0/8".into()),
                        except: vec!["10.0.1.0/24".into()],
                    }),
                }],
            }],
        }),
    };
    let unknown = pb::Unknown {
        type_meta: Some(pb::TypeMeta {
            api_version: Some("networking.k8s.io/v1".into()),
            kind: Some("NetworkPolicy".into()),
        }),
        raw: Some(policy.encode_to_vec()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

#[tokio::test]
async fn a_protobuf_body_creates_a_network_policy() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    let request =
        http::Request::post("/apis/networking.k8s.io/v1/namespaces/default/networkpolicies")
            .header("Content-Type", "application/vnd.kubernetes.protobuf")
            .header("Accept", "application/json")
            .body(protobuf_body())?;
    let text = client.request_text(request).await?;
    let created: Value = serde_json::from_str(&text).context("created policy JSON")?;
    assert_eq!(created["metadata"]["name"], "from-pb", "{created}");
    assert_eq!(
        created["spec"],
        json!({
            "podSelector": {"matchLabels": {"app": "pb"}},
            "egress": [{
                "ports": [{"port": "dns", "protocol": "TCP"}],
                "to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.1.0/24"]}}]
            }],
            "policyTypes": ["Ingress", "Egress"]
        })
    );
    let api: Api<NetworkPolicy> = Api::namespaced(client, "default");
    let got = api.get("from-pb").await?;
    assert_eq!(got.metadata.generation, Some(1));
    Ok(())
}

#[test]
fn the_default_edit_and_view_roles_cover_network_policies() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    k.ok(&[
        "create",
        "rolebinding",
        "e",
        "--clusterrole=edit",
        "--user=erin",
    ])?;
    k.ok(&[
        "create",
        "rolebinding",
        "v",
        "--clusterrole=view",
        "--user=vic",
    ])?;
    for (user, verb, want) in [
        ("erin", "create", "yes"),
        ("erin", "delete", "yes"),
        ("vic", "list", "yes"),
        ("vic", "watch", "yes"),
        ("vic", "create", "no"),
    ] {
        let out = k.run(&[
            "auth",
            "can-i",
            verb,
            "networkpolicies.networking.k8s.io",
            "--as",
            user,
        ])?;
        assert_eq!(out.stdout.trim(), want, "{user} {verb}: {}", out.stderr);
    }
    // And the real thing: vic lists, but may not create.
    let err = k.run(&["get", "netpol", "--as", "vic"])?;
    ensure!(err.success(), "vic cannot list: {}", err.stderr);
    let out = k.run_stdin(&["create", "--as", "vic", "-f", "-"], OPEN_POLICY)?;
    ensure!(
        !out.success() && out.stderr.contains("networkpolicies.networking.k8s.io is forbidden: User \"vic\" cannot create resource \"networkpolicies\" in API group \"networking.k8s.io\" in the namespace \"default\""),
        "{}",
        out.stderr
    );
    Ok(())
}

/// `kubectl get --raw <path>`, parsed.
fn raw(server: &KplaneServer, path: &str) -> Result<Value> {
    let out = server.kubectl_ok(&["get", "--raw", path])?;
    serde_json::from_str(&out).with_context(|| format!("{path} is not JSON: {out}"))
}

#[test]
fn the_networking_group_is_discovered_and_explained() -> Result<()> {
    let server = KplaneServer::start()?;
    let groups = raw(&server, "/apis")?;
    let networking = groups["groups"]
        .as_array()
        .context("groups")?
        .iter()
        .find(|g| g["name"] == "networking.k8s.io")
        .context("no networking.k8s.io group")?;
    assert_eq!(
        networking["preferredVersion"],
        json!({"groupVersion": "networking.k8s.io/v1", "version": "v1"})
    );
    let list = raw(&server, "/apis/networking.k8s.io/v1")?;
    assert_eq!(list["groupVersion"], "networking.k8s.io/v1");
    let resources = list["resources"].as_array().context("resources")?;
    assert_eq!(resources.len(), 1, "{list}");
    let np = &resources[0];
    for (k, v) in [
        ("name", json!("networkpolicies")),
        ("singularName", json!("networkpolicy")),
        ("namespaced", json!(true)),
        ("kind", json!("NetworkPolicy")),
        ("shortNames", json!(["netpol"])),
        (
            "verbs",
            json!([
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch"
            ]),
        ),
        // base64 of the first 8 bytes of sha256("networking.k8s.io/v1/NetworkPolicy").
        ("storageVersionHash", json!("YpfwF18m1G8=")),
    ] {
        assert_eq!(np[k], v, "{k} in {np}");
    }
    ensure!(np.get("categories").is_none(), "{np}");

    // Aggregated discovery, as kubectl reads it.
    let table =
        Table::parse(&server.kubectl_ok(&["api-resources", "--api-group=networking.k8s.io"])?)?;
    assert_eq!(table.values("NAME")?, ["networkpolicies"]);

    let explained = words(&server.kubectl_ok(&["explain", "netpol.spec.ingress.ports"])?);
    for want in [
        "GROUP: networking.k8s.io",
        "KIND: NetworkPolicy",
        "VERSION: v1",
        "FIELD: ports <[]NetworkPolicyPort>",
        "endPort <integer>",
        "port <IntOrString>",
        "protocol <string>",
    ] {
        ensure!(
            explained.contains(want),
            "{want:?} missing from: {explained}"
        );
    }
    Ok(())
}
