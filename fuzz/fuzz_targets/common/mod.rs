//! Shared by the fuzz targets: every loader of the file format, and what a user does with
//! what loads (read, round-trip, insert, query), with bounded work.
//!
//! Bounds: the process-wide memory limit is [`LIMIT`] (so no loader or growth may allocate
//! more, whatever a file declares), each loaded structure gets at most [`KEYS`] inserts, and
//! libFuzzer's `-timeout` turns an insert that does not finish (a file whose own parameters
//! allow unbounded work) into a reported hang.
#![allow(dead_code)]

use bloomery::prelude::*;
use bloomery::{
    AnyCounter, AttenuatedBloomFilter, BloomierFilter, BreadthBloomFilter, CuckooFilter,
    DepthBloomFilter, TDigest, TopK, XorFilter,
};

/// The memory limit every target runs under.
pub const LIMIT: u64 = 64 << 20;
/// Inserts per loaded structure.
pub const KEYS: usize = 16;

/// The input with its last 8 bytes replaced by the xxh3-64 checksum of the rest, so that
/// mutations reach the checks behind the checksum ("resealed"); `None` when too short.
pub fn resealed(data: &[u8]) -> Option<Vec<u8>> {
    if data.len() < 8 {
        return None;
    }
    let mut sealed = data.to_vec();
    let n = sealed.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&sealed[..n]);
    sealed[n..].copy_from_slice(&sum.to_le_bytes());
    Some(sealed)
}

/// Keys to insert and query: a few fixed ones (URLs, so the multi-layer filter takes them)
/// and a few cut from the input.
pub fn keys(data: &[u8]) -> Vec<Vec<u8>> {
    let mut k: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"a".to_vec(),
        b"golden-0".to_vec(),
        b"https://example.org/a/b/c".to_vec(),
        b"http://example.com/x?y=1".to_vec(),
    ];
    for (i, chunk) in data.chunks(13).take(KEYS - k.len()).enumerate() {
        let mut key = format!("https://fuzz.example/{i}/").into_bytes();
        key.extend_from_slice(chunk);
        k.push(key);
    }
    k.truncate(KEYS);
    k
}

/// Re-encode, decode again, and require the same bytes.
fn round_trip<P: Persist>(f: &P, what: &str) -> P {
    let bytes = f.to_bytes();
    let g = P::from_bytes(&bytes).unwrap_or_else(|e| panic!("{what}: re-encoded file fails: {e}"));
    assert_eq!(g.to_bytes(), bytes, "{what}: encoding is not stable");
    g
}

/// Feed `bytes` to every loader; exercise whatever loads.
pub fn exercise_file(bytes: &[u8]) {
    let keys = keys(bytes);
    // read front to back, the same bytes give the same structure (or an error)
    let mut r = bytes;
    if let Ok(f) = AnyFilter::read_from(&mut r) {
        let read = bytes.len() - r.len();
        let whole = AnyFilter::from_bytes(&bytes[..read]).expect("read_from took what from_bytes refuses");
        assert!(whole.to_bytes() == f.to_bytes(), "read_from and from_bytes differ");
    }
    let mut r = bytes;
    if let Ok(c) = AnyCounter::read_from(&mut r) {
        let read = bytes.len() - r.len();
        let whole = AnyCounter::from_bytes(&bytes[..read]).expect("read_from took what from_bytes refuses");
        assert!(whole.to_bytes() == c.to_bytes(), "read_from and from_bytes differ");
    }
    if let Ok(f) = AnyFilter::from_bytes(bytes) {
        assert!(AnyFilter::read_from(bytes).is_ok(), "from_bytes took what read_from refuses");
        set_filter(f, &keys);
    }
    if let Ok(c) = AnyCounter::from_bytes(bytes) {
        counter(c, &keys);
    }
    if let Ok(f) = CuckooFilter::from_bytes(bytes) {
        let mut f = round_trip(&f, "cuckoo");
        for k in &keys {
            let _ = f.contains(k);
            if f.insert(k).is_ok() {
                assert!(f.contains(k), "cuckoo: false negative after insert");
            }
        }
        for k in &keys {
            let _ = f.remove(k);
        }
        round_trip(&f, "cuckoo after inserts");
    }
    if let Ok(f) = TopK::from_bytes(bytes) {
        let mut f = round_trip(&f, "topk");
        for k in &keys {
            let _ = f.insert(k);
            let _ = f.contains(k);
        }
        let _ = f.list();
        round_trip(&f, "topk after adds");
    }
    if let Ok(f) = TDigest::from_bytes(bytes) {
        let mut f = round_trip(&f, "tdigest");
        let _ = (f.quantiles(&[0.0, 0.5, 1.0]), f.cdfs(&[0.0, 1e300]));
        let _ = (f.ranks(&[-1.0, 1.0], false), f.by_ranks(&[0, 7], true));
        let _ = f.trimmed_mean(0.1, 0.9);
        for (i, k) in keys.iter().enumerate() {
            let _ = f.insert(k.len() as f64 * 0.5 - i as f64);
        }
        round_trip(&f, "tdigest after adds");
    }
    if let Ok(f) = XorFilter::from_bytes(bytes) {
        let f = round_trip(&f, "xor");
        for k in &keys {
            let _ = f.contains(k);
        }
        let _ = (f.len(), f.bits_per_key(), f.expected_fpr());
    }
    if let Ok(f) = BloomierFilter::from_bytes(bytes) {
        let f = round_trip(&f, "bloomier");
        for k in &keys {
            let _ = f.get(k);
        }
    }
    if let Ok(f) = AttenuatedBloomFilter::from_bytes(bytes) {
        let mut f = round_trip(&f, "attenuated");
        for k in &keys {
            let _ = f.distance(k);
            f.insert_local(k);
            assert_eq!(
                f.distance(k),
                Some(0),
                "attenuated: local key not at distance 0"
            );
        }
        round_trip(&f, "attenuated after inserts");
    }
    if let Ok(f) = BreadthBloomFilter::from_bytes(bytes) {
        let mut f = round_trip(&f, "breadth");
        paths(&keys, |p, q| {
            let _ = f.matches(q);
            if f.insert_path(p).is_ok() {
                assert_eq!(f.matches(q).ok(), Some(true), "breadth: false negative");
            }
        });
        round_trip(&f, "breadth after inserts");
    }
    if let Ok(f) = DepthBloomFilter::from_bytes(bytes) {
        let mut f = round_trip(&f, "depth");
        paths(&keys, |p, q| {
            let _ = f.matches(q);
            if f.insert_path(p).is_ok() {
                assert_eq!(f.matches(q).ok(), Some(true), "depth: false negative");
            }
        });
        round_trip(&f, "depth after inserts");
    }
}

/// Tree paths (and their absolute queries) made from the keys.
fn paths(keys: &[Vec<u8>], mut f: impl FnMut(&[String], &str)) {
    for k in keys {
        let s = String::from_utf8_lossy(k);
        let p: Vec<String> = s
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|x| !x.is_empty())
            .take(4)
            .map(str::to_string)
            .collect();
        if p.is_empty() {
            continue;
        }
        let q = format!("/{}", p.join("/"));
        f(&p, &q);
    }
}

fn set_filter(f: AnyFilter, keys: &[Vec<u8>]) {
    let info = f.info();
    assert_eq!(info.kind, f.kind().rust_type().name());
    let _ = f.len();
    for k in keys {
        let _ = f.contains_key(k);
    }
    let bytes = f.to_bytes();
    let g = AnyFilter::from_bytes(&bytes).expect("a re-encoded filter must load");
    assert_eq!(g, f, "round trip changed the filter");
    assert_eq!(g.to_bytes(), bytes, "encoding is not stable");
    let mut g = g;
    for k in keys {
        if let Ok(_new) = g.try_insert_key(k) {
            assert!(
                g.contains_key(k),
                "{}: false negative after insert",
                info.kind
            );
        }
    }
    let after = g.to_bytes();
    let h = AnyFilter::from_bytes(&after).expect("a filter after inserts must load");
    for k in keys {
        if g.contains_key(k) {
            assert!(h.contains_key(k), "{}: key lost in a round trip", info.kind);
        }
    }
    let _ = h.info();
}

fn counter(c: AnyCounter, keys: &[Vec<u8>]) {
    let _ = c.info();
    let bytes = c.to_bytes();
    let mut c = AnyCounter::from_bytes(&bytes).expect("a re-encoded counter must load");
    assert_eq!(c.to_bytes(), bytes, "encoding is not stable");
    let h: Vec<_> = keys.iter().map(|k| c.hasher().hash_bytes(k)).collect();
    for &x in &h {
        let _ = c.count_hashed(x);
        if c.insert_hashed(x).is_ok() {
            assert!(
                c.contains_hashed(x),
                "{:?}: false negative after insert",
                c.kind()
            );
            assert!(
                c.count_hashed(x) >= 1,
                "{:?}: count 0 after insert",
                c.kind()
            );
        }
    }
    if c.remove_unsupported().is_none() {
        for &x in &h {
            let _ = c.remove_hashed(x);
        }
    }
    let _ = c.info();
    let again = AnyCounter::from_bytes(&c.to_bytes()).expect("a counter after inserts must load");
    let _ = again.len();
}
