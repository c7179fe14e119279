//! The kubeconfig files of the client commands, found, merged and rewritten as kubectl
//! does (client-go's `clientcmd` loading rules):
//!
//! - Which files: `--kubeconfig FILE` (it must exist), else every existing file of the
//!   colon-separated `$KUBECONFIG` (missing ones are skipped), else `~/.kube/config`.
//! - Reading merges them: the first file that defines a context, cluster or user by name
//!   wins, and so does the first file that sets `current-context`.
//! - Writing changes the file that defines the entry being changed (the first one), and
//!   keeps everything it does not understand. A file is replaced atomically (a temporary
//!   file renamed over it, with the same permissions; a symlinked kubeconfig is written
//!   through the link). Comments are not kept, as kubectl does not keep them either.
//!
//! The files are held as YAML documents in [`serde_json::Value`] form, so unknown fields
//! survive a rewrite; the typed, merged view the HTTP client needs comes from kube-rs
//! ([`Kubeconfigs::typed`]).

use std::ffi::OsStr;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

/// The context extension that remembers the previous workspace for `kplane ws use -`.
/// kubectl keeps context extensions it does not know when it rewrites the file.
pub const PREVIOUS_EXTENSION: &str = "kplane.io/workspace";

/// What can go wrong finding, reading or rewriting the kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("no kubeconfig: {0}")]
    NotFound(String),
    #[error("reading kubeconfig {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("kubeconfig {} is not a valid kubeconfig: {reason}", path.display())]
    Parse { path: PathBuf, reason: String },
    #[error("writing kubeconfig {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the kubeconfig has no current context: pass --context NAME")]
    NoCurrentContext,
    #[error("context {name:?} not found in the kubeconfig ({files})")]
    UnknownContext { name: String, files: String },
    #[error("context {context:?} names cluster {cluster:?}, which is not in the kubeconfig")]
    UnknownCluster { context: String, cluster: String },
    #[error("cluster {0:?} of the kubeconfig has no server URL")]
    NoServer(String),
}

type Result<T, E = KubeconfigError> = std::result::Result<T, E>;

/// The files to load, by kubectl's precedence. `env` is `$KUBECONFIG`, `home` is `$HOME`.
pub fn locate(
    flag: Option<&Path>,
    env: Option<&OsStr>,
    home: Option<&Path>,
) -> Result<Vec<PathBuf>> {
    if let Some(file) = flag {
        if !file.is_file() {
            return Err(KubeconfigError::NotFound(format!(
                "--kubeconfig {} does not exist",
                file.display()
            )));
        }
        return Ok(vec![file.to_path_buf()]);
    }
    if let Some(env) = env.filter(|e| !e.is_empty()) {
        let listed: Vec<PathBuf> = std::env::split_paths(env)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        let existing: Vec<PathBuf> = listed.iter().filter(|p| p.is_file()).cloned().collect();
        if existing.is_empty() {
            return Err(KubeconfigError::NotFound(format!(
                "none of the files in KUBECONFIG exists ({})",
                display_paths(&listed)
            )));
        }
        return Ok(existing);
    }
    let Some(home) = home else {
        return Err(KubeconfigError::NotFound(
            "pass --kubeconfig FILE or set KUBECONFIG (HOME is not set)".to_owned(),
        ));
    };
    let default = home.join(".kube").join("config");
    if !default.is_file() {
        return Err(KubeconfigError::NotFound(format!(
            "{} does not exist; pass --kubeconfig FILE or set KUBECONFIG",
            default.display()
        )));
    }
    Ok(vec![default])
}

fn display_paths(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    names.join(":")
}

/// One kubeconfig file as a YAML document.
#[derive(Debug, Clone)]
struct File {
    path: PathBuf,
    doc: Value,
    dirty: bool,
}

/// The three named lists of a kubeconfig, with the key holding each entry's body.
#[derive(Debug, Clone, Copy)]
enum Section {
    Clusters,
    Contexts,
    Users,
}

impl Section {
    fn key(self) -> &'static str {
        match self {
            Self::Clusters => "clusters",
            Self::Contexts => "contexts",
            Self::Users => "users",
        }
    }

    fn body(self) -> &'static str {
        match self {
            Self::Clusters => "cluster",
            Self::Contexts => "context",
            Self::Users => "user",
        }
    }
}

/// What the current (or `--context`) context points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextInfo {
    pub name: String,
    pub cluster: String,
    pub user: Option<String>,
    pub namespace: Option<String>,
    /// The cluster entry's server URL.
    pub server: String,
}

/// The loaded kubeconfig files, in precedence order.
#[derive(Debug, Clone)]
pub struct Kubeconfigs {
    files: Vec<File>,
}

impl Kubeconfigs {
    /// Reads and parses `paths` (from [`locate`]).
    pub fn load(paths: &[PathBuf]) -> Result<Self> {
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let text = fs::read_to_string(path).map_err(|source| KubeconfigError::Read {
                path: path.clone(),
                source,
            })?;
            files.push((path.clone(), text));
        }
        Self::from_texts(files)
    }

    /// Parses already-read files (path, YAML text), in precedence order.
    pub fn from_texts(files: Vec<(PathBuf, String)>) -> Result<Self> {
        let files = files
            .into_iter()
            .map(|(path, text)| {
                let doc = parse(&path, &text)?;
                Ok(File {
                    path,
                    doc,
                    dirty: false,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { files })
    }

    /// The paths, in precedence order.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }

    /// The merged `current-context`, or `name` when given; either must exist.
    pub fn context(&self, name: Option<&str>) -> Result<ContextInfo> {
        let name = match name {
            Some(n) => n.to_owned(),
            None => self
                .files
                .iter()
                .find_map(|f| f.doc["current-context"].as_str().filter(|s| !s.is_empty()))
                .ok_or(KubeconfigError::NoCurrentContext)?
                .to_owned(),
        };
        let body = self
            .entry(Section::Contexts, &name)
            .map(|(_, e)| e)
            .ok_or_else(|| KubeconfigError::UnknownContext {
                name: name.clone(),
                files: display_paths(&self.paths()),
            })?;
        let cluster = body["cluster"].as_str().unwrap_or_default().to_owned();
        let server = self
            .entry(Section::Clusters, &cluster)
            .ok_or_else(|| KubeconfigError::UnknownCluster {
                context: name.clone(),
                cluster: cluster.clone(),
            })?
            .1["server"]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| KubeconfigError::NoServer(cluster.clone()))?
            .to_owned();
        Ok(ContextInfo {
            user: body["user"].as_str().map(str::to_owned),
            namespace: body["namespace"].as_str().map(str::to_owned),
            name,
            cluster,
            server,
        })
    }

    /// The workspace path remembered for `kplane ws use -` in context `name`.
    pub fn previous_workspace(&self, context: &str) -> Option<String> {
        let (_, body) = self.entry(Section::Contexts, context)?;
        body["extensions"]
            .as_array()?
            .iter()
            .find(|e| e["name"] == PREVIOUS_EXTENSION)?["extension"]["previous"]
            .as_str()
            .map(str::to_owned)
    }

    /// Points context `context` at `server` and remembers `previous` for `use -`.
    ///
    /// The context's cluster entry is rewritten in place when no other context uses it;
    /// when others do, the context gets a copy of its own (named after the context) so
    /// the other contexts keep their server. Files changed are marked for [`Self::save`].
    pub fn set_server(
        &mut self,
        context: &str,
        server: &str,
        previous: Option<&str>,
    ) -> Result<()> {
        let info = self.context(Some(context))?;
        let (ctx_file, ctx_idx) =
            self.locate_entry(Section::Contexts, context)
                .ok_or_else(|| KubeconfigError::UnknownContext {
                    name: context.to_owned(),
                    files: display_paths(&self.paths()),
                })?;
        let (cl_file, cl_idx) = self
            .locate_entry(Section::Clusters, &info.cluster)
            .ok_or_else(|| KubeconfigError::UnknownCluster {
                context: context.to_owned(),
                cluster: info.cluster.clone(),
            })?;
        if self.shared(&info.cluster, context) {
            let mut body = self.files[cl_file].doc[Section::Clusters.key()][cl_idx]
                [Section::Clusters.body()]
            .as_object()
            .cloned()
            .unwrap_or_default();
            let from_dir = parent_dir(&self.files[cl_file].path);
            if from_dir != parent_dir(&self.files[ctx_file].path) {
                absolutize(&mut body, "certificate-authority", &from_dir);
            }
            body.insert("server".to_owned(), json!(server));
            let name = self.free_cluster_name(context);
            let doc = &mut self.files[ctx_file].doc;
            if let Some(root) = doc.as_object_mut() {
                let list = root
                    .entry(Section::Clusters.key())
                    .or_insert_with(|| json!([]));
                if !list.is_array() {
                    *list = json!([]);
                }
                if let Some(list) = list.as_array_mut() {
                    list.push(json!({"name": name, "cluster": body}));
                }
            }
            self.body_mut(Section::Contexts, ctx_file, ctx_idx)?
                .insert("cluster".to_owned(), json!(name));
        } else {
            self.body_mut(Section::Clusters, cl_file, cl_idx)?
                .insert("server".to_owned(), json!(server));
        }
        if let Some(previous) = previous {
            set_previous(
                self.body_mut(Section::Contexts, ctx_file, ctx_idx)?,
                previous,
            );
        }
        Ok(())
    }

    /// The body (`cluster:`, `context:` or `user:` mapping) of entry `ei` of file `fi`,
    /// marking the file changed. A missing body is created; one that is not a mapping is
    /// an error rather than something to overwrite.
    fn body_mut(
        &mut self,
        section: Section,
        fi: usize,
        ei: usize,
    ) -> Result<&mut Map<String, Value>> {
        let file = &mut self.files[fi];
        let malformed = |path: &Path| KubeconfigError::Parse {
            path: path.to_path_buf(),
            reason: format!("entry {ei} of {} is not a mapping", section.key()),
        };
        let Some(entry) = file
            .doc
            .get_mut(section.key())
            .and_then(|l| l.get_mut(ei))
            .and_then(Value::as_object_mut)
        else {
            return Err(malformed(&file.path));
        };
        let body = entry
            .entry(section.body())
            .or_insert_with(|| Value::Object(Map::new()));
        if body.is_null() {
            *body = Value::Object(Map::new());
        }
        file.dirty = true;
        match body.as_object_mut() {
            Some(m) => Ok(m),
            None => Err(malformed(&file.path)),
        }
    }

    /// Writes every file [`Self::set_server`] changed.
    pub fn save(&mut self) -> Result<()> {
        for file in self.files.iter_mut().filter(|f| f.dirty) {
            let text = to_yaml(&file.doc).map_err(|e| KubeconfigError::Write {
                path: file.path.clone(),
                source: std::io::Error::other(e.to_string()),
            })?;
            write_atomically(&file.path, text.as_bytes()).map_err(|source| {
                KubeconfigError::Write {
                    path: file.path.clone(),
                    source,
                }
            })?;
            file.dirty = false;
        }
        Ok(())
    }

    /// The merged cluster and user entries of `info`, with file references made absolute
    /// against the file that holds them (for [`super::export`]).
    pub fn cluster_and_user(&self, info: &ContextInfo) -> (Value, Option<(String, Value)>) {
        let cluster = self
            .located_body(Section::Clusters, &info.cluster, &FILE_FIELDS[..1])
            .unwrap_or_else(|| json!({}));
        let user = info.user.as_ref().and_then(|name| {
            let fields = FILE_FIELDS;
            self.located_body(Section::Users, name, &fields[1..])
                .map(|body| (name.clone(), body))
        });
        (cluster, user)
    }

    /// The merged documents as kube-rs's typed kubeconfig, for building a client.
    pub fn typed(&self) -> Result<kube::config::Kubeconfig> {
        let mut merged = kube::config::Kubeconfig::default();
        for file in &self.files {
            let mut doc = file.doc.clone();
            let dir = parent_dir(&file.path);
            for section in [Section::Clusters, Section::Users] {
                let entries = doc.get_mut(section.key()).and_then(Value::as_array_mut);
                for entry in entries.into_iter().flatten() {
                    if let Some(Value::Object(body)) = entry.get_mut(section.body()) {
                        for key in FILE_FIELDS {
                            absolutize(body, key, &dir);
                        }
                    }
                }
            }
            let typed: kube::config::Kubeconfig =
                serde_json::from_value(doc).map_err(|e| KubeconfigError::Parse {
                    path: file.path.clone(),
                    reason: e.to_string(),
                })?;
            merged = merged.merge(typed).map_err(|e| KubeconfigError::Parse {
                path: file.path.clone(),
                reason: e.to_string(),
            })?;
        }
        Ok(merged)
    }

    /// Does a context other than `except` (as merged: shadowed ones do not count) use
    /// cluster entry `cluster`?
    fn shared(&self, cluster: &str, except: &str) -> bool {
        let mut seen = std::collections::HashSet::new();
        self.files.iter().any(|f| {
            f.doc["contexts"].as_array().into_iter().flatten().any(|e| {
                let name = e["name"].as_str().unwrap_or_default();
                seen.insert(name.to_owned())
                    && name != except
                    && e["context"]["cluster"].as_str() == Some(cluster)
            })
        })
    }

    /// A cluster name not used in any file: the context's name, else `<context>-2`, ...
    fn free_cluster_name(&self, context: &str) -> String {
        let taken = |n: &str| self.entry(Section::Clusters, n).is_some();
        if !taken(context) {
            return context.to_owned();
        }
        (2..)
            .map(|i| format!("{context}-{i}"))
            .find(|n| !taken(n))
            .unwrap_or_else(|| context.to_owned())
    }

    /// The first file (and index in its list) that defines `name` in `section`.
    fn locate_entry(&self, section: Section, name: &str) -> Option<(usize, usize)> {
        self.files.iter().enumerate().find_map(|(fi, f)| {
            f.doc[section.key()]
                .as_array()?
                .iter()
                .position(|e| e["name"] == name)
                .map(|ei| (fi, ei))
        })
    }

    /// The winning entry's file index and body.
    fn entry(&self, section: Section, name: &str) -> Option<(usize, &Value)> {
        let (fi, ei) = self.locate_entry(section, name)?;
        Some((fi, &self.files[fi].doc[section.key()][ei][section.body()]))
    }

    /// The winning entry's body with the file-reference `fields` made absolute.
    fn located_body(&self, section: Section, name: &str, fields: &[&str]) -> Option<Value> {
        let (fi, body) = self.entry(section, name)?;
        let mut body = body.as_object().cloned().unwrap_or_default();
        let dir = parent_dir(&self.files[fi].path);
        for field in fields {
            absolutize(&mut body, field, &dir);
        }
        Some(Value::Object(body))
    }
}

/// A kubeconfig document as YAML: plain scalars (no folded blocks for long base64 data),
/// keys in the documents' order, ending with a newline.
pub fn to_yaml(doc: &Value) -> Result<String, serde_saphyr::ser::Error> {
    let mut options = serde_saphyr::SerializerOptions::default();
    options.prefer_block_scalars = false;
    let mut text = serde_saphyr::to_string_with_options(doc, options)?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// A YAML kubeconfig as a JSON value; an empty file is an empty config.
fn parse(path: &Path, text: &str) -> Result<Value> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let doc: Value = serde_saphyr::from_str(text).map_err(|e| KubeconfigError::Parse {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    match doc {
        Value::Null => Ok(Value::Object(Map::new())),
        Value::Object(_) => Ok(doc),
        _ => Err(KubeconfigError::Parse {
            path: path.to_path_buf(),
            reason: "the document is not a mapping".to_owned(),
        }),
    }
}

/// Sets (or replaces) the previous-workspace extension of a context body.
fn set_previous(context: &mut Map<String, Value>, previous: &str) {
    let ext = json!({"name": PREVIOUS_EXTENSION, "extension": {"previous": previous}});
    let list = context.entry("extensions").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut() {
        match list.iter_mut().find(|e| e["name"] == PREVIOUS_EXTENSION) {
            Some(existing) => *existing = ext,
            None => list.push(ext),
        }
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The fields of cluster and user entries that name files.
const FILE_FIELDS: [&str; 4] = [
    "certificate-authority",
    "client-certificate",
    "client-key",
    "tokenFile",
];

/// Makes the relative file reference `body[key]` absolute against `dir`.
fn absolutize(body: &mut Map<String, Value>, key: &str, dir: &Path) {
    if let Some(Value::String(rel)) = body.get_mut(key) {
        if !rel.is_empty() && Path::new(rel.as_str()).is_relative() {
            *rel = dir.join(rel.as_str()).to_string_lossy().into_owned();
        }
    }
}

/// Replaces `path` (through a symlink) by a file holding `bytes`: a temporary file in
/// the same directory, with the original's permissions, renamed over it.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = fs::canonicalize(path)?;
    let dir = parent_dir(&target);
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.kplane-{}.tmp", std::process::id()));
    let perms = fs::metadata(&target)?.permissions();
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        fs::set_permissions(&tmp, perms)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, &target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADMIN: &str = "apiVersion: v1
kind: Config
clusters:
- name: kplane
  cluster:
    server: https://127.0.0.1:6443/clusters/root
    certificate-authority: ca.crt
users:
- name: admin
  user:
    token: secret
contexts:
- name: kplane
  context:
    cluster: kplane
    user: admin
current-context: kplane
preferences: {}
x-unknown: kept
";

    fn one(text: &str) -> Kubeconfigs {
        Kubeconfigs::from_texts(vec![(PathBuf::from("/cfg/a"), text.to_owned())]).unwrap()
    }

    #[test]
    fn the_current_context_resolves_to_its_cluster_server() {
        let k = one(ADMIN);
        let info = k.context(None).unwrap();
        assert_eq!(info.name, "kplane");
        assert_eq!(info.cluster, "kplane");
        assert_eq!(info.user.as_deref(), Some("admin"));
        assert_eq!(info.server, "https://127.0.0.1:6443/clusters/root");
        let err = k.context(Some("nope")).unwrap_err();
        assert!(
            matches!(err, KubeconfigError::UnknownContext { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("\"nope\" not found"), "{err}");
    }

    #[test]
    fn an_unshared_cluster_is_rewritten_in_place_and_unknown_fields_survive() {
        let mut k = one(ADMIN);
        k.set_server(
            "kplane",
            "https://127.0.0.1:6443/clusters/root:a",
            Some("root"),
        )
        .unwrap();
        let doc = &k.files[0].doc;
        assert_eq!(doc["clusters"].as_array().unwrap().len(), 1);
        assert_eq!(
            doc["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:6443/clusters/root:a"
        );
        assert_eq!(
            doc["clusters"][0]["cluster"]["certificate-authority"],
            "ca.crt"
        );
        assert_eq!(doc["x-unknown"], "kept");
        assert_eq!(k.previous_workspace("kplane").as_deref(), Some("root"));
        // A second use replaces the extension rather than adding one.
        k.set_server(
            "kplane",
            "https://127.0.0.1:6443/clusters/root:b",
            Some("root:a"),
        )
        .unwrap();
        let exts = k.files[0].doc["contexts"][0]["context"]["extensions"]
            .as_array()
            .unwrap();
        assert_eq!(exts.len(), 1);
        assert_eq!(k.previous_workspace("kplane").as_deref(), Some("root:a"));
        // The rewritten document reads back the same, through YAML.
        let yaml = to_yaml(&k.files[0].doc).unwrap();
        assert!(yaml.ends_with("\n") && !yaml.contains(">-"), "{yaml}");
        let again = one(&yaml);
        assert_eq!(again.files[0].doc, k.files[0].doc);
        assert_eq!(
            again.context(None).unwrap().server,
            "https://127.0.0.1:6443/clusters/root:b"
        );
    }

    #[test]
    fn a_cluster_shared_by_two_contexts_is_copied_for_the_one_that_moves() {
        let text = format!(
            "{ADMIN}{}",
            "" // contexts appended below
        )
        .replace(
            "current-context: kplane",
            "current-context: kplane",
        )
        .replace(
            "contexts:\n- name: kplane\n",
            "contexts:\n- name: other\n  context:\n    cluster: kplane\n    user: admin\n- name: kplane\n",
        );
        let mut k = one(&text);
        k.set_server("kplane", "https://127.0.0.1:6443/clusters/root:a", None)
            .unwrap();
        assert_eq!(
            k.context(Some("other")).unwrap().server,
            "https://127.0.0.1:6443/clusters/root",
            "the other context keeps its workspace"
        );
        let moved = k.context(Some("kplane")).unwrap();
        assert_eq!(moved.server, "https://127.0.0.1:6443/clusters/root:a");
        // The cluster entry named `kplane` exists, so the copy is `kplane-2`.
        assert_eq!(moved.cluster, "kplane-2");
        assert_eq!(k.previous_workspace("kplane"), None);
        // The copy keeps the CA reference; the next move rewrites the copy in place.
        let doc = &k.files[0].doc;
        assert_eq!(
            doc["clusters"][1]["cluster"]["certificate-authority"],
            "ca.crt"
        );
        k.set_server("kplane", "https://127.0.0.1:6443/clusters/root:b", None)
            .unwrap();
        assert_eq!(k.files[0].doc["clusters"].as_array().unwrap().len(), 2);
        assert_eq!(k.context(Some("kplane")).unwrap().cluster, "kplane-2");
    }

    /// KUBECONFIG=a:b: the context and current-context come from `a`, the cluster and
    /// user from `b`; a shadowed `kplane` cluster in a later file is ignored.
    fn multi() -> Kubeconfigs {
        let a = "current-context: dev
contexts:
- name: dev
  context: {cluster: shared, user: u}
";
        let b = "current-context: ignored
contexts:
- name: dev
  context: {cluster: ignored, user: ignored}
clusters:
- name: shared
  cluster: {server: 'https://h:1/clusters/root', certificate-authority: ca.pem}
users:
- name: u
  user: {token: t}
";
        let c = "clusters:
- name: shared
  cluster: {server: 'https://shadowed'}
";
        Kubeconfigs::from_texts(vec![
            (PathBuf::from("/one/a"), a.to_owned()),
            (PathBuf::from("/two/b"), b.to_owned()),
            (PathBuf::from("/three/c"), c.to_owned()),
        ])
        .unwrap()
    }

    #[test]
    fn multiple_files_merge_first_wins() {
        let k = multi();
        let info = k.context(None).unwrap();
        assert_eq!(info.name, "dev");
        assert_eq!(info.cluster, "shared");
        assert_eq!(info.server, "https://h:1/clusters/root");
        let typed = k.typed().unwrap();
        assert_eq!(typed.current_context.as_deref(), Some("dev"));
        let shared = typed.clusters.iter().find(|c| c.name == "shared").unwrap();
        assert_eq!(
            shared
                .cluster
                .as_ref()
                .unwrap()
                .certificate_authority
                .as_deref(),
            Some("/two/ca.pem"),
            "relative paths resolve against the file that holds them"
        );
    }

    #[test]
    fn with_multiple_files_each_change_goes_to_the_file_defining_the_entry() {
        let mut k = multi();
        k.set_server("dev", "https://h:1/clusters/root:x", Some("root"))
            .unwrap();
        assert!(k.files[0].dirty && k.files[1].dirty && !k.files[2].dirty);
        // The cluster is rewritten in b; the previous workspace is kept on the context in a.
        assert_eq!(
            k.files[1].doc["clusters"][0]["cluster"]["server"],
            "https://h:1/clusters/root:x"
        );
        assert_eq!(
            k.files[2].doc["clusters"][0]["cluster"]["server"],
            "https://shadowed"
        );
        assert!(k.files[0].doc["contexts"][0]["context"]["extensions"].is_array());
        assert!(k.files[1].doc["contexts"][0]["context"]
            .get("extensions")
            .is_none());
        assert_eq!(k.previous_workspace("dev").as_deref(), Some("root"));
    }

    #[test]
    fn a_shared_cluster_in_another_file_is_copied_next_to_the_context() {
        let a = "current-context: dev
contexts:
- name: dev
  context: {cluster: shared, user: u}
- name: prod
  context: {cluster: shared, user: u}
";
        let b = "clusters:
- name: shared
  cluster: {server: 'https://h:1/clusters/root', certificate-authority: ca.pem}
";
        let mut k = Kubeconfigs::from_texts(vec![
            (PathBuf::from("/one/a"), a.to_owned()),
            (PathBuf::from("/two/b"), b.to_owned()),
        ])
        .unwrap();
        k.set_server("dev", "https://h:1/clusters/root:x", None)
            .unwrap();
        assert!(!k.files[1].dirty, "the shared entry is left alone");
        let copy = &k.files[0].doc["clusters"][0];
        assert_eq!(copy["name"], "dev");
        assert_eq!(copy["cluster"]["server"], "https://h:1/clusters/root:x");
        assert_eq!(copy["cluster"]["certificate-authority"], "/two/ca.pem");
        assert_eq!(
            k.context(Some("prod")).unwrap().server,
            "https://h:1/clusters/root"
        );
    }

    #[test]
    fn locate_follows_kubectls_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        fs::write(&a, ADMIN).unwrap();
        fs::write(&b, ADMIN).unwrap();
        let missing = dir.path().join("missing");
        assert_eq!(
            locate(Some(&a), Some(b.as_os_str()), None).unwrap(),
            vec![a.clone()]
        );
        let err = locate(Some(&missing), None, None).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        let env = std::env::join_paths([&missing, &b, &a]).unwrap();
        assert_eq!(
            locate(None, Some(&env), None).unwrap(),
            vec![b.clone(), a.clone()]
        );
        let err = locate(None, Some(missing.as_os_str()), None).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("no kubeconfig: none of the files"),
            "{err}"
        );
        let err = locate(None, None, Some(dir.path())).unwrap_err();
        assert!(
            err.to_string().contains(".kube/config does not exist"),
            "{err}"
        );
        fs::create_dir(dir.path().join(".kube")).unwrap();
        fs::write(dir.path().join(".kube/config"), ADMIN).unwrap();
        assert_eq!(
            locate(None, Some(OsStr::new("")), Some(dir.path())).unwrap(),
            vec![dir.path().join(".kube/config")]
        );
    }

    #[test]
    fn save_writes_through_a_symlink_and_keeps_the_permissions() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        let link = dir.path().join("link");
        fs::write(&real, ADMIN).unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut k = Kubeconfigs::load(std::slice::from_ref(&link)).unwrap();
        k.set_server(
            "kplane",
            "https://127.0.0.1:6443/clusters/root:z",
            Some("root"),
        )
        .unwrap();
        k.save().unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let mode = fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let again = Kubeconfigs::load(&[real]).unwrap();
        assert_eq!(
            again.context(None).unwrap().server,
            "https://127.0.0.1:6443/clusters/root:z"
        );
        assert_eq!(again.previous_workspace("kplane").as_deref(), Some("root"));
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temp file left"
        );
    }

    #[test]
    fn empty_and_invalid_files() {
        let k = one("");
        assert!(matches!(
            k.context(None),
            Err(KubeconfigError::NoCurrentContext)
        ));
        let err =
            Kubeconfigs::from_texts(vec![(PathBuf::from("/x"), "- a\n- b\n".into())]).unwrap_err();
        assert!(err.to_string().contains("not a valid kubeconfig"), "{err}");
    }
}
