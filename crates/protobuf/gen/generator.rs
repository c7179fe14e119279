//! Descriptor-table generator: reads the prost-generated Kubernetes messages of
//! the `k8s-pb` crate (field tags, wire types, labels, nested message types) and
//! the serde code of `k8s-openapi` (exact JSON property names and which fields
//! are required), plus `data/go-scalar-presence.txt` (which optional scalar
//! fields are Go pointers), and renders `src/generated.rs`.
//!
//! Shared by `examples/gen_descriptors.rs` (writes the file) and
//! `tests/generated_up_to_date.rs` (checks the committed file is current).
//! The generator is plain text processing of two generated code bases whose
//! layout is very regular; anything it does not understand is an error, never
//! a silent guess.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Kinds decoded by the crate: (apiVersion, kind, k8s-pb message path).
/// `*` as apiVersion means "any apiVersion" (meta options are registered in
/// every group version, so clients send them under the resource's group).
pub const ROOTS: &[(&str, &str, &str)] = &[
    ("v1", "Namespace", "api.core.v1.Namespace"),
    ("v1", "ConfigMap", "api.core.v1.ConfigMap"),
    ("v1", "Secret", "api.core.v1.Secret"),
    ("v1", "ServiceAccount", "api.core.v1.ServiceAccount"),
    ("v1", "Event", "api.core.v1.Event"),
    ("v1", "Pod", "api.core.v1.Pod"),
    ("v1", "PodTemplate", "api.core.v1.PodTemplate"),
    (
        "v1",
        "PersistentVolumeClaim",
        "api.core.v1.PersistentVolumeClaim",
    ),
    ("v1", "ResourceQuota", "api.core.v1.ResourceQuota"),
    ("events.k8s.io/v1", "Event", "api.events.v1.Event"),
    (
        "coordination.k8s.io/v1",
        "Lease",
        "api.coordination.v1.Lease",
    ),
    ("rbac.authorization.k8s.io/v1", "Role", "api.rbac.v1.Role"),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "api.rbac.v1.RoleBinding",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "api.rbac.v1.ClusterRole",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "api.rbac.v1.ClusterRoleBinding",
    ),
    ("batch/v1", "Job", "api.batch.v1.Job"),
    (
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "api.networking.v1.NetworkPolicy",
    ),
    ("batch/v1", "CronJob", "api.batch.v1.CronJob"),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        "api.authorization.v1.SelfSubjectAccessReview",
    ),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        "api.authorization.v1.SelfSubjectRulesReview",
    ),
    (
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        "api.authorization.v1.SubjectAccessReview",
    ),
    (
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
        "api.authorization.v1.LocalSubjectAccessReview",
    ),
    (
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        "api.authentication.v1.SelfSubjectReview",
    ),
    (
        "authentication.k8s.io/v1",
        "TokenReview",
        "api.authentication.v1.TokenReview",
    ),
    (
        "authentication.k8s.io/v1",
        "TokenRequest",
        "api.authentication.v1.TokenRequest",
    ),
    (
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    ),
    ("autoscaling/v1", "Scale", "api.autoscaling.v1.Scale"),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "api.admissionregistration.v1.ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "api.admissionregistration.v1.MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        "api.admissionregistration.v1.ValidatingAdmissionPolicy",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        "api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
    ),
    (
        "*",
        "DeleteOptions",
        "apimachinery.pkg.apis.meta.v1.DeleteOptions",
    ),
    // Encoded by the server (watch ERROR events, errors in protobuf); unversioned.
    ("v1", "Status", "apimachinery.pkg.apis.meta.v1.Status"),
];

/// Messages whose JSON form is not an object of their fields.
/// (k8s-pb path, `Special` variant name, synthetic field names by tag for the
/// union types whose fields are post-processed by the decoder).
/// Synthetic field names by tag.
type FieldNames = &'static [(u32, &'static str)];

const SPECIALS: &[(&str, &str, FieldNames)] = &[
    ("apimachinery.pkg.apis.meta.v1.Time", "Time", &[]),
    ("apimachinery.pkg.apis.meta.v1.MicroTime", "MicroTime", &[]),
    ("apimachinery.pkg.apis.meta.v1.FieldsV1", "RawJson", &[]),
    ("apimachinery.pkg.runtime.RawExtension", "RawJson", &[]),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.Json",
        "RawJson",
        &[],
    ),
    ("apimachinery.pkg.api.resource.Quantity", "Quantity", &[]),
    (
        "api.authorization.v1.ExtraValue",
        "StringList",
        &[(1, "items")],
    ),
    (
        "api.authentication.v1.ExtraValue",
        "StringList",
        &[(1, "items")],
    ),
    (
        "apimachinery.pkg.util.intstr.IntOrString",
        "IntOrString",
        &[],
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrArray",
        "SchemaOrArray",
        &[(1, "schema"), (2, "jsonSchemas")],
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrBool",
        "SchemaOrBool",
        &[(1, "allows"), (2, "schema")],
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrStringArray",
        "SchemaOrStringArray",
        &[(1, "schema"), (2, "property")],
    ),
];

/// k8s-pb field names whose k8s-openapi counterpart is not found by
/// normalised-name comparison: (message path, k8s-pb field, k8s-openapi field).
const FIELD_ALIASES: &[(&str, &str, &str)] = &[(
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaProps",
    "ref",
    "ref_path",
)];

/// k8s-openapi version directory matching the Kubernetes release of the
/// k8s-pb protos (k8s-pb 0.9 = Kubernetes 1.35): JSON names and required-ness
/// come from it, and every k8s-openapi field must have a protobuf field.
const OPENAPI_VERSION: &str = "v1_35";

#[derive(Clone, Debug, PartialEq, Eq)]
enum Scalar {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Double,
    Message(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Label {
    Single,
    Repeated,
    Map,
}

#[derive(Clone, Debug)]
struct PbField {
    tag: u32,
    rust_name: String,
    label: Label,
    kind: Scalar,
}

#[derive(Clone, Debug, Default)]
struct PbMessage {
    fields: Vec<PbField>,
    /// (apiVersion, kind) from `impl crate::Resource`.
    resource: Option<(String, String)>,
}

/// A field of a k8s-openapi struct.
#[derive(Clone, Debug)]
struct OaField {
    json: String,
    required: bool,
}

/// Go presence of an optional scalar field, from the data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GoPresence {
    Pointer,
    Value,
    Always,
}

/// Where the inputs are.
pub struct Inputs {
    pub k8s_pb_src: PathBuf,
    pub k8s_openapi_src: PathBuf,
    pub presence_file: PathBuf,
}

impl Inputs {
    /// Locates the inputs from the crate directory: the registry sources of
    /// the exact `k8s-pb` / `k8s-openapi` versions in the workspace
    /// `Cargo.lock` (overridable with `K8S_PB_SRC` / `K8S_OPENAPI_SRC`).
    pub fn locate(crate_dir: &Path) -> Result<Inputs, String> {
        let lock_path = crate_dir.join("../../Cargo.lock");
        let lock = fs::read_to_string(&lock_path)
            .map_err(|e| format!("reading {}: {e}", lock_path.display()))?;
        let k8s_pb_src = match std::env::var_os("K8S_PB_SRC") {
            Some(p) => PathBuf::from(p),
            None => registry_src("k8s-pb", &lock)?,
        };
        let k8s_openapi_src = match std::env::var_os("K8S_OPENAPI_SRC") {
            Some(p) => PathBuf::from(p),
            None => registry_src("k8s-openapi", &lock)?,
        };
        Ok(Inputs {
            k8s_pb_src,
            k8s_openapi_src,
            presence_file: crate_dir.join("data/go-scalar-presence.txt"),
        })
    }
}

fn lock_version(lock: &str, name: &str) -> Option<String> {
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{name}\"") {
            let v = lines.next()?.trim();
            return v
                .strip_prefix("version = \"")
                .and_then(|s| s.strip_suffix('"'))
                .map(str::to_string);
        }
    }
    None
}

fn registry_src(name: &str, lock: &str) -> Result<PathBuf, String> {
    let version =
        lock_version(lock, name).ok_or_else(|| format!("{name} not found in Cargo.lock"))?;
    let cargo_home = match std::env::var_os("CARGO_HOME") {
        Some(h) => PathBuf::from(h),
        None => {
            let home = std::env::var_os("HOME").ok_or("neither CARGO_HOME nor HOME is set")?;
            PathBuf::from(home).join(".cargo")
        }
    };
    let reg = cargo_home.join("registry/src");
    let entries = fs::read_dir(&reg).map_err(|e| format!("reading {}: {e}", reg.display()))?;
    for entry in entries.flatten() {
        let candidate = entry.path().join(format!("{name}-{version}"));
        if candidate.join("src").is_dir() {
            return Ok(candidate.join("src"));
        }
    }
    Err(format!(
        "{name}-{version} sources not found under {}",
        reg.display()
    ))
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))
}

fn collect_mod_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            collect_mod_files(&p, out)?;
        } else if p.file_name().is_some_and(|n| n == "mod.rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// Strips `prefix<` ... `>` around a type, if present.
fn unwrap_generic<'a>(ty: &'a str, prefix: &str) -> Option<&'a str> {
    ty.strip_prefix(prefix)
        .and_then(|s| s.strip_prefix('<'))
        .and_then(|s| s.strip_suffix('>'))
        .map(|s| s.trim().trim_end_matches(',').trim())
}

/// Resolves a prost type path (relative to `module`) to a message path.
fn resolve_type(module: &str, ty: &str) -> String {
    let mut base: Vec<&str> = module.split('.').collect();
    let mut rest = ty;
    while let Some(r) = rest.strip_prefix("super::") {
        base.pop();
        rest = r;
    }
    if let Some(r) = rest.strip_prefix("crate::") {
        base.clear();
        rest = r;
    }
    let mut parts: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    parts.extend(rest.split("::").map(str::to_string));
    parts.join(".")
}

fn parse_scalar(module: &str, prost_ty: &str, rust_ty: &str) -> Result<Scalar, String> {
    Ok(match prost_ty {
        "string" => Scalar::String,
        "bytes" => Scalar::Bytes,
        "bool" => Scalar::Bool,
        "int32" => Scalar::Int32,
        "int64" => Scalar::Int64,
        "double" => Scalar::Double,
        "message" => {
            let mut t = rust_ty;
            for wrapper in [
                "::core::option::Option",
                "::prost::alloc::vec::Vec",
                "::prost::alloc::boxed::Box",
            ] {
                if let Some(inner) = unwrap_generic(t, wrapper) {
                    t = inner;
                }
            }
            if let Some(inner) = unwrap_generic(t, "::prost::alloc::boxed::Box") {
                t = inner;
            }
            Scalar::Message(resolve_type(module, t))
        }
        other => return Err(format!("unsupported prost type {other:?}")),
    })
}

fn parse_field(module: &str, attr: &str, decl: &str) -> Result<PbField, String> {
    // attr: `#[prost(TYPE..., LABEL, tag = "N")]`; decl: `pub name: TYPE,`
    let inner = attr
        .strip_prefix("#[prost(")
        .and_then(|s| s.strip_suffix(")]"))
        .ok_or_else(|| format!("bad attribute {attr}"))?;
    let tag: u32 = inner
        .rsplit("tag = \"")
        .next()
        .and_then(|s| s.strip_suffix('"'))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no tag in {attr}"))?;
    let decl = decl
        .strip_prefix("pub ")
        .and_then(|s| s.strip_suffix(','))
        .ok_or_else(|| format!("bad field declaration {decl}"))?;
    let (name, ty) = decl
        .split_once(':')
        .ok_or_else(|| format!("bad field declaration {decl}"))?;
    let rust_name = name.trim().trim_start_matches("r#").to_string();
    let ty: String = ty.split_whitespace().collect::<Vec<_>>().join("");
    if let Some(map) = inner.strip_prefix("btree_map = \"") {
        let (spec, _) = map
            .split_once('"')
            .ok_or_else(|| format!("bad map attribute {attr}"))?;
        let (key, value) = spec
            .split_once(", ")
            .ok_or_else(|| format!("bad map attribute {attr}"))?;
        if key != "string" {
            return Err(format!("non-string map key in {attr}"));
        }
        let value_ty = if value == "message" {
            // BTreeMap<String, Type>
            let args = unwrap_generic(&ty, "::prost::alloc::collections::BTreeMap")
                .ok_or_else(|| format!("bad map type {ty}"))?;
            let (_, v) = args
                .split_once(',')
                .ok_or_else(|| format!("bad map type {ty}"))?;
            v.to_string()
        } else {
            String::new()
        };
        return Ok(PbField {
            tag,
            rust_name,
            label: Label::Map,
            kind: parse_scalar(module, value, &value_ty)?,
        });
    }
    let prost_ty = inner
        .split([',', ' '])
        .next()
        .ok_or_else(|| format!("bad attribute {attr}"))?;
    let label = if inner.contains(", repeated") {
        Label::Repeated
    } else if inner.contains(", optional") {
        Label::Single
    } else {
        return Err(format!("field without optional/repeated label: {attr}"));
    };
    Ok(PbField {
        tag,
        rust_name,
        label,
        kind: parse_scalar(module, prost_ty, &ty)?,
    })
}

/// Parses every prost message of k8s-pb into `path -> message`.
fn parse_k8s_pb(src: &Path) -> Result<BTreeMap<String, PbMessage>, String> {
    let mut files = Vec::new();
    collect_mod_files(src, &mut files)?;
    let mut messages: BTreeMap<String, PbMessage> = BTreeMap::new();
    for file in files {
        let rel = file
            .parent()
            .and_then(|p| p.strip_prefix(src).ok())
            .ok_or_else(|| format!("bad path {}", file.display()))?;
        let module: String = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(".");
        if module.is_empty() {
            continue;
        }
        let text = read(&file)?;
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            if let Some(name) = line
                .strip_prefix("pub struct ")
                .and_then(|s| s.strip_suffix(" {}"))
            {
                messages.insert(format!("{module}.{name}"), PbMessage::default());
            } else if let Some(name) = line
                .strip_prefix("pub struct ")
                .and_then(|s| s.strip_suffix(" {"))
            {
                let path = format!("{module}.{name}");
                let mut msg = PbMessage::default();
                i += 1;
                while i < lines.len() && lines[i] != "}" {
                    let l = lines[i].trim();
                    if l.starts_with("#[prost(") {
                        let attr = l.to_string();
                        i += 1;
                        while i < lines.len() && lines[i].trim().starts_with("///") {
                            i += 1;
                        }
                        let mut decl = String::new();
                        while i < lines.len() {
                            decl.push_str(lines[i].trim());
                            decl.push(' ');
                            let depth = decl.matches('<').count() as isize
                                - decl.matches('>').count() as isize;
                            if depth == 0 && lines[i].trim_end().ends_with(',') {
                                break;
                            }
                            i += 1;
                        }
                        let field = parse_field(&module, &attr, decl.trim())
                            .map_err(|e| format!("{path}: {e}"))?;
                        msg.fields.push(field);
                    } else if l.starts_with("#[prost") {
                        return Err(format!("{path}: unsupported attribute {l}"));
                    }
                    i += 1;
                }
                messages.insert(path, msg);
            } else if let Some(name) = line
                .strip_prefix("impl crate::Resource for ")
                .and_then(|s| s.strip_suffix(" {"))
            {
                let mut api_version = String::new();
                let mut kind = String::new();
                i += 1;
                while i < lines.len() && lines[i] != "}" {
                    let l = lines[i].trim();
                    let value = l
                        .split_once("= \"")
                        .and_then(|(_, v)| v.strip_suffix("\";"))
                        .unwrap_or_default();
                    if l.starts_with("const API_VERSION") {
                        api_version = value.to_string();
                    } else if l.starts_with("const KIND") {
                        kind = value.to_string();
                    }
                    i += 1;
                }
                let path = format!("{module}.{name}");
                if let Some(msg) = messages.get_mut(&path) {
                    msg.resource = Some((api_version, kind));
                }
            }
            i += 1;
        }
    }
    Ok(messages)
}

fn normalize(name: &str) -> String {
    name.trim_start_matches("r#")
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Finds the k8s-openapi struct for a message and returns
/// `k8s-openapi rust field name -> (json name, required)`.
fn parse_openapi_struct(src: &Path, msg_path: &str) -> Result<BTreeMap<String, OaField>, String> {
    let (module, name) = msg_path
        .rsplit_once('.')
        .ok_or_else(|| format!("bad message path {msg_path}"))?;
    let rel: PathBuf = module.split('.').collect();
    for version in [OPENAPI_VERSION] {
        let dir = src.join(version).join(&rel);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if p.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = read(&p)?;
            let Some(start) = text.lines().position(|l| {
                l.strip_prefix("pub struct ")
                    .and_then(|s| s.strip_suffix(" {"))
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            }) else {
                continue;
            };
            let lines: Vec<&str> = text.lines().collect();
            let mut required: BTreeMap<String, bool> = BTreeMap::new();
            for l in &lines[start + 1..] {
                if *l == "}" {
                    break;
                }
                if let Some(decl) = l.trim().strip_prefix("pub ") {
                    let (n, ty) = decl
                        .split_once(':')
                        .ok_or_else(|| format!("{}: bad field {l}", p.display()))?;
                    required.insert(n.trim().to_string(), !ty.trim().starts_with("Option<"));
                }
            }
            let mut fields = BTreeMap::new();
            for l in &lines {
                let l = l.trim();
                let Some((json, rest)) = l
                    .strip_prefix('"')
                    .and_then(|s| s.split_once("\" => Field::Key_"))
                else {
                    continue;
                };
                let rust = rest.trim_end_matches(',');
                if let Some(req) = required.get(rust) {
                    fields.insert(
                        rust.to_string(),
                        OaField {
                            json: json.to_string(),
                            required: *req,
                        },
                    );
                }
            }
            if fields.len() != required.len() {
                return Err(format!(
                    "{}: could not find JSON names for all fields of {name}",
                    p.display()
                ));
            }
            return Ok(fields);
        }
    }
    Err(format!("no k8s-openapi struct for {msg_path}"))
}

fn parse_presence(text: &str) -> Result<BTreeMap<(String, String), GoPresence>, String> {
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [msg, field, presence] = parts[..] else {
            return Err(format!("presence file line {}: expected 3 columns", n + 1));
        };
        let p = match presence {
            "ptr" => GoPresence::Pointer,
            "val" => GoPresence::Value,
            "always" => GoPresence::Always,
            other => {
                return Err(format!(
                    "presence file line {}: unknown presence {other}",
                    n + 1
                ))
            }
        };
        if out
            .insert((msg.to_string(), field.to_string()), p)
            .is_some()
        {
            return Err(format!("presence file line {}: duplicate entry", n + 1));
        }
    }
    Ok(out)
}

/// One field of the output table.
struct OutField {
    tag: u32,
    json: String,
    label: Label,
    kind: Scalar,
    presence: &'static str,
}

/// The result of a generator run.
pub struct Generated {
    /// The rendered `src/generated.rs`.
    pub source: String,
    /// Optional scalar fields missing from the presence data file, as
    /// `message jsonName` (the file must classify every one of them).
    pub unclassified: Vec<String>,
    /// Presence entries that name no field of the table (stale entries).
    pub stale: Vec<String>,
}

/// Runs the generator.
pub fn generate(inputs: &Inputs) -> Result<Generated, String> {
    let pb = parse_k8s_pb(&inputs.k8s_pb_src)?;
    let presence = parse_presence(&read(&inputs.presence_file)?)?;
    let specials: BTreeMap<&str, (&str, FieldNames)> =
        SPECIALS.iter().map(|(p, s, f)| (*p, (*s, *f))).collect();

    // Closure of the roots, breadth first, in a stable order.
    let mut order: Vec<String> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<String> = VecDeque::new();
    for (api_version, kind, path) in ROOTS {
        let msg = pb
            .get(*path)
            .ok_or_else(|| format!("root message {path} not found in k8s-pb"))?;
        if *api_version != "*" {
            let expected = (api_version.to_string(), kind.to_string());
            // Subresource kinds (TokenRequest, Scale, reviews) carry no
            // `impl Resource` in k8s-pb; check the ones that do.
            if msg.resource.as_ref().is_some_and(|r| *r != expected) {
                return Err(format!(
                    "root {path}: k8s-pb says {:?}, table says {expected:?}",
                    msg.resource
                ));
            }
        }
        if seen.insert(path.to_string()) {
            queue.push_back(path.to_string());
        }
    }
    while let Some(path) = queue.pop_front() {
        let msg = pb
            .get(&path)
            .ok_or_else(|| format!("message {path} not found in k8s-pb"))?;
        for f in &msg.fields {
            if let Scalar::Message(m) = &f.kind {
                if seen.insert(m.clone()) {
                    queue.push_back(m.clone());
                }
            }
        }
        order.push(path);
    }
    let index: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_str(), i))
        .collect();

    // k8s-openapi struct of each plain message. Go structs embedded with
    // `json:",inline"` (VolumeSource, ProbeHandler, ...) have no struct of
    // their own: their JSON names come from the embedding parent's struct.
    let mut openapi: BTreeMap<&str, BTreeMap<String, OaField>> = BTreeMap::new();
    let mut missing: Vec<&str> = Vec::new();
    for path in &order {
        if specials.contains_key(path.as_str()) {
            continue;
        }
        match parse_openapi_struct(&inputs.k8s_openapi_src, path) {
            Ok(oa) => {
                openapi.insert(path.as_str(), oa);
            }
            // Field-less messages (CustomResourceSubresourceStatus) are
            // opaque objects in k8s-openapi; they render as `{}`.
            Err(_) if pb[path].fields.is_empty() => {
                openapi.insert(path.as_str(), BTreeMap::new());
            }
            Err(_) => missing.push(path.as_str()),
        }
    }
    let mut inline_parent: BTreeMap<&str, &String> = BTreeMap::new();
    loop {
        let mut progress = false;
        missing.retain(|child| {
            for parent in &order {
                let Some(parent_oa) = openapi.get(parent.as_str()) else {
                    continue;
                };
                let embeds = pb[parent].fields.iter().any(|f| {
                    f.label == Label::Single
                        && f.kind == Scalar::Message(child.to_string())
                        && !parent_oa
                            .keys()
                            .any(|k| normalize(k) == normalize(&f.rust_name))
                });
                let covered = pb[*child].fields.iter().all(|cf| {
                    parent_oa
                        .keys()
                        .any(|k| normalize(k) == normalize(&cf.rust_name))
                });
                if embeds && covered {
                    let oa = parent_oa.clone();
                    openapi.insert(child, oa);
                    inline_parent.insert(child, parent);
                    progress = true;
                    return false;
                }
            }
            true
        });
        if !progress || missing.is_empty() {
            break;
        }
    }

    let mut unclassified = Vec::new();
    let mut used_presence: BTreeSet<(String, String)> = BTreeSet::new();
    let mut out_messages: Vec<(String, &str, Vec<OutField>)> = Vec::new();
    for path in &order {
        let msg = &pb[path];
        let mut fields = Vec::new();
        if let Some((special, names)) = specials.get(path.as_str()) {
            for f in &msg.fields {
                let json = names
                    .iter()
                    .find(|(t, _)| *t == f.tag)
                    .map(|(_, n)| n.to_string())
                    .unwrap_or_else(|| f.rust_name.clone());
                let single_scalar =
                    f.label == Label::Single && !matches!(f.kind, Scalar::Message(_));
                fields.push(OutField {
                    tag: f.tag,
                    json,
                    label: f.label.clone(),
                    kind: f.kind.clone(),
                    presence: if single_scalar { "Pointer" } else { "Optional" },
                });
            }
            out_messages.push((path.clone(), special, fields));
            continue;
        }
        let oa = openapi
            .get(path.as_str())
            .ok_or_else(|| format!("no k8s-openapi struct for {path} (nor an inlining parent)"))?;
        let by_norm: BTreeMap<String, &OaField> =
            oa.iter().map(|(k, v)| (normalize(k), v)).collect();
        let mut matched: BTreeSet<String> = BTreeSet::new();
        for f in &msg.fields {
            let alias = FIELD_ALIASES
                .iter()
                .find(|(m, pbf, _)| m == path && *pbf == f.rust_name)
                .map(|(_, _, oaf)| normalize(oaf));
            let key = alias.unwrap_or_else(|| normalize(&f.rust_name));
            let Some(oaf) = by_norm.get(&key) else {
                // Go `json:",inline"` embedded struct: its fields are fields of
                // this object.
                if let (Scalar::Message(child), Label::Single) = (&f.kind, &f.label) {
                    let mut names = BTreeSet::new();
                    if inline_fields(&pb, child, &by_norm, &mut names) {
                        matched.extend(names);
                        fields.push(OutField {
                            tag: f.tag,
                            json: String::new(),
                            label: Label::Single,
                            kind: f.kind.clone(),
                            presence: "Inline",
                        });
                        continue;
                    }
                }
                return Err(format!(
                    "{path}.{}: no matching k8s-openapi field (add an alias)",
                    f.rust_name
                ));
            };
            matched.insert(key);
            let is_scalar_single =
                f.label == Label::Single && !matches!(f.kind, Scalar::Message(_));
            let override_key = (path.clone(), oaf.json.clone());
            let presence =
                if oaf.required && !(is_scalar_single && presence.contains_key(&override_key)) {
                    "Required"
                } else if is_scalar_single {
                    let key = (path.clone(), oaf.json.clone());
                    match presence.get(&key) {
                        Some(GoPresence::Pointer) => {
                            used_presence.insert(key);
                            "Pointer"
                        }
                        Some(GoPresence::Value) => {
                            used_presence.insert(key);
                            "OmitEmpty"
                        }
                        Some(GoPresence::Always) => {
                            used_presence.insert(key);
                            "Required"
                        }
                        None => {
                            unclassified.push(format!("{path} {}", oaf.json));
                            "Pointer"
                        }
                    }
                } else {
                    "Optional"
                };
            fields.push(OutField {
                tag: f.tag,
                json: oaf.json.clone(),
                label: f.label.clone(),
                kind: f.kind.clone(),
                presence,
            });
        }
        // TypeMeta (`apiVersion`/`kind`) is a struct field in some k8s-openapi
        // types but comes from the envelope in protobuf.
        let is_inline_child = inline_parent.contains_key(path.as_str());
        let unmatched: Vec<&String> = oa
            .iter()
            .filter(|_| !is_inline_child)
            .filter(|(k, f)| {
                !matched.contains(&normalize(k)) && f.json != "apiVersion" && f.json != "kind"
            })
            .map(|(k, _)| k)
            .collect();
        if !unmatched.is_empty() {
            return Err(format!(
                "{path}: k8s-openapi fields without a protobuf field: {unmatched:?}"
            ));
        }
        fields.sort_by_key(|f| f.tag);
        out_messages.push((path.clone(), "None", fields));
    }
    let stale: Vec<String> = presence
        .keys()
        .filter(|k| !used_presence.contains(*k))
        .map(|(m, f)| format!("{m} {f}"))
        .collect();

    // Render.
    let mut s = String::new();
    s.push_str(
        "//! GENERATED descriptor table — do not edit by hand.\n\
         //!\n\
         //! Regenerate with `cargo run -p kplane-protobuf --example gen_descriptors`\n\
         //! (see the crate docs); `tests/generated_up_to_date.rs` checks it is current.\n\
         //! One entry per protobuf message reachable from the supported kinds:\n\
         //! field tags, JSON names (from k8s-openapi), wire kinds and Go presence.\n\n",
    );
    s.push_str("use crate::descriptor::{FieldDesc, Kind, Label, MessageDesc, Presence, Root, Special};\n\n");
    let _ = writeln!(
        s,
        "/// All messages of the table; `Kind::Message(i)` indexes this array.\n\
         pub(crate) static MESSAGES: [MessageDesc; {}] = [",
        out_messages.len()
    );
    for (i, (path, special, fields)) in out_messages.iter().enumerate() {
        let _ = writeln!(s, "    // {i}");
        let _ = writeln!(s, "    MessageDesc {{");
        let _ = writeln!(s, "        name: {path:?},");
        let _ = writeln!(s, "        special: Special::{special},");
        if fields.is_empty() {
            let _ = writeln!(s, "        fields: &[],");
        } else {
            let _ = writeln!(s, "        fields: &[");
            for f in fields {
                let kind = match &f.kind {
                    Scalar::String => "Kind::String".to_string(),
                    Scalar::Bytes => "Kind::Bytes".to_string(),
                    Scalar::Bool => "Kind::Bool".to_string(),
                    Scalar::Int32 => "Kind::Int32".to_string(),
                    Scalar::Int64 => "Kind::Int64".to_string(),
                    Scalar::Double => "Kind::Double".to_string(),
                    Scalar::Message(m) => {
                        let idx = index
                            .get(m.as_str())
                            .ok_or_else(|| format!("{m} missing from closure"))?;
                        format!("Kind::Message({idx})")
                    }
                };
                let label = match f.label {
                    Label::Single => "Single",
                    Label::Repeated => "Repeated",
                    Label::Map => "Map",
                };
                let _ = writeln!(
                    s,
                    "            FieldDesc {{ tag: {}, json: {:?}, kind: {kind}, label: Label::{label}, presence: Presence::{} }},",
                    f.tag, f.json, f.presence
                );
            }
            let _ = writeln!(s, "        ],");
        }
        let _ = writeln!(s, "    }},");
    }
    s.push_str("];\n\n");
    s.push_str("/// Supported kinds: apiVersion (`*` = any), kind, root message index.\n");
    s.push_str("pub(crate) static ROOTS: &[Root] = &[\n");
    for (api_version, kind, path) in ROOTS {
        let idx = index
            .get(path)
            .ok_or_else(|| format!("{path} missing from closure"))?;
        let _ = writeln!(
            s,
            "    Root {{ api_version: {api_version:?}, kind: {kind:?}, message: {idx} }},"
        );
    }
    s.push_str("];\n");
    Ok(Generated {
        source: s,
        unclassified,
        stale,
    })
}

/// Whether the message `child`, embedded with Go's `json:",inline"`, has all its fields
/// among the parent's JSON names `by_norm`, each directly or through an inline message of
/// its own (`NamedRuleWithOperations` embeds `RuleWithOperations`, which embeds `Rule`);
/// collects the normalized names it covers into `names`.
fn inline_fields(
    pb: &BTreeMap<String, PbMessage>,
    child: &str,
    by_norm: &BTreeMap<String, &OaField>,
    names: &mut BTreeSet<String>,
) -> bool {
    let Some(msg) = pb.get(child) else {
        return false;
    };
    !msg.fields.is_empty()
        && msg.fields.iter().all(|cf| {
            let key = normalize(&cf.rust_name);
            if by_norm.contains_key(&key) {
                names.insert(key);
                return true;
            }
            match (&cf.kind, &cf.label) {
                (Scalar::Message(grandchild), Label::Single) => {
                    inline_fields(pb, grandchild, by_norm, names)
                }
                _ => false,
            }
        })
}
