//! CRD schemas (structural checks, regexes, CEL rules and their cost) and validation of an
//! object against a compiled schema. Input: a JSON array `[schema, object, old]`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
