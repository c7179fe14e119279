//! Field selectors (`?fieldSelector=`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sel) = kplane_types::fields::FieldSelector::parse(s) {
        let obj = serde_json::json!({"metadata": {"name": "a", "namespace": "b"}});
        let _ = sel.matches_object(&obj);
    }
});
