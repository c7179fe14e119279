//! The server side of a TLS connection as a tokio byte stream, over rustls' unbuffered API.
//!
//! Why not tokio-rustls: its stream keeps rustls' buffered connection, whose record deframer
//! holds a zero-filled 4 KiB buffer for the life of the connection. An idle watch on its own
//! HTTP/1.1 connection (kube-rs, the Python client) is mostly such fixed buffers, and 10,000
//! of them must fit in 200 MiB (docs/performance.md). Here the connection owns its buffers:
//! received ciphertext, decrypted plaintext not yet read, and ciphertext not yet sent are
//! each held only while they have content, so an idle connection holds none of them.
//!
//! Reads and writes of one connection are polled by one task (hyper's connection), which is
//! what lets a write that happens to decrypt incoming records wake that task to read them.

use std::cell::RefCell;
use std::future::poll_fn;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use rustls::server::{ServerConnectionData, UnbufferedServerConnection};
use rustls::unbuffered::{
    ConnectionState, EncodeError, EncryptError, UnbufferedStatus, WriteTraffic,
};
use rustls::ServerConfig;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Bytes asked of the socket per read.
const READ_SIZE: usize = 8 * 1024;

/// Bound on ciphertext held while waiting for the rest of a record or handshake flight:
/// rustls accepts handshake messages up to 64 KiB and records up to ~16 KiB.
const MAX_INCOMING: usize = 64 * 1024 + 2 * READ_SIZE;

/// Writes up to this size are encrypted as one record (hyper writes a chunked body's size
/// line, data and terminator as three slices).
const COALESCE: usize = 16 * 1024;

/// Plaintext taken per write call (tokio-rustls also hands the socket ~64 KiB at a time).
const MAX_WRITE: usize = 64 * 1024;

/// Per-thread scratch for one write: the gathered plaintext and its ciphertext. Every
/// connection served on the thread reuses it (a poll never yields while holding it), so a
/// write allocates nothing unless the socket does not take all of it at once.
#[derive(Default)]
struct Scratch {
    plain: Vec<u8>,
    cipher: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// What the connection needs before it can make progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// More bytes from the peer (the handshake is not done, or nothing is buffered).
    Read,
    /// Application data may be sent.
    Write,
    /// Both sides have closed.
    Closed,
}

/// A TLS server connection over TCP.
pub struct TlsStream {
    tcp: TcpStream,
    conn: UnbufferedServerConnection,
    /// Received ciphertext not yet processed.
    incoming: Vec<u8>,
    /// Ciphertext to send, of which `sent` bytes are sent.
    outgoing: Vec<u8>,
    sent: usize,
    /// Decrypted data not yet read, of which `taken` bytes are read.
    plaintext: Vec<u8>,
    taken: usize,
    /// The peer sent close_notify: reads end after the plaintext before it.
    peer_closed: bool,
    /// The socket reached end of file.
    eof: bool,
    /// close_notify is queued.
    close_sent: bool,
    /// rustls reported an error: the connection is not driven again (rustls' unbuffered
    /// API is not to be called after a fatal error, which it has already answered).
    failed: bool,
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// Completes the server handshake on `tcp` (the caller bounds it in time).
pub async fn accept(tcp: TcpStream, config: Arc<ServerConfig>) -> io::Result<TlsStream> {
    let conn = UnbufferedServerConnection::new(config).map_err(tls_error)?;
    let mut stream = TlsStream {
        tcp,
        conn,
        incoming: Vec::new(),
        outgoing: Vec::new(),
        sent: 0,
        plaintext: Vec::new(),
        taken: 0,
        peer_closed: false,
        eof: false,
        close_sent: false,
        failed: false,
    };
    poll_fn(|cx| stream.poll_handshake(cx)).await?;
    Ok(stream)
}

impl TlsStream {
    /// The protocol the client chose with ALPN.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    /// The certificate chain the client presented (none unless the server asks for one).
    pub fn peer_certificates(&self) -> Option<&[rustls::pki_types::CertificateDer<'static>]> {
        self.conn.peer_certificates()
    }

    fn poll_handshake(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            ready!(self.poll_send(cx))?;
            let next = self.process()?;
            if !self.outgoing.is_empty() {
                // Our flight goes out before we wait for the client's.
                continue;
            }
            match next {
                Next::Write => return Poll::Ready(Ok(())),
                Next::Closed => return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into())),
                Next::Read => {
                    if self.peer_closed || ready!(self.poll_fill(cx))? == 0 {
                        return Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()));
                    }
                }
            }
        }
    }

    /// Marks the connection failed after rustls reported `e`: the ciphertext left is
    /// dropped and rustls is not called again.
    fn fail(&mut self, e: rustls::Error) -> io::Error {
        self.failed = true;
        self.incoming = Vec::new();
        tls_error(e)
    }

    /// The error of every operation on a failed connection.
    fn check_failed(&self) -> io::Result<()> {
        match self.failed {
            true => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the TLS connection failed earlier",
            )),
            false => Ok(()),
        }
    }

    /// Runs rustls over the buffered ciphertext until it needs I/O: decrypted data goes to
    /// `plaintext`, handshake and alert records to `outgoing`.
    fn process(&mut self) -> io::Result<Next> {
        self.check_failed()?;
        loop {
            let UnbufferedStatus { mut discard, state } =
                self.conn.process_tls_records(&mut self.incoming);
            let next = match state {
                Err(e) => return Err(self.fail(e)),
                Ok(ConnectionState::ReadTraffic(mut records)) => {
                    let mut error = None;
                    while let Some(record) = records.next_record() {
                        match record {
                            Ok(record) => {
                                discard += record.discard;
                                self.plaintext.extend_from_slice(record.payload);
                            }
                            Err(e) => {
                                error = Some(e);
                                break;
                            }
                        }
                    }
                    if let Some(e) = error {
                        return Err(self.fail(e));
                    }
                    None
                }
                Ok(ConnectionState::ReadEarlyData(mut records)) => {
                    // Early data is not enabled in the server config; drain what arrives.
                    let mut error = None;
                    while let Some(record) = records.next_record() {
                        match record {
                            Ok(record) => discard += record.discard,
                            Err(e) => {
                                error = Some(e);
                                break;
                            }
                        }
                    }
                    if let Some(e) = error {
                        return Err(self.fail(e));
                    }
                    None
                }
                Ok(ConnectionState::EncodeTlsData(mut encoder)) => {
                    let start = self.outgoing.len();
                    let mut room = 1024;
                    loop {
                        self.outgoing.resize(start + room, 0);
                        match encoder.encode(&mut self.outgoing[start..]) {
                            Ok(n) => {
                                self.outgoing.truncate(start + n);
                                break;
                            }
                            Err(EncodeError::InsufficientSize(e)) => room = e.required_size,
                            Err(EncodeError::AlreadyEncoded) => {
                                self.outgoing.truncate(start);
                                break;
                            }
                        }
                    }
                    None
                }
                Ok(ConnectionState::TransmitTlsData(transmit)) => {
                    // The records wait in `outgoing`, which is sent before anything else.
                    transmit.done();
                    None
                }
                Ok(ConnectionState::BlockedHandshake) => Some(Next::Read),
                // Whatever remains in `incoming` is an incomplete record.
                Ok(ConnectionState::WriteTraffic(_)) => Some(Next::Write),
                Ok(ConnectionState::PeerClosed) => {
                    self.peer_closed = true;
                    None
                }
                // Closed, or a state a later rustls adds (the enum is non-exhaustive).
                _ => Some(Next::Closed),
            };
            self.discard(discard);
            if let Some(next) = next {
                return Ok(next);
            }
        }
    }

    fn discard(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        if n >= self.incoming.len() {
            // Free the buffer: an idle connection holds none.
            self.incoming = Vec::new();
        } else {
            self.incoming.drain(..n);
        }
    }

    /// Reads ciphertext from the socket into `incoming`; `Ready(Ok(0))` at end of file.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.eof {
            return Poll::Ready(Ok(0));
        }
        if self.incoming.len() >= MAX_INCOMING {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "TLS record or handshake message too large",
            )));
        }
        loop {
            // Wait for readiness before reserving, so that a waiting connection holds no
            // buffer.
            ready!(self.tcp.poll_read_ready(cx))?;
            self.incoming.reserve(READ_SIZE);
            match self.tcp.try_read_buf(&mut self.incoming) {
                Ok(0) => {
                    self.eof = true;
                    if self.incoming.is_empty() {
                        self.incoming = Vec::new();
                    }
                    return Poll::Ready(Ok(0));
                }
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.incoming.is_empty() {
                        self.incoming = Vec::new();
                    }
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Sends `outgoing`; frees it once sent.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.outgoing.len() {
            let n = ready!(Pin::new(&mut self.tcp).poll_write(cx, &self.outgoing[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.outgoing = Vec::new();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }

    /// Runs `write` with rustls' writer once every pending state is handled. `process`
    /// leaves nothing pending, so the next state is the writer (or the end).
    fn with_writer<T>(
        &mut self,
        write: impl FnOnce(&mut WriteTraffic<'_, ServerConnectionData>, &mut Vec<u8>) -> io::Result<T>,
    ) -> io::Result<T> {
        match self.process()? {
            Next::Write => {}
            Next::Closed => return Err(io::ErrorKind::BrokenPipe.into()),
            Next::Read => return Err(io::Error::other("TLS handshake not complete")),
        }
        let UnbufferedStatus { discard, state } = self.conn.process_tls_records(&mut self.incoming);
        let result = match state {
            Err(e) => return Err(self.fail(e)),
            Ok(ConnectionState::WriteTraffic(mut writer)) => write(&mut writer, &mut self.outgoing),
            Ok(other) => Err(io::Error::other(format!("unexpected TLS state {other:?}"))),
        };
        self.discard(discard);
        result
    }

    /// Encrypts `data` as application data into `out` from offset `at` (grown, never
    /// shrunk); returns the ciphertext's length.
    fn encrypt_into(&mut self, data: &[u8], out: &mut Vec<u8>, at: usize) -> io::Result<usize> {
        self.with_writer(|writer, _| {
            // Record overhead: 5-byte header, content type and 16-byte tag per 16 KiB.
            let need = at + data.len() + 64 * (data.len() / 16384 + 1);
            if out.len() < need {
                out.resize(need, 0);
            }
            loop {
                match writer.encrypt(data, &mut out[at..]) {
                    Ok(n) => return Ok(n),
                    Err(EncryptError::InsufficientSize(e)) if at + e.required_size > out.len() => {
                        out.resize(at + e.required_size, 0)
                    }
                    Err(_) => return Err(io::Error::other("TLS encryption failed")),
                }
            }
        })
    }

    /// Queues close_notify in `outgoing`.
    fn close_notify(&mut self) -> io::Result<()> {
        self.with_writer(|writer, outgoing| {
            let start = outgoing.len();
            outgoing.resize(start + 64, 0);
            match writer.queue_close_notify(&mut outgoing[start..]) {
                Ok(n) => outgoing.truncate(start + n),
                Err(_) => outgoing.truncate(start),
            }
            Ok(())
        })
    }
}

impl AsyncRead for TlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.taken < this.plaintext.len() {
                let n = buf.remaining().min(this.plaintext.len() - this.taken);
                buf.put_slice(&this.plaintext[this.taken..this.taken + n]);
                this.taken += n;
                if this.taken == this.plaintext.len() {
                    this.plaintext = Vec::new();
                    this.taken = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.peer_closed || this.eof {
                return Poll::Ready(Ok(()));
            }
            let next = this.process()?;
            // Records produced while reading (session tickets, key updates, alerts) go out
            // now if the socket takes them, else with the next read, write or flush.
            if let Poll::Ready(Err(e)) = this.poll_send(cx) {
                return Poll::Ready(Err(e));
            }
            match next {
                Next::Closed => return Poll::Ready(Ok(())),
                _ if this.taken < this.plaintext.len() || this.peer_closed => continue,
                _ => {
                    ready!(this.poll_fill(cx))?;
                }
            }
        }
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(data)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Hold at most one write's ciphertext.
        ready!(this.poll_send(cx))?;
        let had_plaintext = this.plaintext.len();
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Poll::Ready(Ok(0));
        }
        let taken = SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let Scratch { plain, cipher } = &mut *scratch;
            let (taken, n) = if bufs.len() > 1 && total <= COALESCE {
                // One record for what hyper writes as several small slices.
                plain.clear();
                for b in bufs {
                    plain.extend_from_slice(b);
                }
                (total, this.encrypt_into(plain, cipher, 0)?)
            } else {
                // Slice by slice, up to MAX_WRITE in all (the caller writes the rest next).
                let (mut taken, mut n) = (0, 0);
                for b in bufs.iter().filter(|b| !b.is_empty()) {
                    let part = &b[..b.len().min(MAX_WRITE - taken)];
                    n += this.encrypt_into(part, cipher, n)?;
                    taken += part.len();
                    if taken == MAX_WRITE {
                        break;
                    }
                }
                (taken, n)
            };
            // Straight to the socket, unless records queued while encrypting (session
            // tickets, key updates) must go first; only what it does not take now is kept.
            let mut sent = 0;
            if this.outgoing.is_empty() {
                while sent < n {
                    match Pin::new(&mut this.tcp).poll_write(cx, &cipher[sent..n]) {
                        Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                        Poll::Ready(Ok(m)) => sent += m,
                        Poll::Ready(Err(e)) => return Err(e),
                        Poll::Pending => break,
                    }
                }
            }
            this.outgoing.extend_from_slice(&cipher[sent..n]);
            Ok::<_, io::Error>(taken)
        })?;
        if let Poll::Ready(Err(e)) = this.poll_send(cx) {
            return Poll::Ready(Err(e));
        }
        if this.plaintext.len() > had_plaintext {
            // Encrypting went through incoming records first: make sure they are read.
            cx.waker().wake_by_ref();
        }
        Poll::Ready(Ok(taken))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.close_sent {
            this.close_sent = true;
            // A connection already closed or broken has no close_notify to send.
            let _ = this.close_notify();
        }
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A server config from a fresh PKI, and a client config that trusts its CA.
    fn configs(dir: &std::path::Path) -> (Arc<ServerConfig>, Arc<rustls::ClientConfig>) {
        let pki = crate::tls::load_or_create(dir, &[]).unwrap();
        let server = crate::tls::server_config(&pki, None).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut pki.ca_pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let client = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        (server, Arc::new(client))
    }

    /// A connected pair: our server stream and a tokio-rustls client offering `alpn`.
    async fn pair(
        alpn: &[&[u8]],
    ) -> (
        TlsStream,
        tokio_rustls::client::TlsStream<TcpStream>,
        tempfile::TempDir,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (server, client) = configs(dir.path());
        let mut client = (*client).clone();
        client.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connect = async {
            let tcp = TcpStream::connect(addr).await.unwrap();
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
            tokio_rustls::TlsConnector::from(Arc::new(client))
                .connect(name, tcp)
                .await
                .unwrap()
        };
        let serve = async {
            let (tcp, _) = listener.accept().await.unwrap();
            accept(tcp, server).await.unwrap()
        };
        let (c, s) = tokio::join!(connect, serve);
        (s, c, dir)
    }

    fn holds_no_buffers(s: &TlsStream) -> bool {
        s.incoming.capacity() == 0 && s.outgoing.capacity() == 0 && s.plaintext.capacity() == 0
    }

    #[tokio::test]
    async fn alpn_is_what_the_client_negotiated() {
        let (s, _c, _d) = pair(&[b"h2", b"http/1.1"]).await;
        assert_eq!(s.alpn_protocol(), Some(b"h2".as_slice()));
        let (s, _c, _d) = pair(&[b"http/1.1"]).await;
        assert_eq!(s.alpn_protocol(), Some(b"http/1.1".as_slice()));
        let (s, _c, _d) = pair(&[]).await;
        assert_eq!(s.alpn_protocol(), None);
    }

    #[tokio::test]
    async fn data_flows_both_ways_and_an_idle_connection_holds_no_buffers() {
        let (mut s, mut c, _d) = pair(&[b"http/1.1"]).await;
        // Client to server: more than one record, read through a small buffer.
        let sent: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let writer = async {
            c.write_all(&sent).await.unwrap();
            c.flush().await.unwrap();
            c
        };
        let reader = async {
            let mut got = vec![0u8; sent.len()];
            s.read_exact(&mut got).await.unwrap();
            (s, got)
        };
        let (mut c, (mut s, got)) = tokio::join!(writer, reader);
        assert!(got == sent, "the server read what the client wrote");
        // Server to client, vectored as hyper writes a chunk: size line, data, CRLF.
        let big = vec![7u8; 70_000];
        let parts = [
            IoSlice::new(b"1a\r\n"),
            IoSlice::new(b"abcdefghijklmnopqrstuvwxyz"),
            IoSlice::new(b"\r\n"),
        ];
        let n = poll_fn(|cx| Pin::new(&mut s).poll_write_vectored(cx, &parts))
            .await
            .unwrap();
        assert_eq!(n, 32);
        s.write_all(&big).await.unwrap();
        s.flush().await.unwrap();
        let mut got = vec![0u8; 32 + big.len()];
        c.read_exact(&mut got).await.unwrap();
        assert_eq!(&got[..32], b"1a\r\nabcdefghijklmnopqrstuvwxyz\r\n");
        assert!(got[32..] == big[..]);
        // Idle: nothing buffered, nothing allocated.
        assert!(holds_no_buffers(&s), "an idle connection keeps no buffers");
        // The server closes: the client sees a clean end (close_notify, then EOF).
        s.shutdown().await.unwrap();
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
    }

    #[tokio::test]
    async fn payloads_around_every_buffer_size_arrive_intact_both_ways() {
        let (mut s, mut c, _d) = pair(&[b"http/1.1"]).await;
        let mut sizes = Vec::new();
        for bound in [READ_SIZE, COALESCE, MAX_WRITE, MAX_INCOMING] {
            sizes.extend([bound - 1, bound, bound + 1]);
        }
        sizes.push(10 * MAX_INCOMING);
        for (round, size) in sizes.into_iter().enumerate() {
            let sent: Vec<u8> = (0..size).map(|i| ((i + round) % 253) as u8).collect();
            // Client to server.
            let writer = async {
                c.write_all(&sent).await.unwrap();
                c.flush().await.unwrap();
            };
            let reader = async {
                let mut got = vec![0u8; size];
                s.read_exact(&mut got).await.unwrap();
                got
            };
            let ((), got) = tokio::join!(writer, reader);
            assert!(got == sent, "{size} bytes client to server");
            // Server to client: one write call (it may take part), then the rest.
            let writer = async {
                let n = s.write(&sent).await.unwrap();
                assert!(n > 0 && n <= size.max(1));
                s.write_all(&sent[n..]).await.unwrap();
                s.flush().await.unwrap();
            };
            let reader = async {
                let mut got = vec![0u8; size];
                c.read_exact(&mut got).await.unwrap();
                got
            };
            let ((), got) = tokio::join!(writer, reader);
            assert!(got == sent, "{size} bytes server to client");
        }
        assert!(holds_no_buffers(&s), "no buffers kept after the transfers");
    }

    #[tokio::test]
    async fn the_client_leaving_is_end_of_file_with_or_without_close_notify() {
        for clean in [true, false] {
            let (mut s, mut c, _d) = pair(&[b"http/1.1"]).await;
            c.write_all(b"last words").await.unwrap();
            c.flush().await.unwrap();
            if clean {
                c.shutdown().await.unwrap();
            } else {
                // End the TCP stream under TLS: FIN without close_notify.
                c.get_mut().0.shutdown().await.unwrap();
            }
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            assert_eq!(got, b"last words", "clean close: {clean}");
            assert!(holds_no_buffers(&s));
        }
    }

    #[tokio::test]
    async fn garbage_after_the_handshake_is_an_error_not_data() {
        let (mut s, mut c, _d) = pair(&[b"http/1.1"]).await;
        // A record header claiming application data, then bytes that fail to decrypt.
        let mut junk = vec![0x17, 0x03, 0x03, 0x00, 0x40];
        junk.extend_from_slice(&[0xAB; 0x40]);
        c.get_mut().0.write_all(&junk).await.unwrap();
        let mut buf = [0u8; 64];
        let err = s.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    }

    /// Found by the `tls_stream` fuzz target: after a record failed to decrypt, closing the
    /// stream ran rustls again over the same record, which rustls answers with a second
    /// fatal alert (a debug assertion in rustls). A failed connection is not driven again.
    #[tokio::test]
    async fn a_failed_connection_is_not_driven_again() {
        let (mut s, mut c, _d) = pair(&[b"http/1.1"]).await;
        let mut junk = vec![0x17, 0x03, 0x03, 0x00, 0x40];
        junk.extend_from_slice(&[0xAB; 0x40]);
        c.get_mut().0.write_all(&junk).await.unwrap();
        let mut buf = [0u8; 64];
        for _ in 0..2 {
            let err = s.read(&mut buf).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        }
        assert!(s.write_all(b"late").await.is_err());
        s.shutdown().await.unwrap();
        assert!(holds_no_buffers(&s));
    }

    #[tokio::test]
    async fn a_client_that_does_not_speak_tls_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (server, _) = configs(dir.path());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut tcp = TcpStream::connect(addr).await.unwrap();
            let _ = tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
            let mut sink = Vec::new();
            let _ = tcp.read_to_end(&mut sink).await;
        });
        let (tcp, _) = listener.accept().await.unwrap();
        let err = match accept(tcp, server).await {
            Ok(_) => panic!("plain HTTP must not complete a TLS handshake"),
            Err(e) => e,
        };
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        client.await.unwrap();
    }
}
