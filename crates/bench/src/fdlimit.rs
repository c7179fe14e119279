//! The open-file limit. Every watch of the watch scenario holds its own connection (one file
//! descriptor), so 10,000 watchers need more than the common soft limit of 1,024. At start
//! the soft limit is raised to the hard limit (as Go programs do); what is still too low is
//! reported before connections start failing with "too many open files".

/// Descriptors the tool needs besides its connections (stdio, the runtime, the kubeconfig).
const RESERVE: u64 = 64;

/// Raises the soft open-file limit to the hard limit; returns the resulting soft limit
/// (`None` if unlimited or unknown).
#[cfg(unix)]
pub fn raise() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let lim = getrlimit(Resource::Nofile);
    if lim.current != lim.maximum {
        let raised = rustix::process::Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return lim.maximum;
        }
    }
    lim.current
}

/// Not Unix: nothing to raise, limit unknown.
#[cfg(not(unix))]
pub fn raise() -> Option<u64> {
    None
}

/// The current soft open-file limit (`None` if unlimited or unknown).
#[cfg(unix)]
pub fn soft_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// Not Unix: unknown.
#[cfg(not(unix))]
pub fn soft_limit() -> Option<u64> {
    None
}

/// A warning if `connections` connections would not fit under `limit`.
pub fn shortfall(limit: Option<u64>, connections: u64) -> Option<String> {
    let limit = limit?;
    let needed = connections.saturating_add(RESERVE);
    (needed > limit).then(|| {
        format!(
            "{connections} connections need about {needed} open files but the limit is {limit} \
             (raise the hard limit, e.g. `ulimit -Hn {needed}` as root, or in the service unit)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortfall_only_when_over_the_limit() {
        assert_eq!(shortfall(None, 100_000), None);
        assert_eq!(shortfall(Some(20_000), 10_000), None);
        let w = shortfall(Some(1024), 10_000);
        assert!(w.is_some_and(|w| w.contains("10064")));
    }

    #[test]
    fn raise_never_lowers() {
        #[cfg(unix)]
        {
            let before = soft_limit();
            let after = raise();
            assert!(after >= before || after.is_none());
        }
    }
}
