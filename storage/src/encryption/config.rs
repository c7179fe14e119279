//! `--encryption-provider-config`: Kubernetes' `EncryptionConfiguration`
//! (`apiserver.config.k8s.io/v1`), read and checked as kube-apiserver checks it
//! (`apiserver/pkg/apis/apiserver/validation/validation.go`), into the [`Rules`] the
//! encrypting store applies. Providers: `aesgcm` (keys of 16, 24 or 32 bytes), `secretbox`
//! (32 bytes) and `identity`; `aescbc` and `kms` are refused with a message saying so.

use std::collections::HashSet;

use base64::Engine as _;
use serde::Deserialize;

use super::providers::{Provider, Sealer};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    resources: Vec<ResourceConfiguration>,
}

#[derive(Deserialize)]
struct ResourceConfiguration {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfiguration>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderConfiguration {
    aesgcm: Option<Keys>,
    aescbc: Option<serde::de::IgnoredAny>,
    secretbox: Option<Keys>,
    identity: Option<serde::de::IgnoredAny>,
    kms: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Keys {
    #[serde(default)]
    keys: Vec<KeyConfiguration>,
}

#[derive(Deserialize)]
struct KeyConfiguration {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

/// Which storage resources one entry covers.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Selector {
    /// `<resource>` (core group) or `<resource>.<group>`.
    Exact { group: String, resource: String },
    /// `*.<group>` (`*.` is the core group).
    Group(String),
    /// `*.*`.
    All,
}

impl Selector {
    fn parse(s: &str) -> Selector {
        match s {
            "*.*" => Selector::All,
            _ => match s.strip_prefix("*.") {
                Some(group) => Selector::Group(group.to_string()),
                None => match s.split_once('.') {
                    Some((resource, group)) => Selector::Exact {
                        group: group.to_string(),
                        resource: resource.to_string(),
                    },
                    None => Selector::Exact {
                        group: String::new(),
                        resource: s.to_string(),
                    },
                },
            },
        }
    }

    /// Whether the storage resource `<group>/<plural>` is covered.
    fn covers(&self, storage_resource: &str) -> bool {
        let (group, resource) = storage_resource
            .split_once('/')
            .unwrap_or(("", storage_resource));
        match self {
            Selector::All => true,
            Selector::Group(g) => g == group,
            Selector::Exact {
                group: g,
                resource: r,
            } => g == group && r == resource,
        }
    }
}

/// What to do with the values of the resources an entry covers: write with the first
/// provider, read with whichever matches.
#[derive(Debug)]
pub(crate) struct Entry {
    selectors: Vec<Selector>,
    pub(crate) providers: Vec<Provider>,
}

/// The encryption configuration: the first entry that covers a resource decides.
#[derive(Debug, Default)]
pub struct Rules {
    pub(crate) entries: Vec<Entry>,
}

impl Rules {
    /// Reads and checks the configuration file `text`; the error names the field at fault.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let file: File = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        if file.kind != "EncryptionConfiguration"
            || file.api_version != "apiserver.config.k8s.io/v1"
        {
            return Err(format!(
                "expected apiVersion apiserver.config.k8s.io/v1 and kind EncryptionConfiguration, got {:?} {:?}",
                file.api_version, file.kind
            ));
        }
        if file.resources.is_empty() {
            return Err("resources: Required value: resources cannot be empty".into());
        }
        let mut entries = Vec::new();
        let mut seen = HashSet::new();
        for (i, r) in file.resources.iter().enumerate() {
            let path = format!("resources[{i}]");
            if r.resources.is_empty() {
                return Err(format!(
                    "{path}.resources: Required value: resources cannot be empty"
                ));
            }
            for (j, name) in r.resources.iter().enumerate() {
                check_resource_name(name).map_err(|why| {
                    format!("{path}.resources[{j}]: Invalid value: {name:?}: {why}")
                })?;
                if !seen.insert(name.clone()) {
                    return Err(format!(
                        "{path}.resources[{j}]: Duplicate value: {name:?}: duplicate resource"
                    ));
                }
            }
            if r.providers.is_empty() {
                return Err(format!(
                    "{path}.providers: Required value: at least one provider must be specified"
                ));
            }
            let providers = r
                .providers
                .iter()
                .enumerate()
                .map(|(j, p)| provider(p).map_err(|e| format!("{path}.providers[{j}]{e}")))
                .collect::<Result<Vec<_>, _>>()?;
            entries.push(Entry {
                selectors: r.resources.iter().map(|s| Selector::parse(s)).collect(),
                providers,
            });
        }
        Ok(Rules { entries })
    }

    /// The entry for a storage resource (`<group>/<plural>`), if any covers it.
    pub(crate) fn entry(&self, storage_resource: &str) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.selectors.iter().any(|s| s.covers(storage_resource)))
    }

    /// Whether values of `storage_resource` go through an encrypting provider.
    pub fn encrypts(&self, storage_resource: &str) -> bool {
        self.entry(storage_resource)
            .and_then(|e| e.providers.first())
            .is_some_and(|p| !matches!(p, Provider::Identity))
    }
}

/// Upstream's resource name rules: lower case, no subresources, a wildcard only as a whole
/// name or group (`*.*`, `*.<group>`, `*.` for the core group).
fn check_resource_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("resource name cannot be empty".into());
    }
    if name != name.to_lowercase() {
        return Err("resource name must be lowercase".into());
    }
    if name.contains('/') {
        return Err("resource name must not contain subresources".into());
    }
    if name.contains('*') && !name.starts_with("*.") {
        return Err("resource name with wildcard must be of the form '*.<group>' or '*.*'".into());
    }
    Ok(())
}

/// One provider entry: exactly one kind.
fn provider(p: &ProviderConfiguration) -> Result<Provider, String> {
    let set = [
        p.aesgcm.is_some(),
        p.aescbc.is_some(),
        p.secretbox.is_some(),
        p.identity.is_some(),
        p.kms.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    match set {
        0 => return Err(": Invalid value: provider does not contain any of the expected providers: KMS, secretbox, AESGCM, AESCBC or identity".into()),
        1 => {}
        _ => return Err(": Invalid value: more than one provider specified in a single element, should split into different list elements".into()),
    }
    if p.aescbc.is_some() {
        return Err(".aescbc: Unsupported value: kplane does not implement aescbc (upstream recommends against it): use aesgcm or secretbox".into());
    }
    if p.kms.is_some() {
        return Err(".kms: Unsupported value: kplane does not implement KMS providers yet".into());
    }
    if p.identity.is_some() {
        return Ok(Provider::Identity);
    }
    let (field, keys, sizes): (&str, &Keys, &[usize]) = match (&p.aesgcm, &p.secretbox) {
        (Some(k), _) => ("aesgcm", k, &[16, 24, 32]),
        (_, Some(k)) => ("secretbox", k, &[32]),
        _ => return Err(": Invalid value: no provider".into()),
    };
    if keys.keys.is_empty() {
        return Err(format!(
            ".{field}.keys: Required value: keys cannot be empty"
        ));
    }
    let mut names = HashSet::new();
    let mut sealers = Vec::new();
    for (i, k) in keys.keys.iter().enumerate() {
        let path = format!(".{field}.keys[{i}]");
        if k.name.is_empty() {
            return Err(format!("{path}.name: Required value: key name is required"));
        }
        if k.name.contains(':') {
            return Err(format!(
                "{path}.name: Invalid value: {:?}: should not contain ':'",
                k.name
            ));
        }
        if !names.insert(k.name.clone()) {
            return Err(format!(
                "{path}.name: Duplicate value: {:?}: duplicate key name",
                k.name
            ));
        }
        if k.secret.is_empty() {
            return Err(format!("{path}.secret: Required value: secret is required"));
        }
        let secret = base64::engine::general_purpose::STANDARD
            .decode(k.secret.trim())
            .map_err(|_| format!("{path}.secret: Invalid value: \"REDACTED\": secret is not a valid base64 string"))?;
        if !sizes.contains(&secret.len()) {
            return Err(format!(
                "{path}.secret: Invalid value: \"REDACTED\": secret is not of the expected length, got {}, expected one of {sizes:?}",
                secret.len()
            ));
        }
        let sealer = match field {
            "aesgcm" => Sealer::aes_gcm(&k.name, &secret),
            _ => Sealer::secretbox(&k.name, &secret),
        }
        .map_err(|e| format!("{path}.secret: {e}"))?;
        sealers.push(sealer);
    }
    Ok(Provider::Keys(sealers))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config(providers: &str) -> String {
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, '*.apps']\n  providers:\n{providers}"
        )
    }

    fn key(n: usize) -> String {
        base64::engine::general_purpose::STANDARD.encode(vec![7u8; n])
    }

    #[test]
    fn resources_are_matched_as_upstream_names_them() {
        let rules = Rules::parse(&config(&format!(
            "  - aesgcm:\n      keys:\n      - name: k1\n        secret: {}\n  - identity: {{}}\n",
            key(32)
        )))
        .unwrap();
        assert!(rules.encrypts("/secrets"));
        assert!(rules.encrypts("apps/deployments"));
        assert!(!rules.encrypts("/configmaps"));
        assert!(!rules.encrypts("batch/jobs"));
        let all = Rules::parse(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.*']\n  providers:\n  - identity: {}\n",
        )
        .unwrap();
        assert!(all.entry("/configmaps").is_some() && !all.encrypts("/configmaps"));
    }

    #[test]
    fn bad_configurations_name_their_fault() {
        let cases = [
            (
                config("").replace("providers:\n", "providers: []\n"),
                "resources[0].providers: Required value",
            ),
            (
                config("  - aesgcm:\n      keys: []\n"),
                "resources[0].providers[0].aesgcm.keys: Required value",
            ),
            (
                config(&format!("  - aesgcm:\n      keys:\n      - name: a:b\n        secret: {}\n", key(32))),
                "should not contain ':'",
            ),
            (
                config(&format!("  - aesgcm:\n      keys:\n      - name: k\n        secret: {}\n", key(20))),
                "secret is not of the expected length, got 20, expected one of [16, 24, 32]",
            ),
            (
                config(&format!("  - secretbox:\n      keys:\n      - name: k\n        secret: {}\n", key(16))),
                "got 16, expected one of [32]",
            ),
            (
                config(&format!("  - aesgcm:\n      keys:\n      - name: k\n        secret: {}\n      - name: k\n        secret: {}\n", key(16), key(16))),
                "duplicate key name",
            ),
            (
                config("  - identity: {}\n    aesgcm:\n      keys: []\n"),
                "more than one provider",
            ),
            (config("  - aescbc:\n      keys: []\n"), "does not implement aescbc"),
            (config("  - kms:\n      name: x\n"), "KMS"),
            (
                "apiVersion: v1\nkind: EncryptionConfiguration\nresources: []\n".to_string(),
                "expected apiVersion",
            ),
        ];
        for (text, want) in cases {
            let err = Rules::parse(&text).unwrap_err();
            assert!(err.contains(want), "{text}\n=> {err}");
        }
        let bad_name = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [Secrets]\n  providers:\n  - identity: {}\n";
        assert!(Rules::parse(bad_name).unwrap_err().contains("lowercase"));
    }
}
