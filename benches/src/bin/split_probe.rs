//! The split-block probe loop of a Parquet prune behind docs/BENCHMARKS.md "Parquet": a
//! 16 KiB bitset (512 blocks) holding 10,000 keys, probed by 16,384 other keys sorted by
//! hash, each key found to the next hit by `SplitBlockBits::first_hit` (the mask made per
//! probe) and by `first_hit_masked` (the masks made once, as a prune makes them), in
//! alternating rounds; best round of each, ns per probe. Run it with and without
//! `BLOOMERY_NO_SIMD=1` for the AVX2 and the portable kernels.
//!
//! `cargo run --release -p bloomery-benches --bin split_probe -- [ROUNDS]`

use std::hint::black_box;
use std::time::Instant;

use bloomery::hashing::MaskedHash;
use bloomery::{SplitBlockBits, SplitBlockBloomFilter};

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let mut x = 0x51AF_D7ED_558C_CD1Du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut f = SplitBlockBloomFilter::try_with_bytes(16384).expect("16 KiB");
    for _ in 0..10_000 {
        f.insert_hash(next());
    }
    let bytes = f.to_parquet_bitset();
    let bits = SplitBlockBits::try_new(&bytes).expect("a bitset");
    let mut hashes: Vec<u64> = (0..16_384).map(|_| next()).collect();
    hashes.sort_unstable();
    let masked: Vec<MaskedHash> = hashes.iter().map(|&h| MaskedHash::new(h)).collect();
    // every probe once per pass: from each hit on to the next
    let pass_plain = || {
        let (mut at, mut hits) = (0, 0);
        while let Some(i) = bits.first_hit(black_box(&hashes[at..])) {
            at += i + 1;
            hits += 1;
        }
        hits
    };
    let pass_masked = || {
        let (mut at, mut hits) = (0, 0);
        while let Some(i) = bits.first_hit_masked(black_box(&masked[at..])) {
            at += i + 1;
            hits += 1;
        }
        hits
    };
    assert_eq!(pass_plain(), pass_masked());
    let time = |pass: &dyn Fn() -> usize| {
        let t = Instant::now();
        for _ in 0..50 {
            black_box(pass());
        }
        t.elapsed().as_secs_f64() * 1e9 / (50.0 * hashes.len() as f64)
    };
    let (mut plain, mut with_masks) = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        plain = plain.min(time(&pass_plain));
        with_masks = with_masks.min(time(&pass_masked));
    }
    println!(
        "first_hit {plain:.2} ns a probe, first_hit_masked {with_masks:.2} ns a probe \
         ({} hits in {} keys)",
        pass_plain(),
        hashes.len()
    );
}
