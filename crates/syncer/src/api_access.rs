//! A synced pod's in-cluster API is its own logical cluster. In-cluster configuration
//! (client-go, controller-runtime, kube-rs, the Python client) reads
//! `KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT` and the `token`, `ca.crt` and
//! `namespace` files under [`MOUNT_PATH`]. For each synced Job whose pods get a
//! ServiceAccount token (`automountServiceAccountToken` of the pod spec, else of its
//! ServiceAccount in kplane, is not `false`), the syncer rewrites the host pod template so
//! those lead to kplane: the host's own token is not mounted, a host Secret holding a
//! token of the Job's ServiceAccount issued by kplane (a TokenRequest through the sync
//! endpoint), kplane's CA and the tenant namespace is mounted at [`MOUNT_PATH`] in every
//! container, and the two variables name the address under which host pods reach kplane.
//! kplane serves a request without a `/clusters/` prefix that carries such a token in the
//! token's own logical cluster. The Secret belongs to the host Job (an ownerReference, so
//! the host removes it with the Job) and its token is renewed once half its lifetime is
//! gone; the kubelet updates the mounted file and clients re-read it.

use std::collections::BTreeMap;

use base64::Engine as _;
use chrono::{DateTime, Duration as ChronoDuration, SecondsFormat, Utc};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{json, Value};

use crate::error::{is_status, Error, KubeContext as _, Result};
pub use crate::pod_api::PodApi;
use crate::state::{annotation, ObjectKey, State};

/// Where a pod finds its ServiceAccount credentials.
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The name of the volume the syncer adds (reserved in synced pod templates).
pub const VOLUME: &str = "kplane-api-access";
/// The host Secret of a host Job is named `<host Job name>` + this.
pub const SECRET_SUFFIX: &str = "-kplane-api-access";
/// Annotation of the host Secret: when its token expires (RFC 3339).
pub const EXPIRES_ANNOTATION: &str = "sync.kplane.io/token-expires";
/// Annotation of the host Secret: the source Job it serves.
pub const FOR_ANNOTATION: &str = "sync.kplane.io/api-access-for";
/// The lifetime of the tokens the syncer requests (the TokenRequest default).
pub const TOKEN_SECONDS: i64 = 3600;

/// The ServiceAccount a pod spec runs as (`default` when unset).
pub fn service_account(pod_spec: &Value) -> &str {
    pod_spec
        .get("serviceAccountName")
        .or_else(|| pod_spec.get("serviceAccount"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
}

/// Whether pods of `pod_spec` get a token, as upstream decides it: the pod spec's
/// `automountServiceAccountToken` when set, else the ServiceAccount's, else yes.
pub fn wants_token(pod_spec: &Value, sa_automount: Option<bool>) -> bool {
    pod_spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or(sa_automount)
        .unwrap_or(true)
}

/// Whether a host pod template already has the syncer's volume.
pub fn has_access(pod_spec: &Value) -> bool {
    pod_spec
        .get("volumes")
        .and_then(Value::as_array)
        .is_some_and(|v| v.iter().any(|v| v["name"] == VOLUME))
}

fn set_env(container: &mut Value, name: &str, value: &str) {
    let Some(c) = container.as_object_mut() else {
        return;
    };
    let env = c.entry("env").or_insert_with(|| json!([]));
    if let Some(list) = env.as_array_mut() {
        list.retain(|e| e["name"] != name);
        list.push(json!({"name": name, "value": value}));
    }
}

/// Rewrites a host pod spec: the host's own token is never mounted
/// (`automountServiceAccountToken: false`); with `secret`, the Secret is mounted at
/// [`MOUNT_PATH`] in every container and init container that does not mount something
/// there itself, and `KUBERNETES_SERVICE_HOST`/`_PORT` name `api`.
pub fn rewrite(pod_spec: &mut Value, api: &PodApi, secret: Option<&str>) {
    let Some(spec) = pod_spec.as_object_mut() else {
        return;
    };
    spec.insert("automountServiceAccountToken".into(), json!(false));
    let Some(secret) = secret else {
        return;
    };
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if let Some(v) = volumes.as_array_mut() {
        v.retain(|v| v["name"] != VOLUME);
        v.push(json!({"name": VOLUME, "secret": {"secretName": secret}}));
    }
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut() {
            let mounted = c
                .get("volumeMounts")
                .and_then(Value::as_array)
                .is_some_and(|m| {
                    m.iter().any(|m| {
                        m["mountPath"].as_str().map(|p| p.trim_end_matches('/')) == Some(MOUNT_PATH)
                    })
                });
            if !mounted {
                if let Some(obj) = c.as_object_mut() {
                    let mounts = obj.entry("volumeMounts").or_insert_with(|| json!([]));
                    if let Some(m) = mounts.as_array_mut() {
                        m.push(json!({"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": true}));
                    }
                }
            }
            set_env(c, "KUBERNETES_SERVICE_HOST", &api.host);
            set_env(c, "KUBERNETES_SERVICE_PORT", &api.port);
        }
    }
}

/// Whether a token expiring at `expires` (RFC 3339) is due for renewal at `now`: unknown,
/// unparsable, or less than half of [`TOKEN_SECONDS`] left.
pub fn renewal_due(expires: Option<&str>, now: DateTime<Utc>) -> bool {
    match expires.and_then(|e| DateTime::parse_from_rfc3339(e).ok()) {
        Some(t) => t.with_timezone(&Utc) - now < ChronoDuration::seconds(TOKEN_SECONDS / 2),
        None => true,
    }
}

/// The ServiceAccount's `automountServiceAccountToken` in kplane (read through the sync
/// endpoint, which serves the ServiceAccount a synced object runs as).
pub async fn service_account_automount(
    state: &State,
    key: &ObjectKey,
    name: &str,
) -> Result<Option<bool>> {
    let api: Api<ServiceAccount> =
        Api::namespaced(state.kplane.cluster(&key.cluster)?, &key.namespace);
    let sa = api.get_opt(name).await.ctx(|| {
        format!(
            "reading ServiceAccount {}/{name} in {}",
            key.namespace, key.cluster
        )
    })?;
    Ok(sa.and_then(|sa| sa.automount_service_account_token))
}

/// A token of ServiceAccount `name` of `key`'s namespace and cluster, issued by kplane:
/// the token and its expiry.
async fn request_token(state: &State, key: &ObjectKey, name: &str) -> Result<(String, String)> {
    let api: Api<ServiceAccount> =
        Api::namespaced(state.kplane.cluster(&key.cluster)?, &key.namespace);
    let body = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS},
    });
    let out: Value = api
        .create_subresource("token", name, &PostParams::default(), &body)
        .await
        .ctx(|| {
            format!(
                "requesting a token of ServiceAccount {}/{name} in {}",
                key.namespace, key.cluster
            )
        })?;
    let token = out
        .pointer("/status/token")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Retry("the TokenRequest answer has no token".into()))?;
    let expires = out
        .pointer("/status/expirationTimestamp")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            (Utc::now() + ChronoDuration::seconds(TOKEN_SECONDS))
                .to_rfc3339_opts(SecondsFormat::Secs, true)
        });
    Ok((token.to_owned(), expires))
}

/// The host Secret of the host Job `host_name` (uid `host_uid`) in `ns`: created, or its
/// token renewed when due; nothing when it is fresh.
pub async fn ensure_secret(
    state: &State,
    api_cfg: &PodApi,
    key: &ObjectKey,
    sa: &str,
    (ns, host_name, host_uid): (&str, &str, &str),
) -> Result<()> {
    let name = format!("{host_name}{SECRET_SUFFIX}");
    let secrets: Api<DynamicObject> = Api::namespaced_with(
        state.host.clone(),
        ns,
        &crate::copies::core_resource(kplane_types::pod_refs::RefKind::Secret),
    );
    let what = || format!("Secret {ns}/{name} on the host");
    let have = secrets
        .get_opt(&name)
        .await
        .ctx(|| format!("reading {}", what()))?
        .map(|s| serde_json::to_value(s).unwrap_or(Value::Null));
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    if let Some(have) = &have {
        // A Secret of an earlier host Job of the same name goes with that Job.
        let owned = have
            .pointer("/metadata/ownerReferences/0/uid")
            .and_then(Value::as_str)
            == Some(host_uid);
        let fresh = owned
            && !renewal_due(annotation(have, EXPIRES_ANNOTATION), Utc::now())
            && have.pointer("/data/ca.crt").and_then(Value::as_str)
                == Some(b64(&api_cfg.ca_pem).as_str())
            && have.pointer("/data/namespace").and_then(Value::as_str)
                == Some(b64(&key.namespace).as_str());
        if fresh {
            return Ok(());
        }
    }
    let (token, expires) = request_token(state, key, sa).await?;
    let (labels, mut annotations): (BTreeMap<_, _>, BTreeMap<_, _>) =
        state
            .target
            .host_marks(&key.cluster, &key.namespace, "", "");
    annotations.insert(EXPIRES_ANNOTATION.to_owned(), expires);
    annotations.insert(FOR_ANNOTATION.to_owned(), key.name.clone());
    let mut want = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name, "namespace": ns, "labels": labels, "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": "batch/v1", "kind": "Job", "name": host_name, "uid": host_uid,
            }],
        },
        "type": "Opaque",
        "data": {
            "token": b64(&token),
            "ca.crt": b64(&api_cfg.ca_pem),
            "namespace": b64(&key.namespace),
        },
    });
    match have {
        None => {
            let obj: DynamicObject = serde_json::from_value(want)
                .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
            match secrets.create(&PostParams::default(), &obj).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 409) => {
                    return Err(Error::Retry(format!("{} appeared meanwhile", what())))
                }
                Err(e) => return Err(e).ctx(|| format!("creating {}", what())),
            }
            tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                host_namespace = %ns, host_name = %name, service_account = %sa,
                "issued the in-cluster API token");
        }
        Some(have) => {
            if annotation(&have, crate::naming::TARGET_ANNOTATION)
                != Some(state.target.annotation().as_str())
            {
                tracing::warn!(host_namespace = %ns, host_name = %name,
                    "a host Secret of that name exists and was not made by this syncer; not overwritten");
                return Ok(());
            }
            want["metadata"]["resourceVersion"] = have
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null);
            let obj: DynamicObject = serde_json::from_value(want)
                .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
            match secrets.replace(&name, &PostParams::default(), &obj).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 409) => {
                    return Err(Error::Retry(format!("{} changed meanwhile", what())))
                }
                Err(e) => return Err(e).ctx(|| format!("updating {}", what())),
            }
            tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                host_namespace = %ns, host_name = %name, service_account = %sa,
                "renewed the in-cluster API token");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> PodApi {
        PodApi {
            host: "kplane.kplane.svc".into(),
            port: "6443".into(),
            ca_pem: "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n".into(),
        }
    }

    #[test]
    fn the_pod_api_comes_from_the_kubeconfig_or_the_flag() -> Result<()> {
        let mut config = kube::Config::new(
            "https://10.0.0.7:6443/clusters/root:acme"
                .parse::<http::Uri>()
                .map_err(|e| Error::Config(e.to_string()))?,
        );
        config.root_cert = Some(vec![vec![1, 2, 3]]);
        let a = PodApi::new(None, &config)?;
        assert_eq!((a.host.as_str(), a.port.as_str()), ("10.0.0.7", "6443"));
        assert_eq!(
            a.ca_pem,
            "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n"
        );
        let b = PodApi::new(Some("https://kplane.kplane.svc"), &config)?;
        assert_eq!(
            (b.host.as_str(), b.port.as_str()),
            ("kplane.kplane.svc", "443")
        );
        let c = PodApi::new(Some("https://[fd00::1]:8443"), &config)?;
        assert_eq!((c.host.as_str(), c.port.as_str()), ("fd00::1", "8443"));
        assert!(PodApi::new(Some("/just/a/path"), &config).is_err());
        Ok(())
    }

    #[test]
    fn automount_follows_the_pod_spec_then_the_service_account() {
        let plain = json!({"containers": []});
        assert!(wants_token(&plain, None));
        assert!(wants_token(&plain, Some(true)));
        assert!(!wants_token(&plain, Some(false)));
        let off = json!({"automountServiceAccountToken": false});
        assert!(!wants_token(&off, Some(true)));
        let on = json!({"automountServiceAccountToken": true});
        assert!(wants_token(&on, Some(false)));
        assert_eq!(service_account(&plain), "default");
        assert_eq!(
            service_account(&json!({"serviceAccountName": "runner"})),
            "runner"
        );
        assert_eq!(service_account(&json!({"serviceAccount": "old"})), "old");
    }

    #[test]
    fn the_pod_template_leads_to_kplane() {
        let mut spec = json!({
            "serviceAccountName": "runner",
            "volumes": [{"name": "data", "emptyDir": {}}],
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [
                {"name": "main", "image": "busybox",
                 "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": "10.96.0.1"}, {"name": "A", "value": "b"}],
                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                {"name": "own", "image": "busybox",
                 "volumeMounts": [{"name": "data", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount/"}]}
            ]
        });
        rewrite(&mut spec, &api(), Some("pi-kplane-api-access"));
        assert_eq!(spec["automountServiceAccountToken"], false);
        assert!(has_access(&spec));
        assert_eq!(
            spec["volumes"][1],
            json!({"name": VOLUME, "secret": {"secretName": "pi-kplane-api-access"}})
        );
        for c in [&spec["initContainers"][0], &spec["containers"][0]] {
            let mounts = c["volumeMounts"].as_array().cloned().unwrap_or_default();
            assert!(
                mounts
                    .contains(&json!({"name": VOLUME, "mountPath": MOUNT_PATH, "readOnly": true})),
                "{c}"
            );
            let env = c["env"].as_array().cloned().unwrap_or_default();
            let get = |n: &str| -> Vec<&Value> { env.iter().filter(|e| e["name"] == n).collect() };
            assert_eq!(
                get("KUBERNETES_SERVICE_HOST"),
                [&json!({"name": "KUBERNETES_SERVICE_HOST", "value": "kplane.kplane.svc"})]
            );
            assert_eq!(
                get("KUBERNETES_SERVICE_PORT"),
                [&json!({"name": "KUBERNETES_SERVICE_PORT", "value": "6443"})]
            );
        }
        assert_eq!(
            spec["containers"][0]["env"][0],
            json!({"name": "A", "value": "b"})
        );
        // A container that mounts something of its own there keeps it.
        assert_eq!(
            spec["containers"][1]["volumeMounts"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        // Rewriting again changes nothing.
        let again = {
            let mut s = spec.clone();
            rewrite(&mut s, &api(), Some("pi-kplane-api-access"));
            s
        };
        assert_eq!(again, spec);

        // Without a token: no volume, no variables, and no host token either.
        let mut off = json!({"automountServiceAccountToken": false, "containers": [{"name": "m"}]});
        rewrite(&mut off, &api(), None);
        assert_eq!(
            off,
            json!({"automountServiceAccountToken": false, "containers": [{"name": "m"}]})
        );
        assert!(!has_access(&off));
    }

    #[test]
    fn tokens_are_renewed_past_half_their_lifetime() {
        let now = Utc::now();
        let at = |secs: i64| {
            (now + ChronoDuration::seconds(secs)).to_rfc3339_opts(SecondsFormat::Secs, true)
        };
        assert!(!renewal_due(Some(&at(TOKEN_SECONDS)), now));
        assert!(!renewal_due(Some(&at(TOKEN_SECONDS / 2 + 5)), now));
        assert!(renewal_due(Some(&at(TOKEN_SECONDS / 2 - 5)), now));
        assert!(renewal_due(Some(&at(-10)), now));
        assert!(renewal_due(None, now));
        assert!(renewal_due(Some("not a time"), now));
    }
}
