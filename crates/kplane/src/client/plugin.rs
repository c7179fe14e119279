//! Running as a kubectl plugin: the argument vector of `kubectl-ws` and `kubectl-kplane`
//! as `kplane` would have received it ([`plugin_argv`]).

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// How the binary was invoked: the name kubectl's usage should show (`None` for
/// `kplane`), and the arguments as `kplane` would have received them.
pub fn plugin_argv(args: Vec<OsString>) -> (Option<&'static str>, Vec<OsString>) {
    let invoked = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .and_then(OsStr::to_str)
        .map(str::to_owned);
    let rest = args.into_iter().skip(1);
    match invoked.as_deref() {
        Some("kubectl-ws") => (
            Some("kubectl"),
            ["kubectl", "ws"]
                .map(OsString::from)
                .into_iter()
                .chain(rest)
                .collect(),
        ),
        Some("kubectl-kplane") => (
            Some("kubectl kplane"),
            std::iter::once(OsString::from("kubectl kplane"))
                .chain(rest)
                .collect(),
        ),
        _ => (
            None,
            std::iter::once(OsString::from("kplane"))
                .chain(rest)
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_plugin_names_map_to_kplane_commands() {
        let (name, args) = plugin_argv(argv(&["/usr/local/bin/kubectl-ws", "use", "root"]));
        assert_eq!(name, Some("kubectl"));
        assert_eq!(args, argv(&["kubectl", "ws", "use", "root"]));
        let (name, args) = plugin_argv(argv(&["kubectl-kplane", "ws", "current"]));
        assert_eq!(name, Some("kubectl kplane"));
        assert_eq!(args, argv(&["kubectl kplane", "ws", "current"]));
        let (name, args) = plugin_argv(argv(&["./target/debug/kplane", "serve"]));
        assert_eq!(name, None);
        assert_eq!(args, argv(&["kplane", "serve"]));
        let (_, args) = plugin_argv(vec![]);
        assert_eq!(args, argv(&["kplane"]));
    }
}
