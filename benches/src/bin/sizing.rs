//! Time to make a sized filter (`try_new(n, p)`): the blocked filter's sizing searches its
//! false-positive model, the classic filter's is closed-form. Best of 5 wall-clock runs each.
//!
//! `cargo run --release -p bloomery-benches --bin sizing`

use std::time::{Duration, Instant};

fn best(mut f: impl FnMut()) -> Duration {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    for (n, p) in [
        (1_000u64, 0.01),
        (100_000, 0.01),
        (1_000_000, 0.01),
        (10_000_000, 0.001),
        (100_000_000, 0.01),
    ] {
        let blocked = best(|| {
            std::hint::black_box(bloomery::BlockedBloomFilter::try_new(n, p).expect("blocked"));
        });
        let classic = best(|| {
            std::hint::black_box(bloomery::BloomFilter::try_new(n, p).expect("classic"));
        });
        println!("n={n} p={p}: blocked {blocked:.2?}, classic {classic:.2?}");
    }
}
