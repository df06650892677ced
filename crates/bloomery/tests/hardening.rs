//! Contract and security properties across the structures: the keyed secret never shows in
//! `Debug`, item counters saturate instead of wrapping, the split-block builder uses the
//! hasher it is given, and `collect()` has a fallible twin.

use bloomery::file::decode_header;
use bloomery::hashing::{HashAlgorithm, SeedKind};
use bloomery::*;

/// Two secrets whose halves are easy to spot in any radix.
const SECRET_A: u128 = 0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210;
const SECRET_B: u128 = 0x0F1E_2D3C_4B5A_6978_8796_A5B4_C3D2_E1F0;

/// Every way a secret (or one of its 64-bit halves) could be spelled in Debug output.
fn spellings(secret: u128) -> Vec<String> {
    let lo = secret as u64;
    let hi = (secret >> 64) as u64;
    let mut v = vec![
        secret.to_string(),
        format!("{secret:x}"),
        format!("{secret:X}"),
    ];
    for half in [lo, hi] {
        v.push(half.to_string());
        v.push(format!("{half:x}"));
        v.push(format!("{half:X}"));
    }
    v
}

/// `Debug` of one structure of every kind, built with hasher `h` from the same `n` keys (the
/// static xor and Bloomier filters always from 200).
fn debug_of_every_kind(h: KeyHasher, n: usize) -> Vec<(&'static str, String)> {
    let keys: Vec<String> = (0..n).map(|i| format!("key-{i}")).collect();
    let static_keys: Vec<String> = (0..200).map(|i| format!("key-{i}")).collect();
    let mut out = Vec::new();
    macro_rules! add {
        ($name:expr, $v:expr) => {{
            let v = $v;
            out.push(($name, format!("{v:?}")));
            out.push(($name, format!("{v:#?}")));
        }};
    }
    macro_rules! set {
        ($name:expr, $t:ty) => {{
            let mut f = <$t>::builder()
                .capacity(1000)
                .fpr(0.01)
                .hasher(h)
                .try_build()
                .unwrap();
            for k in &keys {
                f.insert(k);
            }
            add!($name, &f);
        }};
    }
    set!("classic", BloomFilter);
    set!("partitioned", PartitionedBloomFilter);
    set!("blocked", BlockedBloomFilter);
    set!("split-block", SplitBlockBloomFilter);
    set!("scalable", ScalableBloomFilter);
    add!(
        "builder",
        BloomFilter::builder().capacity(10).fpr(0.1).hasher(h)
    );
    add!("hasher", h);
    add!("header", {
        let f = BloomFilter::builder()
            .capacity(10)
            .fpr(0.1)
            .hasher(h)
            .try_build()
            .unwrap();
        decode_header(&f.to_bytes(), Verify::Checksum).unwrap()
    });
    macro_rules! counter {
        ($name:expr, $b:expr) => {{
            let mut f = $b.hasher(h).try_build().unwrap();
            for k in &keys {
                let _ = f.insert(k);
            }
            add!($name, &f);
        }};
    }
    counter!(
        "counting",
        CountingBloomFilter::builder().capacity(1000).fpr(0.01)
    );
    counter!(
        "blocked-counting",
        BlockedCountingBloomFilter::builder()
            .capacity(1000)
            .fpr(0.01)
    );
    counter!(
        "dleft",
        DLeftCountingBloomFilter::builder().capacity(1000).fpr(0.01)
    );
    counter!(
        "spectral",
        SpectralBloomFilter::builder().capacity(1000).fpr(0.01)
    );
    let mut cms = CountMinSketch::builder()
        .error(0.01, 0.01)
        .hasher(h)
        .try_build()
        .unwrap();
    for k in &keys {
        cms.insert(k);
    }
    add!("count-min", &cms);
    counter!(
        "iterative",
        IterativeBloomFilter::builder().capacity(1000).fpr(0.01)
    );
    counter!(
        "space-code",
        SpaceCodeBloomFilter::builder().capacity(1000).fpr(0.01)
    );
    let mut topk = TopK::builder(10).hasher(h).try_build().unwrap();
    for k in &keys {
        topk.insert(k);
    }
    add!("topk", &topk);
    let mut mlbf = MultiLayerBloomFilter::builder()
        .capacity(1000)
        .fpr(0.01)
        .hasher(h)
        .try_build()
        .unwrap();
    for i in 0..n {
        mlbf.insert(&format!("https://example.org/a/{i}")).unwrap();
    }
    add!("mlbf", &mlbf);
    let mut att = AttenuatedBloomFilter::builder()
        .depth(3)
        .capacity(100)
        .fpr(0.01)
        .hasher(h)
        .try_build()
        .unwrap();
    att.insert_local("resource");
    add!("attenuated", &att);
    let paths = [vec!["a", "b"], vec!["a", "c", "d"]];
    add!(
        "breadth",
        BreadthBloomFilter::builder()
            .fpr(0.01)
            .hasher(h)
            .try_build(&paths)
            .unwrap()
    );
    add!(
        "depth",
        DepthBloomFilter::builder()
            .fpr(0.01)
            .hasher(h)
            .try_build(&paths)
            .unwrap()
    );
    add!(
        "xor",
        XorFilter::builder()
            .hasher(h)
            .try_build(&static_keys)
            .unwrap()
    );
    let pairs: Vec<(&String, u64)> = static_keys.iter().zip(0..).collect();
    add!(
        "bloomier",
        BloomierFilter::builder()
            .hasher(h)
            .try_build(&pairs)
            .unwrap()
    );
    let mut cuckoo = CuckooFilter::builder()
        .capacity(1000)
        .hasher(h)
        .try_build()
        .unwrap();
    for k in &keys {
        cuckoo.insert(k).unwrap();
    }
    add!("cuckoo", &cuckoo);
    out
}

#[test]
fn debug_never_shows_the_secret() {
    let forbidden: Vec<String> = spellings(SECRET_A)
        .into_iter()
        .chain(spellings(SECRET_B))
        .collect();
    for n in [0, 200] {
        let a = debug_of_every_kind(KeyHasher::with_secret(SECRET_A), n);
        let b = debug_of_every_kind(KeyHasher::with_secret(SECRET_B), n);
        for ((name, da), (_, db)) in a.iter().zip(&b) {
            assert!(da.contains("<redacted>"), "{name}: {da}");
            for s in &forbidden {
                assert!(!da.contains(s.as_str()), "{name} shows {s}: {da}");
                assert!(!db.contains(s.as_str()), "{name} shows {s}: {db}");
            }
            // Nothing derived from the secret either (the xor and Bloomier construction
            // seeds, the space-code generator): the same empty structure (or static filter of
            // the same keys) under another secret prints the same. Populated dynamic
            // structures may differ in collision counts, so only empty ones are compared.
            if n == 0 || matches!(*name, "xor" | "bloomier") {
                assert_eq!(da, db, "{name}: Debug output depends on the secret");
            }
        }
    }
    // Hashers that are not secret still show their seed.
    assert!(format!("{:?}", KeyHasher::with_seed(987_654_321)).contains("987654321"));
    assert_eq!(KeyHasher::with_seed(7).public_seed(), Some(7));
    assert_eq!(KeyHasher::with_secret(SECRET_A).public_seed(), None);
    // A file that pairs SipHash with a "user" seed kind still holds a secret.
    let forged =
        KeyHasher::from_parts(HashAlgorithm::SipHash13_128, SeedKind::User, SECRET_A).unwrap();
    assert!(forged.is_secret());
    assert!(!format!("{forged:?}").contains(&SECRET_A.to_string()));
}

/// Set the stored item count (offset 48 of the header) and recompute the checksum.
fn with_items(mut bytes: Vec<u8>, items: u64) -> Vec<u8> {
    bytes[48..56].copy_from_slice(&items.to_le_bytes());
    let n = bytes.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
    bytes[n..].copy_from_slice(&sum.to_le_bytes());
    bytes
}

#[test]
fn item_counters_saturate() {
    fn check<F: Filter + Persist>(name: &str, f: F) {
        let g = F::from_bytes(&with_items(f.to_bytes(), u64::MAX)).unwrap();
        assert_eq!(g.len(), u64::MAX, "{name}");
        let mut g = g;
        assert!(g.insert("a key never inserted before"), "{name}");
        assert_eq!(g.len(), u64::MAX, "{name}: the count wrapped");
    }
    check("classic", BloomFilter::try_new(100, 0.01).unwrap());
    check(
        "partitioned",
        PartitionedBloomFilter::try_new(100, 0.01).unwrap(),
    );
    check("blocked", BlockedBloomFilter::try_new(100, 0.01).unwrap());
    check(
        "split-block",
        SplitBlockBloomFilter::try_new(100, 0.01).unwrap(),
    );
    // the atomic blocked filter saturates too
    let f = BlockedBloomFilter::from_bytes(&with_items(
        BlockedBloomFilter::try_new(100, 0.01).unwrap().to_bytes(),
        u64::MAX,
    ))
    .unwrap();
    let a = f.into_atomic();
    assert!(a.insert("new"));
    assert_eq!(a.len(), u64::MAX);
    assert_eq!(a.into_filter().len(), u64::MAX);

    let s = ScalableBloomFilter::try_new(100, 0.01).unwrap();
    let mut s = ScalableBloomFilter::from_bytes(&with_items(s.to_bytes(), u64::MAX)).unwrap();
    let _ = s.try_insert("new");
    assert_eq!(s.len(), u64::MAX, "scalable");

    let m = MultiLayerBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .try_build()
        .unwrap();
    let mut m = MultiLayerBloomFilter::from_bytes(&with_items(m.to_bytes(), u64::MAX)).unwrap();
    assert!(m.insert("https://example.org/new/page").unwrap());
    assert_eq!(m.len(), u64::MAX, "mlbf");
}

#[test]
fn split_block_builder_uses_the_hasher_it_is_given() {
    // no hasher given: Parquet's
    let p = SplitBlockBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .try_build()
        .unwrap();
    assert_eq!(*p.hasher(), KeyHasher::parquet());
    assert!(p.is_parquet_compatible());
    // the library default given explicitly: used as given, and not Parquet-compatible
    let x = SplitBlockBloomFilter::builder()
        .capacity(100)
        .fpr(0.01)
        .hasher(KeyHasher::new())
        .try_build()
        .unwrap();
    assert_eq!(*x.hasher(), KeyHasher::new());
    assert!(!x.is_parquet_compatible());
    // through AnyFilter's builder too
    let any = AnyFilter::builder(Kind::SplitBlock)
        .capacity(100)
        .fpr(0.01)
        .hasher(KeyHasher::new())
        .try_build()
        .unwrap();
    assert_eq!(*any.hasher(), KeyHasher::new());
    let any = AnyFilter::builder(Kind::SplitBlock)
        .capacity(100)
        .fpr(0.01)
        .try_build()
        .unwrap();
    assert_eq!(*any.hasher(), KeyHasher::parquet());
    // a seed or a secret: not Parquet-compatible
    for b in [
        SplitBlockBloomFilter::builder().seed(5),
        SplitBlockBloomFilter::builder().hasher(KeyHasher::with_secret(SECRET_A)),
    ] {
        let f = b.capacity(100).fpr(0.01).try_build().unwrap();
        assert!(!f.is_parquet_compatible());
    }
    assert!(SplitBlockBloomFilter::try_with_bytes(64)
        .unwrap()
        .is_parquet_compatible());
}

#[test]
fn collect_has_a_fallible_twin() {
    let keys: Vec<u64> = (0..5000).collect();
    let collected: BlockedBloomFilter = keys.iter().collect();
    let tried = BlockedBloomFilter::try_from_keys(keys.iter(), 0.01).unwrap();
    assert_eq!(collected, tried);
    assert!(keys.iter().all(|k| tried.contains(k)));
    for bad in [0.0, 1.0, f64::NAN, -0.5] {
        assert!(matches!(
            BlockedBloomFilter::try_from_keys(keys.iter(), bad),
            Err(Error::InvalidParameter { name: "fpr", .. })
        ));
        assert!(matches!(
            BlockedCountingBloomFilter::try_from_keys(keys.iter(), bad),
            Err(Error::InvalidParameter { name: "fpr", .. })
        ));
    }
    let collected: BlockedCountingBloomFilter = keys.iter().collect();
    let tried = BlockedCountingBloomFilter::try_from_keys(keys.iter(), 0.01).unwrap();
    assert_eq!(collected, tried);
    assert!(keys.iter().all(|k| tried.count(k) >= 1));
}
