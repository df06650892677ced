//! Feed arbitrary bytes to the encoder side of compressed files and deltas: as a bit array
//! (`compress::compress_bits`, which must decode back to the same bits), and as the payload of
//! a classic filter file whose compressed form, delta against a fixed base and patched result
//! are written both in memory (`compress_file`, `diff_files`, `patch_file`) and streamed to a
//! file as they are made (`compress_file_to`, `diff_files_to`, `patch_file_to`,
//! `patch_file_compressed_to`): the bytes must be the same, and must decode to the input.
#![no_main]

use bloomery::compress;
use bloomery::prelude::*;
use libfuzzer_sys::fuzz_target;

const LIMIT: u64 = 16 << 20;

/// A classic filter file of `words` words with `data` (repeated) as its payload, resealed.
fn file_of(data: &[u8], words: u64) -> Vec<u8> {
    let f = BloomFilter::try_with_shape(words * 64, 3).unwrap();
    let mut b = f.to_bytes();
    let h = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    let n = b.len() - 8;
    if !data.is_empty() {
        for (i, x) in b[h..n].iter_mut().enumerate() {
            *x = data[i % data.len()];
        }
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&b[..n]);
    b[n..].copy_from_slice(&sum.to_le_bytes());
    b
}

fuzz_target!(|data: &[u8]| {
    bloomery::tuning::set_max_bytes(LIMIT);
    if data.len() < 2 {
        return;
    }
    // the bare encoder: m from the first two bytes, the bits after (zero beyond the input)
    let m = u64::from(u16::from_le_bytes([data[0], data[1]])) + 1;
    let body = &data[2..];
    let words: Vec<u64> = (0..m.div_ceil(64) as usize)
        .map(|i| {
            let mut w = [0u8; 8];
            for (j, x) in w.iter_mut().enumerate() {
                *x = body.get(8 * i + j).copied().unwrap_or(0);
            }
            u64::from_le_bytes(w)
        })
        .collect();
    let c = compress::compress_bits(&words, m).unwrap();
    let back = compress::decompress_bits(&c, m, LIMIT).unwrap();
    let mask = |i: usize, w: u64| {
        let end = (m - 64 * i as u64).min(64);
        if end == 64 {
            w
        } else {
            w & ((1u64 << end) - 1)
        }
    };
    for (i, (&a, &b)) in words.iter().zip(back.as_slice()).enumerate() {
        assert_eq!(mask(i, a), b, "word {i}");
    }

    // files: the base is the payload's first half, the new version the whole input
    let n = (m.div_ceil(64) % 512).max(1);
    let new = file_of(body, n);
    let base = file_of(&body[..body.len() / 2], n);
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let packed = compress::compress_file(&new).unwrap();
    compress::compress_file_to(&new, &at("c")).unwrap();
    assert_eq!(std::fs::read(at("c")).unwrap(), packed);
    assert_eq!(compress::decompress_file(&packed, LIMIT).unwrap(), new);
    let delta = compress::diff_files(&base, &new).unwrap();
    compress::diff_files_to(&base, &new, &at("d")).unwrap();
    assert_eq!(std::fs::read(at("d")).unwrap(), delta);
    assert_eq!(compress::patch_file(&base, &delta, LIMIT).unwrap(), new);
    compress::patch_file_to(&base, &delta, &at("p")).unwrap();
    assert_eq!(std::fs::read(at("p")).unwrap(), new);
    compress::patch_file_compressed_to(&base, &delta, &at("pc")).unwrap();
    assert_eq!(std::fs::read(at("pc")).unwrap(), packed);
});
