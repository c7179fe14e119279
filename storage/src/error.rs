//! Storage errors. They describe keys and revisions only; the registry turns them into
//! Kubernetes statuses with the resource and name the storage layer does not know about.

use crate::Revision;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("key not found")]
    NotFound,
    #[error("key already exists")]
    AlreadyExists,
    #[error("precondition failed: current revision is {current}")]
    Conflict { current: Revision },
    #[error("revision {requested} has been compacted (oldest available: {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    #[error("the value could not be encoded: {0}")]
    Encode(String),
    #[error("storage is shutting down")]
    ShuttingDown,
    /// The write's logical cluster is fenced ([`crate::Storage::fence_cluster`]): nothing
    /// was written.
    #[error("the writes of logical cluster {cluster:?} are fenced")]
    Fenced { cluster: String },
    /// The backend gave up waiting (for instance a database statement or lock timeout);
    /// the operation may have been applied or not, and retrying may succeed.
    #[error("storage operation timed out: {0}")]
    Timeout(String),
    /// A layer in front of the backend (the registry's quota) refused the write, for the
    /// reason given: nothing was written.
    #[error("the write was refused: {0}")]
    Refused(String),
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    #[error("storage backend error: {0}")]
    Backend(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
