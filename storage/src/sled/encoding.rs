//! The on-disk layout: how keys, records and log entries are encoded into the two sled
//! databases of the store (see [`super::log`] for how the log database is split into
//! generation trees).
//!
//! The first byte of every tree key says which keyspace it belongs to. The *latest*
//! database (one tree) holds what the hot read paths need:
//!
//! | tag | tree key                                   | value                                 |
//! |-----|--------------------------------------------|---------------------------------------|
//! | `L` | `key`                                      | latest live [`Record`]                |
//! | `I` | `index key` (resource first)               | empty: every key with L or log data   |
//! | `M` | meta name                                  | meta value (`rev`, `compacted`)       |
//!
//! The *log* database holds the history, every version once, in generation trees:
//!
//! | tag | tree key                                   | value                                 |
//! |-----|--------------------------------------------|---------------------------------------|
//! | `V` | `be64(rev)`                                | event type byte `++ key ++` [`Record`]|
//! | `X` | `key ++ be64(rev)`                         | 1 byte: whether `rev` is a tombstone  |
//! | `T` | `be64(last rev of a write group)`          | `be64(unix millis of the commit)`     |
//!
//! A `V` value's event type byte is `A`, `M` or `D` when the record follows as it is, and
//! `a`, `m` or `d` when it follows compressed ([`super::compress`]); data directories
//! written before compression hold only the first form.
//!
//! `key` is `cluster, resource, namespace, name`, each component escaped (`0x00` becomes
//! `0x00 0xFF`) and terminated by `0x00 0x01`. This encoding is self-delimiting (no component
//! can spill into the next slot) and order preserving: the byte order of encoded keys is
//! exactly the derived `Ord` of [`Key`], so one cluster, one resource in it and one namespace
//! in that are each a contiguous range, sorted like `start_after` expects. The `index key`
//! orders the same components as `resource, cluster, namespace, name` and serves wildcard
//! (all clusters) reads of one resource.

use std::ops::Bound;

use bytes::Bytes;

use super::compress::{decompress, original_len, Compressor};
use crate::{Clusters, Error, EventType, Key, KeyValue, Prefix, Result, Revision};

pub(crate) const TAG_LATEST: u8 = b'L';
pub(crate) const TAG_INDEX: u8 = b'I';
pub(crate) const TAG_META: u8 = b'M';
pub(crate) const TAG_VERSION: u8 = b'V';
pub(crate) const TAG_XREF: u8 = b'X';
pub(crate) const TAG_TIME: u8 = b'T';

pub(crate) const META_REVISION: &[u8] = b"rev";
pub(crate) const META_COMPACTED: &[u8] = b"compacted";

const REV_LEN: usize = 8;

/// Appends one escaped, terminated key component.
fn push_component(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        if b == 0 {
            out.extend_from_slice(&[0, 0xFF]);
        } else {
            out.push(b);
        }
    }
    out.extend_from_slice(&[0, 1]);
}

/// Reads one component; returns it and the remaining bytes.
fn read_component(buf: &[u8]) -> Result<(String, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < buf.len() {
        let b = buf[i];
        if b != 0 {
            out.push(b);
            i += 1;
            continue;
        }
        match buf.get(i + 1) {
            Some(0xFF) => {
                out.push(0);
                i += 2;
            }
            Some(1) => {
                let s = String::from_utf8(out)
                    .map_err(|_| Error::Corrupt("key component is not UTF-8".into()))?;
                return Ok((s, &buf[i + 2..]));
            }
            _ => return Err(Error::Corrupt("bad key component escape".into())),
        }
    }
    Err(Error::Corrupt("unterminated key component".into()))
}

/// The encoded form of a key (cluster-first order).
pub(crate) fn key_bytes(key: &Key) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        key.cluster.len() + key.resource.len() + key.namespace.len() + key.name.len() + 8,
    );
    push_component(&mut out, &key.cluster);
    push_component(&mut out, &key.resource);
    push_component(&mut out, &key.namespace);
    push_component(&mut out, &key.name);
    out
}

/// The encoded form of a key in the wildcard index (resource-first order).
pub(crate) fn index_key_bytes(key: &Key) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        key.cluster.len() + key.resource.len() + key.namespace.len() + key.name.len() + 8,
    );
    push_component(&mut out, &key.resource);
    push_component(&mut out, &key.cluster);
    push_component(&mut out, &key.namespace);
    push_component(&mut out, &key.name);
    out
}

/// The first tree key of keyspace `tag` after every key of `cluster` (and before the keys
/// of any cluster sorting after it): the cluster's component with its terminator
/// `0x00 0x01` raised to `0x00 0x02`, which no escaped component can contain.
pub(crate) fn after_cluster(tag: u8, cluster: &str) -> Vec<u8> {
    let mut out = vec![tag];
    push_component(&mut out, cluster);
    if let Some(last) = out.last_mut() {
        *last = 2;
    }
    out
}

/// The cluster (first component) of a cluster-first encoded key.
pub(crate) fn decode_cluster(buf: &[u8]) -> Result<String> {
    read_component(buf).map(|(c, _)| c)
}

/// Decodes a cluster-first key; returns it and the remaining bytes.
pub(crate) fn decode_key(buf: &[u8]) -> Result<(Key, &[u8])> {
    let (cluster, rest) = read_component(buf)?;
    let (resource, rest) = read_component(rest)?;
    let (namespace, rest) = read_component(rest)?;
    let (name, rest) = read_component(rest)?;
    Ok((
        Key {
            cluster,
            resource,
            namespace,
            name,
        },
        rest,
    ))
}

/// Decodes a resource-first index key.
pub(crate) fn decode_index_key(buf: &[u8]) -> Result<Key> {
    let (resource, rest) = read_component(buf)?;
    let (cluster, rest) = read_component(rest)?;
    let (namespace, rest) = read_component(rest)?;
    let (name, _) = read_component(rest)?;
    Ok(Key {
        cluster,
        resource,
        namespace,
        name,
    })
}

fn tagged(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 1 + REV_LEN);
    out.push(tag);
    out.extend_from_slice(body);
    out
}

pub(crate) fn latest_key(kb: &[u8]) -> Vec<u8> {
    tagged(TAG_LATEST, kb)
}

pub(crate) fn index_key(ikb: &[u8]) -> Vec<u8> {
    tagged(TAG_INDEX, ikb)
}

/// Log key of the version written at `rev`.
pub(crate) fn version_key(rev: Revision) -> Vec<u8> {
    tagged(TAG_VERSION, &rev.to_be_bytes())
}

/// Log per-key index entry of the version of `kb` written at `rev`.
pub(crate) fn xref_key(kb: &[u8], rev: Revision) -> Vec<u8> {
    let mut out = tagged(TAG_XREF, kb);
    out.extend_from_slice(&rev.to_be_bytes());
    out
}

pub(crate) fn time_key(rev: Revision) -> Vec<u8> {
    tagged(TAG_TIME, &rev.to_be_bytes())
}

pub(crate) fn meta_key(name: &[u8]) -> Vec<u8> {
    tagged(TAG_META, name)
}

pub(crate) fn encode_u64(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

pub(crate) fn decode_u64(buf: &[u8]) -> Result<u64> {
    let arr: [u8; 8] = buf
        .try_into()
        .map_err(|_| Error::Corrupt(format!("expected 8 bytes, found {}", buf.len())))?;
    Ok(u64::from_be_bytes(arr))
}

/// Splits a log index key (`X key rev`) into the encoded key and the revision.
pub(crate) fn split_xref_key(tree_key: &[u8]) -> Result<(&[u8], Revision)> {
    if tree_key.len() < 1 + REV_LEN || tree_key[0] != TAG_XREF {
        return Err(Error::Corrupt("bad log index key".into()));
    }
    let split = tree_key.len() - REV_LEN;
    Ok((&tree_key[1..split], decode_u64(&tree_key[split..])?))
}

/// The revision of a log version or commit-time tree key.
pub(crate) fn rev_of_tagged(tree_key: &[u8]) -> Result<Revision> {
    tree_key
        .get(1..)
        .map_or_else(|| Err(Error::Corrupt("short key".into())), decode_u64)
}

/// A stored version of one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub tombstone: bool,
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub value: Bytes,
}

const RECORD_HEADER: usize = 1 + 2 * REV_LEN;

impl Record {
    /// The length of [`Record::encode`]'s output.
    pub(crate) fn encoded_len(&self) -> usize {
        RECORD_HEADER + self.value.len()
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(RECORD_HEADER + self.value.len());
        out.push(u8::from(self.tombstone));
        out.extend_from_slice(&self.create_revision.to_be_bytes());
        out.extend_from_slice(&self.mod_revision.to_be_bytes());
        out.extend_from_slice(&self.value);
        out
    }

    /// Decodes without copying the value.
    pub(crate) fn decode(raw: sled::IVec) -> Result<Record> {
        if raw.len() < RECORD_HEADER {
            return Err(Error::Corrupt("short record".into()));
        }
        let tombstone = match raw[0] {
            0 => false,
            1 => true,
            other => return Err(Error::Corrupt(format!("bad record kind {other}"))),
        };
        let create_revision = decode_u64(&raw[1..1 + REV_LEN])?;
        let mod_revision = decode_u64(&raw[1 + REV_LEN..RECORD_HEADER])?;
        let value = Bytes::from_owner(raw).slice(RECORD_HEADER..);
        Ok(Record {
            tombstone,
            create_revision,
            mod_revision,
            value,
        })
    }

    pub(crate) fn into_kv(self, key: Key) -> KeyValue {
        KeyValue {
            key,
            value: self.value,
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        }
    }
}

fn event_type_byte(t: EventType) -> u8 {
    match t {
        EventType::Added => b'A',
        EventType::Modified => b'M',
        EventType::Deleted => b'D',
    }
}

/// The event type of a log version's first byte, and whether its record is compressed
/// (lower case: `be32(length) ++ zstd frame`, [`super::compress`]; upper case: as is).
fn decode_event_type(b: Option<&u8>) -> Result<(EventType, bool)> {
    match b {
        Some(b'A') => Ok((EventType::Added, false)),
        Some(b'M') => Ok((EventType::Modified, false)),
        Some(b'D') => Ok((EventType::Deleted, false)),
        Some(b'a') => Ok((EventType::Added, true)),
        Some(b'm') => Ok((EventType::Modified, true)),
        Some(b'd') => Ok((EventType::Deleted, true)),
        _ => Err(Error::Corrupt("bad event type".into())),
    }
}

/// Log version value: event type byte, the encoded key, the record (compressed when
/// `compressor` makes it shorter). Returns it with its logical length (the length with the
/// record uncompressed).
pub(crate) fn encode_version(
    t: EventType,
    kb: &[u8],
    record: &Record,
    compressor: &mut Compressor,
) -> (Vec<u8>, usize) {
    let encoded = record.encode();
    let logical = 1 + kb.len() + encoded.len();
    let (type_byte, body) = match compressor.compress(&encoded) {
        Some(c) => (event_type_byte(t).to_ascii_lowercase(), c),
        None => (event_type_byte(t), encoded),
    };
    let mut out = Vec::with_capacity(1 + kb.len() + body.len());
    out.push(type_byte);
    out.extend_from_slice(kb);
    out.extend_from_slice(&body);
    (out, logical)
}

/// The logical length of a stored log version value (its record uncompressed).
pub(crate) fn version_logical_len(raw: &[u8]) -> Result<usize> {
    let (_, compressed) = decode_event_type(raw.first())?;
    if !compressed {
        return Ok(raw.len());
    }
    let (_, kb) = peek_version(raw)?;
    Ok(1 + kb.len() + original_len(&raw[1 + kb.len()..])?)
}

/// A decoded log version: what happened, to which key (also encoded), and the record.
pub(crate) struct Version {
    pub event_type: EventType,
    pub key: Key,
    pub kb: Vec<u8>,
    pub record: Record,
}

/// Decodes a log version value (the record's value is not copied).
pub(crate) fn decode_version(raw: sled::IVec) -> Result<Version> {
    let (event_type, compressed) = decode_event_type(raw.first())?;
    let body = raw.get(1..).unwrap_or_default();
    let (key, rest) = decode_key(body)?;
    let key_len = body.len() - rest.len();
    let kb = body[..key_len].to_vec();
    let record = if compressed {
        Record::decode(sled::IVec::from(decompress(rest)?))?
    } else {
        Record::decode(raw.subslice(1 + key_len, raw.len() - 1 - key_len))?
    };
    Ok(Version {
        event_type,
        key,
        kb,
        record,
    })
}

/// The event type and encoded key of a log version value, without decoding the record.
pub(crate) fn peek_version(raw: &[u8]) -> Result<(EventType, &[u8])> {
    let (event_type, _) = decode_event_type(raw.first())?;
    let body = raw.get(1..).unwrap_or_default();
    let (_, rest) = decode_key(body)?;
    Ok((event_type, &body[..body.len() - rest.len()]))
}

/// A range of tree keys, usable with `sled::Tree::range`.
pub(crate) type TreeRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Which keyspace serves a prefix, and the encoded prefix (or prefixes) inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Cluster-first keyspace (`L`/`X`); `bytes` is the encoded key prefix (possibly
    /// empty: every cluster). Keys must still be checked with [`Prefix::contains`] when the
    /// prefix has components that could not be encoded (e.g. a namespace without resource,
    /// or a subtree, whose clusters share the raw bytes of its root's name).
    Keys { bytes: Vec<u8> },
    /// The resource-first wildcard index (`I`); each of `prefixes` (ascending, disjoint)
    /// starts with the encoded resource: the resource alone for every cluster, or for a
    /// subtree the exact root cluster (`resource, root`) and then its descendants (the
    /// raw bytes `root:`), which sort after it. Siblings sharing the root's name as a
    /// prefix (`root:acme-b`, `root:acmex`) lie in neither range.
    Index { prefixes: Vec<Vec<u8>> },
}

impl Plan {
    pub(crate) fn for_prefix(prefix: &Prefix) -> Plan {
        let mut bytes = Vec::new();
        match (&prefix.cluster, &prefix.resource) {
            (Clusters::One(c), resource) => {
                push_component(&mut bytes, c);
                if let Some(r) = resource {
                    push_component(&mut bytes, r);
                    if let Some(ns) = &prefix.namespace {
                        push_component(&mut bytes, ns);
                    }
                }
                Plan::Keys { bytes }
            }
            (Clusters::All, Some(r)) => {
                push_component(&mut bytes, r);
                Plan::Index {
                    prefixes: vec![bytes],
                }
            }
            (Clusters::Subtree(c), Some(r)) => {
                push_component(&mut bytes, r);
                let mut exact = bytes.clone();
                push_component(&mut exact, c);
                let mut below = bytes;
                below.extend_from_slice(escaped(c).as_slice());
                below.push(b':');
                Plan::Index {
                    prefixes: vec![exact, below],
                }
            }
            (Clusters::Subtree(c), None) => Plan::Keys { bytes: escaped(c) },
            (Clusters::All, None) => Plan::Keys { bytes },
        }
    }

    /// The encoded form of `key` in this plan's order.
    pub(crate) fn order_bytes(&self, key: &Key) -> Vec<u8> {
        match self {
            Plan::Keys { .. } => key_bytes(key),
            Plan::Index { .. } => index_key_bytes(key),
        }
    }

    /// The tree ranges to scan, in order, in keyspace `tag` (`L` or `X`; ignored for the
    /// index plan) holding keys of this prefix strictly after `start_after`. A keys plan has
    /// at most one.
    pub(crate) fn ranges(&self, tag: u8, start_after: Option<&Key>) -> Vec<TreeRange> {
        let (tag, prefixes): (u8, &[Vec<u8>]) = match self {
            Plan::Keys { bytes } => (tag, std::slice::from_ref(bytes)),
            Plan::Index { prefixes } => (TAG_INDEX, prefixes),
        };
        let after_key = start_after.map(|after| {
            let mut after_key = tagged(tag, &self.order_bytes(after));
            if tag == TAG_XREF {
                // Skip every version of `after` itself.
                after_key.extend_from_slice(&[0xFF; REV_LEN]);
            }
            after_key
        });
        prefixes
            .iter()
            .filter_map(|prefix| {
                let lo_prefix = tagged(tag, prefix);
                let hi = prefix_end(&lo_prefix);
                let mut lo = Bound::Included(lo_prefix.clone());
                if let Some(after_key) = &after_key {
                    if *after_key >= lo_prefix {
                        if *after_key >= hi {
                            return None;
                        }
                        lo = Bound::Excluded(after_key.clone());
                    }
                }
                Some((lo, Bound::Excluded(hi)))
            })
            .collect()
    }

    /// The one range of a keys plan (see [`Plan::ranges`]); `None` if empty.
    pub(crate) fn range(&self, tag: u8, start_after: Option<&Key>) -> Option<TreeRange> {
        debug_assert!(matches!(self, Plan::Keys { .. }));
        self.ranges(tag, start_after).into_iter().next()
    }
}

/// A key component's escaped bytes, without the terminator.
fn escaped(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 2);
    push_component(&mut out, s);
    out.truncate(out.len() - 2);
    out
}

/// The smallest byte string greater than every string starting with `prefix`.
/// `prefix` always starts with a tag byte below 0xFF, so this never overflows.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return end;
        }
    }
    vec![0xFF]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn k(c: &str, r: &str, ns: &str, n: &str) -> Key {
        Key::new(c, r, ns, n)
    }

    #[test]
    fn key_roundtrip_and_escaping() {
        let keys = [
            k("", "", "", ""),
            k("a\0b", "/x\0", "\0", "\0\0\u{1}"),
            k("root", "apps/deployments", "default", "web"),
        ];
        for key in keys {
            let kb = key_bytes(&key);
            let (back, rest) = decode_key(&kb).unwrap();
            assert_eq!(back, key);
            assert!(rest.is_empty());
            assert_eq!(decode_index_key(&index_key_bytes(&key)).unwrap(), key);
        }
    }

    #[test]
    fn byte_order_matches_key_order() {
        let parts = [
            "", "\0", "\0\u{1}", "\u{1}", "a", "a\0", "a\0b", "ab", "b", "\u{ff}",
        ];
        let mut keys = Vec::new();
        for c in parts {
            for r in ["", "a\0", "a"] {
                for n in parts {
                    keys.push(k(c, r, "ns", n));
                    keys.push(k(c, r, n, "x"));
                }
            }
        }
        for a in &keys {
            for b in &keys {
                assert_eq!(a.cmp(b), key_bytes(a).cmp(&key_bytes(b)), "{a:?} vs {b:?}");
                let ia = (&a.resource, &a.cluster, &a.namespace, &a.name);
                let ib = (&b.resource, &b.cluster, &b.namespace, &b.name);
                assert_eq!(ia.cmp(&ib), index_key_bytes(a).cmp(&index_key_bytes(b)));
            }
        }
    }

    #[test]
    fn components_cannot_escape_their_slot() {
        // "a" + namespace "b" must not collide with, or be a prefix range of, "a\0..." names.
        let p = Plan::for_prefix(&Prefix::namespace("c", "r", "a"));
        let (lo, hi) = p.range(TAG_LATEST, None).unwrap();
        let inside = latest_key(&key_bytes(&k("c", "r", "a", "zzz")));
        let outside = latest_key(&key_bytes(&k("c", "r", "a\0b", "x")));
        let outside2 = latest_key(&key_bytes(&k("c", "r", "ab", "x")));
        let contains = |x: &Vec<u8>| {
            (match &lo {
                Bound::Included(l) => x >= l,
                Bound::Excluded(l) => x > l,
                Bound::Unbounded => true,
            }) && (match &hi {
                Bound::Excluded(h) => x < h,
                _ => true,
            })
        };
        assert!(contains(&inside));
        assert!(!contains(&outside));
        assert!(!contains(&outside2));
    }

    #[test]
    fn record_roundtrip() {
        let r = Record {
            tombstone: true,
            create_revision: 3,
            mod_revision: 9,
            value: Bytes::from_static(b"hello"),
        };
        let raw = sled::IVec::from(r.encode());
        assert_eq!(Record::decode(raw).unwrap(), r);
    }

    #[test]
    fn xref_key_split() {
        let kb = key_bytes(&k("c", "r", "n", "x"));
        let xk = xref_key(&kb, 42);
        assert_eq!(split_xref_key(&xk).unwrap(), (&kb[..], 42));
    }

    #[test]
    fn version_roundtrip() {
        let key = k("c\0", "r", "n", "x");
        let kb = key_bytes(&key);
        // A short record (stored as is) and a compressible one (stored compressed), with
        // compression on and off: every form decodes to the same version.
        for value in [b"v\0v".to_vec(), b"{\"a\":\"vvvvvvvv\"}".repeat(80)] {
            let r = Record {
                tombstone: false,
                create_revision: 2,
                mod_revision: 5,
                value: Bytes::from(value),
            };
            let logical = 1 + kb.len() + r.encoded_len();
            for enabled in [false, true] {
                let mut c = Compressor::new(enabled);
                let (raw, len) = encode_version(EventType::Modified, &kb, &r, &mut c);
                assert_eq!(len, logical);
                assert_eq!(version_logical_len(&raw).unwrap(), logical);
                let compressed = raw.len() < logical;
                assert_eq!(compressed, enabled && r.value.len() > 100, "{enabled}");
                assert_eq!(raw[0], if compressed { b'm' } else { b'M' });
                let (t, peeked) = peek_version(&raw).unwrap();
                assert_eq!((t, peeked), (EventType::Modified, &kb[..]));
                let v = decode_version(sled::IVec::from(raw)).unwrap();
                assert_eq!(
                    (v.event_type, v.key, v.kb, v.record),
                    (EventType::Modified, key.clone(), kb.clone(), r.clone())
                );
            }
        }
    }
}
