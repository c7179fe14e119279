//! CRD schemas (structural checks, regexes, CEL rules and their cost) and validation of an
//! object against a compiled schema. Input: a JSON array `[schema, object, old]`.
//!
//! The `cel` crate's parser and interpreter can panic (its recursion counter goes below
//! zero past twice its limit, where overflow is checked, as in this build); `kplane-schema`
//! catches their panics and answers an error. A panic raised in the `cel` crate is
//! therefore not a crash by itself: only one that escapes (libFuzzer's own catch then
//! aborts) or any other panic is.
#![no_main]
use libfuzzer_sys::fuzz_target;

/// Replaces libFuzzer's hook, which aborts on every panic, caught or not, with one that
/// lets a panic raised in the `cel` crate unwind to the catch that kplane-schema has
/// around it.
fn let_cel_panics_unwind() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_cel = info
                .location()
                .is_some_and(|l| l.file().contains("/cel-0."));
            if !in_cel {
                abort(info);
            }
        }));
    });
}

fuzz_target!(|data: &[u8]| {
    let_cel_panics_unwind();
    let Ok(serde_json::Value::Array(parts)) = serde_json::from_slice::<serde_json::Value>(data)
    else {
        return;
    };
    let Some(schema) = parts.first() else { return };
    let opts = kplane_schema::CompileOptions::default();
    let Ok(compiled) = kplane_schema::compile(schema, "spec.validation.openAPIV3Schema", &opts)
    else {
        return;
    };
    if let Some(obj) = parts.get(1) {
        let mut obj = obj.clone();
        let _ = compiled.prune(&mut obj);
        compiled.apply_defaults(&mut obj);
        let _ = compiled.validate(&obj, parts.get(2));
        if let Some(old) = parts.get(2) {
            let _ = compiled.validate_update(&obj, old);
        }
    }
});
