//! Round trips and every kind of damage the reader must refuse. Damaged archives are
//! built byte by byte here (`raw`), independently of the writer.

use sha2::{Digest, Sha256};

use crate::frame::{push_frame, push_record_payload, HEADER, RECORD, TRAILER};
use crate::*;

fn header(cluster: &str, recursive: bool, count: u64) -> Header {
    Header {
        format_version: FORMAT_VERSION,
        kplane_version: "v1.32.6-kplane.0.1.0+test".into(),
        source_server: "https://127.0.0.1:6443".into(),
        cluster: cluster.into(),
        recursive,
        revision: 42,
        object_count: count,
        created: "2026-11-24T12:00:00Z".into(),
        decrypted: Vec::new(),
    }
}

fn rec(cluster: &str, resource: &str, namespace: &str, name: &str) -> Record {
    Record {
        cluster: cluster.into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        value: format!(r#"{{"metadata":{{"name":"{name}","resourceVersion":"7"}}}}"#).into_bytes(),
    }
}

/// `n` ConfigMaps in `root:a` after one CRD, in archive order.
fn records(n: usize) -> Vec<Record> {
    let mut out = vec![rec("root:a", CRD_RESOURCE, "", "widgets.x.io")];
    out.extend((0..n).map(|i| rec("root:a", "/configmaps", "default", &format!("cm-{i:07}"))));
    out
}

fn write(h: &Header, recs: &[Record], compress: bool) -> (Vec<u8>, Summary) {
    let mut w = Writer::new(Vec::new(), h, compress).unwrap();
    for r in recs {
        w.write(r).unwrap();
    }
    assert_eq!(w.objects_written(), recs.len() as u64);
    w.finish_into_inner().unwrap()
}

fn read_all(bytes: &[u8]) -> Result<(Header, Vec<Record>, Summary)> {
    let mut r = Reader::open(bytes)?;
    let mut recs = Vec::new();
    while let Some(rec) = r.next()? {
        recs.push(rec);
    }
    let summary = r.summary().cloned().unwrap();
    Ok((r.header().clone(), recs, summary))
}

/// An archive built by hand: `header_json`, records framed as given, and a trailer of
/// `count` (default: the records') and `sha` (default: the right one).
fn raw(header_json: &[u8], recs: &[Record], count: Option<u64>, sha: Option<[u8; 32]>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    push_frame(&mut out, HEADER, header_json).unwrap();
    for r in recs {
        let mut payload = Vec::new();
        push_record_payload(&mut payload, r).unwrap();
        push_frame(&mut out, RECORD, &payload).unwrap();
    }
    let right: [u8; 32] = Sha256::digest(&out).into();
    let mut trailer = count.unwrap_or(recs.len() as u64).to_be_bytes().to_vec();
    trailer.extend_from_slice(&sha.unwrap_or(right));
    push_frame(&mut out, TRAILER, &trailer).unwrap();
    out
}

fn header_json(h: &Header) -> Vec<u8> {
    serde_json::to_vec(h).unwrap()
}

fn compress(plain: &[u8]) -> Vec<u8> {
    zstd::encode_all(plain, 3).unwrap()
}

#[track_caller]
fn corrupt(bytes: &[u8], want: &str) {
    match read_all(bytes) {
        Err(Error::Corrupt(m)) => assert!(m.contains(want), "{m:?} does not say {want:?}"),
        other => panic!(
            "expected Corrupt({want:?}), got {:?}",
            other.map(|(_, r, _)| r.len())
        ),
    }
}

#[test]
fn round_trips_plain_and_compressed() {
    let h = header("root:a", false, 4);
    let recs = records(3);
    for compress in [false, true] {
        let (bytes, written) = write(&h, &recs, compress);
        assert_eq!(written.bytes, bytes.len() as u64);
        assert_eq!(written.objects, 4);
        assert_eq!(bytes.starts_with(&MAGIC), !compress);
        let (got_header, got, read) = read_all(&bytes).unwrap();
        assert_eq!((got_header, got), (h.clone(), recs.clone()));
        assert_eq!(read, written);
        assert_eq!(verify(bytes.as_slice()).unwrap(), (h.clone(), written));
    }
    // The checksum is over the framed content: the same with and without compression.
    assert_eq!(
        write(&h, &recs, false).1.sha256,
        write(&h, &recs, true).1.sha256
    );
}

#[test]
fn the_header_is_camel_case_json() {
    let json = String::from_utf8(header_json(&header("root", false, 0))).unwrap();
    for key in [
        "formatVersion",
        "kplaneVersion",
        "sourceServer",
        "objectCount",
        "created",
    ] {
        assert!(json.contains(&format!("\"{key}\"")), "{json}");
    }
}

#[test]
fn an_empty_archive_round_trips() {
    let h = header("root:a", true, 0);
    let (bytes, summary) = write(&h, &[], true);
    assert_eq!(verify(bytes.as_slice()).unwrap(), (h, summary));
}

#[test]
fn round_trips_100_000_records_in_both_forms() {
    let recs = records(99_999);
    let h = header("root:a", false, recs.len() as u64);
    for compress in [false, true] {
        let (bytes, written) = write(&h, &recs, compress);
        let mut r = Reader::open(bytes.as_slice()).unwrap();
        let mut n = 0;
        while let Some(got) = r.next().unwrap() {
            assert_eq!(got, recs[n]);
            n += 1;
        }
        assert_eq!(n, 100_000);
        assert_eq!(r.summary(), Some(&written));
        assert_eq!(r.bytes_read(), bytes.len() as u64);
    }
}

#[test]
fn records_larger_than_every_buffer_round_trip() {
    // 8 KiB read buffers, zstd's 128 KiB blocks: 40 times the larger.
    let mut big = rec("root:a", "/configmaps", "default", "big");
    big.value = format!(r#"{{"data":{{"x":"{}"}}}}"#, "ab".repeat(5 << 20 >> 1)).into_bytes();
    let recs = vec![
        rec("root:a", "/configmaps", "default", "a"),
        big,
        rec("root:a", "/configmaps", "default", "c"),
    ];
    let h = header("root:a", false, 3);
    for compress in [false, true] {
        let (bytes, _) = write(&h, &recs, compress);
        assert_eq!(read_all(&bytes).unwrap().1, recs);
        // And through an input that returns one byte per read.
        let mut r = Reader::open(OneByte(&bytes[..])).unwrap();
        let mut got = Vec::new();
        while let Some(rec) = r.next().unwrap() {
            got.push(rec);
        }
        assert_eq!(got, recs);
    }
}

/// An input that returns at most one byte per read.
struct OneByte<'a>(&'a [u8]);

impl std::io::Read for OneByte<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0.len()).min(1);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn recursive_archives_hold_descendants() {
    let recs = vec![
        rec("root:a", "/namespaces", "", "default"),
        rec("root:a:b", CRD_RESOURCE, "", "w.x.io"),
        rec("root:a:b", "/namespaces", "", "default"),
        rec("root:a:b:c", "/namespaces", "", "default"),
        rec("root:a:d", "/namespaces", "", "default"),
    ];
    let h = header("root:a", true, 5);
    let (bytes, _) = write(&h, &recs, true);
    assert_eq!(read_all(&bytes).unwrap().1, recs);
}

#[test]
fn not_an_archive() {
    for bytes in [
        &b""[..],
        b"hello world, this is text",
        b"{\"formatVersion\":1}",
        b"\x89KPLARX\nxxxxxxxxxxxxxx",
        &compress(b"some other compressed content")[..],
    ] {
        assert!(
            matches!(read_all(bytes), Err(Error::NotAnArchive)),
            "{bytes:?}"
        );
    }
    assert_eq!(
        Error::NotAnArchive.to_string(),
        "not a kplane archive (it does not start with the archive magic)"
    );
}

#[test]
fn a_newer_format_version_is_refused_with_the_upgrade_message() {
    let json = br#"{"formatVersion":2,"somethingNew":{"x":1}}"#;
    for bytes in [
        raw(json, &[], None, None),
        compress(&raw(json, &[], None, None)),
    ] {
        let err = Reader::open(bytes.as_slice()).unwrap_err();
        assert!(matches!(
            err,
            Error::UnsupportedVersion {
                found: 2,
                supported: 1
            }
        ));
        assert_eq!(
            err.to_string(),
            "archive format version 2 is newer than this kplane supports (1); upgrade kplane"
        );
    }
}

/// Plain: every flipped bit is an error. Compressed: every flipped bit is an error or
/// leaves the content exactly as it was (zstd's frame header has bits, such as the
/// window size, and block bits, that do not change what it decodes to).
#[test]
fn every_flipped_byte_is_caught() {
    let recs = records(3);
    let h = header("root:a", false, 4);
    for compress in [false, true] {
        let (bytes, _) = write(&h, &recs, compress);
        let mut harmless = 0;
        for i in 0..bytes.len() {
            for bit in [0x01, 0x80] {
                let mut bad = bytes.clone();
                bad[i] ^= bit;
                match read_all(&bad) {
                    Err(_) => {}
                    Ok((got_header, got, _)) if compress => {
                        assert_eq!((got_header, got), (h.clone(), recs.clone()));
                        harmless += 1;
                    }
                    Ok(_) => panic!(
                        "flipping bit {bit:#x} of byte {i} (compressed: {compress}) went unnoticed"
                    ),
                }
            }
        }
        // A handful at most: bits zstd ignores or that change nothing decoded.
        assert!(
            harmless * 20 <= bytes.len(),
            "{harmless} of {}",
            bytes.len() * 2
        );
    }
}

#[test]
fn a_flipped_byte_in_a_record_names_the_record() {
    let recs = records(3);
    let (bytes, _) = write(&header("root:a", false, 4), &recs, false);
    // The value of record 3 ends 5 bytes (the `}}` and the CRC-32) before record 4's
    // frame; flip a letter in its name.
    let at = bytes.windows(10).position(|w| w == b"cm-0000001").unwrap();
    let mut bad = bytes.clone();
    bad[at + 9] = b'9';
    corrupt(&bad, "record 3: frame checksum (CRC-32) mismatch");
}

#[test]
fn truncation_anywhere_is_caught() {
    let recs = records(3);
    let h = header("root:a", false, 4);
    for compress in [false, true] {
        let (bytes, _) = write(&h, &recs, compress);
        for len in 1..bytes.len() {
            let got = read_all(&bytes[..len]);
            assert!(
                matches!(got, Err(Error::Truncated)),
                "a {len}-byte prefix (compressed: {compress}): {:?}",
                got.err()
            );
        }
    }
}

#[test]
fn a_missing_trailer_is_truncation() {
    let recs = records(2);
    let (bytes, _) = write(&header("root:a", false, 3), &recs, false);
    let without = &bytes[..bytes.len() - (5 + 40 + 4)];
    assert!(matches!(read_all(without), Err(Error::Truncated)));
    assert!(matches!(
        read_all(&compress(without)),
        Err(Error::Truncated)
    ));
    assert!(matches!(verify(without), Err(Error::Truncated)));
}

#[test]
fn a_wrong_checksum_is_refused() {
    let recs = records(2);
    let json = header_json(&header("root:a", false, 3));
    let bytes = raw(&json, &recs, None, Some([7; 32]));
    match read_all(&bytes) {
        Err(Error::ChecksumMismatch { expected, actual }) => {
            assert_eq!(expected, hex::encode([7; 32]));
            assert_ne!(actual, expected);
        }
        other => panic!("{:?}", other.err()),
    }
    // A record changed and its frame CRC recomputed: only the SHA-256 notices.
    let mut good = raw(&json, &recs, None, None);
    let mut changed = recs.clone();
    changed[1].value = br#"{"metadata":{"name":"tampered"}}"#.to_vec();
    let tampered = raw(&json, &changed, None, None);
    let trailer = good.split_off(good.len() - 49);
    let mut spliced = tampered[..tampered.len() - 49].to_vec();
    spliced.extend_from_slice(&trailer);
    assert!(matches!(
        read_all(&spliced),
        Err(Error::ChecksumMismatch { .. })
    ));
}

#[test]
fn count_mismatches_are_refused() {
    let recs = records(2);
    let json = header_json(&header("root:a", false, 3));
    let bytes = raw(&json, &recs, Some(4), None);
    let err = read_all(&bytes).err().unwrap();
    assert!(
        matches!(
            err,
            Error::CountMismatch {
                place: "trailer",
                expected: 4,
                actual: 3
            }
        ),
        "{err}"
    );
    let json = header_json(&header("root:a", false, 5));
    let err = read_all(&raw(&json, &recs, None, None)).err().unwrap();
    assert!(
        matches!(
            err,
            Error::CountMismatch {
                place: "header",
                expected: 5,
                actual: 3
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "archive object count mismatch: the header says 5 objects, the archive holds 3"
    );
}

#[test]
fn trailing_garbage_is_refused() {
    let recs = records(2);
    let (plain, _) = write(&header("root:a", false, 3), &recs, false);
    let mut bad = plain.clone();
    bad.push(0);
    corrupt(&bad, "follows the archive's trailer");
    // Inside the compressed stream, and after it.
    corrupt(&compress(&bad), "follows the archive's trailer");
    let mut bad = compress(&plain);
    bad.extend_from_slice(b"garbage");
    corrupt(&bad, "after the compressed stream");
    let mut two = compress(&plain);
    two.extend_from_slice(&compress(&plain));
    corrupt(&two, "after the compressed stream");
}

#[test]
fn records_breaking_the_rules_are_refused_naming_the_record() {
    let not_recursive = header_json(&header("root:a", false, 2));
    let recursive = header_json(&header("root:a", true, 2));
    let ok = rec("root:a", "/configmaps", "default", "a");
    let mut not_object = rec("root:a", "/configmaps", "default", "b");
    not_object.value = b"[1,2]".to_vec();
    let cases = [
        (&not_recursive, rec("root:b", "/configmaps", "default", "b"), "record 2: an object of cluster \"root:b\", outside"),
        (&recursive, rec("root:ab", "/configmaps", "default", "b"), "record 2: an object of cluster \"root:ab\", outside"),
        (&not_recursive, rec("root:a:x", "/configmaps", "default", "b"), "record 2: an object of cluster \"root:a:x\", a descendant"),
        (&not_recursive, rec("root:a", "/configmaps", "default", "0"), "record 2: root:a /configmaps default/0 is out of order"),
        (&not_recursive, rec("root:a", CRD_RESOURCE, "", "w.x.io"), "record 2: root:a apiextensions.k8s.io/customresourcedefinitions w.x.io is out of order"),
        (&not_recursive, ok.clone(), "appears twice"),
        (&not_recursive, not_object, "record 2: the value of root:a /configmaps default/b is not a JSON object"),
    ];
    for (json, second, want) in cases {
        corrupt(&raw(json, &[ok.clone(), second], None, None), want);
    }
}

#[test]
fn damaged_frames_are_refused() {
    let json = header_json(&header("root:a", false, 0));
    // A record payload whose strings run past its end, with a valid CRC.
    let mut bytes = MAGIC.to_vec();
    push_frame(&mut bytes, HEADER, &json).unwrap();
    push_frame(&mut bytes, RECORD, &[0, 9, b'r']).unwrap();
    corrupt(&bytes, "record 1: the payload ends inside its cluster");
    // A second header.
    let mut bytes = MAGIC.to_vec();
    push_frame(&mut bytes, HEADER, &json).unwrap();
    push_frame(&mut bytes, HEADER, &json).unwrap();
    corrupt(&bytes, "record 1: a second header");
    // A header that is not JSON, or lacks fields.
    corrupt(
        &raw(b"{not json", &[], None, None),
        "header: no format version",
    );
    corrupt(
        &raw(br#"{"formatVersion":1}"#, &[], None, None),
        "header: missing field",
    );
    corrupt(
        &raw(br#"{"formatVersion":0}"#, &[], None, None),
        "header: format version 0",
    );
    // A record first.
    let mut bytes = MAGIC.to_vec();
    push_frame(&mut bytes, RECORD, b"").unwrap();
    corrupt(&bytes, "header: the first frame is not a header");
}

#[test]
fn errors_are_final() {
    let (bytes, _) = write(&header("root:a", false, 4), &records(3), false);
    let mut bad = bytes.clone();
    let at = bad.len() - 60;
    bad[at] ^= 1;
    let mut r = Reader::open(bad.as_slice()).unwrap();
    let mut result = Ok(None);
    for _ in 0..5 {
        result = r.next();
        if result.is_err() {
            break;
        }
    }
    assert!(result.is_err());
    assert!(r.next().is_err());
    assert!(r.summary().is_none());
}

#[test]
fn the_writer_refuses_what_the_reader_would() {
    let h = header("root:a", false, 2);
    let mut w = Writer::new(Vec::new(), &h, false).unwrap();
    w.write(&rec("root:a", "/configmaps", "default", "b"))
        .unwrap();
    for bad in [
        rec("root:a", "/configmaps", "default", "a"),
        rec("root:b", "/configmaps", "default", "c"),
        rec("root:a:x", "/configmaps", "default", "c"),
        Record {
            value: b"null".to_vec(),
            ..rec("root:a", "/configmaps", "default", "c")
        },
        rec("root:a", "/configmaps", &"n".repeat(70_000), "c"),
    ] {
        let before = w.bytes_written();
        assert!(
            matches!(w.write(&bad), Err(Error::Invalid(_))),
            "{:?}",
            bad.name
        );
        assert_eq!(w.bytes_written(), before);
    }
    assert_eq!(w.objects_written(), 1);
    // One record of the two the header announced.
    assert!(matches!(
        w.finish(),
        Err(Error::CountMismatch {
            place: "header",
            expected: 2,
            actual: 1
        })
    ));
    let newer = Header {
        format_version: 2,
        ..h
    };
    assert!(matches!(
        Writer::new(Vec::new(), &newer, true),
        Err(Error::Invalid(_))
    ));
}

#[test]
fn a_failing_input_is_an_io_error() {
    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    assert!(matches!(Reader::open(Failing), Err(Error::Io(_))));
    let (bytes, _) = write(&header("root:a", false, 3001), &records(3000), true);
    let half = &bytes[..bytes.len() / 2];
    let mut r = Reader::open(std::io::Read::chain(half, Failing)).unwrap();
    let err = loop {
        match r.next() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("read past a failing input"),
            Err(e) => break e,
        }
    };
    assert!(matches!(err, Error::Io(_)), "{err}");
}
