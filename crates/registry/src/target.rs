//! [`Target`]: where a request points (a logical cluster or several, a resource type, maybe
//! a namespace), and the storage keys and prefixes it addresses.

use std::sync::Arc;

use kplane_storage::{Clusters, Key, Prefix};
use kplane_types::{ClusterName, ClusterScope, StatusReason};

use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};

/// Where a request points: one logical cluster (or every one, for list and watch), one
/// resource type, maybe a namespace.
#[derive(Clone, Debug)]
pub struct Target {
    pub cluster: ClusterScope,
    pub rt: Arc<ResourceType>,
    pub namespace: Option<String>,
}

impl Target {
    /// A target in one logical cluster.
    pub fn new(cluster: &ClusterName, rt: Arc<ResourceType>, namespace: Option<String>) -> Self {
        Target {
            cluster: ClusterScope::One(cluster.clone()),
            rt,
            namespace,
        }
    }

    /// The one logical cluster addressed; 405 for the `*` wildcard and subtrees.
    pub(crate) fn cluster(&self) -> ApiResult<&ClusterName> {
        match &self.cluster {
            ClusterScope::One(c) => Ok(c),
            ClusterScope::Wildcard => Err(ApiError::new(
                StatusReason::MethodNotAllowed,
                "only list and watch are supported across all logical clusters",
            )),
            ClusterScope::Subtree { pattern, .. } => Err(ApiError::new(
                StatusReason::MethodNotAllowed,
                format!("only list and watch are supported across the logical clusters {pattern}"),
            )),
        }
    }

    pub(crate) fn key(&self, name: &str) -> ApiResult<Key> {
        Ok(Key::new(
            self.cluster()?.as_str(),
            self.rt.storage_resource.clone(),
            if self.rt.namespaced {
                self.namespace.clone().unwrap_or_default()
            } else {
                String::new()
            },
            name,
        ))
    }

    pub(crate) fn prefix(&self) -> Prefix {
        Prefix {
            cluster: match &self.cluster {
                ClusterScope::One(c) => Clusters::One(c.as_str().to_string()),
                ClusterScope::Wildcard => Clusters::All,
                ClusterScope::Subtree { root, .. } => Clusters::Subtree(root.as_str().to_string()),
            },
            resource: Some(self.rt.storage_resource.clone()),
            namespace: if self.rt.namespaced {
                self.namespace.clone()
            } else {
                None
            },
        }
    }
}
