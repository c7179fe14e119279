//! Request paths: the `/clusters/<name>` prefix and the Kubernetes path grammar.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = kplane_apiserver::http::request_info::parse(s);
    let _ = kplane_types::ClusterName::parse(s);
});
