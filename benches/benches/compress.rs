//! Criterion benchmark of the compressed-filter coder (`bloomery::compress`; Broder & Mitzenmacher §2.6,
//! Mitzenmacher) against zstd at its default level (3), on real classic filters of 2^23 bits
//! (1 MiB) at several fill ratios. Throughput is MB/s **of filter** (plain array bytes), for
//! compression and decompression. Before the timings it prints, for every fill, both coders'
//! output size against the entropy bound m·H(p). Results: docs/BENCHMARKS.md ("## Compression").
//!
//! `BLOOMERY_BENCH_M=2^k bits` is not configurable on purpose: one size, one run, comparable.

use std::hint::black_box;
use std::time::Duration;

use bloomery::compress::{compress_bits, decompress_bits, entropy_bits};
use bloomery::{BloomFilter, Filter, Stats};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const M: u64 = 1 << 23;
const K: u32 = 4;
/// Fractions of one bits.
const FILLS: [f64; 6] = [0.001, 0.01, 0.05, 0.1, 0.3, 0.5];

fn filter(ones: f64) -> BloomFilter {
    // q = 1 - e^{-kn/m}  =>  n = -m ln(1-q) / k
    let n = (-(M as f64) * (1.0 - ones).ln() / f64::from(K)).round() as u64;
    let mut f = BloomFilter::try_with_shape(M, K).expect("shape");
    for i in 0..n {
        f.insert(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
    f
}

fn bytes_of(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn bench(c: &mut Criterion) {
    let filters: Vec<(f64, BloomFilter)> = FILLS.iter().map(|&q| (q, filter(q))).collect();
    eprintln!(
        "\nsizes against the entropy bound m·H(p), m = {M} bits ({} KiB plain):",
        M / 8192
    );
    eprintln!("| ones | m·H(p) bytes | range coder bytes | ratio | zstd-3 bytes | ratio |");
    eprintln!("|---|---|---|---|---|---|");
    for (_, f) in &filters {
        let h = entropy_bits(f.as_words(), M).unwrap() / 8.0;
        let ours = compress_bits(f.as_words(), M).unwrap().len() as f64;
        let z = zstd::bulk::compress(&bytes_of(f.as_words()), 3)
            .unwrap()
            .len() as f64;
        let real = f.count_ones() as f64 / M as f64;
        eprintln!(
            "| {real:.4} | {h:.0} | {ours:.0} | {:.5} | {z:.0} | {:.3} |",
            ours / h,
            z / h
        );
    }
    let mut g = c.benchmark_group("compress");
    g.throughput(Throughput::Bytes(M / 8));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));
    for (q, f) in &filters {
        let words = f.as_words();
        let plain = bytes_of(words);
        let ours = compress_bits(words, M).unwrap();
        let z = zstd::bulk::compress(&plain, 3).unwrap();
        g.bench_function(format!("range/encode/{q}"), |b| {
            b.iter(|| black_box(compress_bits(black_box(words), M).unwrap()))
        });
        g.bench_function(format!("range/decode/{q}"), |b| {
            b.iter(|| black_box(decompress_bits(black_box(&ours), M, 1 << 30).unwrap()))
        });
        g.bench_function(format!("zstd3/encode/{q}"), |b| {
            b.iter(|| black_box(zstd::bulk::compress(black_box(&plain), 3).unwrap()))
        });
        g.bench_function(format!("zstd3/decode/{q}"), |b| {
            b.iter(|| black_box(zstd::bulk::decompress(black_box(&z), plain.len()).unwrap()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
