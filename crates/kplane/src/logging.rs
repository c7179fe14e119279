//! Logging set-up: which lines are written (`-v N`, `RUST_LOG`), in which format
//! (`--log-format text|json`) and with or without colour.
//!
//! `-v N` follows kube-apiserver's klog verbosity where kplane has the same lines:
//!
//! | `-v` | written |
//! |---|---|
//! | 0 (default), 1 | start-up, shutdown, warnings, errors, and every 5xx with its cause |
//! | 2 | also a line per request answered 4xx |
//! | 3, 4 | a line per request (kube-apiserver's httplog writes its `"HTTP"` line at 3) |
//! | 5 | also kplane's debug lines |
//! | 6 and more | also kplane's trace lines |
//!
//! Dependencies (hyper, h2, rustls, sled, ...) only write warnings and errors unless
//! `RUST_LOG` names them. `RUST_LOG` (tracing `EnvFilter` syntax) is applied after `-v`: a
//! bare level in it (`RUST_LOG=debug`) is kplane's level, not every crate's, and a
//! directive with a target (`RUST_LOG=h2=debug`) applies as written.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

/// The request log's target (see `kplane_apiserver::http::httplog`).
const HTTPLOG: &str = kplane_apiserver::http::httplog::TARGET;

/// The prefix of every kplane crate's target (`kplane`, `kplane_apiserver`, ...).
const KPLANE: &str = "kplane";

/// How lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, fields at the top level.
    Json,
}

/// The filter directives for verbosity `v`, then those of `rust_log`.
pub fn directives(v: u8, rust_log: Option<&str>) -> String {
    let kplane = match v {
        0..=4 => "info",
        5 => "debug",
        _ => "trace",
    };
    let requests = match v {
        0 | 1 => "error",
        2 => "info",
        _ => "debug",
    };
    let mut out = vec![
        "warn".to_string(),
        format!("{KPLANE}={kplane}"),
        format!("{HTTPLOG}={requests}"),
    ];
    for d in rust_log.unwrap_or("").split(',').map(str::trim) {
        if d.is_empty() {
            continue;
        }
        if is_bare_level(d) {
            out.push(format!("{KPLANE}={d}"));
            out.push(format!("{HTTPLOG}={d}"));
        } else {
            out.push(d.to_string());
        }
    }
    out.join(",")
}

fn is_bare_level(d: &str) -> bool {
    matches!(
        d.to_ascii_lowercase().as_str(),
        "off" | "error" | "warn" | "info" | "debug" | "trace"
    )
}

/// Installs the global subscriber writing to stderr.
pub fn init(v: u8, format: LogFormat) -> anyhow::Result<()> {
    let rust_log = std::env::var("RUST_LOG").ok();
    let filter = EnvFilter::builder()
        .parse(directives(v, rust_log.as_deref()))
        .map_err(|e| anyhow::anyhow!("invalid RUST_LOG: {e}"))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Text => builder.with_ansi(colour()).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("setting up logging: {e}"))
}

/// Colour only on a terminal, and never with `NO_COLOR` set (no-color.org).
fn colour() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_sets_kplane_and_request_levels_only() {
        assert_eq!(
            directives(0, None),
            "warn,kplane=info,kplane_apiserver::httplog=error"
        );
        assert_eq!(
            directives(2, None),
            "warn,kplane=info,kplane_apiserver::httplog=info"
        );
        assert_eq!(
            directives(3, None),
            "warn,kplane=info,kplane_apiserver::httplog=debug"
        );
        assert_eq!(
            directives(5, None),
            "warn,kplane=debug,kplane_apiserver::httplog=debug"
        );
        assert_eq!(
            directives(9, None),
            "warn,kplane=trace,kplane_apiserver::httplog=debug"
        );
    }

    #[test]
    fn a_bare_rust_log_level_is_kplanes_and_targets_apply_as_written() {
        assert_eq!(
            directives(0, Some("debug")),
            "warn,kplane=info,kplane_apiserver::httplog=error,kplane=debug,kplane_apiserver::httplog=debug"
        );
        assert_eq!(
            directives(0, Some("h2=trace, ,sled=info")),
            "warn,kplane=info,kplane_apiserver::httplog=error,h2=trace,sled=info"
        );
    }

    /// The directives as EnvFilter applies them: later ones win for the same target.
    #[test]
    fn rust_log_debug_enables_kplane_debug_but_not_dependencies() {
        use tracing::Level;
        let filter = EnvFilter::new(directives(0, Some("debug")));
        let max = filter.max_level_hint();
        assert_eq!(max, Some(Level::DEBUG.into()));
        let dispatch = tracing::Dispatch::new(
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::sink)
                .finish(),
        );
        tracing::dispatcher::with_default(&dispatch, || {
            assert!(tracing::enabled!(target: "kplane_storage::sled::writer", Level::DEBUG));
            assert!(tracing::enabled!(target: "kplane_apiserver::httplog", Level::DEBUG));
            assert!(!tracing::enabled!(target: "h2::codec", Level::DEBUG));
            assert!(!tracing::enabled!(target: "rustls::server", Level::INFO));
            assert!(tracing::enabled!(target: "sled::pagecache", Level::WARN));
        });
    }

    #[test]
    fn default_verbosity_logs_only_5xx_requests() {
        use tracing::Level;
        let dispatch = tracing::Dispatch::new(
            tracing_subscriber::fmt()
                .with_env_filter(EnvFilter::new(directives(0, None)))
                .with_writer(std::io::sink)
                .finish(),
        );
        tracing::dispatcher::with_default(&dispatch, || {
            assert!(tracing::enabled!(target: "kplane_apiserver::httplog", Level::ERROR));
            assert!(!tracing::enabled!(target: "kplane_apiserver::httplog", Level::INFO));
            assert!(tracing::enabled!(target: "kplane_apiserver::server", Level::INFO));
            assert!(!tracing::enabled!(target: "kplane_apiserver::server", Level::DEBUG));
        });
    }
}
