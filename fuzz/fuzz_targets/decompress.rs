//! Feed arbitrary bytes to the decoders of compressed and delta files: the range decoder
//! (`compress::decompress_bits`), `compress::decompress_file`, `compress::patch_file` against
//! fixed bases, and the loaders that decompress transparently.
//! Nothing may panic; whatever decodes must re-encode to something that decodes to the same,
//! and what loads is exercised as in `load_any` (inserts and queries, bounded).
//!
//! As in `load_any`, each input is tried as given and **resealed** (the last 8 bytes replaced
//! by the xxh3-64 checksum of the rest), so mutations get past the outer checksum into the
//! container and the coder. A resealed compressed file still carries the plain file's own
//! checksum inside, which catches most damage after decoding; `decompress_bits` is therefore
//! also fed the raw bytes directly, where nothing checks the decoded bits.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use bloomery::compress;
use bloomery::prelude::*;
use libfuzzer_sys::fuzz_target;

const LIMIT: u64 = 16 << 20;

fn bases() -> [Vec<u8>; 2] {
    let mut a = BloomFilter::builder()
        .bits(1000)
        .hashes(5)
        .seed(0x5EED)
        .try_build()
        .unwrap();
    for i in 0..50 {
        a.insert(&format!("golden-{i}"));
    }
    let b = a.clone();
    for i in 0..10 {
        a.insert(&format!("delta-{i}"));
    }
    [b.to_bytes(), a.to_bytes()]
}

fn exercise(data: &[u8], bases: &[Vec<u8>; 2]) {
    if let Ok(plain) = compress::decompress_file(data, LIMIT) {
        let again = compress::compress_file(&plain).expect("a decompressed file compresses");
        assert_eq!(
            compress::decompress_file(&again, LIMIT).expect("re-compressed file decodes"),
            plain
        );
    }
    // every loader (they decompress transparently), and what users do with what loads
    common::exercise_file(data);
    for base in bases {
        if let Ok(out) = compress::patch_file(base, data, LIMIT) {
            let d = compress::diff_files(base, &out).expect("a patched file diffs");
            assert_eq!(compress::patch_file(base, &d, LIMIT).unwrap(), out);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    bloomery::tuning::set_max_bytes(LIMIT);
    static BASES: std::sync::OnceLock<[Vec<u8>; 2]> = std::sync::OnceLock::new();
    let bases = BASES.get_or_init(bases);
    // The bare range decoder: m from the first two bytes (small arrays), the stream after.
    if data.len() >= 2 {
        let m = u64::from(u16::from_le_bytes([data[0], data[1]])) + 1;
        if let Ok(w) = compress::decompress_bits(&data[2..], m, LIMIT) {
            let c = compress::compress_bits(w.as_slice(), m).unwrap();
            let back = compress::decompress_bits(&c, m, LIMIT).unwrap();
            assert_eq!(back.as_slice(), w.as_slice());
        }
    }
    exercise(data, bases);
    if let Some(sealed) = common::resealed(data) {
        exercise(&sealed, bases);
    }
});
