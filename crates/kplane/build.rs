//! Records what this build of kplane is, for `/version`: the git commit and whether the
//! work tree had uncommitted changes, the build date (`SOURCE_DATE_EPOCH` when set, for
//! reproducible builds), the Rust toolchain and the target platform. Outside a git checkout
//! the commit and tree state are empty, as in a Kubernetes build without version ldflags.
//!
//! The script reruns only when HEAD, the branch it points to or the index changes, so an
//! ordinary build does not recompile anything for it; the tree state is therefore as of the
//! last commit, checkout or `git add`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let (commit, tree_state) = match git(&manifest, &["rev-parse", "HEAD"]) {
        Some(commit) => {
            watch_git_files(&manifest);
            let dirty = git(
                &manifest,
                &["status", "--porcelain", "--untracked-files=no"],
            )
            .is_some_and(|s| !s.is_empty());
            (commit, if dirty { "dirty" } else { "clean" })
        }
        None => (String::new(), ""),
    };
    println!("cargo:rustc-env=KPLANE_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=KPLANE_GIT_TREE_STATE={tree_state}");
    println!("cargo:rustc-env=KPLANE_BUILD_DATE={}", build_date());
    println!("cargo:rustc-env=KPLANE_RUSTC_VERSION={}", rustc_version());
    println!("cargo:rustc-env=KPLANE_PLATFORM={}", platform());
}

/// `git <args>` run in `dir`, trimmed; `None` when git is missing or fails (no checkout).
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Reruns this script when HEAD moves: HEAD itself, the ref it names (loose or packed),
/// and the index (staging and committing change it).
fn watch_git_files(dir: &Path) {
    let abs = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            dir.join(p)
        }
    };
    let Some(git_dir) = git(dir, &["rev-parse", "--git-dir"]).map(abs) else {
        return;
    };
    let common = git(dir, &["rev-parse", "--git-common-dir"])
        .map(abs)
        .unwrap_or_else(|| git_dir.clone());
    let head = git_dir.join("HEAD");
    println!("cargo:rerun-if-changed={}", head.display());
    println!("cargo:rerun-if-changed={}", git_dir.join("index").display());
    println!(
        "cargo:rerun-if-changed={}",
        common.join("packed-refs").display()
    );
    if let Some(reference) = std::fs::read_to_string(&head)
        .ok()
        .and_then(|h| h.strip_prefix("ref: ").map(|r| r.trim().to_string()))
    {
        println!(
            "cargo:rerun-if-changed={}",
            common.join(reference).display()
        );
    }
}

/// The build time as RFC 3339 UTC (`2026-01-02T03:04:05Z`).
fn build_date() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
        });
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `rustc --version` of the compiler building kplane.
fn rustc_version() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc unknown".to_string())
}

/// The target as Go names it (`linux/amd64`), the form of upstream's `platform`.
fn platform() -> String {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let arch = match arch.as_str() {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    format!("{os}/{arch}")
}
