//! How a [`Registry`] is put together: kplane's built-in admission chain, controllers
//! and the built-in types' write hooks, registered once when the registry is built.

use std::sync::Arc;

use kplane_storage::Storage;

use crate::catalog::Catalog;
use crate::Registry;
use crate::{admission, catalogs, clusters, controllers, quota};

impl Registry {
    /// Creates the registry, with the recommended admission chain, and the receiver of its
    /// controllers' work queue (run them with [`controllers::start`]).
    pub fn new(
        storage: Arc<dyn Storage>,
        builtin: Arc<Catalog>,
        root_ca_pem: String,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> (
        Arc<Registry>,
        tokio::sync::mpsc::UnboundedReceiver<controllers::Item>,
    ) {
        Self::with_admission(
            storage,
            builtin,
            root_ca_pem,
            shutdown,
            admission::Admission::recommended(),
        )
    }

    /// [`Registry::new`] with the admission chain `admission`.
    pub fn with_admission(
        storage: Arc<dyn Storage>,
        builtin: Arc<Catalog>,
        root_ca_pem: String,
        shutdown: tokio::sync::watch::Receiver<bool>,
        admission: admission::Admission,
    ) -> (
        Arc<Registry>,
        tokio::sync::mpsc::UnboundedReceiver<controllers::Item>,
    ) {
        let (controllers, rx) = controllers::queue::Shared::new(controllers::builtin());
        let quotas = Arc::new(quota::Quotas::default());
        let (rbac, webhooks, policies) = (Arc::default(), Arc::default(), Arc::default());
        let hooks = crate::builtin_types::hooks(&crate::builtin_types::Caches {
            rbac: Arc::clone(&rbac) as _,
            webhooks: Arc::clone(&webhooks) as _,
            policies: Arc::clone(&policies) as _,
        });
        let r = Registry {
            storage: quota::QuotaStorage::wrap(storage, quotas.clone()),
            catalogs: catalogs::Catalogs::new(builtin),
            clusters: clusters::ClusterState::default(),
            root_ca_pem,
            shutdown,
            controllers,
            admission,
            external_url: std::sync::OnceLock::new(),
            server_version: std::sync::OnceLock::new(),
            rbac,
            sync_targets: Arc::default(),
            sync_refs: Arc::default(),
            webhooks,
            policies,
            service_accounts: Arc::default(),
            quotas,
            quota_index: Arc::default(),
            hooks,
        };
        (Arc::new(r), rx)
    }
}
