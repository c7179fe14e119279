//! The container image (Containerfile, `make image-prebuilt`): its runtime stage built
//! `FROM scratch` with buildah from a binary built outside the image and the root filesystem
//! scripts/image-rootfs.sh lays out (the binary, the shared libraries `ldd` names, the
//! dynamic loader), then the image's entrypoint run with `--version`. No base image is
//! pulled, so it runs on machines without a registry. Skipped, with the reason printed,
//! where buildah is not installed (`.ci/run` installs it).
//!
//! buildah keeps its images and containers in a scratch directory (`--root`, `--runroot`,
//! the vfs driver, which needs neither root nor fuse-overlayfs) that the test removes.
//! The entrypoint runs with `buildah run --isolation chroot`; where that is refused (no user
//! namespaces, a runtime that cannot start), it runs through the image's own dynamic
//! loader on the mounted image, after checking that the loader resolves every library
//! inside the image.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{bail, ensure, Context as _, Result};
use serde_json::Value;

const IMAGE: &str = "localhost/kplane-e2e-image:test";
const ENTRYPOINT: &str = "/usr/local/bin/kplane";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn uid() -> String {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn is_root() -> bool {
    uid() == "0"
}

/// The runtime directories a rootless `buildah run` makes under /tmp whatever its
/// environment says (`containers-user-UID`, `podman-run-UID`), those that do not exist yet:
/// the test removes them after.
fn new_runtime_dirs() -> Vec<PathBuf> {
    if is_root() {
        return Vec::new();
    }
    let uid = uid();
    [
        format!("containers-user-{uid}"),
        format!("podman-run-{uid}"),
    ]
    .into_iter()
    .map(|name| Path::new("/tmp").join(name))
    .filter(|path| !path.exists())
    .collect()
}

/// Whether `PATH` has an executable `name` (without running it: even `buildah --version`
/// makes its runtime directories).
fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// buildah with its storage in one scratch directory.
struct Buildah {
    storage: PathBuf,
    run: PathBuf,
    /// What buildah keeps beside its storage (the XDG directories and `TMPDIR`: lock
    /// files, the blob cache, its runtime directory), in the scratch directory too.
    xdg: PathBuf,
}

impl Buildah {
    /// `buildah` (or another program run as buildah's helper) with the scratch
    /// directory's XDG directories.
    fn program(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("XDG_RUNTIME_DIR", self.xdg.join("run"))
            .env("XDG_DATA_HOME", self.xdg.join("data"))
            .env("XDG_CONFIG_HOME", self.xdg.join("config"))
            .env("TMPDIR", self.xdg.join("tmp"));
        cmd
    }

    fn command(&self) -> Command {
        let mut cmd = self.program("buildah");
        cmd.arg("--storage-driver")
            .arg("vfs")
            .arg("--root")
            .arg(&self.storage)
            .arg("--runroot")
            .arg(&self.run);
        cmd
    }

    fn output(&self, args: &[&str]) -> Result<Output> {
        self.command()
            .args(args)
            .output()
            .with_context(|| format!("running buildah {}", args.join(" ")))
    }

    fn ok(&self, args: &[&str]) -> Result<String> {
        let out = self.output(args)?;
        ensure!(
            out.status.success(),
            "buildah {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Removes every container and image, then the storage itself (as a rootless user its
    /// files belong to ids of the user namespace, so they go from inside it).
    fn clean(&self, dir: &Path) {
        let _ = self.output(&["rm", "--all"]);
        let _ = self.output(&["rmi", "--all", "--force"]);
        if !is_root() {
            let _ = self
                .program("buildah")
                .arg("unshare")
                .arg("rm")
                .arg("-rf")
                .arg(&self.storage)
                .arg(&self.run)
                .output();
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn scratch_image_from_a_prebuilt_binary_runs_its_entrypoint() -> Result<()> {
    if !on_path("buildah") {
        println!(
            "skipped: buildah is not installed (Debian: apt-get install buildah; .ci/run does)"
        );
        return Ok(());
    }
    let bin = kplane_e2e::kplane_bin()?;
    let dir = tempfile::Builder::new()
        .prefix("kplane-image-")
        .tempdir()?
        .keep();
    let buildah = Buildah {
        storage: dir.join("storage"),
        run: dir.join("run"),
        xdg: dir.join("xdg"),
    };
    for sub in ["run", "data", "config", "tmp"] {
        let path = buildah.xdg.join(sub);
        std::fs::create_dir_all(&path)?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
    }
    let runtime_dirs = new_runtime_dirs();
    let result = build_and_run(&buildah, &bin, &dir);
    buildah.clean(&dir);
    for path in runtime_dirs {
        let _ = std::fs::remove_dir_all(path);
    }
    result
}

fn build_and_run(buildah: &Buildah, bin: &Path, dir: &Path) -> Result<()> {
    let rootfs = dir.join("rootfs");
    let script = repo_root().join("scripts/image-rootfs.sh");
    let out = Command::new(&script)
        .arg(bin)
        .arg(&rootfs)
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    ensure!(
        out.status.success(),
        "image-rootfs.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needed in ["usr/local/bin/kplane", "tmp"] {
        ensure!(
            rootfs.join(needed).exists(),
            "the root filesystem lacks {needed}"
        );
    }

    let containerfile = repo_root().join("Containerfile");
    let containerfile = containerfile.to_str().context("non-UTF-8 path")?;
    let context = rootfs.to_str().context("non-UTF-8 path")?;
    buildah.ok(&[
        "bud",
        "--quiet",
        "--pull=never",
        "--file",
        containerfile,
        "--build-arg",
        "ROOTFS=prebuilt",
        "--tag",
        IMAGE,
        context,
    ])?;

    let inspect: Value = serde_json::from_str(&buildah.ok(&["inspect", "--type", "image", IMAGE])?)
        .context("parsing buildah inspect")?;
    let config = &inspect["OCIv1"]["config"];
    let entrypoint: Vec<&str> = config["Entrypoint"]
        .as_array()
        .context("the image has no entrypoint")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    ensure!(entrypoint == [ENTRYPOINT], "entrypoint {entrypoint:?}");
    ensure!(config["User"] == "65532:65532", "user {}", config["User"]);
    // `kubectl exec POD -- kplane ...` (docs/deploy/README.md) finds it on PATH.
    let env: Vec<&str> = config["Env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    ensure!(
        env.iter()
            .filter_map(|e| e.strip_prefix("PATH="))
            .any(|path| path.split(':').any(|dir| dir == "/usr/local/bin")),
        "/usr/local/bin is not on the image's PATH: {env:?}"
    );
    let expected = Command::new(bin).arg("--version").output()?;
    let expected = String::from_utf8_lossy(&expected.stdout).trim().to_string();
    ensure!(
        expected.starts_with("kplane "),
        "kplane --version printed {expected:?}"
    );

    let container = buildah
        .ok(&["from", "--quiet", "--pull=never", IMAGE])?
        .trim()
        .to_string();
    let mut args = vec!["run", "--isolation", "chroot", container.as_str(), "--"];
    args.extend(entrypoint.iter().copied());
    args.push("--version");
    let run = buildah.output(&args)?;
    let printed = if run.status.success() {
        String::from_utf8_lossy(&run.stdout).trim().to_string()
    } else {
        println!(
            "buildah run refused here ({}), running the entrypoint through the image's loader instead",
            String::from_utf8_lossy(&run.stderr).trim()
        );
        through_loader(buildah, &container, &rootfs)?
    };
    ensure!(
        printed == expected,
        "the image's entrypoint printed {printed:?}, the binary {expected:?}"
    );
    Ok(())
}

/// Runs the entrypoint with `--version` on the mounted image through the image's dynamic
/// loader, with only the image's library directories, after checking that the loader
/// resolves every library to a file of the image (`--list`).
fn through_loader(buildah: &Buildah, container: &str, rootfs: &Path) -> Result<String> {
    let loader = find_loader(rootfs)?;
    let lib_dirs = [
        "lib",
        "lib64",
        "usr/lib",
        "lib/x86_64-linux-gnu",
        "usr/lib/x86_64-linux-gnu",
        "lib/aarch64-linux-gnu",
        "usr/lib/aarch64-linux-gnu",
    ];
    let script = format!(
        r#"set -eu
m=$(buildah --storage-driver vfs --root "$1" --runroot "$2" mount "$3")
path=""
for d in {dirs}; do [ -d "$m/$d" ] && path="$path${{path:+:}}$m/$d"; done
"$m/{loader}" --inhibit-cache --library-path "$path" --list "$m{ENTRYPOINT}" | awk -v m="$m" '$3 ~ /^\// && index($3, m) != 1 {{ print "outside the image: " $0; bad = 1 }} END {{ exit bad }}'
"$m/{loader}" --inhibit-cache --library-path "$path" "$m{ENTRYPOINT}" --version"#,
        dirs = lib_dirs.join(" "),
    );
    let mut cmd = if is_root() {
        buildah.program("sh")
    } else {
        let mut c = buildah.program("buildah");
        c.arg("unshare").arg("sh");
        c
    };
    let out = cmd
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(&buildah.storage)
        .arg(&buildah.run)
        .arg(container)
        .output()
        .context("running the entrypoint through the image's loader")?;
    if !out.status.success() {
        bail!(
            "the entrypoint through the image's loader failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The dynamic loader image-rootfs.sh copied (`ld-linux-*.so.*`, `ld-*.so.*`), relative
/// to the root filesystem.
fn find_loader(rootfs: &Path) -> Result<String> {
    for dir in ["lib64", "lib"] {
        let Ok(entries) = std::fs::read_dir(rootfs.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("ld-") && name.contains(".so") {
                return Ok(format!("{dir}/{name}"));
            }
        }
    }
    bail!("no dynamic loader in {}", rootfs.display())
}
