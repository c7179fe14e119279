//! The syncer's one error type.

/// What can stop the syncer or fail one action of it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad flags, kubeconfigs or URLs.
    #[error("{0}")]
    Config(String),
    /// A request to kplane or the host failed; `context` says what was being done.
    #[error("{context}: {source}")]
    Kube {
        context: String,
        #[source]
        source: kube::Error,
    },
    /// Another syncer took the leader Lease, or it could not be renewed in time.
    #[error("lost the leader Lease {0}")]
    LostLease(String),
    /// The metrics endpoint could not listen.
    #[error("metrics endpoint: {0}")]
    Metrics(#[from] std::io::Error),
    /// The host does not answer: the reconcile waits for it.
    #[error("the host does not answer")]
    HostUnreachable,
    /// A reconcile must run again soon (e.g. a host object is still being deleted).
    #[error("{0}")]
    Retry(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds what was being done to a kube-rs result.
pub trait KubeContext<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> KubeContext<T> for std::result::Result<T, kube::Error> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Kube {
            context: context(),
            source,
        })
    }
}

/// The HTTP status code of an API error answer.
pub fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Whether `e` is an API answer with status `code`.
pub fn is_status(e: &kube::Error, code: u16) -> bool {
    status_code(e) == Some(code)
}
