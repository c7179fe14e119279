//! The `continue` token of a LIST page: the revision the first page was read at, the key
//! of its last item and, when it was counted, how many items follow it, as URL-safe
//! base64 of a small JSON object (`v`, `rv`, `c`, `ns`, `n`, and `r` for the count), the
//! shape kube-apiserver's tokens have. The token is opaque to clients, but it
//! comes back from them, so decoding takes any string. Public so that the fuzz target
//! (`crates/fuzz`, `continue_tokens`) and tests can reach the codec; the read path
//! (`super::read`) is its only other user.

use base64::Engine;
use kplane_storage::{Key, Revision};
use serde_json::json;

use crate::error::{ApiError, ApiResult};

/// The `rv` of an inconsistent continuation: the next page is read at the latest revision
/// (kube-apiserver writes `-1` in the token, as does this codec).
pub const LATEST: Revision = 0;

/// A decoded continue token: where the next page starts, and at which revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContinueToken {
    /// The revision every page of the list is read at ([`LATEST`]: whatever is latest).
    pub rv: Revision,
    /// The last key of the previous page (the next page starts after it).
    pub start: Key,
    /// How many items of the list follow `start` at `rv` (the previous page's
    /// `remainingItemCount`), when it was counted: the next page's count is this one less
    /// what it returns, without counting the rest again.
    pub remaining: Option<u64>,
}

/// The token for a page read at `rv` whose last item is `last`, with `remaining` items
/// after it when they were counted.
pub fn encode(rv: Revision, last: &Key, remaining: Option<u64>) -> String {
    let rv = match rv {
        LATEST => json!(-1),
        rv => json!(rv),
    };
    let mut body = json!({"v": "meta.k8s.io/v1", "rv": rv, "c": last.cluster, "ns": last.namespace, "n": last.name});
    if let Some(r) = remaining {
        body["r"] = json!(r);
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(body.to_string())
}

/// Decodes a client's `continue` value for a list of `resource` (the storage resource,
/// `"<group>/<plural>"`); anything that is not a token this server wrote is a 400.
pub fn decode(token: &str, resource: &str) -> ApiResult<ContinueToken> {
    let bad = || {
        ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: serde_json::Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    Ok(ContinueToken {
        rv: match v.get("rv").and_then(|x| x.as_i64()) {
            Some(-1) => LATEST,
            _ => v
                .get("rv")
                .and_then(|x| x.as_u64())
                .filter(|rv| *rv != LATEST)
                .ok_or_else(bad)?,
        },
        start: Key::new(
            s("c").ok_or_else(bad)?,
            resource,
            s("ns").ok_or_else(bad)?,
            s("n").ok_or_else(bad)?,
        ),
        // A count past int64 would not decode in a Go client's ListMeta.
        remaining: match v.get("r") {
            None => None,
            Some(r) => Some(
                r.as_u64()
                    .filter(|r| i64::try_from(*r).is_ok())
                    .ok_or_else(bad)?,
            ),
        },
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_token_decodes_to_what_was_encoded() {
        let key = Key::new("root:a", "/configmaps", "default", "cm-1");
        let inconsistent = encode(LATEST, &key, None);
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&inconsistent)
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(body["rv"], -1, "as kube-apiserver writes it");
        assert_eq!(decode(&inconsistent, "/configmaps").unwrap().rv, LATEST);
        for remaining in [None, Some(0), Some(383)] {
            let token = encode(42, &key, remaining);
            assert_eq!(
                decode(&token, "/configmaps").unwrap(),
                ContinueToken {
                    rv: 42,
                    start: key.clone(),
                    remaining
                }
            );
        }
    }

    #[test]
    fn anything_else_is_a_bad_request() {
        // A count that is not a number; a revision of 0 or below -1 (upstream refuses 0).
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let bad_count = b64(r#"{"rv":1,"c":"root","ns":"d","n":"a","r":"x"}"#);
        let zero = b64(r#"{"rv":0,"c":"root","ns":"d","n":"a"}"#);
        let minus_two = b64(r#"{"rv":-2,"c":"root","ns":"d","n":"a"}"#);
        let huge_count = b64(r#"{"rv":1,"c":"root","ns":"d","n":"a","r":9223372036854775808}"#);
        for token in [
            "",
            "!",
            "e30",
            "bm90IGpzb24",
            "eyJydiI6LTF9",
            &bad_count,
            &zero,
            &minus_two,
            &huge_count,
        ] {
            assert_eq!(
                decode(token, "/configmaps").unwrap_err().code(),
                400,
                "{token:?}"
            );
        }
    }
}
