//! Differential test of the split-block filter against `sbbf-rs-safe`, an independent
//! implementation of the Parquet specification's split-block Bloom filter, plus the Parquet
//! value hashing (xxHash64, seed 0, over the plain encoding).

use bloomery::hashing::HashAlgorithm;
use bloomery::prelude::*;
use rand::{Rng, SeedableRng};

/// Same 64-bit hashes into filters of the same size: identical bitset bytes, identical
/// answers (for inserted and for random other hashes).
#[test]
fn same_bits_as_sbbf_rs_safe() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x9A8B);
    for (bits_per_key, num_keys) in [
        (8usize, 1usize),
        (10, 100),
        (16, 1000),
        (10, 10_000),
        (7, 3333),
    ] {
        let mut theirs = sbbf_rs_safe::Filter::new(bits_per_key, num_keys);
        let mut ours = SplitBlockBloomFilter::try_with_bytes(theirs.as_bytes().len()).unwrap();
        assert_eq!(ours.num_bytes(), theirs.as_bytes().len());
        let hashes: Vec<u64> = (0..num_keys).map(|_| rng.gen()).collect();
        for &h in &hashes {
            let was_theirs = theirs.insert_hash(h); // true: already present
            let new_ours = ours.insert_hash(h); // true: new
            assert_eq!(was_theirs, !new_ours, "insert answer for {h:#x}");
        }
        assert_eq!(
            ours.to_parquet_bitset(),
            theirs.as_bytes(),
            "bitset for {num_keys} keys"
        );
        for &h in &hashes {
            assert!(ours.contains_hash(h) && theirs.contains_hash(h));
        }
        let mut fp = 0;
        for _ in 0..20_000 {
            let h: u64 = rng.gen();
            assert_eq!(
                ours.contains_hash(h),
                theirs.contains_hash(h),
                "query {h:#x}"
            );
            fp += usize::from(ours.contains_hash(h));
        }
        assert!(fp < 20_000, "not saturated");
    }
}

/// Bitsets move both ways unchanged.
#[test]
fn parquet_bitset_round_trip() {
    let mut theirs = sbbf_rs_safe::Filter::new(10, 5000);
    for i in 0..5000u64 {
        theirs.insert_hash(xxhash_rust::xxh64::xxh64(&i.to_le_bytes(), 0));
    }
    let ours = SplitBlockBloomFilter::from_parquet_bitset(theirs.as_bytes()).unwrap();
    for i in 0..5000u64 {
        assert!(
            ours.contains(&i),
            "value {i} written by the other implementation"
        );
    }
    assert_eq!(ours.to_parquet_bitset(), theirs.as_bytes());
    let back = sbbf_rs_safe::Filter::from_bytes(&ours.to_parquet_bitset()).unwrap();
    assert_eq!(back.as_bytes(), theirs.as_bytes());
    // and through our own file format
    let again = SplitBlockBloomFilter::from_bytes(&ours.to_bytes()).unwrap();
    assert_eq!(again.to_parquet_bitset(), theirs.as_bytes());

    // invalid bitset sizes are typed errors
    for len in [0usize, 1, 31, 33, 100] {
        assert!(
            SplitBlockBloomFilter::from_parquet_bitset(&vec![0; len]).is_err(),
            "len {len}"
        );
    }
}

/// Parquet hashes values with xxHash64, seed 0, of their plain encoding: INT32/INT64 as
/// little-endian bytes, BYTE_ARRAY as the raw bytes.
#[test]
fn values_hash_as_parquet_plain_encoding() {
    let h = KeyHasher::parquet();
    assert_eq!(h.algorithm(), HashAlgorithm::Xxh64);
    assert_eq!(h.seed(), 0);
    let xx = |b: &[u8]| xxhash_rust::xxh64::xxh64(b, 0);
    for v in [0i32, 1, -1, 42, i32::MIN, i32::MAX] {
        assert_eq!(h.hash(&v).lo, xx(&v.to_le_bytes()), "i32 {v}");
    }
    for v in [0i64, 1, -1, 1 << 40, i64::MIN, i64::MAX] {
        assert_eq!(h.hash(&v).lo, xx(&v.to_le_bytes()), "i64 {v}");
    }
    for v in [&b""[..], b"a", b"parquet", &[0xFF; 100]] {
        assert_eq!(h.hash(v).lo, xx(v), "bytes {v:?}");
    }
    assert_eq!(h.hash("hello").lo, xx(b"hello"));

    // so inserting values through the Filter API sets the bits the other implementation sets
    // for the same values' hashes
    let mut ours = SplitBlockBloomFilter::try_with_bytes(1024).unwrap();
    let mut theirs = sbbf_rs_safe::Filter::from_bytes(&[0; 1024]).unwrap();
    assert_eq!(
        ours.hasher(),
        &KeyHasher::parquet(),
        "split-block defaults to Parquet's hash"
    );
    for v in 0..300i64 {
        ours.insert(&v);
        theirs.insert_hash(xx(&v.to_le_bytes()));
    }
    for s in ["a", "bb", "ccc"] {
        ours.insert(s);
        theirs.insert_hash(xx(s.as_bytes()));
    }
    assert_eq!(ours.to_parquet_bitset(), theirs.as_bytes());
    // the sized builder also defaults to Parquet's hash
    let sized = SplitBlockBloomFilter::try_new(1000, 0.01).unwrap();
    assert_eq!(sized.hasher(), &KeyHasher::parquet());
}
