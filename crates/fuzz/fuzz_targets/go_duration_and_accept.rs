//! Small request grammars: Go durations (`?timeout=`) and `Accept` headers.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = kplane_apiserver::http::deadline::parse_go_duration(s);
    let _ = kplane_apiserver::http::negotiation::parse_accept(Some(s));
});
