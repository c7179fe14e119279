//! Regenerates `src/generated.rs` (the protobuf descriptor table) from the
//! `k8s-pb` and `k8s-openapi` registry sources and
//! `data/go-scalar-presence.txt`.
//!
//! Usage: `cargo run -p kplane-protobuf --example gen_descriptors [--check]`.
//! With `--check` nothing is written; the exit status says whether the
//! committed file is current.

#[path = "../gen/generator.rs"]
mod generator;

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let check = std::env::args().any(|a| a == "--check");
    let result = generator::Inputs::locate(crate_dir).and_then(|i| generator::generate(&i));
    let generated = match result {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gen_descriptors: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut ok = true;
    for u in &generated.unclassified {
        eprintln!("unclassified optional scalar (add to data/go-scalar-presence.txt): {u}");
        ok = false;
    }
    for s in &generated.stale {
        eprintln!("stale entry in data/go-scalar-presence.txt: {s}");
        ok = false;
    }
    let target = crate_dir.join("src/generated.rs");
    if check {
        let current = std::fs::read_to_string(&target).unwrap_or_default();
        if current != generated.source {
            eprintln!("{} is out of date", target.display());
            ok = false;
        }
    } else if let Err(e) = std::fs::write(&target, &generated.source) {
        eprintln!("writing {}: {e}", target.display());
        return ExitCode::FAILURE;
    } else {
        eprintln!("wrote {}", target.display());
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
