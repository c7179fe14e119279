//! End to end: runs every scenario of the built `kplane-bench` briefly against a real
//! `kplane serve` on a loopback port and checks that the JSON report is complete and
//! error-free, and that failures (a wrong token) are counted and make the exit status non-zero.
//!
//! The server binary is `$KPLANE_BIN`, else `<workspace>/target/debug/kplane`
//! (`cargo build -p kplane`). Performance figures are not asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Bound on the server writing its kubeconfig.
const STARTUP: Duration = Duration::from_secs(30);
/// Bound on one benchmark run.
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// A `kplane serve` process and its data directory; both go away on drop.
struct Server {
    child: Child,
    dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let bin = match std::env::var_os("KPLANE_BIN") {
            Some(p) => PathBuf::from(p),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/kplane"),
        };
        assert!(
            bin.is_file(),
            "kplane binary not found at {} (run `cargo build -p kplane` or set KPLANE_BIN)",
            bin.display()
        );
        let dir = tempfile::Builder::new()
            .prefix("kplane-bench-e2e-")
            .tempdir()
            .unwrap();
        let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
        let child = Command::new(&bin)
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--bind")
            .arg("127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let server = Server { child, dir };
        let deadline = Instant::now() + STARTUP;
        while !server.kubeconfig().is_file() {
            assert!(
                Instant::now() < deadline,
                "kplane did not write admin.kubeconfig within {STARTUP:?}; log:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("data").join("admin.kubeconfig")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs kplane-bench with `args`, killing it if it outlives [`RUN_LIMIT`].
fn bench(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kplane-bench"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + RUN_LIMIT;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "kplane-bench ran longer than {RUN_LIMIT:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn check_latency(v: &Value, what: &str) {
    for k in ["p50", "p90", "p99", "max"] {
        let x = v[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: latency {k} missing in {v}"));
        assert!(x >= 0.0, "{what}: {k} = {x}");
    }
    let (p50, p99, max) = (v["p50"].as_f64(), v["p99"].as_f64(), v["max"].as_f64());
    assert!(
        p50 <= p99 && p99 <= max,
        "{what}: percentiles out of order: {v}"
    );
}

#[test]
fn every_scenario_reports_complete_error_free_json() {
    let server = Server::start();
    let kc = server.kubeconfig();
    let scenarios = [
        "create", "get", "update", "list", "watch", "mixed", "clusters",
    ];
    let joined = scenarios.join(",");
    let out = bench(
        &kc,
        &[
            "--scenario",
            &joined,
            "--concurrency",
            "4",
            "--duration",
            "1s",
            "--size",
            "256",
            "--pool",
            "20",
            "--list-size",
            "300",
            "--page-size",
            "100",
            "--watchers",
            "20",
            "--watch-rate",
            "50",
            "--clusters",
            "8",
            "--objects-per-cluster",
            "3",
            "--json",
            "--no-progress",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstderr:\n{stderr}\nstdout:\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        server.log()
    );
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let reports = reports.as_array().expect("a JSON array");
    assert_eq!(reports.len(), scenarios.len(), "{reports:?}");
    for (r, name) in reports.iter().zip(scenarios) {
        assert_eq!(r["scenario"], name, "{r}");
        assert!(r["ops"].as_u64().unwrap_or(0) > 0, "{name}: no ops: {r}");
        assert!(r["seconds"].as_f64().unwrap_or(0.0) > 0.0, "{name}: {r}");
        assert!(r["throughput"].as_f64().unwrap_or(0.0) > 0.0, "{name}: {r}");
        check_latency(&r["latency_ms"], name);
        let errors = r["errors"]
            .as_object()
            .unwrap_or_else(|| panic!("{name}: errors: {r}"));
        assert!(
            errors.is_empty(),
            "{name}: errors {errors:?}\nstderr:\n{stderr}"
        );
    }
    let by = |n: &str| reports.iter().find(|r| r["scenario"] == n).unwrap();
    let list = by("list");
    assert!(list["items_per_list"].as_u64().unwrap() >= 300, "{list}");
    check_latency(&list["paged"]["page_latency_ms"], "list pages");
    assert!(
        list["paged"]["items_per_walk"].as_u64().unwrap() >= 300,
        "{list}"
    );
    let watch = by("watch");
    assert_eq!(watch["watchers_established"], 20, "{watch}");
    assert_eq!(watch["deliveries"], watch["expected_deliveries"], "{watch}");
    assert_eq!(
        watch["deliveries"].as_u64().unwrap(),
        watch["ops"].as_u64().unwrap() * 20,
        "{watch}"
    );
    let mixed = by("mixed");
    for verb in ["get", "list", "update", "create", "delete"] {
        assert!(mixed["verbs"][verb]["ops"].is_u64(), "{mixed}");
    }
    let clusters = by("clusters");
    assert_eq!(clusters["clusters_created"], 8, "{clusters}");
    assert_eq!(clusters["ops"], 8, "{clusters}");
    check_latency(&clusters["list_latency_ms"], "clusters list");

    // Failures are counted under their status code and fail the run. The bad kubeconfig
    // keeps only a wrong token: the admin's client certificate would authenticate alone.
    let bad = server.dir.path().join("bad.kubeconfig");
    write_bad_kubeconfig(&kc, &bad);
    let out = bench(
        &bad,
        &[
            "--scenario",
            "get",
            "--duration",
            "300ms",
            "--concurrency",
            "2",
            "--json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = &reports[0]["errors"];
    assert!(errors["401"].as_u64().unwrap_or(0) > 0, "{reports}");
}

/// The kubeconfig `kc` with a wrong token and without the client certificate (which would
/// authenticate alone), written to `out`.
fn write_bad_kubeconfig(kc: &Path, out: &Path) {
    let text = std::fs::read_to_string(kc).unwrap();
    let text: String = text
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            !l.starts_with("client-certificate") && !l.starts_with("client-key")
        })
        .map(|l| {
            if l.trim_start().starts_with("token:") {
                "    token: wrong-token".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(out, text).unwrap();
}

/// `--replica-kubeconfig`: clients are spread over the servers and watches are opened on the
/// servers but the first. One kplane stands in for two replicas (a second kubeconfig of the
/// same server); a replica kubeconfig with a wrong token shows the spreading: half of the
/// clients fail, every watch fails. `--list-history` measures the lists again after more
/// updates than a page holds.
#[test]
fn replicas_spread_clients_and_watch_across_servers_and_list_after_history() {
    let server = Server::start();
    let kc = server.kubeconfig();
    let replica = server.dir.path().join("replica.kubeconfig");
    std::fs::copy(&kc, &replica).unwrap();
    let replica_arg = replica.to_str().unwrap();
    let out = bench(
        &kc,
        &[
            "--replica-kubeconfig",
            replica_arg,
            "--scenario",
            "create,get,watch,list",
            "--concurrency",
            "4",
            "--duration",
            "1s",
            "--size",
            "256",
            "--watchers",
            "6",
            "--watch-rate",
            "50",
            "--list-size",
            "1200",
            "--page-size",
            "500",
            "--list-history",
            "2500",
            "--history-clients",
            "8",
            "--json",
            "--no-progress",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstderr:\n{stderr}\nstdout:\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        server.log()
    );
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by = |n: &str| {
        reports
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["scenario"] == n)
            .unwrap()
            .clone()
    };
    for name in ["create", "get", "watch", "list"] {
        let r = by(name);
        assert!(r["errors"].as_object().unwrap().is_empty(), "{name}: {r}");
        assert!(r["ops"].as_u64().unwrap_or(0) > 0, "{name}: {r}");
    }
    assert_eq!(by("create")["servers"], 2);
    assert_eq!(by("get")["servers"], 2);
    let watch = by("watch");
    assert_eq!(watch["servers"], 2, "{watch}");
    assert_eq!(watch["watchers_established"], 6, "{watch}");
    assert_eq!(watch["deliveries"], watch["expected_deliveries"], "{watch}");
    check_latency(&watch["delivery_by_server"]["1"], "deliveries on server 1");
    assert!(watch["delivery_by_server"].get("0").is_none(), "{watch}");
    let list = by("list");
    // The namespace also holds kube-root-ca.crt.
    assert!(list["items_per_list"].as_u64().unwrap() >= 1200, "{list}");
    assert_eq!(list["history_updates"]["ops"], 2500, "{list}");
    let after = &list["after_history"];
    assert_eq!(after["items_per_list"], list["items_per_list"], "{list}");
    assert_eq!(
        after["paged"]["items_per_walk"], list["items_per_list"],
        "{list}"
    );
    assert!(
        after["paged"]["pages_per_walk"].as_f64().unwrap() >= 3.0,
        "{list}"
    );
    check_latency(&after["full"]["latency_ms"], "list after history");
    assert!(
        list["full_p50_ratio_after_history"].as_f64().unwrap() > 0.0,
        "{list}"
    );
    assert!(
        list["page_p50_ratio_after_history"].as_f64().unwrap() > 0.0,
        "{list}"
    );

    // A replica that refuses the credentials: the clients spread to it fail, the others
    // succeed; the watches (all on the replica) fail.
    let bad = server.dir.path().join("bad-replica.kubeconfig");
    write_bad_kubeconfig(&kc, &bad);
    let out = bench(
        &kc,
        &[
            "--replica-kubeconfig",
            bad.to_str().unwrap(),
            "--scenario",
            "create,watch",
            "--concurrency",
            "4",
            "--duration",
            "500ms",
            "--watchers",
            "3",
            "--watch-rate",
            "20",
            "--json",
            "--no-progress",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    let create = &reports[0];
    assert!(create["ops"].as_u64().unwrap() > 0, "{create}");
    assert!(
        create["errors"]["401"].as_u64().unwrap_or(0) > 0,
        "{create}"
    );
    let watch = &reports[1];
    assert_eq!(watch["watchers_established"], 0, "{watch}");
    assert!(
        watch["ops"].as_u64().unwrap() > 0,
        "writes go to the first server: {watch}"
    );

    // A replica must serve the same path prefix.
    let other = server.dir.path().join("other-cluster.kubeconfig");
    let text = std::fs::read_to_string(&kc).unwrap();
    assert!(text.contains("/clusters/root"), "{text}");
    std::fs::write(&other, text.replace("/clusters/root", "/clusters/root:x")).unwrap();
    let out = bench(
        &kc,
        &[
            "--replica-kubeconfig",
            other.to_str().unwrap(),
            "--scenario",
            "create",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("path prefix"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn idle_watches_report_server_memory_over_http1_and_http2() {
    let server = Server::start();
    let kc = server.kubeconfig();
    let pid = server.child.id().to_string();
    for http2 in [false, true] {
        let mut args = vec![
            "--scenario",
            "watch",
            "--watchers",
            "12",
            "--watch-rate",
            "0",
            "--duration",
            "300ms",
            "--server-pid",
            &pid,
            "--json",
            "--no-progress",
        ];
        if http2 {
            args.push("--watch-http2");
        }
        let out = bench(&kc, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "http2={http2}: exit {:?}\nstderr:\n{stderr}\nserver log:\n{}",
            out.status,
            server.log()
        );
        let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
        let r = &reports[0];
        assert_eq!(r["scenario"], "watch", "{r}");
        assert_eq!(r["idle"], true, "{r}");
        assert_eq!(r["http2"], http2, "{r}");
        assert_eq!(r["watchers_established"], 12, "{r}");
        assert_eq!(r["ops"], 12, "{r}");
        assert_eq!(r["events"], 0, "{r}");
        assert!(r["errors"].as_object().unwrap().is_empty(), "{r}");
        check_latency(&r["latency_ms"], "watch establishment");
        if cfg!(target_os = "linux") {
            for k in [
                "before",
                "watchers_opening",
                "watchers_established",
                "idle_end",
            ] {
                assert!(r["server_rss_mib"][k].is_f64(), "{k} missing: {r}");
            }
            assert!(r["server_rss_kib_per_watch"].is_f64(), "{r}");
        }
    }
}

/// The churn scenario samples the write rate and the data directory's size (found from
/// --server-pid), and the run returns only once its cleanup is finished inside the server:
/// no object of the run and not its namespace are left when kplane-bench exits.
#[test]
fn churn_samples_disk_usage_and_the_run_ends_after_its_cleanup() {
    let server = Server::start();
    let kc = server.kubeconfig();
    let pid = server.child.id().to_string();
    let out = bench(
        &kc,
        &[
            "--scenario",
            "churn,create",
            "--duration",
            "2s",
            "--sample-every",
            "400ms",
            "--concurrency",
            "4",
            "--live-set",
            "30",
            "--leases",
            "6",
            "--events-kept",
            "10",
            "--server-pid",
            &pid,
            "--json",
            "--no-progress",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstderr:\n{stderr}\nserver log:\n{}",
        out.status,
        server.log()
    );
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    let churn = &reports[0];
    assert_eq!(churn["scenario"], "churn", "{churn}");
    assert!(churn["errors"].as_object().unwrap().is_empty(), "{churn}");
    assert!(
        churn["live_set_rewrites"].as_f64().unwrap() > 0.0,
        "{churn}"
    );
    let samples = churn["samples"].as_array().unwrap();
    assert!(samples.len() >= 3, "{churn}");
    for s in samples {
        assert!(s["writes_per_s"].as_f64().is_some(), "{s}");
        if cfg!(target_os = "linux") {
            assert!(s["disk_mib"].as_f64().unwrap() > 0.0, "{s}");
            // kplane's split layout, and the store's logical sizes from /metrics.
            assert!(s["log_disk_mib"].as_f64().unwrap() > 0.0, "{s}");
            assert!(s["latest_disk_mib"].as_f64().unwrap() > 0.0, "{s}");
            assert!(s["disk_per_window"].as_f64().unwrap() > 0.0, "{s}");
        }
        assert!(s["latest_logical_mib"].as_f64().unwrap() > 0.0, "{s}");
        assert!(
            s["log_logical_mib"].as_f64().unwrap() >= s["window_logical_mib"].as_f64().unwrap(),
            "{s}"
        );
    }
    let create = &reports[1];
    assert!(create["errors"].as_object().unwrap().is_empty(), "{create}");
    assert!(create["cleanup_s"].as_f64().is_some(), "{create}");
    assert!(create["final_cleanup_s"].as_f64().is_some(), "{create}");
    if cfg!(target_os = "linux") {
        for r in [churn, create] {
            let d = &r["server_disk_mib"];
            assert!(
                d["before"].as_f64().is_some() && d["after"].as_f64().is_some(),
                "{r}"
            );
        }
    }
    // Nothing of the run is left for the server to do.
    let kubectl = |args: &[&str]| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kc)
            .args(args)
            .output()
            .unwrap()
    };
    let left = kubectl(&[
        "get",
        "configmaps,leases,events",
        "-A",
        "-l",
        "kplane-bench/run",
        "-o",
        "name",
    ]);
    assert!(left.status.success(), "{left:?}");
    assert_eq!(
        String::from_utf8_lossy(&left.stdout).trim(),
        "",
        "objects left"
    );
    let ns = kubectl(&["get", "namespace", "kplane-bench"]);
    assert!(
        String::from_utf8_lossy(&ns.stderr).contains("NotFound"),
        "the run's namespace is still there: {ns:?}"
    );
}

/// The workspace scenarios: creations to Ready with the server's memory per Workspace, and
/// deletion of Workspaces holding more objects than one range-delete batch (256 keys) while
/// another tenant is served; nothing of the run is left afterwards. `--cluster-spread`
/// makes its clusters through Workspaces too.
#[test]
fn workspace_scenarios_create_to_ready_and_delete_while_a_tenant_is_served() {
    let server = Server::start();
    let kc = server.kubeconfig();
    let pid = server.child.id().to_string();
    let out = bench(
        &kc,
        &[
            "--scenario",
            "workspaces,workspace-delete",
            "--workspaces",
            "6",
            "--objects-per-cluster",
            "260",
            "--concurrency",
            "4",
            "--duration",
            "1s",
            "--server-pid",
            &pid,
            "--json",
            "--no-progress",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstderr:\n{stderr}\nstdout:\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        server.log()
    );
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    let create = &reports[0];
    assert_eq!(create["scenario"], "workspaces", "{create}");
    assert!(create["errors"].as_object().unwrap().is_empty(), "{create}");
    assert_eq!(create["ops"], 6, "{create}");
    assert_eq!(create["complete"], true, "{create}");
    assert!(
        create["creations_to_ready_per_second"].as_f64().unwrap() > 0.0,
        "{create}"
    );
    check_latency(&create["latency_ms"], "workspaces");
    if cfg!(target_os = "linux") {
        assert!(
            create["server_rss_bytes_per_workspace"].is_f64(),
            "{create}"
        );
    }
    assert!(create["cleanup_s"].as_f64().is_some(), "{create}");

    let del = &reports[1];
    assert_eq!(del["scenario"], "workspace-delete", "{del}");
    assert!(del["errors"].as_object().unwrap().is_empty(), "{del}");
    assert_eq!(del["ops"], 6, "{del}");
    assert_eq!(del["complete"], true, "{del}");
    assert_eq!(del["clusters_not_empty"], 0, "{del}");
    assert_eq!(del["deleted_workspaces_reported_ready"], 0, "{del}");
    check_latency(&del["latency_ms"], "workspace deletion");
    check_latency(&del["tenant_get_idle_latency_ms"], "tenant idle");
    check_latency(&del["tenant_get_during_latency_ms"], "tenant during");
    assert!(del["tenant_p99_ratio"].as_f64().unwrap() > 0.0, "{del}");

    // Nothing of the run is left: no Workspace, no ConfigMap in any cluster.
    let kubectl = |args: &[&str]| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kc)
            .args(args)
            .output()
            .unwrap()
    };
    let left = kubectl(&["get", "workspaces", "-l", "kplane-bench/run", "-o", "name"]);
    assert!(left.status.success(), "{left:?}");
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "", "left");

    // --cluster-spread: the spread clusters are Workspaces, removed at the end.
    let out = bench(
        &kc,
        &[
            "--scenario",
            "create",
            "--cluster-spread",
            "3",
            "--duration",
            "500ms",
            "--concurrency",
            "3",
            "--json",
            "--no-progress",
        ],
    );
    assert!(
        out.status.success(),
        "stderr:\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    let left = kubectl(&["get", "workspaces", "-l", "kplane-bench/run", "-o", "name"]);
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "", "left");
}

/// wildcard-watch at a small size: more writes than Workspaces (several per cluster), both
/// watches (`/clusters/*` and the subtree) see every write once, in order, with the right
/// cluster; a second run with --keep reuses the Workspaces instead of creating them.
#[test]
fn wildcard_watch_delivers_each_write_once_in_order() {
    let server = Server::start();
    let kc = server.kubeconfig();
    let run = |keep: bool| {
        let mut args = vec![
            "--scenario",
            "wildcard-watch",
            "--workspaces",
            "5",
            "--count",
            "300",
            "--duration",
            "60s",
            "--concurrency",
            "4",
            "--size",
            "16",
            "--json",
            "--no-progress",
        ];
        if keep {
            args.push("--keep");
        }
        let out = bench(&kc, &args);
        assert!(
            out.status.success(),
            "exit {:?}\nstderr:\n{}\nstdout:\n{}\nserver log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout),
            server.log()
        );
        let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
        reports[0].clone()
    };
    let first = run(true);
    assert_eq!(first["scenario"], "wildcard-watch", "{first}");
    assert!(first["errors"].as_object().unwrap().is_empty(), "{first}");
    assert_eq!(first["workspaces_created"], 5, "{first}");
    assert_eq!(first["writes"], 300, "{first}");
    for w in ["all", "subtree"] {
        assert_eq!(first[format!("{w}_deliveries")], 300, "{w}: {first}");
        for k in [
            "missed",
            "duplicates",
            "out_of_order",
            "wrong_rv",
            "wrong_cluster",
        ] {
            assert_eq!(first[format!("{w}_{k}")], 0, "{w}_{k}: {first}");
        }
        assert!(
            first[format!("{w}_events")].as_u64().unwrap() >= 300,
            "{first}"
        );
        check_latency(&first[format!("{w}_delivery_latency_ms")], w);
    }
    // Kept: the next run reuses them, then deletes them (no --keep).
    let second = run(false);
    assert!(second["errors"].as_object().unwrap().is_empty(), "{second}");
    assert_eq!(second["workspaces_reused"], 5, "{second}");
    assert_eq!(second["workspaces_created"], 0, "{second}");
    assert_eq!(second["all_deliveries"], 300, "{second}");
    assert!(second["cleanup_s"].as_f64().is_some(), "{second}");
    let left = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["get", "workspaces", "-o", "name"])
        .output()
        .unwrap();
    assert!(left.status.success(), "{left:?}");
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "", "left");
}
