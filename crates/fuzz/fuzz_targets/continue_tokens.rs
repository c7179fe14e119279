//! LIST continue tokens (`?continue=`). Input: the first byte picks the case, the rest is
//! its data.
//! - even: the rest is a client's token, decoded as it is and as the query string carries
//!   it (`?limit=5&continue=<rest>`, percent-decoded by the list parameters' parser);
//!   a token that decodes must decode to the same thing once re-encoded.
//! - odd: the rest is a revision (8 bytes) and a cluster, namespace and name (split on
//!   0xFF); the token encoded from them must decode back to them.
#![no_main]
use kplane_apiserver::http::query::{list_params, Query};
use kplane_registry::continue_token::{decode, encode, ContinueToken};
use kplane_storage::Key;
use libfuzzer_sys::fuzz_target;

/// Storage resources of a core, a grouped and a custom resource.
const RESOURCES: [&str; 3] = ["/configmaps", "batch/jobs", "example.com/widgets"];

fuzz_target!(|data: &[u8]| {
    let Some((&case, rest)) = data.split_first() else {
        return;
    };
    if case % 2 == 0 {
        client_token(rest);
    } else {
        round_trip(rest);
    }
});

fn client_token(rest: &[u8]) {
    let token = String::from_utf8_lossy(rest);
    let query = Query::parse(Some(&format!("limit=5&continue={token}")));
    let from_query = list_params(&query).ok().and_then(|p| p.continue_token);
    for resource in RESOURCES {
        for t in std::iter::once(&*token).chain(from_query.as_deref()) {
            if let Ok(decoded) = decode(t, resource) {
                let again = encode(decoded.rv, &decoded.start, decoded.remaining);
                assert_eq!(decode(&again, resource).ok(), Some(decoded));
            }
        }
    }
}

fn round_trip(rest: &[u8]) {
    let (rv, fields) = rest.split_at(rest.len().min(8));
    let mut bytes = [0u8; 8];
    bytes[..rv.len()].copy_from_slice(rv);
    let rv = u64::from_le_bytes(bytes);
    let mut parts = fields
        .split(|&b| b == 0xFF)
        .map(|p| String::from_utf8_lossy(p).into_owned());
    let cluster = parts.next().unwrap_or_default();
    let namespace = parts.next().unwrap_or_default();
    let name = parts.next().unwrap_or_default();
    for resource in RESOURCES {
        let key = Key::new(
            cluster.as_str(),
            resource,
            namespace.as_str(),
            name.as_str(),
        );
        let remaining = (rv % 3 == 0).then_some(rv / 3);
        let token = encode(rv, &key, remaining);
        assert_eq!(
            decode(&token, resource).ok(),
            Some(ContinueToken {
                rv,
                start: key,
                remaining
            })
        );
    }
}
