//! `kubectl logs` of a synced Job's pod in kplane, read on the host through the real
//! `kplane syncer` (docs/sync.md, "Pod logs"). The stand-in host is a kplane, which has no
//! kubelet, so the syncer reaches it through a proxy in this test that forwards everything
//! to it except `pods/<name>/log`, which the proxy answers as a host's API server answers
//! for its kubelet: the container's lines (with `tailLines` and `timestamps`), new lines
//! every 100 ms with `follow`, a BadRequest Status for `previous` (no terminated container).
//! The proxy records each log request's query, and how many follow streams are open, so
//! the test sees what reached the host and that a reader going away ends the host stream.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _, Result};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{Api, PostParams};
use serde_json::{json, Value};

use crate::syncer::{create_target, host_jobs, key, plain_job, Syncer, TENANT};
use crate::syncer_pods::{host_pod_of, set_host_pod_status, stand_in_host};

const TIMEOUT: Duration = Duration::from_secs(60);
/// Lines of the `big` container: more than one post of the syncer carries (256 KiB).
const BIG_LINES: usize = 100_000;

/// The proxy's view of the log requests that reached the host.
#[derive(Default)]
struct Kubelet {
    /// The path and query of each log request.
    requests: Mutex<Vec<String>>,
    /// Follow streams open now.
    following: Arc<AtomicUsize>,
}

struct Proxy {
    host: kube::Client,
    kubelet: Kubelet,
}

/// Counts an open follow stream.
struct Following(Arc<AtomicUsize>);

impl Drop for Following {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn container_lines(container: &str) -> Vec<String> {
    match container {
        "big" => (1..=BIG_LINES)
            .map(|i| format!("big line {i:06}"))
            .collect(),
        _ => (1..=5).map(|i| format!("line {i}")).collect(),
    }
}

fn timestamped(i: usize, line: &str) -> String {
    format!("2026-11-28T10:00:{:02}.000000000Z {line}", i % 60)
}

/// `GET /api/v1/namespaces/<ns>/pods/<name>/log` as a host's API server answers it.
fn kubelet_answer(proxy: &Proxy, pod: &str, query: &str) -> Response {
    let q: BTreeMap<String, String> = form_pairs(query);
    let container = q.get("container").cloned().unwrap_or_default();
    if q.get("previous").map(String::as_str) == Some("true") {
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("previous terminated container \"{container}\" in pod \"{pod}\" not found"),
            "reason": "BadRequest", "code": 400});
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            status.to_string(),
        )
            .into_response();
    }
    let stamps = q.get("timestamps").map(String::as_str) == Some("true");
    let mut lines: Vec<String> = container_lines(&container)
        .into_iter()
        .enumerate()
        .map(|(i, l)| if stamps { timestamped(i, &l) } else { l })
        .collect();
    if let Some(n) = q.get("tailLines").and_then(|n| n.parse::<usize>().ok()) {
        lines = lines.split_off(lines.len().saturating_sub(n));
    }
    let mut text = lines.join("\n");
    text.push('\n');
    if q.get("follow").map(String::as_str) != Some("true") {
        return ([(header::CONTENT_TYPE, "text/plain")], text).into_response();
    }
    proxy.kubelet.following.fetch_add(1, Ordering::SeqCst);
    let guard = Following(Arc::clone(&proxy.kubelet.following));
    let first = futures::stream::once(async move { Ok::<_, std::io::Error>(text) });
    let ticks = futures::stream::unfold((1usize, guard), |(i, guard)| async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Some((Ok(format!("tick {i}\n")), (i + 1, guard)))
    });
    use futures::StreamExt as _;
    (
        [(header::CONTENT_TYPE, "text/plain")],
        Body::from_stream(first.chain(ticks)),
    )
        .into_response()
}

fn form_pairs(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_owned(), v.replace("%3A", ":").replace("%2B", "+"))
        })
        .collect()
}

/// Answers log requests, forwards everything else to the stand-in host.
async fn handle(State(proxy): State<Arc<Proxy>>, req: Request) -> Response {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if let ["api", "v1", "namespaces", _, "pods", pod, "log"] = parts.as_slice() {
        if let Ok(mut r) = proxy.kubelet.requests.lock() {
            r.push(format!("{path}?{query}"));
        }
        return kubelet_answer(&proxy, pod, &query);
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 << 20).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let mut out = http::Request::builder()
        .method(parts.method)
        .uri(parts.uri.path_and_query().map_or("/", |p| p.as_str()));
    for (k, v) in &parts.headers {
        if k != header::HOST && k != header::AUTHORIZATION && k != header::CONTENT_LENGTH {
            out = out.header(k, v);
        }
    }
    let Ok(out) = out.body(kube::client::Body::from(bytes.to_vec())) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    match proxy.host.send(out).await {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            let mut r = Response::new(Body::new(body));
            *r.status_mut() = parts.status;
            if let Some(ct) = parts.headers.get(header::CONTENT_TYPE) {
                r.headers_mut().insert(header::CONTENT_TYPE, ct.clone());
            }
            r
        }
        Err(_) => StatusCode::BAD_GATEWAY.into_response(),
    }
}

/// Starts the proxy in front of `host`; its address and state.
async fn start_proxy(host: &KplaneServer) -> Result<(SocketAddr, Arc<Proxy>)> {
    let proxy = Arc::new(Proxy {
        host: host.client().await?,
        kubelet: Kubelet::default(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new()
        .fallback(handle)
        .with_state(Arc::clone(&proxy));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((addr, proxy))
}

/// A kubeconfig reaching the host through the proxy (plain HTTP; the proxy has the
/// host's credentials).
fn proxy_kubeconfig(dir: &Path, addr: SocketAddr) -> Result<PathBuf> {
    let path = dir.join("host-through-proxy.kubeconfig");
    let text = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "host",
        "clusters": [{"name": "host", "cluster": {"server": format!("http://{addr}")}}],
        "users": [{"name": "host", "user": {}}],
        "contexts": [{"name": "host", "context": {"cluster": "host", "user": "host"}}],
    });
    std::fs::write(&path, text.to_string())?;
    Ok(path)
}

fn two_container_job(name: &str) -> Value {
    let mut job = plain_job(name);
    if let Some(cs) = job["spec"]["template"]["spec"]["containers"].as_array_mut() {
        cs.push(json!({"name": "big", "image": "busybox", "command": ["seq", "100000"]}));
    }
    job
}

fn requests(proxy: &Proxy) -> Vec<String> {
    proxy
        .kubelet
        .requests
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default()
}

/// A client of `cluster` that does not retry a 503 or 504 (kube-rs does by default), so
/// the test sees each answer.
async fn no_retry_client(data: &KplaneServer, cluster: &str) -> Result<kube::Client> {
    let path = tokio::task::block_in_place(|| data.kubeconfig_for_cluster(cluster))?;
    let kubeconfig = kube::config::Kubeconfig::read_from(&path)?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    config.default_retry = false;
    Ok(kube::Client::try_from(config)?)
}

/// A raw GET of a path of the tenant's API: status, content type, body.
async fn get(client: &kube::Client, path: &str) -> Result<(u16, String, String)> {
    let req = http::Request::get(path).body(kube::client::Body::empty())?;
    let resp = client.send(req).await?;
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = axum::body::to_bytes(Body::new(resp.into_body()), 64 << 20).await?;
    Ok((status, ct, String::from_utf8_lossy(&body).into_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_of_a_synced_jobs_pod_reads_the_host() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = stand_in_host()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;
    let (addr, proxy) = start_proxy(&host).await?;
    let host_kubeconfig = proxy_kubeconfig(scratch.path(), addr)?;
    let tenant = no_retry_client(&data, TENANT).await?;
    let jobs: Api<Job> = Api::namespaced(tenant.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(tenant.clone(), "default");
    let tk = data.kubectl_for(TENANT)?;
    jobs.create(
        &PostParams::default(),
        &serde_json::from_value(two_container_job("pi"))?,
    )
    .await?;
    let syncer = Syncer::start_with_host(&data, &host_kubeconfig, scratch.path(), "logs", &[])?;
    let hostc = host.client().await?;
    eventually(TIMEOUT, "the host Job", || async {
        Ok(host_jobs(&hostc).await?.contains_key(&key("pi")))
    })
    .await
    .with_context(|| syncer.log())?;
    let host_job = serde_json::to_value(&host_jobs(&hostc).await?[&key("pi")][0])?;
    let host_ns = host_job["metadata"]["namespace"]
        .as_str()
        .context("ns")?
        .to_owned();
    let host_pods: Api<Pod> = Api::namespaced(hostc.clone(), &host_ns);
    host_pods
        .create(
            &PostParams::default(),
            &serde_json::from_value(host_pod_of(&host_job, "x7k2p"))?,
        )
        .await?;
    set_host_pod_status(&host_pods, "pi-x7k2p", "Running").await?;
    eventually(TIMEOUT, "the reflected pod", || async {
        Ok(pods.get_opt("pi-x7k2p").await?.is_some())
    })
    .await
    .with_context(|| syncer.log())?;
    let log_path = format!("/api/v1/namespaces/{host_ns}/pods/pi-x7k2p/log");

    // `kubectl logs job/pi`: the first container (kubectl says so), all its lines.
    let out = tokio::task::block_in_place(|| tk.run(&["logs", "job/pi"]))?;
    ensure!(out.success(), "kubectl logs job/pi: {}", out.stderr);
    ensure!(
        out.stdout == "line 1\nline 2\nline 3\nline 4\nline 5\n",
        "the host's lines, exactly: {:?}",
        out.stdout
    );
    ensure!(
        out.stderr
            .contains("Defaulted container \"main\" out of: main, big"),
        "kubectl chose the first container: {}",
        out.stderr
    );
    ensure!(
        requests(&proxy).last() == Some(&format!("{log_path}?container=main")),
        "the host was asked for container main: {:?}",
        requests(&proxy)
    );

    // Options reach the host; the answer is the host's.
    let out = tokio::task::block_in_place(|| {
        tk.ok(&["logs", "pi-x7k2p", "-c", "main", "--tail=2", "--timestamps"])
    })?;
    ensure!(
        out == "2026-11-28T10:00:03.000000000Z line 4\n2026-11-28T10:00:04.000000000Z line 5\n",
        "{out:?}"
    );
    ensure!(
        requests(&proxy).last()
            == Some(&format!(
                "{log_path}?container=main&timestamps=true&tailLines=2"
            )),
        "{:?}",
        requests(&proxy)
    );

    // A log larger than one piece arrives whole and in order.
    let out = tokio::task::block_in_place(|| tk.ok(&["logs", "pi-x7k2p", "-c", "big"]))?;
    let lines: Vec<&str> = out.lines().collect();
    ensure!(lines.len() == BIG_LINES, "{} lines", lines.len());
    ensure!(
        lines
            .iter()
            .enumerate()
            .all(|(i, l)| *l == format!("big line {:06}", i + 1)),
        "the big container's lines in order"
    );

    // The raw answer: text/plain; the pod's own rules before the host is asked.
    let base = "/api/v1/namespaces/default/pods/pi-x7k2p/log";
    let (code, ct, body) = get(&tenant, &format!("{base}?container=main")).await?;
    ensure!(
        code == 200 && ct == "text/plain" && body.starts_with("line 1\n"),
        "{code} {ct} {body}"
    );
    let asked = requests(&proxy).len();
    let (code, _, body) = get(&tenant, base).await?;
    ensure!(code == 400, "{code} {body}");
    ensure!(
        body.contains(
            "a container name must be specified for pod pi-x7k2p, choose one of: [main big]"
        ),
        "{body}"
    );
    let (code, _, body) = get(&tenant, &format!("{base}?container=nope")).await?;
    ensure!(
        code == 400 && body.contains("container nope is not valid for pod pi-x7k2p"),
        "{code} {body}"
    );
    let (code, _, body) = get(&tenant, &format!("{base}?container=main&tailLines=-1")).await?;
    ensure!(
        code == 422
            && body.contains(r#"PodLogOptions \"pi-x7k2p\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"#),
        "{code} {body}"
    );
    let (code, _, body) = get(&tenant, "/api/v1/namespaces/default/pods/nosuch/log").await?;
    ensure!(
        code == 404 && body.contains(r#"pods \"nosuch\" not found"#),
        "{code} {body}"
    );
    ensure!(
        requests(&proxy).len() == asked,
        "refused requests never reach the host"
    );

    // The host's own refusal is passed on as it is.
    let out =
        tokio::task::block_in_place(|| tk.run(&["logs", "pi-x7k2p", "-c", "main", "--previous"]))?;
    ensure!(!out.success(), "{}", out.stdout);
    ensure!(
        out.stderr.contains(
            "Error from server (BadRequest): previous terminated container \"main\" in pod \"pi-x7k2p\" not found"
        ),
        "{}",
        out.stderr
    );

    // `kubectl logs -f` streams new lines as the host writes them; when the reader goes,
    // the host's stream is closed.
    let mut follow =
        tokio::task::block_in_place(|| tk.spawn_watch(&["logs", "-f", "pi-x7k2p", "-c", "main"]))?;
    let started = Instant::now();
    tokio::task::block_in_place(|| follow.wait_for_line(TIMEOUT, "tick 3", |l| l == "tick 3"))?;
    ensure!(
        follow.seen()[..5] == ["line 1", "line 2", "line 3", "line 4", "line 5"],
        "{:?}",
        follow.seen()
    );
    eprintln!("kubectl logs -f: tick 3 after {:?}", started.elapsed());
    ensure!(proxy.kubelet.following.load(Ordering::SeqCst) == 1);
    drop(follow);
    eventually(TIMEOUT, "the host's follow stream to close", || async {
        Ok(proxy.kubelet.following.load(Ordering::SeqCst) == 0)
    })
    .await
    .with_context(|| syncer.log())?;

    // Latency: a log request through kplane and the syncer, against the host directly.
    let direct = host.client().await?;
    let (mut through, mut straight) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        let t = Instant::now();
        get(&tenant, &format!("{base}?container=main")).await?;
        through.push(t.elapsed());
        let t = Instant::now();
        get(
            &direct,
            &format!("/api/v1/namespaces/{host_ns}/pods/pi-x7k2p"),
        )
        .await?;
        straight.push(t.elapsed());
    }
    through.sort();
    straight.sort();
    eprintln!(
        "pod log round trip through kplane and the syncer: median {:?} (a host GET: {:?})",
        through[10], straight[10]
    );
    let mut big = Vec::new();
    let mut bytes = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let (_, _, body) = get(&tenant, &format!("{base}?container=big")).await?;
        big.push(t.elapsed());
        bytes = body.len();
    }
    big.sort();
    eprintln!(
        "a log of {bytes} bytes through kplane and the syncer: median {:?} ({:.1} MB/s)",
        big[2],
        bytes as f64 / big[2].as_secs_f64() / 1e6
    );

    // A syncer's piece may be at most 256 KiB: one byte more is refused before anything
    // else (an unknown request of the right size is a 404).
    let admin = data.client_unprefixed().await?;
    for (size, want) in [(256 * 1024, 404), (256 * 1024 + 1, 413)] {
        let req = http::Request::post("/services/sync/root:t/east/kplane/v1/logrequests/nosuch")
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .body(kube::client::Body::from(vec![b'x'; size]))?;
        let resp = admin.send(req).await?;
        ensure!(
            resp.status().as_u16() == want,
            "{size} bytes: {}",
            resp.status()
        );
    }

    // Without a syncer polling, the answer says so at once.
    drop(syncer);
    eventually(TIMEOUT, "503 without a syncer", || async {
        let (code, _, body) = get(&tenant, &format!("{base}?container=main")).await?;
        Ok(code == 503
            && body.contains("no syncer of sync target root:t/east is connected to this server to read the log of pod default/pi-x7k2p"))
    })
    .await?;
    Ok(())
}
