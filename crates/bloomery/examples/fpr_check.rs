//! Measure the false-positive rate of each kind against its target.
//! `cargo run --release -p bloomery --example fpr_check -- 1000000 0.01`
use bloomery::prelude::*;

fn measure<F: Filter>(f: &mut F, n: u64, queries: u64) -> f64 {
    for i in 0..n {
        f.insert(&i);
    }
    let fp = (n..n + queries).filter(|i| f.contains(i)).count();
    fp as f64 / queries as f64
}

fn main() -> bloomery::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let p: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0.01);
    let q = 10_000_000u64;
    let mut b = BlockedBloomFilter::try_new(n, p)?;
    println!(
        "blocked    k={} bits/item={:.2} fpr={:.5} target={p}",
        b.hashes(),
        b.bit_len() as f64 / n as f64,
        measure(&mut b, n, q)
    );
    let mut c = BloomFilter::try_new(n, p)?;
    println!(
        "classic    k={} bits/item={:.2} fpr={:.5}",
        c.hashes(),
        c.bits() as f64 / n as f64,
        measure(&mut c, n, q)
    );
    let mut pf = PartitionedBloomFilter::try_new(n, p)?;
    println!(
        "partition  k={} bits/item={:.2} fpr={:.5}",
        pf.hashes(),
        pf.bit_len() as f64 / n as f64,
        measure(&mut pf, n, q)
    );
    let mut s = SplitBlockBloomFilter::try_new(n, p)?;
    println!(
        "split      bits/item={:.2} fpr={:.5}",
        s.bit_len() as f64 / n as f64,
        measure(&mut s, n, q)
    );
    let mut sc = ScalableBloomFilter::try_new(n / 100, p)?;
    println!(
        "scalable   subs bits/item fpr={:.5}",
        measure(&mut sc, n, q)
    );
    Ok(())
}
