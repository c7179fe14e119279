//! Golden tests: every `testdata/*.yaml` file holds `cases`, each a list of `steps` run in
//! order (a step's result is the next step's live object unless it gives `live`).
//!
//! Step fields: `op` (`smp` | `apply` | `update`), `live`, `patch` (smp), `applied`
//! (apply), `new` or `mergePatch` (update: the new object, or an RFC 7386 patch of the
//! live one), `manager`, `apiVersion`, `subresource`, `force`, `reset`, `now`; an `smp`
//! step with a `manager` also records the update. Expectations: `expect` (the whole
//! object), `expectAt` (`{<JSON pointer>: value}`), `expectManagedFields`, `expectConflicts` (`[{manager, field}]`),
//! `expectStatus` (the 409 body), `expectError` (a substring of the error).
//! A case's `types` is `{builtin: [group, kind]}`, `{crd: <openAPIV3Schema>}` or absent
//! (the default deduced type info).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use kplane_merge::{
    apply, builtin_type_info, conflicts_status, crd_type_info, record_update, strategic_merge,
    ApplyError, DefaultTypeInfo, Request, TypeInfo,
};
use serde_json::{json, Value};

const DEFAULT_NOW: &str = "2024-01-01T00:00:00Z";

fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let t = target.as_object_mut().unwrap();
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

fn types_of(case: &Value) -> Arc<dyn TypeInfo> {
    match case.get("types") {
        None => Arc::new(DefaultTypeInfo),
        Some(t) => {
            if let Some(b) = t.get("builtin") {
                let g = b[0].as_str().unwrap();
                let k = b[1].as_str().unwrap();
                builtin_type_info(g, k).unwrap_or_else(|| panic!("no builtin {g}/{k}"))
            } else if let Some(s) = t.get("crd") {
                Arc::new(crd_type_info(s).unwrap())
            } else {
                panic!("bad types {t}")
            }
        }
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

/// Runs one case; returns a failure description.
fn run_case(case: &Value) -> Result<(), String> {
    let types = types_of(case);
    let mut live: Option<Value> = None;
    let steps = case["steps"].as_array().ok_or("case without steps")?;
    for (i, step) in steps.iter().enumerate() {
        let fail = |m: String| format!("step {i}: {m}");
        if let Some(l) = step.get("live") {
            live = if l.is_null() { None } else { Some(l.clone()) };
        }
        let s = |k: &str| step.get(k).and_then(Value::as_str);
        let op = s("op").ok_or_else(|| fail("no op".into()))?;
        let manager = s("manager").unwrap_or("test");
        let now = s("now").unwrap_or(DEFAULT_NOW);
        let api_version = s("apiVersion")
            .map(str::to_string)
            .or_else(|| {
                step.get("applied")
                    .or(step.get("new"))
                    .or(live.as_ref())
                    .and_then(|v| v.get("apiVersion"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "v1".into());
        let reset: Vec<&str> = step
            .get("reset")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let req = Request {
            manager,
            api_version: &api_version,
            subresource: s("subresource"),
            now,
            types: types.as_ref(),
            reset_fields: &reset,
        };
        let outcome: Result<Value, String> = match op {
            "smp" => {
                let orig = live.clone().unwrap_or_else(|| json!({}));
                match strategic_merge(&orig, &step["patch"], types.as_ref()) {
                    Ok(mut v) => {
                        if step.get("manager").is_some() {
                            record_update(live.as_ref(), &mut v, &req)
                                .map_err(|e| fail(e.to_string()))?;
                        }
                        Ok(v)
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            "apply" => {
                let force = step.get("force").and_then(Value::as_bool).unwrap_or(false);
                match apply(live.as_ref(), &step["applied"], &req, force) {
                    Ok(v) => Ok(v),
                    Err(ApplyError::Conflicts(c)) => {
                        if let Some(exp) = step.get("expectConflicts") {
                            let got: Vec<Value> = c
                                .iter()
                                .map(|c| json!({"manager": c.manager, "field": c.field}))
                                .collect();
                            if &Value::Array(got.clone()) != exp {
                                return Err(fail(format!(
                                    "conflicts differ:\n got {}\nwant {}",
                                    pretty(&Value::Array(got)),
                                    pretty(exp)
                                )));
                            }
                        }
                        if let Some(exp) = step.get("expectStatus") {
                            let got = conflicts_status(&c).to_json();
                            if &got != exp {
                                return Err(fail(format!(
                                    "status differs:\n got {}\nwant {}",
                                    pretty(&got),
                                    pretty(exp)
                                )));
                            }
                        }
                        if step.get("expectConflicts").is_none()
                            && step.get("expectStatus").is_none()
                        {
                            return Err(fail(format!("unexpected conflicts: {c:?}")));
                        }
                        continue;
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            "update" => {
                let mut new = match (step.get("new"), step.get("mergePatch")) {
                    (Some(n), _) => n.clone(),
                    (None, Some(p)) => {
                        let mut n = live.clone().unwrap_or_else(|| json!({}));
                        merge_patch(&mut n, p);
                        n
                    }
                    _ => return Err(fail("update without new or mergePatch".into())),
                };
                record_update(live.as_ref(), &mut new, &req)
                    .map(|_| new)
                    .map_err(|e| e.to_string())
            }
            other => return Err(fail(format!("unknown op {other}"))),
        };
        match outcome {
            Err(e) => match s("expectError") {
                Some(want) if e.contains(want) => continue,
                _ => return Err(fail(format!("error: {e}"))),
            },
            Ok(v) => {
                if step.get("expectError").is_some() || step.get("expectConflicts").is_some() {
                    return Err(fail(format!("expected a failure, got {}", pretty(&v))));
                }
                if let Some(exp) = step.get("expect") {
                    if &v != exp {
                        return Err(fail(format!(
                            "result differs:\n got {}\nwant {}",
                            pretty(&v),
                            pretty(exp)
                        )));
                    }
                }
                if let Some(exp) = step.get("expectAt").and_then(Value::as_object) {
                    for (ptr, want) in exp {
                        let got = v.pointer(ptr).cloned().unwrap_or(Value::Null);
                        if &got != want {
                            return Err(fail(format!(
                                "{ptr} differs:\n got {}\nwant {}",
                                pretty(&got),
                                pretty(want)
                            )));
                        }
                    }
                }
                if let Some(exp) = step.get("expectManagedFields") {
                    let got = v
                        .pointer("/metadata/managedFields")
                        .cloned()
                        .unwrap_or(Value::Null);
                    if &got != exp {
                        return Err(fail(format!(
                            "managedFields differ:\n got {}\nwant {}",
                            pretty(&got),
                            pretty(exp)
                        )));
                    }
                }
                live = Some(v);
            }
        }
    }
    Ok(())
}

#[test]
fn golden_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut total = 0;
    let mut failures = Vec::new();
    let filter = std::env::var("GOLDEN").ok();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let doc: Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for case in doc["cases"].as_array().unwrap() {
            let name = case["name"].as_str().unwrap();
            if filter.as_deref().is_some_and(|f| !name.contains(f)) {
                continue;
            }
            total += 1;
            if let Err(e) = run_case(case) {
                failures.push(format!(
                    "{} / {name}: {e}",
                    f.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} of {total} golden cases failed:\n\n{}",
            failures.len(),
            failures.join("\n\n")
        );
    }
    if filter.is_none() {
        assert!(total >= 60, "only {total} golden cases");
    }
    println!("{total} golden cases passed");
}
