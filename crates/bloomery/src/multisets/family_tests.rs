//! Cross-structure tests of the counting family: damaged or hostile files never
//! panic, and every kind refuses to load as another.

use proptest::prelude::*;

use crate::filter::Count;
use crate::filter::Filter;
use crate::filter::Remove;
use crate::filter::{Merge, Stats};
use crate::io::format::{self, Header, Payload, Persist, Verify};
use crate::multisets::blocked_counting::BlockedCountingBloomFilter;
use crate::multisets::count_min::CountMinSketch;
use crate::multisets::counting::CountingBloomFilter;
use crate::multisets::dleft::DLeftCountingBloomFilter;
use crate::multisets::iterative::IterativeBloomFilter;
use crate::multisets::space_code::SpaceCodeBloomFilter;
use crate::multisets::spectral::SpectralBloomFilter;
use crate::multisets::spectral::SpectralMethod;
use crate::store::Words;

/// One small saved file of each kind.
fn samples() -> Vec<Vec<u8>> {
    let mut cbf = CountingBloomFilter::try_with_shape(200, 3, 4).unwrap();
    let mut bcbf = BlockedCountingBloomFilter::try_with_shape(3, 3, 3).unwrap();
    let mut dl = DLeftCountingBloomFilter::try_new(50, 0.05).unwrap();
    let mut sp = SpectralBloomFilter::builder()
        .counters(100)
        .hashes(3)
        .method(SpectralMethod::RecurringMinimum)
        .try_build()
        .unwrap();
    let mut cms = CountMinSketch::try_with_shape(30, 3).unwrap();
    let mut ibf = IterativeBloomFilter::try_with_shape(300, 3).unwrap();
    let mut scbf = SpaceCodeBloomFilter::try_with_shape(300, 2, 8).unwrap();
    for i in 0..40u32 {
        cbf.insert(&(i % 20));
        bcbf.insert(&(i % 20));
        dl.insert(&(i % 20)).unwrap();
        sp.insert(&(i % 20));
        cms.insert_many(&(i % 20), 3);
        ibf.insert(&(i % 20));
        scbf.insert(&(i % 20));
    }
    vec![
        cbf.to_bytes(),
        bcbf.to_bytes(),
        dl.to_bytes(),
        sp.to_bytes(),
        cms.to_bytes(),
        ibf.to_bytes(),
        scbf.to_bytes(),
    ]
}

/// Try every counting-family decoder (and AnyFilter) on `bytes`: none may panic.
fn decode_all(bytes: &[u8]) -> usize {
    let mut ok = 0;
    if let Ok(mut f) = CountingBloomFilter::from_bytes(bytes) {
        ok += 1;
        f.insert("x");
        let _ = (
            f.count("x"),
            f.remove("x"),
            f.remove("y"),
            f.saturated_counters(),
        );
        f.to_bloom_filter().unwrap();
    }
    if let Ok(mut f) = BlockedCountingBloomFilter::from_bytes(bytes) {
        ok += 1;
        f.insert("x");
        let _ = (
            f.count("x"),
            f.remove("x"),
            f.remove("y"),
            f.saturated_counters(),
            f.current_fpr(),
        );
        let mut g = f.clone();
        g.union_with(&f).unwrap();
    }
    if let Ok(mut f) = DLeftCountingBloomFilter::from_bytes(bytes) {
        ok += 1;
        let _ = (f.insert("x"), f.count("x"), f.remove("x"), f.remove("y"));
    }
    if let Ok(mut f) = SpectralBloomFilter::from_bytes(bytes) {
        ok += 1;
        f.insert("x");
        let _ = (f.count("x"), f.remove("x"), f.remove("y"));
    }
    if let Ok(mut f) = CountMinSketch::from_bytes(bytes) {
        ok += 1;
        f.insert_many("x", u64::MAX);
        let _ = f.count("x");
    }
    if let Ok(mut f) = IterativeBloomFilter::from_bytes(bytes) {
        ok += 1;
        f.insert("x");
        f.insert("x");
        let _ = (f.count("x"), f.estimate("x"), f.model_fpr());
    }
    if let Ok(mut f) = SpaceCodeBloomFilter::from_bytes(bytes) {
        ok += 1;
        f.insert("x");
        let _ = f.count("x");
    }
    assert!(crate::any::filter::AnyFilter::from_bytes(bytes).is_err());
    ok
}

#[test]
fn each_kind_loads_only_as_itself() {
    for bytes in samples() {
        assert_eq!(decode_all(&bytes), 1);
    }
}

/// Rewrite a file with patched parameters and payload, with a valid checksum, so that the
/// structure's own validation (not the checksum) must catch the damage.
fn patched(bytes: &[u8], param_edits: &[(usize, u8)], word_edits: &[(usize, u64)]) -> Vec<u8> {
    let d = format::decode(bytes, Verify::Checksum).unwrap();
    let mut h: Header = d.header.clone();
    for &(at, v) in param_edits {
        if !h.params.is_empty() {
            let i = at % h.params.len();
            h.params[i] = v;
        }
    }
    let payload = &bytes[d.payload_offset..d.payload_offset + d.payload_len];
    let mut w = Words::from_le_bytes(payload, u64::MAX).unwrap();
    if !w.is_empty() {
        let n = w.len();
        for &(at, v) in word_edits {
            w.as_mut_slice()[at % n] ^= v;
        }
    }
    let mut out = Vec::new();
    format::write(&h, &Payload::new(vec![&w]), &mut out).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn damaged_files_never_panic(
        which in 0usize..7,
        params in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        words in proptest::collection::vec((any::<usize>(), any::<u64>()), 0..4),
        items in proptest::option::of(any::<u64>()),
    ) {
        let base = &samples()[which];
        let mut bytes = patched(base, &params, &words);
        if let Some(n) = items {
            // the item count sits at byte 48 of the header; fix the checksum after it
            bytes[48..56].copy_from_slice(&n.to_le_bytes());
            let body = bytes.len() - 8;
            let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..body]);
            bytes[body..].copy_from_slice(&sum.to_le_bytes());
        }
        let ok = decode_all(&bytes);
        prop_assert!(ok <= 1);
    }
}
