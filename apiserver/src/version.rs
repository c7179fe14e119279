//! What `/version` reports: the Kubernetes API level kplane serves (1.32, which kubectl's
//! version dispatcher and skew check read) and the build of kplane that serves it, in the
//! fields of upstream's `version.Info`. The build facts come from whoever builds the
//! server (the `kplane` binary records them at compile time); a library embedder that sets
//! nothing reports its crate version and platform, and empty git fields.

use serde::Serialize;

/// The Kubernetes minor version whose API kplane serves.
pub const KUBERNETES_MINOR: u32 = 32;
/// The Kubernetes patch release kplane's behaviour is checked against.
pub const KUBERNETES_PATCH: u32 = 0;

/// The facts about one build of kplane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// kplane's own version (`0.1.0`).
    pub kplane_version: String,
    /// Full commit hash, empty when unknown.
    pub git_commit: String,
    /// `clean`, `dirty`, or empty when unknown.
    pub git_tree_state: String,
    /// RFC 3339 UTC build time, empty when unknown.
    pub build_date: String,
    /// The compiler, as `rustc --version` prints it (reported as `goVersion`).
    pub rustc_version: String,
    /// `os/arch` with Go's names (`linux/amd64`).
    pub platform: String,
}

impl Default for BuildInfo {
    fn default() -> Self {
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            other => other,
        };
        BuildInfo {
            kplane_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: String::new(),
            git_tree_state: String::new(),
            build_date: String::new(),
            rustc_version: String::new(),
            platform: format!("{}/{arch}", std::env::consts::OS),
        }
    }
}

impl BuildInfo {
    /// `v1.32.<patch>-kplane.<kplane version>[+<short commit>[-dirty]]`: a semantic version
    /// whose major and minor are Kubernetes', so clients' skew checks see 1.32.
    pub fn git_version(&self) -> String {
        let mut v = format!(
            "v1.{KUBERNETES_MINOR}.{KUBERNETES_PATCH}-kplane.{}",
            self.kplane_version
        );
        let short: String = self.git_commit.chars().take(7).collect();
        if !short.is_empty() {
            v.push('+');
            v.push_str(&short);
            if self.git_tree_state == "dirty" {
                v.push_str("-dirty");
            }
        }
        v
    }

    /// The `/version` body: upstream's `version.Info`, fields in its order.
    pub fn to_json(&self) -> String {
        let info = VersionInfo {
            major: "1",
            minor: KUBERNETES_MINOR.to_string(),
            git_version: self.git_version(),
            git_commit: &self.git_commit,
            git_tree_state: &self.git_tree_state,
            build_date: &self.build_date,
            go_version: &self.rustc_version,
            compiler: "rustc",
            platform: &self.platform,
        };
        serde_json::to_string_pretty(&info).unwrap_or_default()
    }
}

/// `k8s.io/apimachinery/pkg/version.Info` on the wire.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionInfo<'a> {
    major: &'a str,
    minor: String,
    git_version: String,
    git_commit: &'a str,
    git_tree_state: &'a str,
    build_date: &'a str,
    go_version: &'a str,
    compiler: &'a str,
    platform: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_version_is_semver_with_the_kubernetes_minor() {
        let mut b = BuildInfo {
            kplane_version: "0.1.0".into(),
            git_commit: "0123456789abcdef0123456789abcdef01234567".into(),
            git_tree_state: "clean".into(),
            ..BuildInfo::default()
        };
        assert_eq!(b.git_version(), "v1.32.0-kplane.0.1.0+0123456");
        b.git_tree_state = "dirty".into();
        assert_eq!(b.git_version(), "v1.32.0-kplane.0.1.0+0123456-dirty");
        b.git_commit.clear();
        assert_eq!(b.git_version(), "v1.32.0-kplane.0.1.0");
        let text = b.to_json();
        assert!(
            text.starts_with("{\n  \"major\": \"1\",\n  \"minor\": \"32\",\n  \"gitVersion\""),
            "{text}"
        );
        let body: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["major"], "1");
        assert_eq!(body["minor"], "32");
        assert_eq!(body["compiler"], "rustc");
    }
}
