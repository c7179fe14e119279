//! Request bodies: JSON (with duplicate-key detection), YAML, and server-side apply bodies.
#![no_main]
use kplane_apiserver::http::negotiation;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = negotiation::parse_json(data);
    let _ = negotiation::parse_yaml(data);
    let _ = negotiation::parse_apply_body(data);
    let _ = kplane_apiserver::http::json::parse_with_duplicates(data);
});
