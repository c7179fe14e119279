//! The commands in the documentation work as written: the shell blocks of README.md and
//! docs/*.md run against a real server.
//!
//! Convention (also stated at the top of docs/usage.md):
//! - A fenced block whose info string is `sh` or `bash` is run.
//! - A block whose info string also has the word `no-run` (```` ```sh no-run ````) is shown,
//!   not run: commands that start a server (`make run`), build or benchmark, or synopses.
//! - Blocks of any other language (`rust`, `yaml`, `text`, none) are never run.
//!
//! The runnable blocks of one file are run in order as one `bash -euo pipefail` script, as a
//! reader would type them into one shell: variables set in one block are seen by the next.
//! Each file gets its own server (so files cannot disturb each other) and runs in a scratch
//! directory holding `kplane-data/admin.kubeconfig` (a copy of the server's, so
//! `export KUBECONFIG=$PWD/kplane-data/admin.kubeconfig` works as written) and `docs`, a link
//! to the repository's docs/ (so `kubectl apply -f docs/examples/...` works). `KUBECONFIG`
//! is set to that copy and `HOME` to the scratch directory. `PATH` starts with `bin/`,
//! holding `kplane` and the kubectl plugin names `kubectl-ws` and `kubectl-kplane` as
//! links to the binary under test, as `make install` lays them out.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _, Result};
use kplane_e2e::{kplane_bin, KplaneServer};

/// A runnable block: where it starts and its text.
#[derive(Debug, PartialEq)]
struct Block {
    line: usize,
    text: String,
}

/// The runnable shell blocks of a Markdown text (see the convention above).
fn runnable_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = vec![];
    let mut open: Option<(usize, bool, String)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let mut words = info.split_whitespace();
                    let lang = words.next().unwrap_or("");
                    let run = matches!(lang, "sh" | "bash") && !words.any(|w| w == "no-run");
                    open = Some((i + 1, run, String::new()));
                }
            }
            Some((start, run, mut text)) => {
                if trimmed.starts_with("```") {
                    if run {
                        blocks.push(Block { line: start, text });
                    }
                } else {
                    text.push_str(line);
                    text.push('\n');
                    open = Some((start, run, text));
                }
            }
        }
    }
    blocks
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// README.md and every docs/*.md.
fn doc_files() -> Result<Vec<PathBuf>> {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .context("reading docs/")?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    Ok(files)
}

/// Runs the blocks of `file` against a fresh server; the error names the failing block.
fn run_file(file: &Path, blocks: &[Block]) -> Result<()> {
    let server = KplaneServer::start()?;
    let scratch = tempfile::Builder::new()
        .prefix("kplane-docs-")
        .tempdir()
        .context("creating the scratch directory")?;
    let dir = scratch.path();
    std::fs::create_dir(dir.join("kplane-data"))?;
    let kubeconfig = dir.join("kplane-data/admin.kubeconfig");
    std::fs::copy(server.kubeconfig(), &kubeconfig).context("copying the kubeconfig")?;
    std::os::unix::fs::symlink(repo_root().join("docs"), dir.join("docs"))?;
    let bin = dir.join("bin");
    std::fs::create_dir(&bin)?;
    let kplane = kplane_bin()?;
    for name in ["kplane", "kubectl-ws", "kubectl-kplane"] {
        std::os::unix::fs::symlink(&kplane, bin.join(name))?;
    }
    let mut path = std::ffi::OsString::from(bin.as_os_str());
    if let Some(rest) = std::env::var_os("PATH") {
        path.push(":");
        path.push(rest);
    }

    let mut script = String::from("set -euo pipefail\n");
    for b in blocks {
        // The marker names the block that was running when the script stopped.
        script.push_str(&format!("echo '>>> block at line {}' >&2\n", b.line));
        script.push_str(&b.text);
    }
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .env("KUBECONFIG", &kubeconfig)
        .env("HOME", dir)
        .env("PATH", path)
        .output()
        .context("running bash")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let failing = stderr
            .lines()
            .rev()
            .find(|l| l.starts_with(">>> block at line"))
            .unwrap_or("before the first block");
        bail!(
            "{}: {failing} failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{stderr}",
            file.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
        );
    }
    Ok(())
}

#[test]
fn every_shell_block_in_the_docs_runs() -> Result<()> {
    let mut failures = vec![];
    let mut ran = 0;
    for file in doc_files()? {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let blocks = runnable_blocks(&text);
        if blocks.is_empty() {
            continue;
        }
        ran += blocks.len();
        if let Err(e) = run_file(&file, &blocks) {
            failures.push(format!("{e:#}"));
        }
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("\n\n"));
    }
    // README.md and docs/usage.md have runnable blocks: finding none means the parser broke.
    if ran < 5 {
        bail!("only {ran} runnable blocks found in the docs");
    }
    Ok(())
}

#[test]
fn block_convention() {
    let md = "text\n```sh\nkubectl get ns\n```\n```sh no-run\nmake run\n```\n\
              ```rust\nfn main() {}\n```\n```\nplain\n```\n  ```bash\n  echo a\n  ```\n";
    assert_eq!(
        runnable_blocks(md),
        vec![
            Block {
                line: 2,
                text: "kubectl get ns\n".into()
            },
            Block {
                line: 14,
                text: "  echo a\n".into()
            },
        ]
    );
}
