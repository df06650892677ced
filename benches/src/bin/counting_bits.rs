//! Bits per item and measured false-positive rate of every counting structure sized for the
//! same target rate, against the plain filter, as a Markdown table.
//!
//! `cargo run --release -p bloomery-benches --bin counting_bits` (sizes from
//! `BLOOMERY_BENCH_N`, as for the criterion benches; target rate 1%). Each structure is built
//! by the library's own (n, p) sizing (`try_new` / `capacity().fpr()`); the count-min sketch,
//! which has no rate parameter, is given depth 4 and the smallest power-of-two width whose
//! rate `(1 - e^{-n/w})^4` (a never-inserted key has all four counters nonzero) is at most p.
//! The rate is measured with 2·10⁶ never-inserted keys; every inserted key must count ≥ 1.
//! One more count-min row shows the `(ε, δ)` sizing of the speed benchmarks' headline rows,
//! which bounds the error of a count, not the rate at which absent keys count ≥ 1.

use bloomery::builders::SpectralMethod;
use bloomery::{
    params, BlockedCountingBloomFilter, BloomFilter, CountingBloomFilter, DLeftCountingBloomFilter,
    IterativeBloomFilter, SpectralBloomFilter,
};
use bloomery_benches::counting::*;
use bloomery_benches::{negative_keys, positive_keys, sizes_from_env};

struct Row {
    name: &'static str,
    bits: u64,
    fpr: f64,
}

fn measure<S: Counted>(name: &'static str, mut s: S, pos: &[u64], neg: &[u64]) -> Row {
    for &k in pos {
        s.insert(k);
    }
    let missing = pos.iter().filter(|&&k| s.count(k) == 0).count();
    assert_eq!(missing, 0, "{name}: false negatives");
    Row {
        name,
        bits: s.bits(),
        fpr: neg.iter().filter(|&&k| s.count(k) > 0).count() as f64 / neg.len() as f64,
    }
}

/// The smallest power-of-two width whose count-min rate at depth 4 is at most `p`.
fn cms_width_for(n: usize, p: f64) -> u64 {
    let mut w = 1u64 << 10;
    while (1.0 - (-(n as f64) / w as f64).exp()).powi(CMS_DEPTH as i32) > p {
        w *= 2;
    }
    w
}

fn main() {
    let p = 0.01;
    let neg = negative_keys(2_000_000);
    println!("| n | structure | bits/item | × plain filter | measured rate |");
    println!("|---|---|---:|---:|---:|");
    for n in sizes_from_env() {
        let pos = positive_keys(n);
        let nn = n as u64;
        let w = cms_width_for(n, p);
        let rows = vec![
            measure(
                "classic (plain filter)",
                Classic(BloomFilter::try_new(nn, p).expect("classic")),
                &pos,
                &neg,
            ),
            measure(
                "counting, 4-bit",
                Counting(CountingBloomFilter::try_new(nn, p).expect("counting")),
                &pos,
                &neg,
            ),
            measure(
                "blocked counting, 4-bit (own k)",
                BlockedCounting(BlockedCountingBloomFilter::try_new(nn, p).expect("blocked")),
                &pos,
                &neg,
            ),
            measure(
                "blocked counting, 4-bit (classic k)",
                BlockedCounting::same_k(
                    n,
                    p,
                    BloomFilter::try_new(nn, p).expect("classic").hashes(),
                ),
                &pos,
                &neg,
            ),
            measure(
                "d-left counting",
                DLeft(DLeftCountingBloomFilter::try_new(nn, p).expect("dlcbf")),
                &pos,
                &neg,
            ),
            measure(
                "spectral MS, 16-bit (default)",
                Spectral(
                    SpectralBloomFilter::try_new(nn, p, SpectralMethod::MinimumSelection)
                        .expect("spectral"),
                ),
                &pos,
                &neg,
            ),
            measure("count-min, depth 4", Cms::new(w, false), &pos, &neg),
            measure(
                "count-min by (ε, δ) = (1e-4, 0.02) (not sized for a rate)",
                Cms::with_error(CMS_EPSILON, CMS_DELTA, false),
                &pos,
                &neg,
            ),
            measure(
                "iterative (IBF)",
                Ibf(IterativeBloomFilter::try_new(nn, p).expect("ibf")),
                &pos,
                &neg,
            ),
            measure("space-code (SCBF)", Scbf::new(n, p), &pos, &neg),
            measure(
                "probabilistic-collections BloomFilter",
                PcBloom::new(n, p),
                &pos,
                &neg,
            ),
            measure(
                "probabilistic-collections CountMinSketch",
                PcCms::new(w),
                &pos,
                &neg,
            ),
        ];
        let plain = rows[0].bits as f64 / n as f64;
        for r in &rows {
            let b = r.bits as f64 / n as f64;
            println!(
                "| {n} | {} | {b:.2} | {:.2} | {:.4}% |",
                r.name,
                b / plain,
                r.fpr * 100.0
            );
        }
        println!(
            "| {n} | lower bound n·log2(1/p) | {:.2} | {:.2} | |",
            params::lower_bound_bits(nn, p) / n as f64,
            params::lower_bound_bits(nn, p) / n as f64 / plain
        );
    }
}
