//! OpenShift Hive's 21 CRDs (../shared/fixtures/hive/crds, which kube-apiserver 1.32.6
//! accepts) compile without errors, and the CEL rules that come closest to the cost limit
//! cost exactly what kube-apiserver estimates for them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::render;
use kplane_schema::{compile, CompileOptions};
use serde_json::Value;

fn crd_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/hive/crds")
}

fn read_crd(file: &str) -> Value {
    let path = crd_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compiles every version's schema of `crd`; the rendered errors per version.
fn compile_versions(crd: &Value, opts: &CompileOptions) -> Vec<Vec<String>> {
    let versions = crd["spec"]["versions"].as_array().expect("spec.versions");
    versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let prefix = format!("spec.versions[{i}].schema.openAPIV3Schema");
            match compile(&v["schema"]["openAPIV3Schema"], &prefix, opts) {
                Ok(_) => Vec::new(),
                Err(errs) => render(&errs),
            }
        })
        .collect()
}

#[test]
fn all_21_hive_crds_compile() {
    let dir = crd_dir();
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the hive fixtures must exist at {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".yaml"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 21, "{files:#?}");
    for f in &files {
        let crd = read_crd(f);
        for (i, errs) in compile_versions(&crd, &CompileOptions::default())
            .iter()
            .enumerate()
        {
            assert!(errs.is_empty(), "{f} version {i}: {errs:#?}");
        }
    }
}

/// The errors of `file` with the per-rule limit set to `limit`.
fn errors_at_limit(file: &str, limit: u64) -> Vec<String> {
    let opts = CompileOptions {
        max_cel_cost: limit,
        ..CompileOptions::default()
    };
    compile_versions(&read_crd(file), &opts).concat()
}

#[test]
fn clusterdeployment_condition_rule_costs_what_kube_apiserver_estimates() {
    // status.clusterVersionStatus.conditionalUpdates[] (maxItems 500) .risks[] (maxItems
    // 200) .conditions (maxItems 8): `self.exists_one(x, x.type == 'Applies')` is
    //   self 1, plus 8 iterations of the step `x.type == 'Applies' ? @r + 1 : @r`:
    //     x.type 2 (ident, select), == ceil(0.1 * min(316*4, 7)) = 1, ?: max(2, 1) = 2: 5,
    //   and the result `@r == 1`: 1 + ceil(0.1 * 1) = 2
    //   = 1 + 8 * 5 + 2 = 43 per run, times 500 * 200 runs = 4,300,000.
    let path = "spec.versions[0].schema.openAPIV3Schema.properties[status].properties[clusterVersionStatus].properties[conditionalUpdates].items.properties[risks].items.properties[conditions].x-kubernetes-validations[0].rule";
    assert!(errors_at_limit("hive.openshift.io_clusterdeployments.yaml", 4_300_000).is_empty());
    assert_eq!(
        errors_at_limit("hive.openshift.io_clusterdeployments.yaml", 4_299_999),
        vec![format!("{path}: Forbidden: estimated rule cost exceeds budget by factor of 1.000000x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")]
    );
}

#[test]
fn machinepool_rules_under_an_unbounded_list_cost_what_kube_apiserver_estimates() {
    // nutanix.dataDisks[] and nutanix.gpus[] have no maxItems, so each rule runs as often
    // as its node's smallest JSON fits in 3 MiB: the node requires `type` (no default),
    // so it is at least `{"type":""}` = 2 + len("type") + 2 + 4 = 12 bytes, and
    // 3,145,728 / (12 + 1) = 241,979 times.
    // `has(self.type) && self.type == 'uuid' ? has(self.uuid) : !has(self.uuid)`:
    //   has() 1 (no cost of its own), == 2 + ceil(0.1 * min(4, 4)) = 3, && 4,
    //   ?: 4 + max(1, 1 + 1) = 6; the gpus rules (`'DeviceID'`, `'Name'`) cost 6 too.
    //   6 * 241,979 = 1,451,874.
    let file = "hive.openshift.io_machinepools.yaml";
    assert!(errors_at_limit(file, 1_451_874).is_empty());
    let errs = errors_at_limit(file, 1_451_873);
    assert_eq!(errs.len(), 3, "{errs:#?}");
    for e in &errs {
        assert!(
            e.ends_with(": Forbidden: estimated rule cost exceeds budget by factor of 1.000001x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
            "{e}"
        );
    }
    assert!(errs[0].contains(".properties[dataDisks].items.properties[storageConfig].properties[storageContainer].x-kubernetes-validations[0].rule"), "{errs:#?}");
}
