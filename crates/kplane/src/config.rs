//! `kplane serve --config FILE`: the serve settings from a YAML file.
//!
//! The file is a mapping whose keys are the long names of `kplane serve`'s flags
//! (`data-dir`, `bind`, `tls-san`, `v`, ...) and whose values are what the flag takes: a
//! scalar, a list for a repeatable flag, `true`/`false` for a switch. It adds nothing clap
//! does not know: every field becomes the flag argument it names (`--data-dir=VALUE`), and
//! the command line is parsed again with those arguments in front, so the file's values go
//! through the flags' own parsers and defaults. A flag given on the command line, or
//! through its environment variable (`KPLANE_DATA_DIR`, ...), overrides the file's field
//! (a repeatable flag's values replace the file's list).
//!
//! Errors name the file and the field: an unknown field, a list for a flag taken once, a
//! value the flag's parser refuses.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use anyhow::{anyhow, bail, Context as _};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::Value;

/// The flag naming the file; not a field of the file itself.
const CONFIG_ID: &str = "config";

/// `matches` for `argv`, with the settings of `kplane serve --config FILE` added for the
/// flags neither the command line nor the environment set. Other commands, and `serve`
/// without `--config`, come back unchanged.
pub(crate) fn apply(
    command: &Command,
    matches: ArgMatches,
    argv: &[OsString],
) -> anyhow::Result<ArgMatches> {
    let Some(("serve", serve_matches)) = matches.subcommand() else {
        return Ok(matches);
    };
    let Some(path) = serve_matches.get_one::<std::path::PathBuf>(CONFIG_ID) else {
        return Ok(matches);
    };
    let serve = command
        .find_subcommand("serve")
        .context("no serve subcommand")?;
    let fields = read(path)?;
    let file_args = flag_args(serve, serve_matches, &fields)
        .with_context(|| format!("in {}", path.display()))?;
    // The command has no arguments of its own: the subcommand is argv[1].
    let at = argv
        .iter()
        .position(|a| a == "serve")
        .context("no serve in the command line")?;
    let mut combined: Vec<OsString> = argv[..=at].to_vec();
    combined.extend(file_args);
    combined.extend_from_slice(&argv[at + 1..]);
    command
        .clone()
        .try_get_matches_from(combined)
        .map_err(|e| anyhow!("{}: {}", path.display(), clap_message(&e)))
}

/// The file's fields, in name order; an empty file has none.
fn read(path: &Path) -> anyhow::Result<BTreeMap<String, Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the config file {}", path.display()))?;
    parse(&text).with_context(|| format!("parsing the config file {}", path.display()))
}

fn parse(text: &str) -> anyhow::Result<BTreeMap<String, Value>> {
    let value: Value = serde_saphyr::from_str(text).map_err(|e| {
        let message = e.to_string();
        anyhow!("{}", message.strip_prefix("error: ").unwrap_or(&message))
    })?;
    match value {
        Value::Null => Ok(BTreeMap::new()),
        Value::Object(map) => Ok(map.into_iter().collect()),
        other => bail!("expected a mapping of flag names to values, not {other}"),
    }
}

/// The flag arguments the fields stand for, skipping the flags `matches` got from the
/// command line or the environment. Each field's arguments are checked with the flag's
/// parser on their own, so that an error names the field.
fn flag_args(
    serve: &Command,
    matches: &ArgMatches,
    fields: &BTreeMap<String, Value>,
) -> anyhow::Result<Vec<OsString>> {
    let mut out = Vec::new();
    for (name, value) in fields {
        let arg = field_arg(serve, name)?;
        let args = to_args(arg, name, value).with_context(|| format!("field `{name}`"))?;
        let mut alone = vec![OsString::from("kplane serve")];
        alone.extend(args.iter().cloned());
        serve
            .clone()
            .try_get_matches_from(alone)
            .map_err(|e| anyhow!("field `{name}`: {}", clap_message(&e)))?;
        let overridden = matches!(
            matches.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        );
        if !overridden {
            out.extend(args);
        }
    }
    Ok(out)
}

/// The serve flag a field names, by its long name.
fn field_arg<'a>(serve: &'a Command, name: &str) -> anyhow::Result<&'a Arg> {
    serve
        .get_arguments()
        .find(|a| is_setting(a) && a.get_long() == Some(name))
        .ok_or_else(|| {
            let known: Vec<&str> = serve
                .get_arguments()
                .filter(|a| is_setting(a))
                .filter_map(Arg::get_long)
                .collect();
            anyhow!(
                "unknown field `{name}` (the fields are the long names of kplane serve's flags: {})",
                known.join(", ")
            )
        })
}

/// A flag the file may set: not `--config` itself, `--help` or `--version`.
fn is_setting(arg: &Arg) -> bool {
    arg.get_id() != CONFIG_ID
        && !matches!(
            arg.get_action(),
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
        )
}

/// `--name=value` for each value of the field (a list only for a repeatable flag); a
/// switch is `--name` when true and nothing when false.
fn to_args(arg: &Arg, name: &str, value: &Value) -> anyhow::Result<Vec<OsString>> {
    if matches!(arg.get_action(), ArgAction::SetTrue) {
        return match value {
            Value::Bool(true) => Ok(vec![format!("--{name}").into()]),
            Value::Bool(false) => Ok(Vec::new()),
            other => bail!("expected true or false, not {other}"),
        };
    }
    let values: Vec<&Value> = match value {
        Value::Array(items) if matches!(arg.get_action(), ArgAction::Append) => {
            items.iter().collect()
        }
        Value::Array(_) => bail!("takes one value, not a list"),
        one => vec![one],
    };
    values
        .into_iter()
        .map(|v| {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => bail!("has no value"),
                other => bail!("expected a string, number or boolean, not {other}"),
            };
            Ok(format!("--{name}={text}").into())
        })
        .collect()
}

/// A clap error's first line, without its `error: ` prefix.
fn clap_message(e: &clap::Error) -> String {
    let rendered = e.to_string();
    let first = rendered.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::path::PathBuf;
    use std::time::Duration;

    use clap::{CommandFactory as _, FromArgMatches as _};

    use super::*;
    use crate::{Cli, Command as Sub, ServeArgs};

    fn example() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/kplane.yaml")
    }

    /// `kplane serve ARGS...` parsed as `main` does.
    fn serve(args: &[&str]) -> anyhow::Result<ServeArgs> {
        let argv: Vec<OsString> = ["kplane", "serve"]
            .iter()
            .chain(args)
            .map(OsString::from)
            .collect();
        let command = Cli::command();
        let matches = command.clone().try_get_matches_from(&argv)?;
        let matches = apply(&command, matches, &argv)?;
        match Cli::from_arg_matches(&matches)?.command {
            Sub::Serve(args) => Ok(*args),
            other => bail!("parsed {other:?}"),
        }
    }

    fn with_file(text: &str, args: &[&str]) -> anyhow::Result<ServeArgs> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("kplane.yaml");
        std::fs::write(&path, text)?;
        let path = path.to_str().context("path")?.to_string();
        let mut all = vec!["--config", path.as_str()];
        all.extend_from_slice(args);
        serve(&all)
    }

    #[test]
    fn the_example_file_sets_what_it_says() {
        let path = example();
        let args = serve(&["--config", path.to_str().unwrap()]).unwrap();
        assert_eq!(args.data_dir, PathBuf::from("/var/lib/kplane"));
        assert_eq!(args.bind, "0.0.0.0:6443".parse::<SocketAddr>().unwrap());
        assert_eq!(args.tls_san, ["kplane.example.com", "192.0.2.10"]);
        assert_eq!(
            args.service_account_issuer.as_deref(),
            Some("https://kplane.example.com:6443")
        );
        assert!(matches!(args.log_format, crate::logging::LogFormat::Json));
        assert_eq!(args.verbosity, 2);
        assert_eq!(args.event_window_seconds, 600);
        assert_eq!(args.storage_cache_mb, 256);
        assert_eq!(
            args.service_account_max_token_expiration,
            Some(Duration::from_secs(86400))
        );
        assert!(args.anonymous_auth);
        // What the file leaves out keeps the flag's default.
        assert_eq!(args.event_ttl_seconds, 3600);
        assert_eq!(args.storage, "sled");
        assert!(!args.auto_create_clusters);
    }

    /// docs/usage.md shows the example file's settings as they are.
    #[test]
    fn the_usage_guide_shows_the_example_file() {
        let file = std::fs::read_to_string(example()).unwrap();
        let settings: String = file
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| format!("{l}\n"))
            .collect();
        let guide_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/usage.md");
        let guide = std::fs::read_to_string(guide_path).unwrap();
        assert!(
            guide.contains(&format!("```yaml\n{settings}```\n")),
            "docs/usage.md does not show docs/examples/kplane.yaml's settings:\n{settings}"
        );
    }

    #[test]
    fn flags_override_the_file() {
        let path = example();
        let args = serve(&[
            "--bind",
            "127.0.0.1:7443",
            "--config",
            path.to_str().unwrap(),
            "--tls-san=other.example.com",
            "-v",
            "4",
        ])
        .unwrap();
        assert_eq!(args.bind, "127.0.0.1:7443".parse::<SocketAddr>().unwrap());
        assert_eq!(args.tls_san, ["other.example.com"]);
        assert_eq!(args.verbosity, 4);
        assert_eq!(args.data_dir, PathBuf::from("/var/lib/kplane"));
        assert_eq!(args.storage_cache_mb, 256);
    }

    #[test]
    fn the_quota_defaults_come_from_the_file_or_the_flags() {
        let args = with_file(
            "quota-objects: 50000\nquota-resource: [secrets=1000, deployments.apps=10]\n",
            &[],
        )
        .unwrap();
        assert_eq!(args.quota_objects, 50000);
        assert_eq!(
            args.quota_resources,
            ["secrets=1000", "deployments.apps=10"]
        );
        // Left out: the flag's default (4 GiB).
        assert_eq!(args.quota_bytes, 4 << 30);
        let args = serve(&[]).unwrap();
        assert_eq!(args.quota_objects, 1_000_000);
        assert!(args.quota_resources.is_empty());
    }

    #[test]
    fn switches_lists_and_empty_files() {
        let args = with_file(
            "auto-create-clusters: true\nstorage-compress-history: false\n\
             disable-admission-plugins: [PodReflection]\nanonymous-auth: false\n",
            &[],
        )
        .unwrap();
        assert!(args.auto_create_clusters);
        assert!(!args.storage_compress_history);
        assert!(!args.anonymous_auth);
        assert_eq!(args.disable_admission_plugins, ["PodReflection"]);
        let args = with_file("auto-create-clusters: false\n", &[]).unwrap();
        assert!(!args.auto_create_clusters);
        let args = with_file("# nothing\n", &[]).unwrap();
        assert_eq!(args.bind, "127.0.0.1:6443".parse::<SocketAddr>().unwrap());
    }

    #[test]
    fn errors_name_the_field() {
        for (text, expected) in [
            ("bind: 127.0.0.1:6443\nbnid: x\n", "unknown field `bnid`"),
            ("data_dir: /x\n", "unknown field `data_dir`"),
            ("config: other.yaml\n", "unknown field `config`"),
            ("bind: not-an-address\n", "field `bind`"),
            (
                "bind: [127.0.0.1:1, 127.0.0.1:2]\n",
                "field `bind`: takes one value",
            ),
            (
                "auto-create-clusters: yes please\n",
                "field `auto-create-clusters`",
            ),
            ("backup-keep: 0\n", "field `backup-keep`"),
            ("tls-san: {a: b}\n", "field `tls-san`"),
            ("- bind\n", "expected a mapping"),
        ] {
            let err = format!("{:#}", with_file(text, &[]).unwrap_err());
            assert!(err.contains(expected), "{text:?}: {err}");
            assert!(err.contains("kplane.yaml"), "{text:?}: {err}");
        }
        let err = format!(
            "{:#}",
            serve(&["--config", "/nonexistent/kplane.yaml"]).unwrap_err()
        );
        assert!(err.contains("/nonexistent/kplane.yaml"), "{err}");
    }
}
