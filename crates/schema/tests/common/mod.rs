//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use kplane_schema::{compile, CompileOptions, CompiledSchema};
use kplane_types::Cause;
use serde_json::Value;

pub const PREFIX: &str = "spec.versions[0].schema.openAPIV3Schema";

/// Compiles or panics with the causes.
pub fn schema(v: Value) -> CompiledSchema {
    match compile(&v, PREFIX, &CompileOptions::default()) {
        Ok(s) => s,
        Err(e) => panic!("unexpected compile errors: {:#?}", render(&e)),
    }
}

/// The compile errors (panics if it compiles).
pub fn compile_errors(v: Value) -> Vec<String> {
    compile_errors_with(v, &CompileOptions::default())
}

pub fn compile_errors_ref(v: &Value) -> Vec<String> {
    match compile(v, PREFIX, &CompileOptions::default()) {
        Ok(_) => panic!("expected compile errors"),
        Err(e) => render(&e),
    }
}

pub fn compile_errors_with(v: Value, opts: &CompileOptions) -> Vec<String> {
    match compile(&v, PREFIX, opts) {
        Ok(_) => panic!("expected compile errors"),
        Err(e) => render(&e),
    }
}

pub fn render(causes: &[Cause]) -> Vec<String> {
    causes.iter().map(Cause::render).collect()
}

/// Validation errors of `obj` rendered as `field: message`.
pub fn errors(s: &CompiledSchema, obj: &Value) -> Vec<String> {
    render(&s.validate(obj, None))
}

/// A root object schema with the given `spec` properties.
pub fn with_spec(spec_props: Value) -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": spec_props},
        }
    })
}
