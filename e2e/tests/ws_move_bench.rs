//! The write pause of `kplane ws move` (ignored by default; numbers in docs/performance.md,
//! "Other operations"): a workspace of N ConfigMaps (default 10,000) moved
//! between two servers while a writer creates ConfigMaps one after the other (retrying
//! 429s after 10 ms). Reports the pause the CLI measured (fence to the target's commit),
//! the time the writer was refused (its first 429 to the source's 410, when it would
//! switch to the target), the longest gap between its acknowledged writes before, and the
//! whole move's wall time.
//!
//! ```sh no-run
//! cargo build --release -p kplane
//! MOVE_BENCH_OBJECTS=10000 KPLANE_BIN=$PWD/target/release/kplane \
//!   cargo test -p kplane-e2e --test e2e -- --ignored ws_move_bench --nocapture
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::{fixtures, kplane_bin, KplaneServer};
use kube::api::PostParams;
use kube::Api;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run explicitly (see the module docs)"]
async fn ws_move_bench() -> Result<()> {
    let n: usize = std::env::var("MOVE_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let src = KplaneServer::start()?;
    let dst = KplaneServer::start()?;
    src.create_workspace("root:bench")?;
    let api: Api<ConfigMap> = Api::namespaced(src.client_for("root:bench").await?, "default");
    let seeded = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm =
                    fixtures::configmap(&format!("seed-{i:06}"), &[("payload", &"x".repeat(200))]);
                api.create(&PostParams::default(), &cm).await
            }
        })
        .buffer_unordered(32)
        .for_each(|r| async move {
            if let Err(e) = r {
                eprintln!("seeding: {e}");
            }
        })
        .await;
    eprintln!("seeded {n} objects in {:?}", seeded.elapsed());

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let kubeconfig =
            kube::config::Kubeconfig::read_from(src.kubeconfig_for_cluster("root:bench")?)?;
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
        config.default_retry = false;
        let api: Api<ConfigMap> = Api::namespaced(kube::Client::try_from(config)?, "default");
        tokio::spawn(async move {
            let (mut i, mut last, mut max_gap, mut throttled) =
                (0u64, Instant::now(), Duration::ZERO, 0u64);
            let mut refused_since: Option<Instant> = None;
            let mut refused_for = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                let cm = fixtures::configmap(&format!("w-{i}"), &[]);
                match api.create(&PostParams::default(), &cm).await {
                    Ok(_) => {
                        max_gap = max_gap.max(last.elapsed());
                        last = Instant::now();
                        i += 1;
                    }
                    Err(kube::Error::Api(e)) if e.code == 429 => {
                        throttled += 1;
                        refused_since.get_or_insert_with(Instant::now);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Err(_) => {
                        // The source's 410: the writer would switch to the target now.
                        refused_for = refused_since.map_or(Duration::ZERO, |t| t.elapsed());
                        break;
                    }
                }
            }
            (i, max_gap, throttled, refused_for)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (src_kc, dst_kc) = (
        src.kubeconfig().to_path_buf(),
        dst.kubeconfig().to_path_buf(),
    );
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(kplane_bin()?)
            .args([
                "ws",
                "move",
                "root:bench",
                "--to",
                dst_kc.to_str().unwrap_or(""),
            ])
            .env("KUBECONFIG", &src_kc)
            .output()
            .context("running kplane ws move")
    })
    .await??;
    let wall = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (writes, max_gap, throttled, refused_for) = writer.await?;
    stop.store(true, Ordering::Relaxed);
    eprintln!(
        "move of {n} objects: {} wall {wall:?}; writer: {writes} writes on the source, {throttled} answers 429 over {refused_for:?} (first 429 to the 410), longest gap between acknowledged writes before {max_gap:?}",
        stdout.trim()
    );
    Ok(())
}
