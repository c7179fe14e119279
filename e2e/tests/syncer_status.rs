//! The status a real host's Job controller writes, carried back into kplane by the real
//! `kplane syncer`: the sequences kube-controller-manager 1.32.6 wrote on a Job that
//! succeeded and one that failed (../shared/fixtures/job-status/), replayed on the stand-in
//! host step by step, with steps skipped and with steps written back to back (coalesced by
//! the watch), end with the host's final status in kplane every time.

use std::path::Path;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::batch::v1::Job;
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{Api, PostParams};
use kube::ResourceExt as _;
use serde_json::{json, Map, Value};

use crate::syncer::{condition, create_target, host_jobs, key, plain_job, Syncer, TENANT};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The recorded sequence of host statuses `name` (`succeeded`, `failed`).
fn recorded(name: &str) -> Result<Vec<Value>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/job-status")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} (../shared beside the checkout)", path.display()))?;
    let steps: Vec<Value> = serde_json::from_str(&text)?;
    ensure!(steps.len() >= 4, "{name}: {} steps", steps.len());
    Ok(steps)
}

/// A status without empty values (null, 0, "", [], {}) and without the syncer's `Synced`
/// condition: what must agree between the host and kplane.
fn significant(v: &Value) -> Value {
    fn strip(v: &Value) -> Option<Value> {
        match v {
            Value::Null => None,
            Value::Number(n) if n.as_f64() == Some(0.0) => None,
            Value::String(s) if s.is_empty() => None,
            Value::Array(a) => {
                let out: Vec<Value> = a
                    .iter()
                    .filter(|c| c.get("type").and_then(Value::as_str) != Some("Synced"))
                    .filter_map(strip)
                    .collect();
                (!out.is_empty()).then_some(Value::Array(out))
            }
            Value::Object(o) => {
                let out: Map<String, Value> = o
                    .iter()
                    .filter_map(|(k, x)| strip(x).map(|x| (k.clone(), x)))
                    .collect();
                (!out.is_empty()).then_some(Value::Object(out))
            }
            other => Some(other.clone()),
        }
    }
    strip(v).unwrap_or(Value::Null)
}

/// How a case writes its steps on the host.
#[derive(Clone, Copy, Debug)]
enum Pace {
    /// Each step is seen in kplane before the next is written; the step before the last
    /// is written twice.
    Observed,
    /// Every step written back to back (the watch may coalesce them).
    BackToBack,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_host_job_statuses_end_with_the_host_status_in_kplane() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = KplaneServer::start()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;
    let jobs: Api<Job> = Api::namespaced(data.client_for(TENANT).await?, "default");
    let hostc = host.client().await?;
    let tk = data.kubectl_for(TENANT)?;

    // (Job, recorded sequence, which steps of it, pace).
    let cases: [(&str, &str, &[usize], Pace); 6] = [
        ("ok-each", "succeeded", &[0, 1, 2, 2, 3, 3], Pace::Observed),
        ("ok-fast", "succeeded", &[0, 1, 2, 3], Pace::BackToBack),
        ("ok-skip", "succeeded", &[2, 3], Pace::Observed),
        ("fail-each", "failed", &[0, 1, 2, 2, 3, 3], Pace::Observed),
        ("fail-fast", "failed", &[1, 2, 3], Pace::BackToBack),
        ("fail-skip", "failed", &[1, 3], Pace::Observed),
    ];
    for (name, ..) in &cases {
        jobs.create(
            &PostParams::default(),
            &serde_json::from_value(plain_job(name))?,
        )
        .await?;
    }
    let syncer = Syncer::start(&data, &host, scratch.path(), "replay")?;
    eventually(TIMEOUT, "every Job on the host", || async {
        let h = host_jobs(&hostc).await?;
        Ok(cases.iter().all(|(n, ..)| h.contains_key(&key(n))))
    })
    .await
    .with_context(|| syncer.log())?;
    let h = host_jobs(&hostc).await?;

    for (name, file, steps, pace) in cases {
        let recorded = recorded(file)?;
        let host_job = &h[&key(name)][0];
        let host_api: Api<Job> =
            Api::namespaced(hostc.clone(), &host_job.namespace().unwrap_or_default());
        let host_name = host_job.name_any();
        for &i in steps {
            let step = &recorded[i];
            // Written as the host's Job controller writes it: the whole status, replaced.
            let mut current = serde_json::to_value(host_api.get(&host_name).await?)?;
            current["status"] = step.clone();
            host_api
                .replace_status(
                    &host_name,
                    &PostParams::default(),
                    &serde_json::from_value::<Job>(current)?,
                )
                .await
                .with_context(|| format!("{name}: writing step {i} on the host"))?;
            if matches!(pace, Pace::Observed) {
                let want = significant(step);
                eventually(TIMEOUT, &format!("{name}: step {i} in kplane"), || async {
                    let got = serde_json::to_value(jobs.get(name).await?)?;
                    Ok(significant(&got["status"]) == want)
                })
                .await
                .with_context(|| syncer.log())?;
            }
        }
        let last = significant(recorded.last().context("steps")?);
        eventually(TIMEOUT, &format!("{name}: the final status"), || async {
            let got = serde_json::to_value(jobs.get(name).await?)?;
            Ok(significant(&got["status"]) == last)
        })
        .await
        .with_context(|| format!("{name} ({pace:?}): host {last:#}\n{}", syncer.log()))?;
        let job = jobs.get(name).await?;
        ensure!(
            condition(&job, "Synced").map(|c| c.0).as_deref() == Some("True"),
            "{name}: {:?}",
            job.status
        );
        let uncounted = json!(job
            .status
            .as_ref()
            .and_then(|s| s.uncounted_terminated_pods.clone()));
        ensure!(
            significant(&uncounted) == Value::Null,
            "{name}: {uncounted}"
        );
    }
    // kubectl sees them finished as the host does.
    tokio::task::block_in_place(|| -> Result<()> {
        for (name, file, ..) in cases {
            let cond = if file == "succeeded" {
                "complete"
            } else {
                "failed"
            };
            tk.ok(&[
                "wait",
                &format!("--for=condition={cond}"),
                &format!("job/{name}"),
                "--timeout=30s",
            ])?;
        }
        Ok(())
    })?;
    // No write of the syncer was refused on the way.
    let log = syncer.log();
    ensure!(!log.contains("uncountedTerminatedPods"), "{log}");
    Ok(())
}
