//! The providers of an encryption configuration entry and the stored form they give a
//! value, as kube-apiserver's (`storage/value/encrypt/{aes,secretbox,identity}`,
//! `value.NewPrefixTransformers`): `k8s:enc:aesgcm:v1:<key>:` + 12-byte random nonce +
//! AES-GCM sealed value (the storage key as additional data, so a value copied under
//! another key does not open), `k8s:enc:secretbox:v1:<key>:` + 24-byte random nonce +
//! XSalsa20-Poly1305 sealed value, or the value itself (`identity`). Writes use the
//! entry's first provider (its first key); reads try the providers in order and take the
//! first whose prefix matches, `identity` matching anything not encrypted.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::aes::Aes192;
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm};
use crypto_secretbox::XSalsa20Poly1305;

/// What every encrypted value starts with.
pub(crate) const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

type Aes192Gcm = AesGcm<Aes192, aes_gcm::aead::consts::U12>;

enum Cipher {
    Aes128(Box<Aes128Gcm>),
    Aes192(Box<Aes192Gcm>),
    Aes256(Box<Aes256Gcm>),
    Secretbox(Box<XSalsa20Poly1305>),
}

/// One key of an `aesgcm` or `secretbox` provider.
pub(crate) struct Sealer {
    prefix: Vec<u8>,
    cipher: Cipher,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("prefix", &String::from_utf8_lossy(&self.prefix))
            .finish_non_exhaustive()
    }
}

/// A provider: its keys, or `identity`.
#[derive(Debug)]
pub(crate) enum Provider {
    Identity,
    Keys(Vec<Sealer>),
}

impl Sealer {
    /// An `aesgcm` key (16, 24 or 32 bytes).
    pub(crate) fn aes_gcm(name: &str, secret: &[u8]) -> Result<Sealer, String> {
        let bad = |_| "not a valid AES key".to_string();
        let cipher = match secret.len() {
            16 => Cipher::Aes128(Box::new(Aes128Gcm::new_from_slice(secret).map_err(bad)?)),
            24 => Cipher::Aes192(Box::new(Aes192Gcm::new_from_slice(secret).map_err(bad)?)),
            32 => Cipher::Aes256(Box::new(Aes256Gcm::new_from_slice(secret).map_err(bad)?)),
            n => return Err(format!("an AES key of {n} bytes")),
        };
        Ok(Sealer {
            prefix: format!("k8s:enc:aesgcm:v1:{name}:").into_bytes(),
            cipher,
        })
    }

    /// A `secretbox` key (32 bytes).
    pub(crate) fn secretbox(name: &str, secret: &[u8]) -> Result<Sealer, String> {
        let cipher = XSalsa20Poly1305::new_from_slice(secret)
            .map_err(|_| "not a valid secretbox key".to_string())?;
        Ok(Sealer {
            prefix: format!("k8s:enc:secretbox:v1:{name}:").into_bytes(),
            cipher: Cipher::Secretbox(Box::new(cipher)),
        })
    }

    /// `plain` sealed, with its prefix; `context` authenticates where it is stored.
    fn seal(&self, context: &[u8], plain: &[u8]) -> Result<Vec<u8>, String> {
        let fail = |_| "encryption failed".to_string();
        let mut out = self.prefix.clone();
        let aad = Payload {
            msg: plain,
            aad: context,
        };
        match &self.cipher {
            Cipher::Aes128(c) => {
                let nonce = Aes128Gcm::generate_nonce(&mut OsRng);
                out.extend_from_slice(&nonce);
                out.extend(c.encrypt(&nonce, aad).map_err(fail)?);
            }
            Cipher::Aes192(c) => {
                let nonce = Aes192Gcm::generate_nonce(&mut OsRng);
                out.extend_from_slice(&nonce);
                out.extend(c.encrypt(&nonce, aad).map_err(fail)?);
            }
            Cipher::Aes256(c) => {
                let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
                out.extend_from_slice(&nonce);
                out.extend(c.encrypt(&nonce, aad).map_err(fail)?);
            }
            Cipher::Secretbox(c) => {
                let nonce = XSalsa20Poly1305::generate_nonce(&mut OsRng);
                out.extend_from_slice(&nonce);
                out.extend(c.encrypt(&nonce, plain).map_err(fail)?);
            }
        }
        Ok(out)
    }

    /// The value `sealed` (after this key's prefix) holds.
    fn open(&self, context: &[u8], sealed: &[u8]) -> Result<Vec<u8>, String> {
        let fail = |_| {
            format!(
                "{}: the value could not be decrypted",
                String::from_utf8_lossy(&self.prefix).trim_end_matches(':')
            )
        };
        let split = |n: usize| {
            (sealed.len() >= n)
                .then(|| sealed.split_at(n))
                .ok_or_else(|| "the value is shorter than its nonce".to_string())
        };
        match &self.cipher {
            Cipher::Aes128(c) => {
                let (nonce, msg) = split(12)?;
                c.decrypt(nonce.into(), Payload { msg, aad: context })
                    .map_err(fail)
            }
            Cipher::Aes192(c) => {
                let (nonce, msg) = split(12)?;
                c.decrypt(nonce.into(), Payload { msg, aad: context })
                    .map_err(fail)
            }
            Cipher::Aes256(c) => {
                let (nonce, msg) = split(12)?;
                c.decrypt(nonce.into(), Payload { msg, aad: context })
                    .map_err(fail)
            }
            Cipher::Secretbox(c) => {
                let (nonce, msg) = split(24)?;
                c.decrypt(nonce.into(), msg).map_err(fail)
            }
        }
    }
}

/// `plain` in the stored form of the first provider.
pub(crate) fn seal(
    providers: &[Provider],
    context: &[u8],
    plain: Vec<u8>,
) -> Result<Vec<u8>, String> {
    match providers.first() {
        None | Some(Provider::Identity) => Ok(plain),
        Some(Provider::Keys(keys)) => match keys.first() {
            Some(k) => k.seal(context, &plain),
            None => Ok(plain),
        },
    }
}

/// The value `stored` holds: opened by the first provider whose prefix it has (identity:
/// anything that is not encrypted); `None` when it is stored as it is. `stale`: it was not
/// written by the first provider's first key (a rewrite would change its stored form).
pub(crate) fn open(
    providers: &[Provider],
    context: &[u8],
    stored: &[u8],
) -> Result<(Option<Vec<u8>>, bool), String> {
    for (i, p) in providers.iter().enumerate() {
        match p {
            Provider::Identity => {
                if !stored.starts_with(ENCRYPTED_PREFIX) {
                    return Ok((None, i != 0));
                }
            }
            Provider::Keys(keys) => {
                for (j, k) in keys.iter().enumerate() {
                    if let Some(rest) = stored.strip_prefix(k.prefix.as_slice()) {
                        return k.open(context, rest).map(|v| (Some(v), i != 0 || j != 0));
                    }
                }
            }
        }
    }
    Err("no matching prefix found".into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn keys(kind: &str, names: &[(&str, u8)], len: usize) -> Provider {
        Provider::Keys(
            names
                .iter()
                .map(|(n, b)| match kind {
                    "aesgcm" => Sealer::aes_gcm(n, &vec![*b; len]).unwrap(),
                    _ => Sealer::secretbox(n, &vec![*b; len]).unwrap(),
                })
                .collect(),
        )
    }

    #[test]
    fn values_round_trip_under_every_key_size_and_only_under_their_key() {
        for (kind, len) in [
            ("aesgcm", 16),
            ("aesgcm", 24),
            ("aesgcm", 32),
            ("secretbox", 32),
        ] {
            let providers = [keys(kind, &[("k1", 1)], len)];
            let sealed = seal(&providers, b"ctx", b"top secret".to_vec()).unwrap();
            let prefix = format!("k8s:enc:{kind}:v1:k1:");
            assert!(sealed.starts_with(prefix.as_bytes()), "{kind}");
            assert!(!sealed.windows(10).any(|w| w == b"top secret"));
            let opened = open(&providers, b"ctx", &sealed).unwrap().0.unwrap();
            assert_eq!(opened, b"top secret");
            // Another key of the same name does not open it.
            let other = [keys(kind, &[("k1", 2)], len)];
            assert!(open(&other, b"ctx", &sealed).is_err(), "{kind}");
            // Each sealing uses a fresh nonce.
            assert_ne!(
                sealed,
                seal(&providers, b"ctx", b"top secret".to_vec()).unwrap()
            );
            // AES-GCM binds the value to where it is stored.
            if kind == "aesgcm" {
                assert!(open(&providers, b"elsewhere", &sealed).is_err());
            }
        }
    }

    #[test]
    fn reads_follow_the_provider_order_and_rotation_keeps_old_keys_readable() {
        let old = [keys("aesgcm", &[("old", 1)], 32)];
        let sealed_old = seal(&old, b"c", b"v1".to_vec()).unwrap();
        // Rotation: a new first key, the old one second.
        let rotated = [
            keys("aesgcm", &[("new", 2), ("old", 1)], 32),
            Provider::Identity,
        ];
        assert_eq!(open(&rotated, b"c", &sealed_old).unwrap().0.unwrap(), b"v1");
        let sealed_new = seal(&rotated, b"c", b"v2".to_vec()).unwrap();
        assert!(sealed_new.starts_with(b"k8s:enc:aesgcm:v1:new:"));
        // Plain values are read through identity, as they are.
        assert_eq!(open(&rotated, b"c", b"{\"a\":1}").unwrap(), (None, true));
        assert!(
            open(&rotated, b"c", &sealed_old).unwrap().1,
            "an older key is stale"
        );
        assert!(!open(&rotated, b"c", &sealed_new).unwrap().1);
        // Identity first (decrypting on the way out): encrypted values still open.
        let out = [Provider::Identity, keys("aesgcm", &[("old", 1)], 32)];
        assert_eq!(seal(&out, b"c", b"p".to_vec()).unwrap(), b"p");
        assert_eq!(open(&out, b"c", &sealed_old).unwrap().0.unwrap(), b"v1");
        // Without identity a plain value, and without the key an encrypted one, fail.
        assert_eq!(
            open(&old, b"c", b"plain").unwrap_err(),
            "no matching prefix found"
        );
        let only_new = [keys("aesgcm", &[("new", 2)], 32)];
        assert!(open(&only_new, b"c", &sealed_old).is_err());
    }
}
