//! What a ServiceAccount token is bound to, asked on every request that carries one: does
//! its ServiceAccount (and, for a legacy Secret-bound token, its Secret) still exist, with
//! which uid. Deleting the ServiceAccount, or recreating it with a new uid, revokes its
//! tokens. The HTTP layer's token authenticator asks through [`TokenBindings`], never
//! reading storage itself.
//!
//! ServiceAccount uids are cached: a map filled on first use and kept true by the process's
//! informer (`derived::informer` registers [`Invalidator`]), where any change of a
//! ServiceAccount drops its entry (the next request reads it again). An epoch, bumped by
//! every change under the map's lock, keeps a read that raced with a change from caching
//! what it read. Nothing is cached (every lookup reads storage) until the informer has
//! replayed the store, while a new pass replays it again (the informer fell behind, the
//! store failed, leadership changed), or once the informer has ended; each pass starts the
//! map over. Only ServiceAccounts that present tokens are held, at most [`MAX_ENTRIES`].
//! Secrets are read each time (legacy Secret-bound tokens are rare).

use std::sync::Arc;

use async_trait::async_trait;
use kplane_storage::Key;

use crate::error::ApiResult;
use crate::Registry;

pub(crate) mod cache;
pub use cache::MAX_ENTRIES;
use cache::{uid_of, SECRETS};
pub(crate) use cache::{Invalidator, ServiceAccountCache};

/// The uids a token's claims are checked against.
#[async_trait]
pub trait TokenBindings: Send + Sync {
    /// The uid of the ServiceAccount, `None` when it does not exist or is being deleted.
    async fn service_account_uid(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> ApiResult<Option<String>>;

    /// The uid of the Secret, `None` when it does not exist.
    async fn secret_uid(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> ApiResult<Option<String>>;
}

#[async_trait]
impl TokenBindings for Registry {
    async fn service_account_uid(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> ApiResult<Option<String>> {
        self.service_accounts
            .uid(&*self.storage, cluster, namespace, name)
            .await
    }

    async fn secret_uid(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> ApiResult<Option<String>> {
        let kv = self
            .storage
            .get(&Key::new(cluster, SECRETS, namespace, name))
            .await?;
        Ok(kv.and_then(|kv| uid_of(&kv.value, false)))
    }
}

impl Registry {
    /// The ServiceAccount uid cache (shared with the informer's invalidator).
    pub(crate) fn service_account_cache(&self) -> &Arc<ServiceAccountCache> {
        &self.service_accounts
    }
}
