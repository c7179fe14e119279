//! OIDC with the real kubectl: a server started with `--oidc-issuer-url`,
//! `--oidc-client-id`, `--oidc-groups-claim`, `--oidc-groups-prefix` and a JWKS file
//! (`--oidc-jwks-file`) accepts an ID token signed in the test: `kubectl auth whoami` shows
//! the user prefixed with the issuer (`<issuer>#<sub>`) and the prefixed groups. Tokens for
//! another audience, of another issuer, expired, not yet valid or tampered with are 401.

use anyhow::{ensure, Context as _, Result};
use base64::Engine as _;
use kplane_e2e::{KplaneServer, ServerOptions};
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

const ISSUER: &str = "https://idp.example.test";
const KID: &str = "test-key";

/// A P-256 key made here: its encoding key and its JWKS.
fn key() -> Result<(jsonwebtoken::EncodingKey, Value)> {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let point = pair.public_key().as_ref();
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig",
        "kid": KID, "x": b64(&point[1..33]), "y": b64(&point[33..65])}]});
    Ok((jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref()), jwks))
}

fn sign(key: &jsonwebtoken::EncodingKey, claims: &Value) -> Result<String> {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some(KID.into());
    Ok(jsonwebtoken::encode(&header, claims, key)?)
}

#[test]
fn oidc_id_tokens_authenticate_with_prefixes() -> Result<()> {
    let (key, jwks) = key()?;
    let dir = tempfile::tempdir()?;
    let jwks_file = dir.path().join("jwks.json");
    std::fs::write(&jwks_file, jwks.to_string())?;
    let server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--oidc-issuer-url")
            .arg(ISSUER)
            .arg("--oidc-client-id")
            .arg("kplane")
            .arg("--oidc-groups-claim")
            .arg("groups")
            .arg("--oidc-groups-prefix")
            .arg("oidc:")
            .arg("--oidc-jwks-file")
            .arg(&jwks_file),
    )?;
    let kubectl = server.kubectl_for("root")?;
    let now = chrono::Utc::now().timestamp();
    let claims = |extra: Value| {
        let mut c = json!({"iss": ISSUER, "aud": "kplane", "sub": "alice",
            "groups": ["dev", "ops"], "iat": now, "exp": now + 600});
        for (k, v) in extra.as_object().into_iter().flatten() {
            c[k] = v.clone();
        }
        c
    };
    let whoami = |token: &str| kubectl.run(&["--token", token, "auth", "whoami", "-o", "json"]);

    let good = sign(&key, &claims(json!({})))?;
    let out = whoami(&good)?;
    ensure!(out.success(), "whoami: {}", out.stderr);
    let review: Value = serde_json::from_str(&out.stdout)?;
    let user = &review["status"]["userInfo"];
    ensure!(user["username"] == format!("{ISSUER}#alice"), "{review}");
    let groups: Vec<&str> = user["groups"]
        .as_array()
        .context("groups")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    ensure!(
        groups == ["oidc:dev", "oidc:ops", "system:authenticated"],
        "{review}"
    );
    // Authenticated is not authorized: no binding names the user.
    let out = kubectl.run(&["--token", &good, "get", "configmaps"])?;
    ensure!(
        !out.success() && out.stderr.contains("forbidden"),
        "{}",
        out.stderr
    );

    let mut tampered: Vec<String> = good.split('.').map(str::to_string).collect();
    let evil = sign(&key, &claims(json!({"sub": "admin"})))?;
    tampered[1] = evil.split('.').nth(1).context("payload")?.to_string();
    let bad = [
        (
            "wrong audience",
            sign(&key, &claims(json!({"aud": "other"})))?,
        ),
        (
            "other issuer",
            sign(&key, &claims(json!({"iss": "https://evil.example.test"})))?,
        ),
        ("expired", sign(&key, &claims(json!({"exp": now - 120})))?),
        (
            "not yet valid",
            sign(&key, &claims(json!({"nbf": now + 3600})))?,
        ),
        ("tampered", tampered.join(".")),
    ];
    for (what, token) in bad {
        let out = whoami(&token)?;
        ensure!(!out.success(), "{what}: whoami succeeded: {}", out.stdout);
        ensure!(
            out.stderr.contains("Unauthorized"),
            "{what}: {}",
            out.stderr
        );
    }
    Ok(())
}
