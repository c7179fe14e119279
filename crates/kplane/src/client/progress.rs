//! The progress line of `kplane export` and `kplane import` on stderr: objects and bytes,
//! drawn only when stderr is a terminal (scripts and logs get nothing).

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{HumanBytes, ProgressBar, ProgressStyle};

/// One progress line; cheap to clone (clones draw the same line).
#[derive(Clone, Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// Counts objects (the total once known) and shows the bytes so far.
    pub fn objects(prefix: &'static str) -> Self {
        Self::styled(
            prefix,
            "{spinner} {prefix} {pos}/{len} objects, {msg} [{elapsed}]",
            0,
        )
    }

    /// Counts bytes out of `total`.
    pub fn bytes(prefix: &'static str, total: u64) -> Self {
        Self::styled(
            prefix,
            "{spinner} {prefix} {bytes}/{total_bytes} ({bytes_per_sec}) [{elapsed}]",
            total,
        )
    }

    fn styled(prefix: &'static str, template: &str, len: u64) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self {
                bar: ProgressBar::hidden(),
            };
        }
        let bar = ProgressBar::new(len).with_prefix(prefix);
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Self { bar }
    }

    /// The number of objects (or bytes) the line counts towards.
    pub fn set_total(&self, total: u64) {
        self.bar.set_length(total);
    }

    /// `n` more objects (or bytes).
    pub fn add(&self, n: u64) {
        self.bar.inc(n);
    }

    /// The bytes so far, for an object-counting line.
    pub fn set_bytes(&self, bytes: u64) {
        if !self.bar.is_hidden() {
            self.bar.set_message(HumanBytes(bytes).to_string());
        }
    }

    /// Removes the line.
    pub fn done(&self) {
        self.bar.finish_and_clear();
    }
}
