//! Builds the documents of the test resource list, reports timings and sizes, and writes the
//! index and every group-version document (pretty-printed) into a directory for inspection:
//! `cargo run [--release] -p kplane-openapi --example dump_openapi -- [OUT_DIR]`.

use std::path::PathBuf;
use std::time::Instant;

use kplane_openapi::{builtin_definitions, builtin_served_resources_for_tests, OpenApiV3};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "openapi-dump".into()),
    );
    let resources = builtin_served_resources_for_tests();

    let start = Instant::now();
    let definitions = builtin_definitions().len();
    println!(
        "builtin_definitions: {definitions} definitions in {:?}",
        start.elapsed()
    );
    let runs = 5;
    let start = Instant::now();
    for _ in 0..runs {
        // Dropped at once, so every build is a cold one (nothing to share).
        OpenApiV3::build(&resources)?;
    }
    println!("OpenApiV3::build (cold): {:?}", start.elapsed() / runs);
    let api = OpenApiV3::build(&resources)?;
    let start = Instant::now();
    let again = OpenApiV3::build(&resources)?;
    println!("OpenApiV3::build (shared documents): {:?}", start.elapsed());
    drop(again);

    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("index.json"), &*api.index_json())?;
    for gv in api.group_version_paths() {
        if let Some((bytes, hash)) = api.group_version(gv) {
            let value: serde_json::Value = serde_json::from_slice(&bytes)?;
            let file = out.join(format!("{}.json", gv.replace('/', "__")));
            std::fs::write(&file, serde_json::to_string_pretty(&value)?)?;
            println!("{gv}: {} bytes, hash {}...", bytes.len(), &hash[..16]);
        }
    }
    Ok(())
}
