//! Small builders and helpers for kube-rs based tests.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

/// A ConfigMap named `name` with `data` (namespace taken from the `Api` it is created through).
pub fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(string_map(data)),
        ..ConfigMap::default()
    }
}

/// `pairs` as the `BTreeMap` k8s-openapi uses for labels, annotations and data.
pub fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Creates the namespace `name`.
pub async fn create_namespace(client: &Client, name: &str) -> Result<Namespace> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))
}

/// The HTTP status code of a failed API call, if the server answered with a `Status`.
pub fn error_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// The status code a list of `api` is refused with (`None` when it succeeds or the failure
/// is not a `Status`), e.g. `Some(403)` for a credential RBAC gives nothing there.
pub async fn list_refusal<K>(api: &kube::Api<K>) -> Option<u16>
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&Default::default())
        .await
        .err()
        .as_ref()
        .and_then(error_code)
}

/// The `reason` of a failed API call (`Conflict`, `AlreadyExists`, ...), if any.
pub fn error_reason(err: &kube::Error) -> Option<&str> {
    match err {
        kube::Error::Api(status) => Some(status.reason.as_str()),
        _ => None,
    }
}
