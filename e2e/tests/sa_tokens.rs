//! ServiceAccount tokens with the real kubectl: `kubectl create token` in a workspace gives a
//! JWT that `kubectl auth whoami` shows as the ServiceAccount (with its logical cluster),
//! which the server's published keys verify offline (`/.well-known/openid-configuration`,
//! `/openid/v1/jwks` of that cluster); wrong-audience and tampered tokens are 401, and
//! deleting the ServiceAccount makes its token 401. TokenRequest validation answers as
//! kube-apiserver does. (Expiry is unit-tested: the shortest token lives 10 minutes.)

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::KplaneServer;
use serde_json::Value;

const CLUSTER: &str = "root:acme";

/// One `curl -X method` of `path` with `token`: (status code, content type, JSON body).
fn raw(
    server: &KplaneServer,
    token: &str,
    method: &str,
    path: &str,
) -> Result<(u16, String, Value)> {
    let dir = tempfile::tempdir()?;
    let body = dir.path().join("body");
    let out = std::process::Command::new("curl")
        .args([
            "-sk",
            "-X",
            method,
            "-w",
            "%{http_code} %{content_type}",
            "-o",
        ])
        .arg(&body)
        .arg("-H")
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("{}{path}", server.base_url()))
        .output()?;
    ensure!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = String::from_utf8_lossy(&out.stdout).to_string();
    let (code, content_type) = written.split_once(' ').unwrap_or((written.as_str(), ""));
    let body = std::fs::read(&body).unwrap_or_default();
    Ok((
        code.trim().parse()?,
        content_type.to_string(),
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    ))
}

/// `kubectl auth whoami -o json` in the workspace with `token`.
fn whoami(server: &KplaneServer, token: &str) -> Result<kplane_e2e::KubectlOutput> {
    server
        .kubectl_for(CLUSTER)?
        .run(&["--token", token, "auth", "whoami", "-o", "json"])
}

fn check_unauthorized(server: &KplaneServer, token: &str, what: &str) -> Result<()> {
    let out = whoami(server, token)?;
    ensure!(!out.success(), "{what}: whoami succeeded: {}", out.stdout);
    ensure!(
        out.stderr.contains("Unauthorized"),
        "{what}: {}",
        out.stderr
    );
    let (code, _, status) = raw(
        server,
        token,
        "GET",
        &format!("/clusters/{CLUSTER}/api/v1/namespaces/default/configmaps"),
    )?;
    ensure!(code == 401, "{what}: {code} {status}");
    ensure!(
        status["kind"] == "Status" && status["reason"] == "Unauthorized",
        "{what}: {status}"
    );
    Ok(())
}

#[test]
fn service_account_tokens_from_kubectl() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspace(CLUSTER)?;
    let kubectl = server.kubectl_for(CLUSTER)?;
    kubectl.ok(&["create", "serviceaccount", "builder"])?;
    let token = kubectl
        .ok(&["create", "token", "builder", "--duration", "10m"])?
        .trim()
        .to_string();

    // whoami with the token: the ServiceAccount, its groups and its logical cluster.
    let out = whoami(&server, &token)?;
    ensure!(out.success(), "whoami: {}", out.stderr);
    let review: Value = serde_json::from_str(&out.stdout)?;
    let user = &review["status"]["userInfo"];
    ensure!(
        user["username"] == "system:serviceaccount:default:builder",
        "{review}"
    );
    let groups: Vec<&str> = user["groups"]
        .as_array()
        .context("groups")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    ensure!(
        groups
            == [
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                "system:authenticated"
            ],
        "{review}"
    );
    ensure!(
        user["extra"]["authentication.kplane.io/cluster"] == serde_json::json!([CLUSTER]),
        "{review}"
    );
    let sa: Value = serde_json::from_str(&kubectl.ok(&["get", "sa", "builder", "-o", "json"])?)?;
    ensure!(user["uid"] == sa["metadata"]["uid"], "{review} vs {sa}");

    // TokenReview (as the admin) agrees.
    let tr = format!(
        "{{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{{\"token\":\"{token}\"}}}}"
    );
    let out = kubectl.run_stdin(&["create", "-f", "-", "-o", "json"], &tr)?;
    ensure!(out.success(), "{}", out.stderr);
    let tr: Value = serde_json::from_str(&out.stdout)?;
    ensure!(tr["status"]["authenticated"] == true, "{tr}");

    // Offline verification with the cluster's published keys.
    let (code, ct, config) = raw(
        &server,
        server.token(),
        "GET",
        &format!("/clusters/{CLUSTER}/.well-known/openid-configuration"),
    )?;
    ensure!(
        code == 200 && ct == "application/json",
        "{code} {ct} {config}"
    );
    let issuer = format!("{}/clusters/{CLUSTER}", server.base_url());
    ensure!(config["issuer"] == issuer.as_str(), "{config}");
    ensure!(
        config["jwks_uri"] == format!("{issuer}/openid/v1/jwks").as_str(),
        "{config}"
    );
    ensure!(
        config["response_types_supported"] == serde_json::json!(["id_token"])
            && config["subject_types_supported"] == serde_json::json!(["public"]),
        "{config}"
    );
    let (code, ct, jwks) = raw(
        &server,
        server.token(),
        "GET",
        &format!("/clusters/{CLUSTER}/openid/v1/jwks"),
    )?;
    ensure!(
        code == 200 && ct == "application/jwk-set+json",
        "{code} {ct}"
    );
    let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_value(jwks)?;
    let header = jsonwebtoken::decode_header(&token)?;
    let jwk = jwks
        .find(header.kid.as_deref().context("no kid")?)
        .context("the token's key is not published")?;
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk)?;
    let mut validation = jsonwebtoken::Validation::new(header.alg);
    validation.set_audience(&[issuer.as_str()]);
    validation.set_issuer(&[issuer.as_str()]);
    let claims = jsonwebtoken::decode::<Value>(&token, &key, &validation)?.claims;
    ensure!(
        claims["sub"] == "system:serviceaccount:default:builder"
            && claims["kubernetes.io"]["serviceaccount"]["uid"] == sa["metadata"]["uid"]
            && claims["kplane.io/cluster"] == CLUSTER,
        "{claims}"
    );
    ensure!(
        claims["exp"].as_i64().unwrap_or(0) - claims["iat"].as_i64().unwrap_or(0) == 600,
        "{claims}"
    );

    // Another audience than the API's, and a tampered token: 401.
    let other = kubectl
        .ok(&["create", "token", "builder", "--audience", "vault"])?
        .trim()
        .to_string();
    check_unauthorized(&server, &other, "wrong audience")?;
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    let mut payload: Value = serde_json::from_slice(&decode_b64url(&parts[1])?)?;
    payload["kubernetes.io"]["serviceaccount"]["name"] = "default".into();
    payload["sub"] = "system:serviceaccount:default:default".into();
    parts[1] = encode_b64url(payload.to_string().as_bytes());
    check_unauthorized(&server, &parts.join("."), "tampered")?;

    // TokenRequest validation, as kube-apiserver answers it.
    let out = kubectl.run(&["create", "token", "builder", "--duration", "1m"])?;
    ensure!(
        out.stderr.contains(
            "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        ),
        "{}",
        out.stderr
    );
    let out = kubectl.run(&["create", "token", "nobody"])?;
    ensure!(
        out.stderr.contains("serviceaccounts \"nobody\" not found"),
        "{}",
        out.stderr
    );

    // Deleting the ServiceAccount revokes its tokens (the cache follows a watch: allow it
    // to catch up, bounded).
    kubectl.ok(&["delete", "serviceaccount", "builder"])?;
    let mut revoked = false;
    for _ in 0..100 {
        if !whoami(&server, &token)?.success() {
            revoked = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    ensure!(
        revoked,
        "the deleted ServiceAccount's token still authenticates"
    );
    check_unauthorized(&server, &token, "deleted ServiceAccount")?;
    // A new ServiceAccount of the same name (new uid) does not revive it.
    kubectl.ok(&["create", "serviceaccount", "builder"])?;
    check_unauthorized(&server, &token, "recreated ServiceAccount")?;
    Ok(())
}

/// Issuer discovery of a cluster path that names no workspace answers the same way (it
/// tells nothing about which clusters exist); the wildcard has no issuer.
#[test]
fn issuer_discovery_per_cluster() -> Result<()> {
    let server = KplaneServer::start()?;
    let (code, ct, root) = raw(
        &server,
        server.token(),
        "GET",
        "/.well-known/openid-configuration",
    )?;
    ensure!(code == 200 && ct == "application/json", "{code} {root}");
    ensure!(
        root["issuer"] == format!("{}/clusters/root", server.base_url()).as_str(),
        "{root}"
    );
    let (code, _, other) = raw(
        &server,
        server.token(),
        "GET",
        "/clusters/root:nowhere/.well-known/openid-configuration",
    )?;
    ensure!(code == 200, "{code} {other}");
    ensure!(
        other["issuer"] == format!("{}/clusters/root:nowhere", server.base_url()).as_str(),
        "{other}"
    );
    let (code, _, _) = raw(&server, server.token(), "GET", "/clusters/*/openid/v1/jwks")?;
    ensure!(code == 404, "wildcard: {code}");
    Ok(())
}

fn decode_b64url(s: &str) -> Result<Vec<u8>> {
    let std: String = s
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    let padded = format!("{std}{}", "=".repeat((4 - std.len() % 4) % 4));
    kplane_e2e::base64_decode(&padded)
}

fn encode_b64url(bytes: &[u8]) -> String {
    kplane_e2e::base64_encode(bytes)
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect()
}
