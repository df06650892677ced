//! Interleaved min-of-N timing of the counting filter and the count-min sketch against the
//! classic filter at the same m and k: a criterion-free cross-check of the ratios in
//! docs/BENCHMARKS.md ("## Counting family") that is robust to a busy machine (each pass times
//! every structure once, in turn, and the minimum over passes is kept).
//!
//! `cargo run --release -p bloomery-benches --bin counting_quick -- [N] [PASSES]`
//! (default 10,000,000 keys, 5 passes). Thread CPU time, ns per operation.

use std::hint::black_box;

use bloomery_benches::counting::*;
use bloomery_benches::{cpu_now, positive_keys};

fn insert_ns<S: Counted>(s: &mut S, keys: &[u64]) -> f64 {
    s.clear();
    let t = cpu_now();
    for &k in keys {
        s.insert(k);
    }
    (cpu_now() - t).as_nanos() as f64 / keys.len() as f64
}

fn count_ns<S: Counted>(s: &S, keys: &[u64]) -> f64 {
    let t = cpu_now();
    let mut sum = 0u64;
    for &k in keys {
        sum = sum.wrapping_add(s.count(k));
    }
    black_box(sum);
    (cpu_now() - t).as_nanos() as f64 / keys.len() as f64
}

fn remove_ns<S: Counted>(s: &mut S, keys: &[u64]) -> f64 {
    let t = cpu_now();
    let mut ok = 0u64;
    for &k in keys {
        ok += u64::from(s.remove(k));
    }
    black_box(ok);
    (cpu_now() - t).as_nanos() as f64 / keys.len() as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let passes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let keys = positive_keys(n);
    let mut classic = Classic::new(n, 0.01);
    let (m, k) = classic.shape();
    let mut counting = Counting::with_shape(m, k);
    let w = cms_width(n);
    let mut cms = Cms::new(w, false);
    let mut cms_cu = Cms::new(w, true);
    let mut pc_cms = PcCms::new(w);
    // [insert, count, remove] minima per structure
    let mut best = [[f64::INFINITY; 3]; 5];
    for _ in 0..passes {
        let mut row = |i: usize, ins: f64, cnt: f64, rem: f64| {
            let b: &mut [f64; 3] = &mut best[i];
            b[0] = b[0].min(ins);
            b[1] = b[1].min(cnt);
            b[2] = b[2].min(rem);
        };
        let a = insert_ns(&mut classic, &keys);
        let c = count_ns(&classic, &keys);
        row(0, a, c, f64::NAN);
        let a = insert_ns(&mut counting, &keys);
        let c = count_ns(&counting, &keys);
        let r = remove_ns(&mut counting, &keys);
        row(1, a, c, r);
        for (i, s) in [(2, &mut cms), (3, &mut cms_cu)] {
            let a = insert_ns(s, &keys);
            let c = count_ns(s, &keys);
            row(i, a, c, f64::NAN);
        }
        let a = insert_ns(&mut pc_cms, &keys);
        let c = count_ns(&pc_cms, &keys);
        let r = remove_ns(&mut pc_cms, &keys);
        row(4, a, c, r);
    }
    println!("n = {n}, classic m = {m}, k = {k}; count-min depth {CMS_DEPTH} × width {w}; min of {passes} passes (ns/op, thread CPU time)");
    println!("| structure | insert | count | remove | insert / classic | count / classic |");
    println!("|---|---:|---:|---:|---:|---:|");
    let names = ["classic", "counting (4-bit)", "cms", "cms_cu", "pc_cms"];
    for (name, b) in names.iter().zip(&best) {
        let f = |x: f64| {
            if x.is_finite() {
                format!("{x:.1}")
            } else {
                "–".into()
            }
        };
        println!(
            "| {name} | {} | {} | {} | {:.2} | {:.2} |",
            f(b[0]),
            f(b[1]),
            f(b[2]),
            b[0] / best[0][0],
            b[1] / best[0][1]
        );
    }
}
