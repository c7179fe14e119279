//! Label selectors (`?labelSelector=`): parse, then match against a few label sets.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sel) = kplane_types::labels::LabelSelector::parse(s) {
        let obj = serde_json::json!({"metadata": {"labels": {"app": "web", "tier": "1"}}});
        let _ = sel.matches_object(&obj);
    }
});
