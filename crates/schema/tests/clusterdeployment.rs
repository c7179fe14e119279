//! The large ClusterDeployment-like CRD in testdata: compiles, validates good and bad
//! objects with all causes, prunes, defaults, runs CEL rules, and stays small in memory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use kplane_schema::{compile, CompileOptions, CompiledSchema, ListType, PathElem, SchemaCache};
use serde_json::{json, Value};

fn crd_schema() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/clusterdeployment-crd.yaml"
    ))
    .unwrap();
    let crd: Value = serde_saphyr::from_str(&text).unwrap();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

fn compiled() -> CompiledSchema {
    schema(crd_schema())
}

fn good() -> Value {
    json!({
        "apiVersion": "provisioning.kplane.io/v1",
        "kind": "ClusterDeployment",
        "metadata": {"name": "prod-east", "namespace": "tenant-a"},
        "spec": {
            "clusterName": "prod-east",
            "baseDomain": "example.com",
            "platform": {"aws": {"credentialsSecretRef": {"name": "aws-creds"}, "region": "us-east-1", "userTags": {"team": "infra"}}},
            "pullSecretRef": {"name": "pull-secret"},
            "provisioning": {"imageSetRef": {"name": "release-4.16"}, "installerEnv": [{"name": "HTTP_PROXY", "value": "http://proxy:3128"}]},
            "ingress": [{"name": "default", "domain": "apps.prod-east.example.com"}],
            "machinePools": [
                {"name": "worker", "replicas": 3, "platform": {"aws": {"type": "m6i.xlarge", "zones": ["us-east-1a", "us-east-1b"]}}},
                {"name": "infra", "autoscaling": {"minReplicas": 1, "maxReplicas": 5}, "maxUnavailable": "25%", "platform": {"aws": {"type": "m6i.2xlarge"}}, "taints": [{"key": "infra", "effect": "NoSchedule"}]}
            ],
            "networking": {"machineNetwork": [{"cidr": "10.0.0.0/16"}]},
            "addons": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "spec": {"anything": {"goes": true}}}],
            "extraSettings": {"free": ["form", 1]},
            "hibernateAfter": "8h"
        }
    })
}

#[test]
fn testdata_is_large() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/clusterdeployment-crd.yaml"
    ))
    .unwrap();
    assert!(text.lines().count() >= 2000);
}

#[test]
fn compiles_and_reports_size() {
    let s = compiled();
    let (nodes, rules) = s.stats();
    assert!(nodes > 400, "{nodes}");
    assert!(rules >= 12, "{rules}");
    let bytes = s.approx_memory_bytes();
    println!(
        "clusterdeployment schema: {nodes} nodes, {rules} CEL rules, ~{} KiB compiled",
        bytes / 1024
    );
    assert!(bytes < 2 << 20, "{bytes}");
}

#[test]
fn good_object_defaults_and_validates() {
    let s = compiled();
    let mut obj = good();
    assert_eq!(s.prune(&mut obj), Vec::<String>::new());
    s.apply_defaults(&mut obj);
    assert_eq!(obj["spec"]["installAttemptsLimit"], 3);
    assert_eq!(obj["spec"]["powerState"], "Running");
    assert_eq!(obj["spec"]["networking"]["networkType"], "OVNKubernetes");
    assert_eq!(
        obj["spec"]["networking"]["clusterNetwork"],
        json!([{"cidr": "10.128.0.0/14", "hostPrefix": 23}])
    );
    assert_eq!(
        obj["spec"]["networking"]["serviceNetwork"],
        json!(["172.30.0.0/16"])
    );
    assert_eq!(obj["spec"]["machinePools"][0]["architecture"], "amd64");
    assert_eq!(
        obj["spec"]["machinePools"][0]["platform"]["aws"].get("rootVolume"),
        None
    );
    assert_eq!(obj["spec"]["platform"]["aws"].get("privateLink"), None);
    assert_eq!(errors(&s, &obj), Vec::<String>::new());
    // update with the same object: transition rules pass
    assert_eq!(render(&s.validate(&obj, Some(&obj))), Vec::<String>::new());
}

#[test]
fn bad_object_reports_every_cause() {
    let s = compiled();
    let mut obj = good();
    let spec = obj["spec"].as_object_mut().unwrap();
    spec.insert("clusterName".into(), json!("Prod_East"));
    spec.insert("installAttemptsLimit".into(), json!(0));
    spec.insert("powerState".into(), json!("Sleeping"));
    spec["platform"]["aws"]["region"] = json!("mars-1");
    spec["machinePools"][0]["replicas"] = json!("three");
    spec["machinePools"][1]["autoscaling"] = json!({"minReplicas": 9, "maxReplicas": 2});
    spec["machinePools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "worker", "platform": {}}));
    spec["networking"]["serviceNetwork"] = json!(["172.30.0.0/16", "172.30.0.0/16"]);
    spec.insert("hibernateAfter".into(), json!("soon"));
    let errs = errors(&s, &obj);
    let want = [
        "spec.clusterName: Invalid value: \"Prod_East\": spec.clusterName in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
        "spec.installAttemptsLimit: Invalid value: 0: spec.installAttemptsLimit in body should be greater than or equal to 1",
        "spec.powerState: Unsupported value: \"Sleeping\": supported values: \"Running\", \"Hibernating\"",
        "spec.platform.aws.region: Unsupported value: \"mars-1\"",
        "spec.machinePools[0].replicas: Invalid value: \"string\": spec.machinePools[0].replicas in body must be of type integer: \"string\"",
        "spec.hibernateAfter: Invalid value: \"soon\": spec.hibernateAfter in body must be of type duration: \"soon\"",
        "spec.machinePools[2]: Duplicate value: map[string]interface {}{\"name\":\"worker\"}",
        "spec.networking.serviceNetwork[1]: Duplicate value: \"172.30.0.0/16\"",
        "spec.machinePools[1].autoscaling.minReplicas: Invalid value: \"object\": minReplicas must not exceed maxReplicas",
    ];
    for w in want {
        assert!(
            errs.iter().any(|e| e.starts_with(w)),
            "missing {w:?} in {errs:#?}"
        );
    }
    assert!(errs.len() >= want.len());
}

#[test]
fn unknown_fields_are_pruned() {
    let s = compiled();
    let mut obj = good();
    obj["spec"]["bogus"] = json!(1);
    obj["spec"]["machinePools"][0]["platform"]["aws"]["colour"] = json!("red");
    obj["spec"]["extraSettings"]["kept"] = json!({"deep": 1});
    obj["spec"]["addons"][0]["metadata"]["notMeta"] = json!(true);
    obj["spec"]["addons"][0]["spec"]["kept"] = json!(1);
    obj["status"] = json!({"conditions": [{"type": "Ready", "status": "True", "extra": 1}]});
    let pruned = s.prune(&mut obj);
    assert_eq!(
        pruned,
        vec![
            "spec.addons[0].metadata.notMeta",
            "spec.bogus",
            "spec.machinePools[0].platform.aws.colour",
            "status.conditions[0].extra",
        ]
    );
    assert_eq!(obj["spec"]["extraSettings"]["kept"], json!({"deep": 1}));
    assert_eq!(obj["spec"]["addons"][0]["spec"]["kept"], 1);
    assert_eq!(obj["metadata"]["namespace"], "tenant-a");
}

#[test]
fn transition_rules_use_old_object() {
    let s = compiled();
    let old = good();
    let mut new = good();
    new["spec"]["clusterName"] = json!("renamed");
    new["spec"]["platform"] =
        json!({"gcp": {"credentialsSecretRef": {"name": "g"}, "region": "europe-west1"}});
    let errs = render(&s.validate(&new, Some(&old)));
    assert!(
        errs.contains(&"spec: Invalid value: \"object\": clusterName is immutable".to_string()),
        "{errs:#?}"
    );
    assert!(
        errs.contains(
            &"spec.platform: Invalid value: \"object\": the platform type cannot be changed"
                .to_string()
        ),
        "{errs:#?}"
    );
    // on create the transition rules do not run
    assert!(!errors(&s, &new).iter().any(|e| e.contains("immutable")));
}

#[test]
fn list_types_for_server_side_apply() {
    let s = compiled();
    let p = |v: &[&str]| {
        v.iter()
            .map(|x| {
                x.parse::<usize>()
                    .map(PathElem::Index)
                    .unwrap_or(PathElem::Field(x.to_string()))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        s.list_type_at(&p(&["spec", "machinePools"])),
        Some(ListType::Map(vec!["name".into()]))
    );
    assert_eq!(
        s.list_type_at(&p(&["spec", "machinePools", "0", "taints"])),
        Some(ListType::Map(vec!["key".into(), "effect".into()]))
    );
    assert_eq!(
        s.list_type_at(&p(&["spec", "networking", "serviceNetwork"])),
        Some(ListType::Set)
    );
    assert_eq!(
        s.list_type_at(&p(&["spec", "networking", "machineNetwork"])),
        Some(ListType::Atomic)
    );
    assert_eq!(s.list_type_at(&p(&["spec", "clusterName"])), None);
}

#[test]
fn shared_across_clusters() {
    let cache = SchemaCache::new();
    let schema = crd_schema();
    let a = cache
        .get_or_compile(&schema, PREFIX, &CompileOptions::default())
        .unwrap();
    let b = cache
        .get_or_compile(&schema, PREFIX, &CompileOptions::default())
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    assert_eq!(cache.len(), 1);
}

fn strip_rules(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("x-kubernetes-validations");
            m.values_mut().for_each(strip_rules);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_rules),
        _ => {}
    }
}

#[test]
fn validation_is_fast() {
    let s = compiled();
    let mut obj = good();
    s.apply_defaults(&mut obj);
    let time = |f: &dyn Fn()| {
        let start = std::time::Instant::now();
        for _ in 0..50 {
            f();
        }
        start.elapsed() / 50
    };
    let with_cel = time(&|| assert!(s.validate(&obj, None).is_empty()));
    let mut plain = crd_schema();
    strip_rules(&mut plain);
    let p = schema(plain);
    let without_cel = time(&|| assert!(p.validate(&obj, None).is_empty()));
    let prune = time(&|| {
        let mut o = obj.clone();
        assert!(s.prune(&mut o).is_empty());
    });
    let default = time(&|| {
        let mut o = good();
        s.apply_defaults(&mut o);
    });
    let start = std::time::Instant::now();
    let _ = compile(&crd_schema(), PREFIX, &CompileOptions::default()).unwrap();
    println!(
        "ClusterDeployment: validate {with_cel:?} (without CEL {without_cel:?}), prune {prune:?}, default {default:?}, compile {:?}",
        start.elapsed()
    );
}
