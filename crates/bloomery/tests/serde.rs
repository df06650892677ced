//! serde: every structure (and `AnyFilter`) serialises as its file-format bytes, so an
//! embedded filter round-trips through serde_json exactly and corrupted bytes are refused
//! with an error (checksum, header), never a panic.

#![cfg(feature = "serde")]

use bloomery::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn keys() -> Vec<String> {
    (0..100).map(|i| format!("serde-{i}")).collect()
}

fn round_trip<F>(mut f: F)
where
    F: KeySet + Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    for k in keys() {
        f.try_insert_key(k.as_bytes()).unwrap();
    }
    let json = serde_json::to_string(&f).unwrap();
    let back: F = serde_json::from_str(&json).unwrap();
    assert_eq!(back, f);
    assert!(keys().iter().all(|k| back.contains_key(k.as_bytes())));

    // embedded in a user's own struct
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Doc<T> {
        name: String,
        filter: T,
    }
    let doc = serde_json::to_vec(&Doc {
        name: "x".into(),
        filter: &f,
    })
    .unwrap();
    let back: Doc<F> = serde_json::from_slice(&doc).unwrap();
    assert_eq!(back.filter, f);

    // corrupted bytes: flip one byte of the serialised array, and cut it short
    let mut bytes: Vec<u8> = serde_json::from_str::<Vec<u8>>(&json).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    let bad = serde_json::to_string(&bytes).unwrap();
    let err = serde_json::from_str::<F>(&bad).unwrap_err();
    assert!(err.to_string().contains("checksum"), "{err}");
    bytes[mid] ^= 0x40;
    bytes.truncate(bytes.len() - 1);
    let short = serde_json::to_string(&bytes).unwrap();
    assert!(serde_json::from_str::<F>(&short)
        .unwrap_err()
        .to_string()
        .contains("truncated"));
    // not bytes at all
    assert!(serde_json::from_str::<F>("\"hello\"").is_err());
    assert!(serde_json::from_str::<F>("[1, 2, 300]").is_err());
    assert!(serde_json::from_str::<F>("{}").is_err());
}

#[test]
fn every_kind_round_trips_through_serde_json() {
    round_trip(
        BloomFilter::builder()
            .bits(3000)
            .hashes(5)
            .seed(1)
            .try_build()
            .unwrap(),
    );
    round_trip(
        PartitionedBloomFilter::builder()
            .bits(3000)
            .hashes(5)
            .try_build()
            .unwrap(),
    );
    round_trip(
        BlockedBloomFilter::builder()
            .bits(4096)
            .hashes(7)
            .try_build()
            .unwrap(),
    );
    round_trip(SplitBlockBloomFilter::try_with_bytes(512).unwrap());
    round_trip(ScalableBloomFilter::try_new(20, 0.01).unwrap());
    round_trip(
        BloomFilter::builder()
            .bits(3000)
            .hashes(5)
            .hasher(KeyHasher::with_secret(7))
            .try_build()
            .unwrap(),
    );
}

#[test]
fn any_filter_round_trips_and_keeps_its_kind() {
    let kinds = [
        AnyFilter::Classic(BloomFilter::try_with_shape(2000, 4).unwrap()),
        AnyFilter::Partitioned(PartitionedBloomFilter::try_with_shape(500, 4).unwrap()),
        AnyFilter::Blocked(BlockedBloomFilter::try_with_shape(4, 6).unwrap()),
        AnyFilter::SplitBlock(SplitBlockBloomFilter::try_with_bytes(256).unwrap()),
        AnyFilter::Scalable(ScalableBloomFilter::try_new(20, 0.01).unwrap()),
    ];
    for f in kinds {
        let kind = f.kind();
        round_trip(f.clone());
        let json = serde_json::to_string(&f).unwrap();
        let back: AnyFilter = serde_json::from_str(&json).unwrap();
        assert_eq!(back.kind(), kind);
        // a typed filter deserialises into AnyFilter, and bytes of the wrong kind are refused
        if let AnyFilter::Blocked(b) = &f {
            let back: AnyFilter = serde_json::from_str(&serde_json::to_string(b).unwrap()).unwrap();
            assert_eq!(back, f);
            assert!(serde_json::from_str::<BloomFilter>(&json)
                .unwrap_err()
                .to_string()
                .contains("wrong kind"));
        }
    }
}
