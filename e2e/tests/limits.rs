//! The server's protective limits over real sockets (docs/security.md, "Limits"): clients
//! that trickle a TLS handshake, a request head or a body are cut off, an idle keep-alive
//! connection is not, and each cut is counted in `kplane_limit_refusals_total`.

use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use kplane_e2e::{KplaneServer, ServerOptions};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// How many bytes a trickling client sends (one every [`TRICKLE_GAP`]) before the test gives
/// up on the server closing the connection: far beyond the 1 s limits the tests configure.
const TRICKLE_BYTES: usize = 300;
const TRICKLE_GAP: Duration = Duration::from_millis(200);

fn server_with_short_timeouts() -> Result<KplaneServer> {
    KplaneServer::start_with(
        ServerOptions::default()
            .arg("--request-header-timeout=1s")
            .arg("--request-body-timeout=1s"),
    )
}

use crate::tls_client::addr;

/// A TLS client connection to the server (HTTP/1.1 by ALPN).
async fn tls_connect(server: &KplaneServer) -> Result<tokio_rustls::client::TlsStream<TcpStream>> {
    tls_connect_alpn(server, b"http/1.1").await
}

/// A TLS client connection to the server offering one ALPN protocol.
async fn tls_connect_alpn(
    server: &KplaneServer,
    alpn: &[u8],
) -> Result<tokio_rustls::client::TlsStream<TcpStream>> {
    crate::tls_client::connect(server, alpn).await
}

/// Sends `bytes` one at a time with a pause between them until the server closes the
/// connection; `Ok` with what the server answered (possibly nothing) once it has.
async fn trickle_until_closed<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    bytes: &[u8],
) -> Result<Vec<u8>> {
    let mut answer = Vec::new();
    for b in bytes.iter().cycle().take(TRICKLE_BYTES) {
        if stream.write_all(&[*b]).await.is_err() || stream.flush().await.is_err() {
            return Ok(answer);
        }
        let mut buf = [0u8; 4096];
        match tokio::time::timeout(TRICKLE_GAP, stream.read(&mut buf)).await {
            Err(_) => {}                                 // nothing yet: keep trickling
            Ok(Ok(0)) | Ok(Err(_)) => return Ok(answer), // closed
            Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
        }
    }
    bail!(
        "the server kept a connection trickling {TRICKLE_BYTES} bytes open; it answered {:?}",
        String::from_utf8_lossy(&answer)
    )
}

/// `GET path` over a new TLS connection with the admin token, the response as text. A
/// connection refused by the per-address limit (the server has not yet seen the test's
/// earlier connections close) is tried again.
async fn get(server: &KplaneServer, path: &str) -> Result<String> {
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        server.token()
    );
    for _ in 0..100 {
        let mut tls = tls_connect(server).await?;
        tls.write_all(request.as_bytes()).await?;
        let mut out = Vec::new();
        tls.read_to_end(&mut out).await.ok();
        let text = String::from_utf8_lossy(&out).into_owned();
        if !text.starts_with("HTTP/1.1 429") {
            return Ok(text);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("GET {path} was refused every time")
}

/// The value of `kplane_limit_refusals_total{limit="<limit>"}`.
async fn refusals(server: &KplaneServer, limit: &str) -> Result<u64> {
    let metrics = get(server, "/metrics").await?;
    let prefix = format!("kplane_limit_refusals_total{{limit=\"{limit}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .context("no refusal counter")?
        .trim()
        .parse()
        .context("not a number")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_connection_is_closed() -> Result<()> {
    let server = server_with_short_timeouts()?;

    // Trickling the TLS handshake itself.
    let tcp = TcpStream::connect(addr(&server)).await?;
    trickle_until_closed(tcp, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03").await?;

    // A complete handshake, then a request head one byte at a time.
    let tls = tls_connect(&server).await?;
    trickle_until_closed(
        tls,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaa",
    )
    .await?;

    // A request whose body trickles: the server answers upstream's timeout Status.
    let mut tls = tls_connect(&server).await?;
    let head = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: 100000\r\n\r\n",
        server.token()
    );
    tls.write_all(head.as_bytes()).await?;
    let answer = trickle_until_closed(tls, b"{\"kind\":").await?;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
    assert!(
        answer.contains("Timeout: request did not complete within the allotted timeout"),
        "{answer}"
    );

    for limit in [
        "tls_handshake_timeout",
        "request_header_timeout",
        "request_body_timeout",
    ] {
        assert!(refusals(&server, limit).await? >= 1, "{limit} not counted");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_outlives_the_header_timeout() -> Result<()> {
    let server = server_with_short_timeouts()?;
    let mut tls = tls_connect(&server).await?;
    let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut buf = [0u8; 4096];
    for _ in 0..2 {
        tls.write_all(request).await?;
        let n = tls.read(&mut buf).await?;
        let answer = String::from_utf8_lossy(&buf[..n]);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("ok"), "{answer}");
        // Idle for three header timeouts: only the idle timeout (90 s) may close it.
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_after_the_idle_timeout() -> Result<()> {
    let server = KplaneServer::start_with(ServerOptions::default().arg("--idle-timeout=1s"))?;
    let mut tls = tls_connect(&server).await?;
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await?;
    let mut buf = [0u8; 4096];
    let n = tls.read(&mut buf).await?;
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    // Nothing more is sent: the server closes the connection (read ends).
    let closed = tokio::time::timeout(Duration::from_secs(60), tls.read(&mut buf)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    assert!(refusals(&server, "idle_timeout").await? >= 1);
    Ok(())
}

/// Sends one request head with an `X-Big` header of `size` bytes; the status line answered.
async fn status_of_head_with_header(server: &KplaneServer, size: usize) -> Result<String> {
    let tls = tls_connect(server).await?;
    let (mut read, mut write) = tokio::io::split(tls);
    let head = format!(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(size)
    );
    // The server may answer (and close) before it has read everything.
    let writer = tokio::spawn(async move {
        let _ = write.write_all(head.as_bytes()).await;
        let _ = write.flush().await;
        write
    });
    let mut out = Vec::new();
    let _ = read.read_to_end(&mut out).await;
    drop(writer.await);
    let text = String::from_utf8_lossy(&out);
    Ok(text.lines().next().unwrap_or_default().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_heads_at_above_and_ten_times_the_header_limit() -> Result<()> {
    const LIMIT: usize = 64 * 1024;
    let server = KplaneServer::start_with(
        ServerOptions::default().arg(format!("--max-header-bytes={LIMIT}")),
    )?;
    // The request line and the other headers take under 1 KiB of the limit.
    assert_eq!(
        status_of_head_with_header(&server, LIMIT - 1024).await?,
        "HTTP/1.1 200 OK"
    );
    assert_eq!(
        status_of_head_with_header(&server, LIMIT + 1).await?,
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    let ten_times = status_of_head_with_header(&server, 10 * LIMIT).await?;
    assert!(
        ten_times.is_empty() || ten_times.starts_with("HTTP/1.1 431"),
        "{ten_times}"
    );
    assert!(refusals(&server, "max_header_bytes").await? >= 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_outlives_the_idle_and_header_timeouts() -> Result<()> {
    let server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--idle-timeout=1s")
            .arg("--request-header-timeout=1s"),
    )?;
    let mut tls = tls_connect(&server).await?;
    let head = format!(
        "GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer {}\r\n\r\n",
        server.token()
    );
    tls.write_all(head.as_bytes()).await?;
    let mut buf = vec![0u8; 64 * 1024];
    let n = tls.read(&mut buf).await?;
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    // Three idle timeouts with nothing sent either way, then an event arrives on the watch.
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.kubectl_ok(&["create", "configmap", "after-idle"])?;
    let mut seen = String::new();
    while !seen.contains("after-idle") {
        let n = tokio::time::timeout(Duration::from_secs(60), tls.read(&mut buf)).await??;
        if n == 0 {
            bail!("the watch was closed; it had sent {seen}");
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    Ok(())
}

/// Sends `head` on a new connection and reads until the response head is complete.
async fn response_head(
    server: &KplaneServer,
    head: &str,
) -> Result<(String, tokio_rustls::client::TlsStream<TcpStream>)> {
    let mut tls = tls_connect(server).await?;
    tls.write_all(head.as_bytes()).await?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while !out.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(60), tls.read(&mut buf)).await??;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    // A little more, for a Status body that came with the head.
    if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(500), tls.read(&mut buf)).await {
        out.extend_from_slice(&buf[..n]);
    }
    Ok((String::from_utf8_lossy(&out).into_owned(), tls))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_per_address_limit_are_answered_429_and_closed() -> Result<()> {
    let server =
        KplaneServer::start_with(ServerOptions::default().arg("--max-connections-per-ip=3"))?;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(tls_connect(&server).await?);
    }
    let (answer, _) = response_head(&server, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await?;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.to_lowercase().contains("retry-after: 1"), "{answer}");
    assert!(
        answer.contains("\"reason\":\"TooManyRequests\""),
        "{answer}"
    );
    assert!(
        answer.to_lowercase().contains("connection: close"),
        "{answer}"
    );
    // One closed: the address has room again (the server notices the close soon after).
    drop(held.pop());
    let mut ok = false;
    for _ in 0..100 {
        let (answer, _) =
            response_head(&server, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await?;
        if answer.starts_with("HTTP/1.1 200") {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "no connection admitted after one closed");
    drop(held);
    assert!(refusals(&server, "max_connections_per_ip").await? >= 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_over_the_per_user_limit_are_answered_429() -> Result<()> {
    let scratch = tempfile::tempdir()?;
    let tokens = scratch.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,alice-uid\n")?;
    let server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--max-watches-per-user=2")
            .arg(format!("--token-auth-file={}", tokens.display())),
    )?;
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
    ])?;
    let watch = |token: &str| {
        format!(
            "GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n\
             Authorization: Bearer {token}\r\n\r\n"
        )
    };
    let mut held = Vec::new();
    for _ in 0..2 {
        let (answer, conn) = response_head(&server, &watch("alice-token")).await?;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        held.push(conn);
    }
    let (answer, _) = response_head(&server, &watch("alice-token")).await?;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.to_lowercase().contains("retry-after: 1"), "{answer}");
    assert!(
        answer.contains("too many watches: user \\\"alice\\\" has 2 open, the limit"),
        "{answer}"
    );
    // The admin (system:masters) is exempt.
    let (answer, _admin) = response_head(&server, &watch(server.token())).await?;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // A watch that ends gives its place back.
    drop(held.pop());
    let mut ok = false;
    for _ in 0..100 {
        let (answer, conn) = response_head(&server, &watch("alice-token")).await?;
        if answer.starts_with("HTTP/1.1 200") {
            ok = true;
            held.push(conn);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "no watch admitted after one ended");
    assert!(refusals(&server, "max_watches_per_user").await? >= 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http2_connection_is_closed_and_one_with_a_watch_is_not() -> Result<()> {
    let server = KplaneServer::start_with(ServerOptions::default().arg("--idle-timeout=1s"))?;
    let h2 = |tls| async move {
        let (sender, conn) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tls),
        )
        .await?;
        anyhow::Ok((sender, tokio::spawn(conn)))
    };
    let request = |path: &str| {
        http::Request::get(format!("{}{path}", server.base_url()))
            .header("authorization", format!("Bearer {}", server.token()))
            .body(http_body_util::Empty::<bytes::Bytes>::new())
    };
    let (mut idle, idle_conn) = h2(tls_connect_alpn(&server, b"h2").await?).await?;
    let (mut watching, watch_conn) = h2(tls_connect_alpn(&server, b"h2").await?).await?;
    let ok = idle.send_request(request("/healthz")?).await?;
    assert_eq!(ok.status(), 200);
    drop(ok);
    let watch = watching
        .send_request(request("/api/v1/namespaces/default/configmaps?watch=true")?)
        .await?;
    assert_eq!(watch.status(), 200);
    // The connection without a stream is closed; the one with the watch is not.
    tokio::time::timeout(Duration::from_secs(60), idle_conn).await???;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !watch_conn.is_finished(),
        "the watch's connection was closed"
    );
    assert!(refusals(&server, "idle_timeout").await? >= 1);
    drop(watch);
    Ok(())
}
