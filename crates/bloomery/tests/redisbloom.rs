//! RedisBloom compatibility: the fixtures captured from RedisBloom 2.6 (tests/fixtures/
//! redisbloom, see its README) load through the library and answer exactly as RedisBloom did
//! — for 100 000 present and 100 000 absent keys, and through more adds, deletes and growth —
//! and the two kinds keep their laws: no false negatives, lossless persistence and chunking,
//! and no panic or oversized allocation on forged input.

#[path = "support/redisbloom_fixtures.rs"]
mod fixtures;

use bloomery::redisbloom::{
    RedisBloomChunkError, RedisBloomChunkFile, RedisBloomCuckooFilter, RedisBloomCuckooInsert,
    RedisBloomFilter, RedisBloomType, RedisBloomValue,
};
use bloomery::{AnyFilter, Error, Filter, KeySet, Kind, Persist};
use fixtures::{counts_of, fnv1a64, odd_ones, Fixture};
use proptest::prelude::*;
use serde_json::{json, Value};

const LIMIT: u64 = 64 << 20;

fn import(f: &Fixture) -> RedisBloomValue {
    let file = RedisBloomChunkFile::from_bytes(&std::fs::read(&f.chunks).unwrap()).unwrap();
    assert_eq!(file.key, f.key().as_bytes(), "{}", f.name);
    let ty = if f.is_bloom() {
        RedisBloomType::Bloom
    } else {
        RedisBloomType::Cuckoo
    };
    assert_eq!(file.value_type, ty);
    RedisBloomValue::from_chunks(ty, file.chunks.iter().map(|(i, c)| (*i, &c[..])), LIMIT)
        .unwrap_or_else(|e| panic!("{}: {e}", f.name))
}

fn bf_info(b: &RedisBloomFilter) -> Value {
    json!([
        "Capacity",
        b.total_entries(),
        "Size",
        b.redisbloom_memory(),
        "Number of filters",
        b.links().len(),
        "Number of items inserted",
        b.len(),
        "Expansion rate",
        if b.is_scaling() {
            json!(b.growth())
        } else {
            Value::Null
        }
    ])
}

fn cf_info(c: &RedisBloomCuckooFilter) -> Value {
    json!([
        "Size",
        c.redisbloom_memory(),
        "Number of buckets",
        c.first_buckets(),
        "Number of filters",
        c.filters(),
        "Number of items inserted",
        c.len(),
        "Number of items deleted",
        c.deletes(),
        "Bucket size",
        c.bucket_size(),
        "Expansion rate",
        c.expansion(),
        "Max iterations",
        c.max_iterations()
    ])
}

/// The value's state as the fixtures record it: header chunk, FNV-1a of the data chunks,
/// their length and the INFO reply.
fn state(v: &RedisBloomValue) -> Value {
    let (header, data, info) = match v {
        RedisBloomValue::Bloom(b) => (b.header_chunk(), data_chunks(|it| b.chunk(it)), bf_info(b)),
        // RedisBloom's CF.SCANDUMP returns no chunk for a filter without items
        RedisBloomValue::Cuckoo(c) if c.is_empty() => (c.header_chunk(), Vec::new(), cf_info(c)),
        RedisBloomValue::Cuckoo(c) => (c.header_chunk(), data_chunks(|it| c.chunk(it)), cf_info(c)),
    };
    json!({
        "header_hex": header.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "data_fnv1a64": fnv1a64(data.iter().map(|d| &d[..])),
        "data_bytes": data.iter().map(Vec::len).sum::<usize>(),
        "info": info,
    })
}

fn data_chunks(chunk: impl Fn(i64) -> Option<(i64, Vec<u8>)>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut it = 1;
    while let Some((next, d)) = chunk(it) {
        out.push(d);
        it = next;
    }
    out
}

fn check_bloom(f: &Fixture, mut b: RedisBloomFilter) {
    let j = &f.json;
    assert_eq!(
        state(&RedisBloomValue::Bloom(b.clone())),
        j["state"],
        "{}",
        f.name
    );
    assert_eq!(b.len(), j["card"].as_u64().unwrap());
    let present = f.keys(&["present"]);
    let inserted = &present[..j["inserted"].as_u64().unwrap() as usize];
    let absent = f.keys(&["absent"]);
    assert_eq!(
        odd_ones(inserted, true, |k| b.contains(k)),
        f.indices(&["present_not_1"]),
        "{}: present keys",
        f.name
    );
    let fp = odd_ones(&absent, false, |k| b.contains(k));
    assert_eq!(fp, f.indices(&["absent_1"]), "{}: absent keys", f.name);
    // the trait path (hasher → hashed query) answers the same
    let h = *b.hasher();
    assert!(inserted.iter().all(|k| b.contains_hashed(h.hash_bytes(k))));
    // phase 2: more adds, as BF.MADD (stops at a full non-scaling chain)
    let more = f.keys(&["then", "madd"]);
    let (mut zero, mut errors, mut replies) = (Vec::new(), Vec::new(), 0);
    for (i, k) in more.iter().enumerate() {
        replies += 1;
        match b.try_insert(k) {
            Ok(true) => {}
            Ok(false) => zero.push(i),
            Err(Error::Full { .. }) => {
                errors.push(json!([i, "ERR non scaling filter is full"]));
                break;
            }
            Err(_) => errors.push(json!([i, "ERR problem inserting into filter"])),
        }
    }
    let r = &j["then"]["madd_replies"];
    assert_eq!(replies, r["replies"].as_u64().unwrap(), "{}", f.name);
    assert_eq!(zero, fixtures::indices_of(&r["zero"]), "{}: adds", f.name);
    assert_eq!(json!(errors), r["errors"], "{}", f.name);
    assert_eq!(b.len(), j["then"]["card"].as_u64().unwrap());
    assert_eq!(
        state(&RedisBloomValue::Bloom(b.clone())),
        j["then"]["state"],
        "{}: after more adds",
        f.name
    );
    round_trip(AnyFilter::RedisBloomChain(b), &absent);
}

fn cf_reply(r: RedisBloomCuckooInsert, nx: bool) -> Value {
    match r {
        RedisBloomCuckooInsert::Inserted => json!(1),
        RedisBloomCuckooInsert::Exists => json!(0),
        RedisBloomCuckooInsert::NoSpace if nx => json!(-1),
        RedisBloomCuckooInsert::NoSpace => json!({"error": "Filter is full"}),
        RedisBloomCuckooInsert::NoMemory => json!({"error": "Memory allocation failure"}),
    }
}

fn check_cuckoo(f: &Fixture, mut c: RedisBloomCuckooFilter) {
    let j = &f.json;
    assert_eq!(
        state(&RedisBloomValue::Cuckoo(c.clone())),
        j["state"],
        "{}",
        f.name
    );
    if j["present"].is_null() {
        return; // cf-empty: its state is all there is
    }
    let present = f.keys(&["present"]);
    let absent = f.keys(&["absent"]);
    assert_eq!(
        odd_ones(&present, true, |k| c.contains(k)),
        f.indices(&["present_not_1"]),
        "{}: present keys",
        f.name
    );
    assert_eq!(
        odd_ones(&absent, false, |k| c.contains(k)),
        f.indices(&["absent_1"]),
        "{}: absent keys",
        f.name
    );
    let n = j["count_keys"].as_u64().unwrap() as usize;
    let odd_counts = |keys: &[Vec<u8>], usual: u64| -> Vec<(usize, u64)> {
        keys.iter()
            .take(n) // at most the recorded number of keys
            .enumerate()
            .map(|(i, k)| (i, c.count(k)))
            .filter(|&(_, v)| v != usual)
            .collect()
    };
    assert_eq!(
        odd_counts(&present, 1),
        counts_of(&j["present_count_not_1"])
    );
    assert_eq!(odd_counts(&absent, 0), counts_of(&j["absent_count_not_0"]));
    let h = *c.hasher();
    assert!(present
        .iter()
        .all(|k| c.contains_hashed(h.hash_bytes(k)) == c.contains(k)));
    // phase 2: deletes (with RedisBloom's compaction), adds (with growth), unique adds
    let t = &j["then"];
    let dels = t["del_first"].as_u64().unwrap() as usize;
    let odd = |v: Vec<(usize, Value)>, usual: Value| -> Value {
        json!(v
            .into_iter()
            .filter(|(_, r)| *r != usual)
            .map(|(i, r)| json!([i, r]))
            .collect::<Vec<_>>())
    };
    let del: Vec<_> = present[..dels]
        .iter()
        .enumerate()
        .map(|(i, k)| (i, json!(i64::from(c.remove(k).is_ok()))))
        .collect();
    assert_eq!(odd(del, json!(1)), t["del_not_1"], "{}: deletes", f.name);
    let add: Vec<_> = f
        .keys(&["then", "add"])
        .iter()
        .enumerate()
        .map(|(i, k)| (i, cf_reply(c.add(k), false)))
        .collect();
    assert_eq!(odd(add, json!(1)), t["add_not_1"], "{}: adds", f.name);
    let (a, b) = (
        t["addnx_range"][0].as_u64().unwrap() as usize,
        t["addnx_range"][1].as_u64().unwrap() as usize,
    );
    let nx: Vec<_> = present[a..b]
        .iter()
        .enumerate()
        .map(|(i, k)| (i, cf_reply(c.insert_unique(k), false)))
        .collect();
    assert_eq!(
        odd(nx, json!(0)),
        t["addnx_not_0"],
        "{}: unique adds",
        f.name
    );
    assert_eq!(
        state(&RedisBloomValue::Cuckoo(c.clone())),
        t["state"],
        "{}: after deletes and adds",
        f.name
    );
    round_trip(AnyFilter::RedisBloomCuckoo(c), &absent);
}

/// Saved and loaded (file format, kind 22/23), the value answers the same and re-encodes to
/// the same bytes.
fn round_trip(f: AnyFilter, probe: &[Vec<u8>]) {
    let bytes = f.to_bytes();
    let g = AnyFilter::from_bytes(&bytes).unwrap();
    assert_eq!(g, f);
    assert_eq!(g.to_bytes(), bytes);
    assert!(probe
        .iter()
        .take(20_000)
        .all(|k| g.contains_key(k) == f.contains_key(k)));
    let info = g.info();
    assert!(info.bits > 0 && info.fill_ratio > 0.0 && info.fill_ratio < 1.0);
}

fn replay(name: &'static str) {
    let f = fixtures::load(name);
    match import(&f) {
        RedisBloomValue::Bloom(b) => check_bloom(&f, b),
        RedisBloomValue::Cuckoo(c) => check_cuckoo(&f, c),
    }
}

/// One test per fixture: each loads through the library and answers as RedisBloom did.
macro_rules! fixture_tests {
    ($($t:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $t() {
            replay($name);
        }
    )*
    #[test]
    fn every_fixture_is_replayed() {
        assert_eq!(fixtures::NAMES.to_vec(), vec![$($name),*]);
    }};
}

fixture_tests!(
    bf_scaling_answers_as_redisbloom => "bf-scaling",
    bf_default_answers_as_redisbloom => "bf-default",
    bf_nonscaling_answers_as_redisbloom => "bf-nonscaling",
    bf_legacy_pow2_answers_as_redisbloom => "bf-legacy-pow2",
    bf_legacy_noround_answers_as_redisbloom => "bf-legacy-noround",
    bf_force64_pow2_answers_as_redisbloom => "bf-force64-pow2",
    cf_main_answers_as_redisbloom => "cf-main",
    cf_exp2_answers_as_redisbloom => "cf-exp2",
    cf_noexp_answers_as_redisbloom => "cf-noexp",
    cf_empty_answers_as_redisbloom => "cf-empty",
);

#[test]
fn fixtures_cover_what_the_migration_promises() {
    let bf = fixtures::load("bf-scaling");
    let cf = fixtures::load("cf-main");
    for f in [&bf, &cf] {
        assert_eq!(f.json["present"]["count"], 100_000);
        assert_eq!(f.json["absent"]["count"], 100_000);
    }
    assert!(
        bf.json["state"]["info"][5].as_u64().unwrap() >= 3,
        "a few links"
    );
    assert!(
        cf.json["state"]["info"][5].as_u64().unwrap() >= 2,
        "expanded"
    );
    // the fixture's own parameters are what RedisBloom's BF.RESERVE made
    let RedisBloomValue::Bloom(b) = import(&bf) else {
        panic!()
    };
    let fresh = RedisBloomFilter::reserve(15_000, 0.1, 2, true).unwrap();
    assert_eq!(b.links()[0].bits(), fresh.links()[0].bits());
    assert_eq!(b.links()[0].hashes(), fresh.links()[0].hashes());
    assert_eq!(
        b.options(),
        RedisBloomFilter::OPT_FORCE64 | RedisBloomFilter::OPT_NOROUND
    );
}

/// The false-positive rate `info` reports for the two large fixtures is the rate RedisBloom
/// showed on the 100 000 absent keys, within 3σ of a binomial count.
#[test]
fn reported_rate_matches_redisbloom_measured_rate() {
    for name in ["bf-scaling", "cf-main"] {
        let f = fixtures::load(name);
        let any = match import(&f) {
            RedisBloomValue::Bloom(b) => AnyFilter::RedisBloomChain(b),
            RedisBloomValue::Cuckoo(c) => AnyFilter::RedisBloomCuckoo(c),
        };
        let p = any.info().current_fpr;
        let n = f.json["absent"]["count"].as_u64().unwrap() as f64;
        let seen = f.json["absent_1"]["count"].as_u64().unwrap() as f64;
        let sigma = (n * p * (1.0 - p)).sqrt();
        assert!(
            (seen - n * p).abs() < 3.0 * sigma,
            "{name}: RedisBloom answered 1 for {seen} absent keys, info predicts {}",
            n * p
        );
    }
}

#[test]
fn import_refuses_bad_sequences() {
    let f = fixtures::load("bf-default");
    let file = RedisBloomChunkFile::from_bytes(&std::fs::read(&f.chunks).unwrap()).unwrap();
    let chunks: Vec<(i64, &[u8])> = file.chunks.iter().map(|(i, c)| (*i, &c[..])).collect();
    let imp = |c: &[(i64, &[u8])]| {
        RedisBloomValue::from_chunks(RedisBloomType::Bloom, c.iter().copied(), LIMIT)
    };
    assert!(imp(&chunks).is_ok());
    assert!(matches!(imp(&[]), Err(RedisBloomChunkError::Sequence(_))));
    assert!(matches!(
        imp(&chunks[1..]),
        Err(RedisBloomChunkError::Sequence(_))
    ));
    assert!(matches!(
        imp(&chunks[..chunks.len() - 1]),
        Err(RedisBloomChunkError::Sequence(_))
    ));
    let mut swapped = chunks.clone();
    swapped.swap(1, 2);
    assert!(imp(&swapped).is_err());
    let mut twice = chunks.clone();
    twice.insert(2, chunks[1]);
    assert!(imp(&twice).is_err());
    // a BF header is not a CF header
    assert!(matches!(
        RedisBloomValue::from_chunks(RedisBloomType::Cuckoo, chunks.iter().copied(), LIMIT),
        Err(RedisBloomChunkError::HeaderLength(_))
    ));
    // the limit applies before anything is allocated
    assert!(matches!(
        RedisBloomValue::from_chunks(RedisBloomType::Bloom, chunks.iter().copied(), 1000),
        Err(RedisBloomChunkError::BadHeader(_) | RedisBloomChunkError::TooLarge { .. })
    ));
}

#[test]
fn kinds_are_registered() {
    assert_eq!(Kind::from_id(22), Some(Kind::RedisBloomChain));
    assert_eq!(Kind::from_id(23), Some(Kind::RedisBloomCuckoo));
    assert_eq!(Kind::RedisBloomChain.name(), "redisbloom-bf");
    assert_eq!(Kind::RedisBloomCuckoo.name(), "redisbloom-cf");
    assert!(Kind::RedisBloomChain.is_set() && Kind::RedisBloomCuckoo.is_set());
    let b = AnyFilter::builder(Kind::RedisBloomChain)
        .capacity(100)
        .fpr(0.01)
        .try_build()
        .unwrap();
    assert_eq!(b.kind(), Kind::RedisBloomChain);
    assert_eq!(b.info().hash, "murmurhash64a");
}

/// Chains of every option set RedisBloom knows (the hash and layout they select).
fn chain(options: u32, cap: u64, growth: u32) -> RedisBloomFilter {
    RedisBloomFilter::with_options(cap, 0.05, options, growth, 1 << 24).unwrap()
}

fn option_sets() -> impl Strategy<Value = u32> {
    prop::sample::select(vec![
        RedisBloomFilter::OPT_FORCE64 | RedisBloomFilter::OPT_NOROUND,
        RedisBloomFilter::OPT_FORCE64,
        RedisBloomFilter::OPT_NOROUND,
        0,
        RedisBloomFilter::OPT_FORCE64
            | RedisBloomFilter::OPT_NOROUND
            | RedisBloomFilter::OPT_NO_SCALING,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// No false negatives, through growth, persistence and chunking.
    #[test]
    fn chain_has_no_false_negatives(
        options in option_sets(),
        cap in 1u64..60,
        growth in 1u32..4,
        keys in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..30), 0..400),
    ) {
        let mut f = chain(options, cap, growth);
        for k in &keys {
            f.insert(k);
        }
        prop_assert!(keys.iter().all(|k| f.contains(k)));
        let g = RedisBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        prop_assert_eq!(&g, &f);
        let mut chunks = vec![(1i64, f.header_chunk())];
        chunks.extend(data_chunks_of(|it| f.chunk(it)));
        let h = RedisBloomValue::from_chunks(RedisBloomType::Bloom, chunks.iter().map(|(i, c)| (*i, &c[..])), LIMIT).unwrap();
        prop_assert_eq!(h, RedisBloomValue::Bloom(f.clone()));
        prop_assert!(keys.iter().all(|k| g.contains(k)));
    }

    #[test]
    fn cuckoo_has_no_false_negatives(
        cap in 4u64..200,
        bucket in 1u16..6,
        expansion in 1u16..5,
        keys in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..30), 0..400),
        removed in 0usize..100,
    ) {
        let cap = cap.max(2 * u64::from(bucket));
        let mut f = RedisBloomCuckooFilter::reserve(cap, bucket, 20, expansion, 1 << 24).unwrap();
        for k in &keys {
            prop_assert_eq!(f.add(k), RedisBloomCuckooInsert::Inserted);
        }
        prop_assert!(keys.iter().all(|k| f.contains(k)));
        // deleting copies (and the compaction it triggers) keeps every other copy
        let removed = removed.min(keys.len());
        for k in &keys[..removed] {
            prop_assert!(f.remove(k).is_ok());
        }
        prop_assert!(keys[removed..].iter().all(|k| f.contains(k)));
        prop_assert_eq!(f.len(), (keys.len() - removed) as u64);
        let g = RedisBloomCuckooFilter::from_bytes(&f.to_bytes()).unwrap();
        prop_assert_eq!(&g, &f);
        let mut chunks = vec![(1i64, f.header_chunk())];
        chunks.extend(data_chunks_of(|it| f.chunk(it)));
        let h = RedisBloomValue::from_chunks(RedisBloomType::Cuckoo, chunks.iter().map(|(i, c)| (*i, &c[..])), LIMIT).unwrap();
        prop_assert_eq!(h, RedisBloomValue::Cuckoo(f));
    }

    /// Forged header chunks (real ones with fields overwritten) and stray data chunks never
    /// panic, and nothing is allocated past the limit.
    #[test]
    fn forged_chunks_are_refused_or_bounded(
        bloom in any::<bool>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u64>(), 0usize..4), 1..4),
        it in any::<i64>(),
        data in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let limit = 1 << 16;
        let mut header = if bloom {
            let mut f = chain(RedisBloomFilter::OPT_FORCE64 | RedisBloomFilter::OPT_NOROUND, 20, 2);
            for i in 0..100u32 {
                f.insert(&i);
            }
            f.header_chunk()
        } else {
            RedisBloomCuckooFilter::reserve(64, 2, 20, 2, 1 << 20).unwrap().header_chunk()
        };
        for (at, v, w) in edits {
            let w = [1usize, 2, 4, 8][w];
            let at = at.index(header.len());
            let end = (at + w).min(header.len());
            header[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
        }
        if bloom {
            if let Ok(mut f) = RedisBloomFilter::from_header_chunk(&header, limit) {
                prop_assert!(f.allocated_bytes() <= limit);
                let _ = f.load_chunk(it, &data);
                let _ = f.contains(b"x");
                let _ = f.try_insert(b"y");
                let _ = f.chunk(it);
                prop_assert!(f.allocated_bytes() <= limit);
                let back = RedisBloomFilter::from_bytes(&f.to_bytes());
                prop_assert!(back.is_ok());
            }
        } else if let Ok(mut f) = RedisBloomCuckooFilter::from_header_chunk(&header, limit) {
            prop_assert!(f.allocated_bytes() <= limit);
            let _ = f.load_chunk(it, &data);
            let _ = f.count(b"x");
            for i in 0..50u32 {
                f.add(&i.to_le_bytes());
            }
            let _ = f.remove(b"y");
            let _ = f.chunk(it);
            prop_assert!(f.allocated_bytes() <= limit);
            prop_assert!(RedisBloomCuckooFilter::from_bytes(&f.to_bytes()).is_ok());
        }
    }

    /// Files of kinds 22 and 23 with forged parameters (checksum recomputed) never panic and
    /// never load past the limit.
    #[test]
    fn forged_files_are_refused_or_bounded(
        bloom in any::<bool>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u64>(), 0usize..4), 1..4),
    ) {
        let mut bytes = if bloom {
            let mut f = chain(RedisBloomFilter::OPT_FORCE64, 20, 3);
            for i in 0..200u32 {
                f.insert(&i);
            }
            f.to_bytes()
        } else {
            let mut f = RedisBloomCuckooFilter::reserve(64, 4, 20, 2, 1 << 20).unwrap();
            for i in 0..300u32 {
                f.add(&i.to_le_bytes());
            }
            f.to_bytes()
        };
        let params_end = 72 + u32::from_le_bytes(bytes[28..32].try_into().unwrap()) as usize;
        for (at, v, w) in edits {
            let w = [1usize, 2, 4, 8][w];
            let at = 32 + at.index(params_end - 32);
            let end = (at + w).min(params_end);
            bytes[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
        }
        let n = bytes.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
        bytes[n..].copy_from_slice(&sum.to_le_bytes());
        if let Ok(f) = AnyFilter::from_bytes(&bytes) {
            // a forged shape never finds more storage than the file carries
            prop_assert!(f.info().bytes <= bytes.len() as u64);
            let _ = f.contains_key(b"x");
            prop_assert_eq!(AnyFilter::from_bytes(&f.to_bytes()).unwrap(), f);
        }
    }
}

fn data_chunks_of(chunk: impl Fn(i64) -> Option<(i64, Vec<u8>)>) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 1;
    while let Some((next, d)) = chunk(it) {
        out.push((next, d));
        it = next;
    }
    out
}

#[cfg(feature = "serde")]
#[test]
fn serde_round_trip() {
    let mut b = RedisBloomFilter::reserve(10, 0.01, 2, true).unwrap();
    let mut c = RedisBloomCuckooFilter::reserve(16, 2, 20, 1, 1 << 20).unwrap();
    for i in 0..50u32 {
        b.insert(&i);
        c.add(&i.to_le_bytes());
    }
    let jb = serde_json::to_string(&b).unwrap();
    let jc = serde_json::to_string(&c).unwrap();
    assert_eq!(serde_json::from_str::<RedisBloomFilter>(&jb).unwrap(), b);
    assert_eq!(
        serde_json::from_str::<RedisBloomCuckooFilter>(&jc).unwrap(),
        c
    );
}

#[test]
fn chunk_files_round_trip() {
    for name in ["bf-nonscaling", "cf-noexp"] {
        let f = fixtures::load(name);
        let bytes = std::fs::read(&f.chunks).unwrap();
        let file = RedisBloomChunkFile::from_bytes(&bytes).unwrap();
        assert_eq!(file.to_bytes(), bytes);
        assert_eq!(file.pttl, -1);
    }
}

/// Recompute the xxh3-64 trailer after patching, so only the patched fields are wrong.
fn reseal(b: &mut [u8]) {
    let n = b.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
}

/// Byte offsets in a file: the header's item count, and the first link's `size` in a
/// `redisbloom-bf` file (parameters from 72: options, growth, links, zero, then per link
/// entries, error, bpe, bits, bytes, size).
const ITEMS: usize = 48;
const FIRST_LINK_SIZE: usize = 72 + 16 + 40;

/// Item counts saturate at `u64::MAX` as every native kind's do: a file whose count is there
/// (forged, with a valid checksum) takes more keys and is saved as a file that loads again,
/// with the count still `u64::MAX`.
#[test]
fn item_counts_saturate_and_the_file_still_loads() {
    // a chain: the full first link makes the next key grow a second one
    let mut f = RedisBloomFilter::reserve(100, 0.01, 2, true).unwrap();
    f.try_insert(b"first").unwrap();
    let mut b = f.to_bytes();
    assert_eq!(
        u64::from_le_bytes(b[FIRST_LINK_SIZE..FIRST_LINK_SIZE + 8].try_into().unwrap()),
        1,
        "link size field moved"
    );
    b[ITEMS..ITEMS + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    b[FIRST_LINK_SIZE..FIRST_LINK_SIZE + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    reseal(&mut b);
    let mut f = RedisBloomFilter::from_bytes(&b).unwrap();
    assert_eq!(f.len(), u64::MAX);
    for i in 0..10u32 {
        assert!(f.try_insert(&i.to_le_bytes()).unwrap());
    }
    assert_eq!(f.len(), u64::MAX);
    assert_eq!(f.links().len(), 2);
    let g = RedisBloomFilter::from_bytes(&f.to_bytes()).unwrap();
    assert_eq!(g.len(), u64::MAX);
    assert!((0..10u32).all(|i| g.contains(&i.to_le_bytes())));
    // and through RedisBloom's chunks
    let mut h = RedisBloomFilter::from_header_chunk(&g.header_chunk(), 1 << 20).unwrap();
    let mut it = 1;
    while let Some((next, data)) = g.chunk(it) {
        h.load_chunk(next, &data).unwrap();
        it = next;
    }
    assert_eq!(h, g);

    // a cuckoo filter at u64::MAX items stays there; at 0 a delete leaves 0
    let mut c = RedisBloomCuckooFilter::reserve(64, 2, 20, 1, 1 << 20).unwrap();
    c.add(b"first");
    for (items, want) in [(u64::MAX, u64::MAX), (0, 0)] {
        let mut b = c.to_bytes();
        b[ITEMS..ITEMS + 8].copy_from_slice(&items.to_le_bytes());
        reseal(&mut b);
        let mut d = RedisBloomCuckooFilter::from_bytes(&b).unwrap();
        if items == 0 {
            d.remove(b"first").unwrap();
        } else {
            assert_eq!(d.add(b"second"), RedisBloomCuckooInsert::Inserted);
        }
        let e = RedisBloomCuckooFilter::from_bytes(&d.to_bytes()).unwrap();
        assert_eq!(e.len(), want);
    }
}
