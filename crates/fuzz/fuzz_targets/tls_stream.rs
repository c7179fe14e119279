//! The server side of TLS connections (`apiserver/src/tls_stream.rs`, rustls' unbuffered
//! API under a hand-written stream), driven over loopback TCP as the server's accept loop
//! drives it, with a certificate from a PKI made at start-up (`kplane_apiserver::tls`).
//! Input: the first byte picks the case.
//! - even: the rest is what a client sends from the start of the connection (a
//!   ClientHello, records, anything), then it closes its side; the accept must fail or
//!   succeed, and end.
//! - odd: a real client completes the handshake and the rest is a script (see [`Script`]):
//!   the client writes chunks of given sizes, the server echoes what it reads through a
//!   read buffer and write slices of given sizes, and the client ends with close_notify,
//!   with a bare FIN, or with raw bytes that are not a record it made. Without those raw
//!   bytes, every byte sent must come back, in order.
//!
//! Every connection must end within [`LIMIT`]: a hang is a crash.
#![no_main]
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use kplane_apiserver::tls_stream;
use libfuzzer_sys::fuzz_target;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long one input may take.
const LIMIT: Duration = Duration::from_secs(10);

/// Bytes a script may send in all (the stream's buffers are 8 to 64 KiB).
const MAX_SENT: usize = 256 * 1024;

/// Server reads a script may take (at least; a read ends at a record's end), so that a
/// one-byte read buffer does not make an input slow.
const MAX_READS: usize = 1024;

struct Fixture {
    rt: tokio::runtime::Runtime,
    listener: TcpListener,
    addr: SocketAddr,
    server: Arc<rustls::ServerConfig>,
    client: Arc<rustls::ClientConfig>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| match make_fixture() {
        Ok(f) => f,
        Err(e) => panic!("fuzz fixture: {e}"),
    })
}

fn make_fixture() -> Result<Fixture, Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("kplane-fuzz-tls-{}", std::process::id()));
    let pki = kplane_apiserver::tls::load_or_create(&dir, &[]);
    let _ = std::fs::remove_dir_all(&dir);
    let pki = pki?;
    let server = kplane_apiserver::tls::server_config(&pki, None)?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pki.ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let listener = rt.block_on(TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    Ok(Fixture {
        rt,
        listener,
        addr,
        server,
        client: Arc::new(client),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&case, rest)) = data.split_first() else {
        return;
    };
    let f = fixture();
    let run = async {
        if case % 2 == 0 {
            raw_client(f, rest).await
        } else {
            scripted(f, &Script::parse(rest)).await
        }
    };
    // The timer is made inside the runtime, which it needs.
    let timed = async { tokio::time::timeout(LIMIT, run).await };
    let outcome = f.rt.block_on(timed);
    match outcome {
        Ok(Ok(())) => {}
        // The fixture's own sockets failing is not the stream's doing.
        Ok(Err(e)) => eprintln!("loopback: {e}"),
        Err(_) => panic!("the connection did not end within {LIMIT:?}"),
    }
});

/// A connected pair of loopback sockets: (client, server). Both reset on close, so that
/// thousands of connections a second leave no ports in TIME_WAIT, and send at once (as the
/// server's own sockets do), so that small records do not wait for delayed ACKs.
async fn connect(f: &Fixture) -> io::Result<(TcpStream, TcpStream)> {
    let (client, (server, _)) = tokio::try_join!(TcpStream::connect(f.addr), f.listener.accept())?;
    for socket in [&client, &server] {
        socket.set_zero_linger()?;
        socket.set_nodelay(true)?;
    }
    Ok((client, server))
}

/// The client sends `bytes` and closes its side; the server accepts (and, should the
/// handshake complete, reads to the end).
async fn raw_client(f: &Fixture, bytes: &[u8]) -> io::Result<()> {
    let (mut client, server) = connect(f).await?;
    let client_side = async {
        let _ = client.write_all(bytes).await;
        let _ = client.shutdown().await;
        let mut sink = Vec::new();
        let _ = client.read_to_end(&mut sink).await;
    };
    let server_side = async {
        if let Ok(mut s) = tls_stream::accept(server, f.server.clone()).await {
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
            let _ = s.shutdown().await;
        }
    };
    tokio::join!(client_side, server_side);
    Ok(())
}

/// How a scripted client ends the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    CloseNotify,
    Fin,
    /// Raw bytes on the socket after the last record, then FIN.
    Junk,
}

/// A scripted connection. Input after the case byte: one byte of flags (bit 0: ALPN
/// http/1.1 only; bits 1-2: how the client ends), two bytes of the server's read buffer
/// size, two bytes of where it splits each echo into three slices, then two-byte chunk
/// sizes up to a zero size (cut to [`MAX_SENT`] in all, and to [`MAX_READS`] reads);
/// what follows is the raw bytes of [`End::Junk`].
#[derive(Debug)]
struct Script<'a> {
    http1_only: bool,
    end: End,
    read_size: usize,
    split: (u8, u8),
    chunks: Vec<usize>,
    junk: &'a [u8],
}

impl<'a> Script<'a> {
    fn parse(data: &'a [u8]) -> Script<'a> {
        let byte = |i: usize| data.get(i).copied().unwrap_or(0);
        let flags = byte(0);
        let end = match (flags >> 1) % 3 {
            0 => End::CloseNotify,
            1 => End::Fin,
            _ => End::Junk,
        };
        let read_size = usize::from(u16::from_le_bytes([byte(1), byte(2)])).max(1);
        let split = (byte(3), byte(4));
        let mut chunks = Vec::new();
        let mut at = 5;
        let mut total = 0;
        let max_sent = MAX_SENT.min(read_size * MAX_READS);
        while at + 1 < data.len() {
            let n = usize::from(u16::from_le_bytes([data[at], data[at + 1]]));
            at += 2;
            if n == 0 {
                break;
            }
            let n = n.min(max_sent - total);
            total += n;
            chunks.push(n);
        }
        Script {
            http1_only: flags & 1 == 1,
            end,
            read_size,
            split,
            chunks,
            junk: data.get(at..).unwrap_or_default(),
        }
    }
}

/// Runs `script` over a real handshake (see the module's documentation).
async fn scripted(f: &Fixture, script: &Script<'_>) -> io::Result<()> {
    let (client_tcp, server_tcp) = connect(f).await?;
    // A second handle on the client's socket, for bytes that bypass its TLS session.
    let raw = client_tcp.into_std()?;
    let mut raw_copy = raw.try_clone()?;
    let client_tcp = TcpStream::from_std(raw)?;
    let mut config = (*f.client).clone();
    if script.http1_only {
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
    }
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = ServerName::try_from("127.0.0.1").map_err(io::Error::other)?;
    let (client, server) = tokio::join!(
        connector.connect(name, client_tcp),
        tls_stream::accept(server_tcp, f.server.clone())
    );
    let (client, mut server) = (client?, server?);
    let expected_alpn: &[u8] = if script.http1_only {
        b"http/1.1"
    } else {
        b"h2"
    };
    assert_eq!(server.alpn_protocol(), Some(expected_alpn));

    let sent: Vec<u8> = (0..script.chunks.iter().sum::<usize>())
        .map(|i| (i % 251) as u8)
        .collect();
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let writer = async {
        let mut at = 0;
        for &n in &script.chunks {
            client_write.write_all(&sent[at..at + n]).await?;
            client_write.flush().await?;
            at += n;
        }
        match script.end {
            End::CloseNotify => client_write.shutdown().await?,
            End::Fin | End::Junk => {
                if script.end == End::Junk {
                    write_raw(&mut raw_copy, script.junk).await;
                }
                raw_copy.shutdown(std::net::Shutdown::Write)?;
            }
        }
        Ok::<_, io::Error>(())
    };
    let reader = async {
        let mut echoed = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => echoed.extend_from_slice(&buf[..n]),
            }
        }
        echoed
    };
    let echo = async {
        let mut buf = vec![0u8; script.read_size];
        loop {
            match server.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if echo_back(&mut server, &buf[..n], script.split)
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
        let _ = server.shutdown().await;
    };
    let (written, echoed, ()) = tokio::join!(writer, reader, echo);
    written?;
    if script.end == End::Junk {
        assert!(sent.starts_with(&echoed), "the echo is not what was sent");
    } else {
        assert!(
            echoed == sent,
            "{} bytes sent, {} echoed",
            sent.len(),
            echoed.len()
        );
    }
    Ok(())
}

/// Writes `data` back as three slices cut at `split` (fractions of 255), one vectored
/// write first, then the rest.
async fn echo_back(
    server: &mut tls_stream::TlsStream,
    data: &[u8],
    split: (u8, u8),
) -> io::Result<()> {
    let cut = |f: u8| data.len() * usize::from(f) / 255;
    let (a, b) = (cut(split.0.min(split.1)), cut(split.0.max(split.1)));
    let slices = [
        io::IoSlice::new(&data[..a]),
        io::IoSlice::new(&data[a..b]),
        io::IoSlice::new(&data[b..]),
    ];
    let n = server.write_vectored(&slices).await?;
    if n == 0 && !data.is_empty() {
        return Err(io::ErrorKind::WriteZero.into());
    }
    server.write_all(&data[n..]).await?;
    server.flush().await
}

/// Writes `bytes` to the (non-blocking) raw socket, as much as it takes.
async fn write_raw(raw: &mut std::net::TcpStream, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        match raw.write(bytes) {
            Ok(0) => return,
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => tokio::task::yield_now().await,
            Err(_) => return,
        }
    }
}
