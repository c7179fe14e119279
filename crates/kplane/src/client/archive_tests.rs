//! The HTTP side of `kplane export` and `kplane import` against a small in-test HTTP
//! server that plays the archive endpoints: what is requested, with which credentials,
//! and what ends up on disk for good, bad, broken and refused answers.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt as _;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, StreamBody};
use hyper::body::{Frame, Incoming};
use kplane_archive::{Header, Record, Writer, FORMAT_VERSION};
use tower::BoxError;

use super::archive;
use super::args::{ClientFlags, ExportArgs, ImportArgs};

/// A request the fake server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    uri: String,
    authorization: Option<String>,
    content_type: Option<String>,
    body: Vec<u8>,
}

/// What the fake server answers.
enum Reply {
    /// 200 with these bytes, in 16 KiB chunks; `Some(n)`: the connection breaks after
    /// `n` bytes.
    Archive(Vec<u8>, Option<usize>),
    /// Any status with a JSON body.
    Json(u16, String),
}

type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// A plain-HTTP server on a free port, stopped when dropped.
struct Fake {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
    dir: tempfile::TempDir,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    async fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Fake {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let task = {
            let seen = seen.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let (seen, handler) = (seen.clone(), handler.clone());
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            serve(req, seen.clone(), handler.clone())
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
            })
        };
        Fake {
            url,
            seen,
            task,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Flags with a kubeconfig whose current workspace is `root`, with a bearer token.
    fn flags(&self) -> ClientFlags {
        let path = self.dir.path().join("kubeconfig");
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: {}/clusters/root\n\
             users:\n- name: admin\n  user:\n    token: secret-token\n\
             contexts:\n- name: k\n  context:\n    cluster: k\n    user: admin\ncurrent-context: k\n",
            self.url
        );
        std::fs::write(&path, yaml).unwrap();
        ClientFlags {
            kubeconfig: Some(path),
            context: None,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn serve(
    req: Request<Incoming>,
    seen: Arc<Mutex<Vec<Seen>>>,
    handler: Handler,
) -> Result<Response<UnsyncBoxBody<Bytes, BoxError>>, Infallible> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let mut request = Seen {
        method: req.method().to_string(),
        uri: req.uri().to_string(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        body: Vec::new(),
    };
    request.body = req.into_body().collect().await.unwrap().to_bytes().to_vec();
    seen.lock().unwrap().push(request.clone());
    let (status, content_type, chunks) = match handler(&request) {
        Reply::Archive(bytes, breaks_after) => {
            let cut = breaks_after.unwrap_or(bytes.len());
            let chunks: Vec<Result<Frame<Bytes>, BoxError>> = bytes[..cut]
                .chunks(16 * 1024)
                .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
                .collect();
            let chunks = futures::stream::iter(chunks);
            if breaks_after.is_some() {
                // Pending once first, so the server sends what it has before it fails.
                let failure = futures::stream::once(async {
                    tokio::task::yield_now().await;
                    Err::<Frame<Bytes>, BoxError>("connection lost".into())
                });
                (
                    200,
                    kplane_archive::CONTENT_TYPE,
                    chunks.chain(failure).boxed(),
                )
            } else {
                (200, kplane_archive::CONTENT_TYPE, chunks.boxed())
            }
        }
        Reply::Json(status, body) => (
            status,
            "application/json",
            futures::stream::iter(vec![Ok(Frame::data(Bytes::from(body)))]).boxed(),
        ),
    };
    let body = StreamBody::new(chunks).boxed_unsync();
    let resp = Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", content_type)
        .body(body)
        .unwrap();
    Ok(resp)
}

/// An archive of `root:a` with `n` ConfigMaps.
fn archive(n: usize, compress: bool) -> Vec<u8> {
    let header = Header {
        format_version: FORMAT_VERSION,
        kplane_version: "test".into(),
        source_server: "https://127.0.0.1:6443".into(),
        cluster: "root:a".into(),
        recursive: false,
        revision: 9,
        object_count: n as u64,
        created: "2026-11-24T00:00:00Z".into(),
        decrypted: Vec::new(),
    };
    let mut w = Writer::new(Vec::new(), &header, compress).unwrap();
    for i in 0..n {
        let name = format!("cm-{i:06}");
        w.write(&Record {
            cluster: "root:a".into(),
            resource: "/configmaps".into(),
            namespace: "default".into(),
            value: format!(
                r#"{{"metadata":{{"name":"{name}"}},"data":{{"x":"{}"}}}}"#,
                "y".repeat(i % 300)
            )
            .into_bytes(),
            name,
        })
        .unwrap();
    }
    w.finish_into_inner().unwrap().0
}

fn status(code: u16, reason: &str, message: &str) -> Reply {
    Reply::Json(
        code,
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": message, "reason": reason, "code": code})
        .to_string(),
    )
}

fn export_args(path: &str, output: &Path) -> ExportArgs {
    ExportArgs {
        path: path.into(),
        output: output.to_owned(),
        recursive: false,
        no_compress: false,
    }
}

fn nothing_written(output: &Path) {
    assert!(!output.exists(), "{} exists", output.display());
    let mut tmp = output.as_os_str().to_owned();
    tmp.push(".tmp");
    assert!(!Path::new(&tmp).exists(), "the tmp file was left behind");
}

#[tokio::test]
async fn export_writes_the_verified_archive() {
    // 20,000 records: far more than the in-flight chunks and the reader's buffers.
    let bytes = archive(20_000, true);
    let served = bytes.clone();
    let fake = Fake::start(move |_| Reply::Archive(served.clone(), None)).await;
    let output = fake.path("a.kpa");
    // `a` is relative to the current workspace, root.
    archive::export(&fake.flags(), export_args("a", &output))
        .await
        .unwrap();
    assert_eq!(std::fs::read(&output).unwrap(), bytes);
    nothing_written(&fake.path("a.kpa.tmp"));
    let seen = fake.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].uri, "/clusters/root:a/kplane/v1/export");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Bearer secret-token")
    );

    let mut args = export_args("root:a", &fake.path("b.kpa"));
    args.recursive = true;
    args.no_compress = true;
    archive::export(&fake.flags(), args).await.unwrap();
    assert_eq!(
        fake.seen()[1].uri,
        "/clusters/root:a/kplane/v1/export?recursive=true&compress=false"
    );
}

#[tokio::test]
async fn a_truncated_or_broken_export_leaves_no_file() {
    let bytes = archive(5_000, true);
    let half = bytes[..bytes.len() / 2].to_vec();
    let truncated = Fake::start(move |_| Reply::Archive(half.clone(), None)).await;
    let output = truncated.path("a.kpa");
    let err = archive::export(&truncated.flags(), export_args("root:a", &output))
        .await
        .unwrap_err();
    assert!(format!("{err:#}").contains("truncated archive"), "{err:#}");
    nothing_written(&output);

    let served = bytes.clone();
    let broken = Fake::start(move |_| Reply::Archive(served.clone(), Some(served.len() / 2))).await;
    let output = broken.path("a.kpa");
    let err = archive::export(&broken.flags(), export_args("root:a", &output))
        .await
        .unwrap_err();
    assert!(format!("{err:#}").contains("broke off"), "{err:#}");
    nothing_written(&output);

    let mut flipped = bytes.clone();
    let at = flipped.len() / 3;
    flipped[at] ^= 0x10;
    let corrupt = Fake::start(move |_| Reply::Archive(flipped.clone(), None)).await;
    let output = corrupt.path("a.kpa");
    let err = archive::export(&corrupt.flags(), export_args("root:a", &output))
        .await
        .unwrap_err();
    assert!(format!("{err:#}").contains("bad archive"), "{err:#}");
    nothing_written(&output);
}

#[tokio::test]
async fn a_refused_export_says_why_and_writes_nothing() {
    let fake = Fake::start(|_| {
        status(
            403,
            "Forbidden",
            "User \"bob\" cannot get path \"/kplane/v1/export\" in logical cluster \"root:a\"",
        )
    })
    .await;
    let output = fake.path("a.kpa");
    let err = archive::export(&fake.flags(), export_args("root:a", &output))
        .await
        .unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        "exporting root:a: the server refused: User \"bob\" cannot get path \"/kplane/v1/export\" in logical cluster \"root:a\" (403 Forbidden)"
    );
    nothing_written(&output);
}

fn import_result(cluster: &str) -> Reply {
    Reply::Json(
        201,
        serde_json::json!({"apiVersion": "kplane.io/v1alpha1", "kind": "ImportResult",
            "cluster": cluster, "clusters": [cluster], "objects": 3000, "revision": 77})
        .to_string(),
    )
}

#[tokio::test]
async fn import_streams_the_file_to_the_chosen_path() {
    let fake = Fake::start(|seen| {
        let cluster = seen.uri.split('/').nth(2).unwrap_or("").to_owned();
        import_result(&cluster)
    })
    .await;
    let file = fake.path("a.kpa");
    let bytes = archive(3000, true);
    std::fs::write(&file, &bytes).unwrap();
    // Without --as: the archive's own path.
    let args = ImportArgs {
        file: file.clone(),
        as_path: None,
        replace: false,
    };
    archive::import(&fake.flags(), args).await.unwrap();
    // --as, relative to the current workspace, and --replace.
    let args = ImportArgs {
        file: file.clone(),
        as_path: Some("b".into()),
        replace: true,
    };
    archive::import(&fake.flags(), args).await.unwrap();
    let seen = fake.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].uri, "/clusters/root:a/kplane/v1/import");
    assert_eq!(
        seen[1].uri,
        "/clusters/root:b/kplane/v1/import?replace=true"
    );
    for s in &seen {
        assert_eq!(s.body, bytes);
        assert_eq!(
            s.content_type.as_deref(),
            Some(kplane_archive::CONTENT_TYPE)
        );
        assert_eq!(s.authorization.as_deref(), Some("Bearer secret-token"));
    }
}

#[tokio::test]
async fn a_bad_archive_is_refused_before_anything_is_sent() {
    let fake = Fake::start(|_| import_result("root:a")).await;
    let good = archive(100, false);
    let mut flipped = good.clone();
    let at = good.len() / 2;
    flipped[at] ^= 1;
    let mut newer = good.clone();
    // The header's `"formatVersion":1` becomes 2 (its CRC then fails: a damaged file
    // that claims a newer version is still damaged).
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("flipped.kpa", flipped, "corrupt archive: record"),
        (
            "truncated.kpa",
            good[..good.len() - 10].to_vec(),
            "truncated archive",
        ),
        ("text.kpa", b"hello".to_vec(), "not a kplane archive"),
        (
            "newer.kpa",
            {
                let at = newer
                    .windows(17)
                    .position(|w| w == b"\"formatVersion\":1")
                    .unwrap();
                newer[at + 16] = b'2';
                newer
            },
            "corrupt archive: header",
        ),
    ];
    for (name, bytes, want) in cases {
        let file = fake.path(name);
        std::fs::write(&file, bytes).unwrap();
        let args = ImportArgs {
            file: file.clone(),
            as_path: None,
            replace: false,
        };
        let err = archive::import(&fake.flags(), args).await.unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains(want) && msg.ends_with("nothing was imported"),
            "{name}: {msg}"
        );
    }
    assert!(fake.seen().is_empty());
}

#[tokio::test]
async fn a_refused_import_says_what_to_do() {
    let fake = Fake::start(|_| {
        status(
            409,
            "AlreadyExists",
            "logical cluster \"root:a\" already exists and is not empty",
        )
    })
    .await;
    let file = fake.path("a.kpa");
    std::fs::write(&file, archive(10, true)).unwrap();
    let args = ImportArgs {
        file,
        as_path: None,
        replace: false,
    };
    let err = archive::import(&fake.flags(), args).await.unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        "importing as root:a: the server refused: logical cluster \"root:a\" already exists and is not empty (409 AlreadyExists); add --replace to replace its content, or choose another path with --as"
    );
}
