//! ServiceAccount token keys: the signing key (created in the data directory on first
//! start, or read from `--service-account-signing-key-file`), the verification keys (the
//! signing key's public half plus every `--service-account-key-file`, so tokens signed by a
//! retired key keep verifying while its public key is listed), and their JWKS form.
//!
//! Keys are ECDSA P-256 (ES256) or RSA (RS256), as kube-apiserver signs with. Files are PEM:
//! PKCS#8 private keys (`PRIVATE KEY`, EC or RSA), PKCS#1 RSA private keys
//! (`RSA PRIVATE KEY`) and public keys (`PUBLIC KEY`, SubjectPublicKeyInfo). A key's id
//! (`kid`) is upstream's: the unpadded base64url SHA-256 of its SubjectPublicKeyInfo DER, so
//! the same key has the same id here and in a kube-apiserver.
//!
//! Signing and verification are `jsonwebtoken`'s (over `ring`); this module only reads key
//! files and describes public keys.

use std::path::Path;

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use ring::signature::{EcdsaKeyPair, KeyPair as _, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use simple_asn1::{oid, ASN1Block, BigInt, BigUint};

/// Why key material could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

fn err(s: impl Into<String>) -> KeyError {
    KeyError(s.into())
}

/// A public key's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
enum PublicParams {
    /// P-256: the uncompressed point (`04 || x || y`).
    Ec(Vec<u8>),
    /// RSA: modulus and exponent, big-endian without leading zeros.
    Rsa { n: Vec<u8>, e: Vec<u8> },
}

/// A key tokens are verified with.
#[derive(Clone)]
pub struct VerificationKey {
    pub alg: Algorithm,
    pub kid: String,
    pub decoding: DecodingKey,
    params: PublicParams,
}

impl std::fmt::Debug for VerificationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerificationKey")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl VerificationKey {
    fn new(params: PublicParams) -> Result<VerificationKey, KeyError> {
        let spki = spki_der(&params)?;
        let kid = b64url(&Sha256::digest(&spki));
        let (alg, decoding) = match &params {
            PublicParams::Ec(point) => (Algorithm::ES256, DecodingKey::from_ec_der(point)),
            PublicParams::Rsa { n, e } => {
                (Algorithm::RS256, DecodingKey::from_rsa_raw_components(n, e))
            }
        };
        Ok(VerificationKey {
            alg,
            kid,
            decoding,
            params,
        })
    }

    /// A key of a JSON Web Key Set (an OIDC provider's): EC P-256 (`ES256`) or RSA
    /// (`RS256`); the JWK's `kid` names it when it has one. Keys for anything but
    /// signatures (`use` other than `sig`) or of another algorithm are refused.
    pub fn from_jwk(jwk: &Value) -> Result<VerificationKey, KeyError> {
        let field = |name: &str| -> Result<Vec<u8>, KeyError> {
            let v = jwk
                .get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| err(format!("JWK without {name:?}")))?;
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(v.trim_end_matches('='))
                .map_err(|e| err(format!("JWK {name:?} is not base64url: {e}")))
        };
        if let Some(u) = jwk.get("use").and_then(Value::as_str) {
            if u != "sig" {
                return Err(err(format!("JWK for {u:?}, not signatures")));
            }
        }
        let alg = jwk.get("alg").and_then(Value::as_str);
        let params = match jwk.get("kty").and_then(Value::as_str) {
            Some("EC") => {
                if jwk.get("crv").and_then(Value::as_str) != Some("P-256")
                    || !matches!(alg, None | Some("ES256"))
                {
                    return Err(err("EC JWK that is not P-256 / ES256"));
                }
                let (x, y) = (field("x")?, field("y")?);
                if x.len() != 32 || y.len() != 32 {
                    return Err(err("EC JWK with coordinates of the wrong size"));
                }
                let mut point = vec![4u8];
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                PublicParams::Ec(point)
            }
            Some("RSA") => {
                if !matches!(alg, None | Some("RS256")) {
                    return Err(err(format!("RSA JWK for {alg:?}, not RS256")));
                }
                let strip = |mut b: Vec<u8>| {
                    let zeros = b.iter().take_while(|x| **x == 0).count();
                    b.drain(..zeros);
                    b
                };
                PublicParams::Rsa {
                    n: strip(field("n")?),
                    e: strip(field("e")?),
                }
            }
            other => return Err(err(format!("JWK of unsupported key type {other:?}"))),
        };
        let mut key = VerificationKey::new(params)?;
        if let Some(kid) = jwk.get("kid").and_then(Value::as_str) {
            key.kid = kid.to_string();
        }
        Ok(key)
    }

    /// The key as a JSON Web Key, as kube-apiserver's `/openid/v1/jwks` lists it.
    pub fn jwk(&self) -> Value {
        match &self.params {
            PublicParams::Ec(point) => json!({
                "use": "sig",
                "kty": "EC",
                "kid": self.kid,
                "crv": "P-256",
                "alg": "ES256",
                "x": b64url(&point[1..33]),
                "y": b64url(&point[33..65]),
            }),
            PublicParams::Rsa { n, e } => json!({
                "use": "sig",
                "kty": "RSA",
                "kid": self.kid,
                "alg": "RS256",
                "n": b64url(n),
                "e": b64url(e),
            }),
        }
    }
}

/// The key tokens are signed with.
#[derive(Clone)]
pub struct SigningKey {
    pub alg: Algorithm,
    pub kid: String,
    pub encoding: EncodingKey,
    /// Its public half.
    pub public: VerificationKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// The signing key and every verification key (the signing key's public half first).
#[derive(Clone, Debug)]
pub struct KeySet {
    pub signing: SigningKey,
    pub verifying: Vec<VerificationKey>,
}

impl KeySet {
    /// The signing key plus `extra` verification keys (duplicates of a key already listed
    /// are dropped).
    pub fn new(signing: SigningKey, extra: Vec<VerificationKey>) -> KeySet {
        let mut verifying = vec![signing.public.clone()];
        for k in extra {
            if !verifying.iter().any(|v| v.kid == k.kid) {
                verifying.push(k);
            }
        }
        KeySet { signing, verifying }
    }

    /// The JWKS document (`{"keys": [...]}`).
    pub fn jwks(&self) -> Value {
        json!({"keys": self.verifying.iter().map(VerificationKey::jwk).collect::<Vec<_>>()})
    }

    /// The algorithms of the verification keys, for `id_token_signing_alg_values_supported`.
    pub fn algorithms(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for k in &self.verifying {
            let a = match k.alg {
                Algorithm::RS256 => "RS256",
                _ => "ES256",
            };
            if !out.contains(&a) {
                out.push(a);
            }
        }
        out
    }
}

/// The usable keys of a JWKS document (`{"keys": [...]}`); keys of other types or
/// algorithms are skipped, as OIDC clients do. No usable key at all is an error.
pub fn keys_from_jwks(doc: &[u8]) -> Result<Vec<VerificationKey>, KeyError> {
    let v: Value =
        serde_json::from_slice(doc).map_err(|e| err(format!("JWKS is not JSON: {e}")))?;
    let list = v
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| err("JWKS without a \"keys\" list"))?;
    let mut out = Vec::new();
    for jwk in list {
        match VerificationKey::from_jwk(jwk) {
            Ok(k) => out.push(k),
            Err(e) => tracing::debug!(error = %e, "skipping a JWK"),
        }
    }
    if out.is_empty() {
        return Err(err("JWKS has no usable ES256 or RS256 signing key"));
    }
    Ok(out)
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A new P-256 private key, PKCS#8 PEM.
pub fn generate_ec_pem() -> Result<String, KeyError> {
    let rng = ring::rand::SystemRandom::new();
    let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map_err(|_| err("generating a P-256 key failed"))?;
    Ok(pem_encode("PRIVATE KEY", doc.as_ref()))
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The PEM blocks of a key file this module understands.
enum Block {
    Pkcs8(Vec<u8>),
    Pkcs1(Vec<u8>),
    Public(Vec<u8>),
}

fn blocks(pem: &[u8], what: &str) -> Result<Vec<Block>, KeyError> {
    let mut out = Vec::new();
    for item in rustls::pki_types::pem::PemObject::pem_slice_iter(pem) {
        let item: rustls_pemfile_item::Item =
            item.map_err(|e| err(format!("{what}: not PEM: {e}")))?;
        match item {
            rustls_pemfile_item::Item::Pkcs8(d) => out.push(Block::Pkcs8(d)),
            rustls_pemfile_item::Item::Pkcs1(d) => out.push(Block::Pkcs1(d)),
            rustls_pemfile_item::Item::Public(d) => out.push(Block::Public(d)),
            rustls_pemfile_item::Item::Sec1 => {
                return Err(err(format!(
                    "{what}: SEC1 `EC PRIVATE KEY` is not supported; convert it to PKCS#8 \
                     (openssl pkcs8 -topk8 -nocrypt)"
                )))
            }
            rustls_pemfile_item::Item::Other => {}
        }
    }
    if out.is_empty() {
        return Err(err(format!("{what}: no key found")));
    }
    Ok(out)
}

/// The PEM sections of key files, by label.
mod rustls_pemfile_item {
    use rustls::pki_types::pem::{PemObject, SectionKind};

    pub enum Item {
        Pkcs8(Vec<u8>),
        Pkcs1(Vec<u8>),
        Public(Vec<u8>),
        Sec1,
        Other,
    }

    impl PemObject for Item {
        fn from_pem(kind: SectionKind, der: Vec<u8>) -> Option<Self> {
            Some(match kind {
                SectionKind::PrivateKey => Item::Pkcs8(der),
                SectionKind::RsaPrivateKey => Item::Pkcs1(der),
                SectionKind::PublicKey => Item::Public(der),
                SectionKind::EcPrivateKey => Item::Sec1,
                _ => Item::Other,
            })
        }
    }
}

/// A private key: its signing form and public parameters.
fn private_key(block: &Block, what: &str) -> Result<Option<SigningKey>, KeyError> {
    let rng = ring::rand::SystemRandom::new();
    let (encoding, params) = match block {
        Block::Pkcs8(der) => {
            if let Ok(kp) = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng) {
                (
                    EncodingKey::from_ec_der(der),
                    PublicParams::Ec(kp.public_key().as_ref().to_vec()),
                )
            } else if let Ok(kp) = RsaKeyPair::from_pkcs8(der) {
                // jsonwebtoken signs RSA from PKCS#1; a PKCS#8 RSA key wraps one.
                let pkcs1 = pkcs8_inner(der)
                    .ok_or_else(|| err(format!("{what}: malformed PKCS#8 RSA key")))?;
                (EncodingKey::from_rsa_der(&pkcs1), rsa_params(&kp))
            } else {
                return Err(err(format!(
                    "{what}: the private key is neither ECDSA P-256 nor RSA"
                )));
            }
        }
        Block::Pkcs1(der) => {
            let kp = RsaKeyPair::from_der(der)
                .map_err(|e| err(format!("{what}: invalid RSA private key: {e}")))?;
            (EncodingKey::from_rsa_der(der), rsa_params(&kp))
        }
        Block::Public(_) => return Ok(None),
    };
    let public = VerificationKey::new(params)?;
    Ok(Some(SigningKey {
        alg: public.alg,
        kid: public.kid.clone(),
        encoding,
        public,
    }))
}

fn rsa_params(kp: &RsaKeyPair) -> PublicParams {
    let c: ring::rsa::PublicKeyComponents<Vec<u8>> = kp.public().into();
    let strip = |v: Vec<u8>| {
        let first = v.iter().position(|b| *b != 0).unwrap_or(v.len());
        v[first..].to_vec()
    };
    PublicParams::Rsa {
        n: strip(c.n),
        e: strip(c.e),
    }
}

/// The `privateKey` OCTET STRING of a PKCS#8 document.
fn pkcs8_inner(der: &[u8]) -> Option<Vec<u8>> {
    let blocks = simple_asn1::from_der(der).ok()?;
    let ASN1Block::Sequence(_, items) = blocks.first()? else {
        return None;
    };
    items.iter().find_map(|b| match b {
        ASN1Block::OctetString(_, bytes) => Some(bytes.clone()),
        _ => None,
    })
}

/// The public key of a SubjectPublicKeyInfo.
fn public_key(spki: &[u8], what: &str) -> Result<VerificationKey, KeyError> {
    let bad = || err(format!("{what}: unsupported or malformed public key"));
    let blocks = simple_asn1::from_der(spki).map_err(|_| bad())?;
    let Some(ASN1Block::Sequence(_, items)) = blocks.first() else {
        return Err(bad());
    };
    let (Some(ASN1Block::Sequence(_, alg)), Some(ASN1Block::BitString(_, _, bits))) =
        (items.first(), items.get(1))
    else {
        return Err(bad());
    };
    let Some(ASN1Block::ObjectIdentifier(_, alg_oid)) = alg.first() else {
        return Err(bad());
    };
    if *alg_oid == oid!(1, 2, 840, 10045, 2, 1) {
        let p256 = oid!(1, 2, 840, 10045, 3, 1, 7);
        if !matches!(alg.get(1), Some(ASN1Block::ObjectIdentifier(_, c)) if *c == p256) {
            return Err(err(format!("{what}: only the P-256 curve is supported")));
        }
        if bits.len() != 65 || bits[0] != 4 {
            return Err(bad());
        }
        VerificationKey::new(PublicParams::Ec(bits.clone()))
    } else if *alg_oid == oid!(1, 2, 840, 113549, 1, 1, 1) {
        let inner = simple_asn1::from_der(bits).map_err(|_| bad())?;
        let Some(ASN1Block::Sequence(_, ne)) = inner.first() else {
            return Err(bad());
        };
        let (Some(ASN1Block::Integer(_, n)), Some(ASN1Block::Integer(_, e))) =
            (ne.first(), ne.get(1))
        else {
            return Err(bad());
        };
        let unsigned = |i: &BigInt| i.to_biguint().map(|u| u.to_bytes_be()).ok_or_else(bad);
        VerificationKey::new(PublicParams::Rsa {
            n: unsigned(n)?,
            e: unsigned(e)?,
        })
    } else {
        Err(bad())
    }
}

/// The SubjectPublicKeyInfo DER of a public key (Go's `x509.MarshalPKIXPublicKey`).
fn spki_der(params: &PublicParams) -> Result<Vec<u8>, KeyError> {
    let enc = |b: &ASN1Block| simple_asn1::to_der(b).map_err(|e| err(format!("{e:?}")));
    let (alg, key) = match params {
        PublicParams::Ec(point) => (
            vec![
                ASN1Block::ObjectIdentifier(0, oid!(1, 2, 840, 10045, 2, 1)),
                ASN1Block::ObjectIdentifier(0, oid!(1, 2, 840, 10045, 3, 1, 7)),
            ],
            point.clone(),
        ),
        PublicParams::Rsa { n, e } => {
            let int = |b: &[u8]| ASN1Block::Integer(0, BigInt::from(BigUint::from_bytes_be(b)));
            let rsa = enc(&ASN1Block::Sequence(0, vec![int(n), int(e)]))?;
            (
                vec![
                    ASN1Block::ObjectIdentifier(0, oid!(1, 2, 840, 113549, 1, 1, 1)),
                    ASN1Block::Null(0),
                ],
                rsa,
            )
        }
    };
    enc(&ASN1Block::Sequence(
        0,
        vec![
            ASN1Block::Sequence(0, alg),
            ASN1Block::BitString(0, key.len() * 8, key),
        ],
    ))
}

/// The signing key in a PEM document (its first private key).
pub fn signing_key_from_pem(pem: &[u8], what: &str) -> Result<SigningKey, KeyError> {
    for b in blocks(pem, what)? {
        if let Some(k) = private_key(&b, what)? {
            return Ok(k);
        }
    }
    Err(err(format!("{what}: no private key found")))
}

/// Every public key in a PEM document (public keys, and the public halves of private keys).
pub fn verification_keys_from_pem(
    pem: &[u8],
    what: &str,
) -> Result<Vec<VerificationKey>, KeyError> {
    let mut out = Vec::new();
    for b in blocks(pem, what)? {
        match &b {
            Block::Public(spki) => out.push(public_key(spki, what)?),
            _ => {
                if let Some(k) = private_key(&b, what)? {
                    out.push(k.public);
                }
            }
        }
    }
    Ok(out)
}

fn read_file(path: &Path) -> Result<Vec<u8>, KeyError> {
    std::fs::read(path).map_err(|e| err(format!("reading {}: {e}", path.display())))
}

/// Where the keys come from (`kplane serve`'s flags).
#[derive(Clone, Debug, Default)]
pub struct KeySources {
    /// `--service-account-signing-key-file`; `None`: the data directory's key, created on
    /// first start.
    pub signing_key_file: Option<std::path::PathBuf>,
    /// `--service-account-key-file` (repeatable): more verification keys.
    pub key_files: Vec<std::path::PathBuf>,
}

/// Loads the key set: the signing key from its file, or `generated` (created with a new
/// P-256 key when missing and kept), and the extra verification keys.
pub fn load(sources: &KeySources, generated: &Path) -> Result<KeySet, KeyError> {
    let signing = match &sources.signing_key_file {
        Some(path) => signing_key_from_pem(&read_file(path)?, &path.display().to_string())?,
        None => {
            let pem = match std::fs::read(generated) {
                Ok(p) => p,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let pem = generate_ec_pem()?;
                    write_private(generated, pem.as_bytes())?;
                    pem.into_bytes()
                }
                Err(e) => return Err(err(format!("reading {}: {e}", generated.display()))),
            };
            signing_key_from_pem(&pem, &generated.display().to_string())?
        }
    };
    let mut extra = Vec::new();
    for path in &sources.key_files {
        let keys = verification_keys_from_pem(&read_file(path)?, &path.display().to_string())?;
        if keys.is_empty() {
            return Err(err(format!("{}: no public key found", path.display())));
        }
        extra.extend(keys);
    }
    Ok(KeySet::new(signing, extra))
}

/// Writes a private key file (mode 0600), atomically.
fn write_private(path: &Path, contents: &[u8]) -> Result<(), KeyError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| err(format!("creating {}: {e}", dir.display())))?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).map_err(|e| err(format!("writing {}: {e}", tmp.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| err(format!("chmod {}: {e}", tmp.display())))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| err(format!("renaming to {}: {e}", path.display())))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod tests {
    use super::*;

    /// A P-256 key set for tests.
    pub(crate) fn ec_keys() -> KeySet {
        let pem = generate_ec_pem().unwrap();
        KeySet::new(
            signing_key_from_pem(pem.as_bytes(), "test").unwrap(),
            vec![],
        )
    }

    #[test]
    fn generated_key_is_kept_and_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pki/sa.key");
        let a = load(&KeySources::default(), &path).unwrap();
        let b = load(&KeySources::default(), &path).unwrap();
        assert_eq!(a.signing.kid, b.signing.kid);
        assert_eq!(a.signing.alg, Algorithm::ES256);
        assert_eq!(a.verifying.len(), 1);
        let jwks = a.jwks();
        let k = &jwks["keys"][0];
        assert_eq!(
            (k["kty"].as_str(), k["alg"].as_str()),
            (Some("EC"), Some("ES256"))
        );
        assert_eq!(k["kid"], json!(a.signing.kid));
        // The kid is the base64url SHA-256 of the SPKI (43 characters, no padding).
        assert_eq!(a.signing.kid.len(), 43);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn spki_round_trips_and_kid_is_stable() {
        let signing = ec_keys().signing;
        let spki = spki_der(&signing.public.params).unwrap();
        let pem = pem_encode("PUBLIC KEY", &spki);
        let keys = verification_keys_from_pem(pem.as_bytes(), "pub").unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid, signing.kid);
        assert_eq!(keys[0].params, signing.public.params);
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let e = signing_key_from_pem(b"not a pem", "f").unwrap_err();
        assert!(e.0.contains("no key found"), "{e}");
        let sec1 = pem_encode("EC PRIVATE KEY", &[0x30, 0x00]);
        let e = signing_key_from_pem(sec1.as_bytes(), "f").unwrap_err();
        assert!(e.0.contains("PKCS#8"), "{e}");
        let junk = pem_encode("PRIVATE KEY", &[0x30, 0x03, 0x02, 0x01, 0x00]);
        assert!(signing_key_from_pem(junk.as_bytes(), "f").is_err());
        let public_only = pem_encode(
            "PUBLIC KEY",
            &spki_der(&ec_keys().signing.public.params).unwrap(),
        );
        let e = signing_key_from_pem(public_only.as_bytes(), "f").unwrap_err();
        assert!(e.0.contains("no private key"), "{e}");
    }
}
