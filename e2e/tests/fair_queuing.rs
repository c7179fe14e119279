//! Fair queuing per logical cluster (docs/security.md, "Fair queuing"), with the real
//! binary and kube-rs clients of two ordinary users: a noisy tenant whose concurrent LISTs
//! overrun its seats and its queue gets 429s (`TooManyRequests`, kube-apiserver's message),
//! counted in `apiserver_flowcontrol_rejected_requests_total`, while every request of a
//! quiet tenant in another logical cluster succeeds; `system:masters` is never queued.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::{fixtures, KplaneServer, ServerOptions};
use kube::api::{ListParams, PostParams};
use kube::Api;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_rustls::client::TlsStream;

const TOKENS: &str = "noisy-token,noisy,1\nquiet-token,quiet,2\n";

/// A ClusterRoleBinding of `user` to cluster-admin.
fn admin_binding(user: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {user}-admin\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: User\n  name: {user}\n  apiGroup: rbac.authorization.k8s.io\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_noisy_tenant_gets_429s_while_a_quiet_tenants_requests_all_succeed() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS)?;
    // Twenty seats in all, ten per cluster (one unpaged LIST), one waiting request per
    // cluster.
    let server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--token-auth-file")
            .arg(tokens.as_os_str())
            .arg("--max-requests-inflight=20")
            .arg("--max-mutating-requests-inflight=0")
            .arg("--max-seats-per-cluster=10")
            .arg("--max-queued-per-cluster=1"),
    )?;
    server.create_workspaces(&["root:noisy", "root:quiet"])?;
    for (cluster, user) in [("root:noisy", "noisy"), ("root:quiet", "quiet")] {
        server
            .kubectl_for(cluster)?
            .ok_stdin(&["apply", "-f", "-"], &admin_binding(user))?;
    }
    let admin = server.client_for("root:noisy").await?;
    let admin_cms: Api<ConfigMap> = Api::namespaced(admin, "default");
    // Ten megabytes to list: more than the socket buffers hold, so a LIST whose client
    // does not read holds its seats.
    let value = "x".repeat(100 * 1024);
    for i in 0..100 {
        admin_cms
            .create(
                &PostParams::default(),
                &fixtures::configmap(&format!("cm-{i}"), &[("k", &value)]),
            )
            .await?;
    }

    // The quiet tenant has a request in flight (a create whose body is slow to come), so
    // the noisy tenant is not alone and its cap binds (a cluster alone may use every
    // seat).
    let _quiet_in_flight = raw_request(
        &server,
        "POST /clusters/root:quiet/api/v1/namespaces/default/configmaps",
        "quiet-token",
    )
    .await?;
    let admin = server.kubectl_for("root")?;
    kplane_e2e::eventually(
        Duration::from_secs(30),
        "the quiet create in flight",
        || {
            let metrics = admin.ok(&["get", "--raw", "/metrics"]);
            async move {
                Ok(metrics?.lines().any(|l| {
                    l.starts_with("apiserver_flowcontrol_current_executing_seats{")
                        && l.ends_with(" 1")
                }))
            }
        },
    )
    .await?;
    // The noisy tenant opens LISTs of ten megabytes on connections it does not read: the
    // first holds the cluster's ten seats until its body is sent (it never is, while the
    // client does not read), the second waits in the cluster's queue of one, and every
    // further one is refused at once.
    let mut holding = raw_request(
        &server,
        "/clusters/root:noisy/api/v1/configmaps",
        "noisy-token",
    )
    .await?;
    let (code, _, _) = read_head(&mut holding).await?;
    ensure!(code == 200, "the first noisy LIST answered {code}");
    let mut waiting = None;
    let mut refusals = 0;
    for _ in 0..20 {
        let mut conn = raw_request(
            &server,
            "/clusters/root:noisy/api/v1/configmaps",
            "noisy-token",
        )
        .await?;
        match tokio::time::timeout(Duration::from_secs(2), read_head(&mut conn)).await {
            Err(_) if waiting.is_none() => waiting = Some(conn),
            Err(_) => anyhow::bail!("two noisy LISTs wait with a queue of one"),
            Ok(head) => {
                let (code, headers, body) = head?;
                ensure!(code == 429, "a noisy LIST answered {code}: {body}");
                ensure!(
                    headers.iter().any(|(k, v)| k == "retry-after" && v == "1"),
                    "no Retry-After: 1 in {headers:?}"
                );
                let status: serde_json::Value = serde_json::from_str(&body)?;
                ensure!(
                    status["kind"] == "Status"
                        && status["reason"] == "TooManyRequests"
                        && status["code"] == 429
                        && status["message"] == "Too many requests, please try again later."
                        && status["details"]["retryAfterSeconds"] == 1,
                    "unexpected refusal {status}"
                );
                refusals += 1;
            }
        }
    }
    ensure!(waiting.is_some(), "no noisy LIST waited in the queue");
    ensure!(refusals == 19, "{refusals} of 19 noisy LISTs refused");

    // Meanwhile every request of the quiet tenant succeeds, one after another.
    let quiet = server
        .client_with_token("/clusters/root:quiet", "quiet-token")
        .await?;
    let quiet_cms: Api<ConfigMap> = Api::namespaced(quiet, "default");
    for i in 0..100 {
        let name = format!("q-{i}");
        quiet_cms
            .create(
                &PostParams::default(),
                &fixtures::configmap(&name, &[("k", "v")]),
            )
            .await
            .with_context(|| format!("quiet create {name}"))?;
        quiet_cms
            .get(&name)
            .await
            .with_context(|| format!("quiet get {name}"))?;
        quiet_cms
            .list(&ListParams::default().limit(10))
            .await
            .with_context(|| "quiet list")?;
    }
    // Once the noisy client goes away its seats come back: the waiting LIST runs (its
    // answer starts with 200), and a new one does too.
    drop(holding);
    let mut waiting = waiting.context("no waiting LIST")?;
    let (code, headers, start) =
        tokio::time::timeout(Duration::from_secs(30), read_head(&mut waiting))
            .await
            .context("the queued LIST never ran")??;
    ensure!(code == 200, "the queued LIST answered {code}");
    // It waited behind its cluster's cap while another cluster was served: past its
    // cluster's share, it ran at the lowered priority, its ten megabytes streamed from
    // there, whole.
    ensure!(
        headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v == "chunked"),
        "the queued LIST was not streamed: {headers:?}"
    );
    let body = tokio::time::timeout(
        Duration::from_secs(60),
        read_chunked(&mut waiting, start.into_bytes()),
    )
    .await
    .context("the queued LIST's body never ended")??;
    let list: serde_json::Value = serde_json::from_slice(&body)?;
    let items = list["items"].as_array().map_or(0, Vec::len);
    ensure!(items > 100, "the queued LIST held {items} items");
    drop(waiting);
    let noisy = server
        .client_with_token("/clusters/root:noisy", "noisy-token")
        .await?;
    let listed = Api::<ConfigMap>::all(noisy)
        .list(&ListParams::default())
        .await?;
    // The hundred and each namespace's kube-root-ca.crt.
    ensure!(
        listed.items.len() > 100,
        "{} configmaps listed",
        listed.items.len()
    );

    // The refusals are counted; the admin (system:masters) is exempt and never refused.
    let metrics = server
        .kubectl_for("root")?
        .ok(&["get", "--raw", "/metrics"])?;
    let rejected: f64 = metrics
        .lines()
        .find(|l| {
            l.starts_with("apiserver_flowcontrol_rejected_requests_total{")
                && l.contains("reason=\"queue-full\"")
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .context("no queue-full series")?;
    ensure!(
        rejected == 19.0,
        "metrics count {rejected} refusals, the client saw 19"
    );
    ensure!(
        metrics.contains("apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"exempt\",priority_level=\"exempt\"}"),
        "no exempt series"
    );
    let lowered: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("kplane_flowcontrol_lowered_requests_total "))
        .and_then(|v| v.parse().ok())
        .context("no kplane_flowcontrol_lowered_requests_total")?;
    ensure!(
        lowered >= 1.0,
        "{lowered} requests past their share lowered"
    );
    Ok(())
}

#[tokio::test]
async fn seats_below_the_widest_request_are_refused_at_start_up() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let out = std::process::Command::new(kplane_e2e::kplane_bin()?)
        .args(["serve", "--max-seats-per-cluster=9", "--data-dir"])
        .arg(dir.path())
        .output()?;
    ensure!(
        !out.status.success(),
        "kplane started with 9 seats per cluster"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        stderr.contains("--max-seats-per-cluster must be at least 10"),
        "unexpected error: {stderr}"
    );
    Ok(())
}

/// A TLS connection to `server` that has sent `GET <path>` with `token` (HTTP/1.1) and
/// read nothing yet; for a `path` of `POST <path>`, the start of a create that sends one
/// byte of its body and no more.
async fn raw_request(
    server: &KplaneServer,
    path: &str,
    token: &str,
) -> Result<TlsStream<tokio::net::TcpStream>> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(16 * 1024)?;
    let tcp = socket
        .connect(crate::tls_client::addr(server).parse()?)
        .await?;
    let mut tls = crate::tls_client::connect_over(server, b"http/1.1", tcp).await?;
    let host = "127.0.0.1";
    let request = match path.strip_prefix("POST ") {
        // A create whose body never finishes: it holds its seat while the server waits.
        Some(path) => format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
        ),
        None => format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nAccept: application/json\r\n\r\n"
        ),
    };
    tls.write_all(request.as_bytes()).await?;
    tls.flush().await?;
    Ok(tls)
}

/// Reads the rest of a chunked response body (`start`: what [`read_head`] read of it
/// already) to its last chunk; answers the body without the chunk framing.
async fn read_chunked(
    conn: &mut TlsStream<tokio::net::TcpStream>,
    start: Vec<u8>,
) -> Result<Vec<u8>> {
    let mut raw = start;
    let mut chunk = vec![0u8; 64 * 1024];
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        // One chunk: `<hex size>\r\n<data>\r\n`; size 0 ends the body.
        let Some(eol) = raw[at..].windows(2).position(|w| w == b"\r\n") else {
            let n = conn.read(&mut chunk).await?;
            ensure!(n > 0, "the connection closed in the body");
            raw.extend_from_slice(&chunk[..n]);
            continue;
        };
        let size_text = std::str::from_utf8(&raw[at..at + eol])?;
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)?;
        let data = at + eol + 2;
        while raw.len() < data + size + 2 {
            let n = conn.read(&mut chunk).await?;
            ensure!(n > 0, "the connection closed in the body");
            raw.extend_from_slice(&chunk[..n]);
        }
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(&raw[data..data + size]);
        at = data + size + 2;
    }
}

/// Reads a response's status code, headers (names in lower case) and, when it has a
/// `content-length`, its body; a streamed body is left unread.
async fn read_head(
    conn: &mut TlsStream<tokio::net::TcpStream>,
) -> Result<(u16, Vec<(String, String)>, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = conn.read(&mut chunk).await?;
        ensure!(n > 0, "the connection closed before the response head");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let mut lines = head.split("\r\n");
    let code: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .context("no status line")?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = buf[end..].to_vec();
    if let Some(len) = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
    {
        while body.len() < len {
            let n = conn.read(&mut chunk).await?;
            ensure!(n > 0, "the connection closed in the body");
            body.extend_from_slice(&chunk[..n]);
        }
    }
    Ok((code, headers, String::from_utf8_lossy(&body).to_string()))
}
