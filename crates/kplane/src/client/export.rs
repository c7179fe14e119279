//! `kplane kubeconfig PATH`: a self-contained kubeconfig for one logical cluster, with
//! the current context's credentials. Files the context refers to (CA, client
//! certificate and key, token file) are read and inlined, so the output works anywhere
//! as is; exec and auth-provider settings are copied unchanged.

use std::path::Path;

use anyhow::{Context as _, Result};
use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::api::Session;
use super::args::ClientFlags;
use super::kubeconfig;
use super::output::out;
use super::path::{self, WsPath};

/// Prints the kubeconfig for `target` (resolved as `kplane ws use` resolves it).
pub async fn run(flags: &ClientFlags, target: &str) -> Result<()> {
    let session = Session::load(flags)?;
    let previous = session.previous()?;
    let path = path::resolve(target, &session.current, previous.as_ref())?;
    session.check_ready(&path).await?;
    let doc = build(&session, &path)?;
    out(&kubeconfig::to_yaml(&doc).context("writing YAML")?)
}

/// The kubeconfig document: one cluster and one context named after the path, and the
/// context's user.
fn build(session: &Session, path: &WsPath) -> Result<Value> {
    let (cluster, user) = session.kubeconfigs.cluster_and_user(&session.context);
    let mut cluster = cluster.as_object().cloned().unwrap_or_default();
    cluster.remove("extensions");
    cluster.insert(
        "server".into(),
        json!(path::server_url(&session.base, path)),
    );
    inline(
        &mut cluster,
        "certificate-authority",
        "certificate-authority-data",
        true,
    )?;
    let mut context = Map::new();
    context.insert("cluster".into(), json!(path.as_str()));
    let mut users = Vec::new();
    if let Some((name, user)) = user {
        let mut user = user.as_object().cloned().unwrap_or_default();
        inline(
            &mut user,
            "client-certificate",
            "client-certificate-data",
            true,
        )?;
        inline(&mut user, "client-key", "client-key-data", true)?;
        inline(&mut user, "tokenFile", "token", false)?;
        context.insert("user".into(), json!(name));
        users.push(json!({"name": name, "user": user}));
    }
    if let Some(ns) = &session.context.namespace {
        context.insert("namespace".into(), json!(ns));
    }
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": path.as_str(), "cluster": cluster}],
        "contexts": [{"name": path.as_str(), "context": context}],
        "users": users,
        "current-context": path.as_str(),
    }))
}

/// Replaces the file reference `file_key` (an absolute path by now) with its content
/// under `data_key`: base64 for certificates and keys, the text itself for a token.
/// Data already inline wins, as it does for kubectl.
fn inline(
    body: &mut Map<String, Value>,
    file_key: &str,
    data_key: &str,
    base64: bool,
) -> Result<()> {
    let Some(file) = body.remove(file_key) else {
        return Ok(());
    };
    let Some(file) = file.as_str().filter(|f| !f.is_empty()) else {
        return Ok(());
    };
    if body
        .get(data_key)
        .is_some_and(|v| v.as_str().is_some_and(|s| !s.is_empty()))
    {
        return Ok(());
    }
    let bytes = std::fs::read(Path::new(file))
        .with_context(|| format!("reading {file} ({file_key} of the kubeconfig)"))?;
    let value = if base64 {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    } else {
        String::from_utf8_lossy(&bytes).trim().to_owned()
    };
    body.insert(data_key.into(), json!(value));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_references_are_inlined_and_inline_data_wins() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.crt");
        let token = dir.path().join("token");
        std::fs::write(&ca, "PEM").unwrap();
        std::fs::write(&token, "s3cret\n").unwrap();
        let mut body: Map<String, Value> = serde_json::from_value(json!({
            "certificate-authority": ca.to_str().unwrap(),
            "tokenFile": token.to_str().unwrap(),
        }))
        .unwrap();
        inline(
            &mut body,
            "certificate-authority",
            "certificate-authority-data",
            true,
        )
        .unwrap();
        inline(&mut body, "tokenFile", "token", false).unwrap();
        assert_eq!(
            Value::Object(body),
            json!({"certificate-authority-data": "UEVN", "token": "s3cret"})
        );

        let mut kept: Map<String, Value> = serde_json::from_value(json!({
            "certificate-authority": "/does/not/exist",
            "certificate-authority-data": "QUJD",
        }))
        .unwrap();
        inline(
            &mut kept,
            "certificate-authority",
            "certificate-authority-data",
            true,
        )
        .unwrap();
        assert_eq!(
            Value::Object(kept),
            json!({"certificate-authority-data": "QUJD"})
        );

        let mut missing: Map<String, Value> =
            serde_json::from_value(json!({"client-key": "/does/not/exist"})).unwrap();
        let err = inline(&mut missing, "client-key", "client-key-data", true).unwrap_err();
        assert!(format!("{err:#}").contains("/does/not/exist"), "{err:#}");
    }
}
