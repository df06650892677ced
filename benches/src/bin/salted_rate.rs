//! The measured false-positive rate of the blocked filter's salted layouts (one xxh3-64 hash
//! per key; the default of `try_new` at 1% and 0.1%: salted-256 and salted) at large n,
//! against the exact model that sizes them (`params::fpr_salted256`, `params::fpr_sectors`),
//! and the model's rate for larger n up to 2³² blocks.
//!
//! `cargo run --release -p bloomery-benches --bin salted_rate -- [n] [fpr] [queries] [layout]`
//! (defaults 100,000,000, 0.01, 100,000,000, the layout `try_new` picks; `salted` or
//! `salted256` forces one). Inserts keys 0..n (u64), queries n keys
//! disjoint from them, checks every inserted key (no false negatives), prints the measured
//! rate, its standard deviation under the model, and the model at 10⁹ keys.

use bloomery::builders::BlockLayout;
use bloomery::{params, BlockedBloomFilter, Filter};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: u64 = a.get(1).map_or(100_000_000, |s| s.parse().expect("n"));
    let p: f64 = a.get(2).map_or(0.01, |s| s.parse().expect("fpr"));
    let q: u64 = a
        .get(3)
        .map_or(100_000_000, |s| s.parse().expect("queries"));
    let mut f = match a.get(4).map(String::as_str) {
        None => BlockedBloomFilter::try_new(n, p),
        Some(l) => BlockedBloomFilter::builder()
            .capacity(n)
            .fpr(p)
            .layout(match l {
                "salted" => BlockLayout::Salted,
                "salted256" => BlockLayout::Salted256,
                other => panic!("layout {other}: salted or salted256"),
            })
            .try_build(),
    }
    .expect("filter");
    let salted256 = f.layout() == BlockLayout::Salted256;
    assert!(f.layout().is_salted(), "a salted layout at this rate");
    for i in 0..n {
        f.insert(&i);
    }
    let missing = (0..n).filter(|i| !f.contains(i)).count();
    let base = 1u64 << 62;
    let mut hits = 0;
    let mut chunk = Vec::with_capacity(1 << 20);
    for start in (0..q).step_by(1 << 20) {
        chunk.clear();
        chunk.extend(base + start..base + (start + (1 << 20)).min(q));
        hits += f.count_batch(&chunk);
    }
    let model = if salted256 {
        params::fpr_salted256(n, f.blocks())
    } else {
        params::fpr_sectors(n, f.blocks())
    };
    let measured = hits as f64 / q as f64;
    let sigma = (model * (1.0 - model) / q as f64).sqrt();
    println!(
        "n={n} target={p} layout={} hasher={} blocks={} bits/key={:.3}",
        f.layout().name(),
        f.hasher().algorithm().name(),
        f.blocks(),
        (f.blocks() * 512) as f64 / n as f64
    );
    println!("false negatives: {missing} of {n}");
    println!(
        "measured {measured:.6} ({hits} of {q}), model {model:.6}, measured/model {:.4}, \
         (measured-model)/sigma {:.2}, measured/target {:.4}",
        measured / model,
        (measured - model) / sigma,
        measured / p
    );
    for big in [1_000_000_000u64, 10_000_000_000] {
        // lines of 512 bits; the salted-256 layout has two blocks per line
        let (blocks, per_line) = if salted256 {
            (params::salted256_lines(big, p).expect("lines"), 2)
        } else {
            (params::sectors_blocks(big, p).expect("blocks"), 1)
        };
        let lines = params::foldable_blocks(blocks);
        let rate = if salted256 {
            params::fpr_salted256(big, lines)
        } else {
            params::fpr_sectors(big, lines)
        };
        println!(
            "model at n={big}: lines={blocks}, blocks={} ({} 2^32), bits/key={:.3}, rate {rate:.6}",
            blocks * per_line,
            if blocks * per_line <= 1 << 32 {
                "<="
            } else {
                ">"
            },
            (blocks * 512) as f64 / big as f64,
        );
    }
}
