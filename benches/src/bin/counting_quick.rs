//! Interleaved min-of-N timing of the counting filter, the blocked counting filter and the
//! count-min sketch against the classic filter at the same k (the counting filter also at the
//! same m; the blocked counting filter sized by its own model for the same n, p and k): a criterion-free cross-check of the ratios in
//! docs/BENCHMARKS.md ("## Counting family") that is robust to a busy machine (each pass times
//! every structure once, in turn, and the minimum over passes is kept).
//!
//! Count-min rows: `cms_eps*` are sized by the sketch's own `(ε, δ)` = (`CMS_EPSILON`,
//! `CMS_DELTA`) (the headline), `cms*` by the big-table width `cms_width(n)` × 4; `batch` is
//! `CountMinSketch::insert_batch` / `CountingBloomFilter::insert_batch` over all n keys (hash
//! ahead, prefetch the cells).
//!
//! `cargo run --release -p bloomery-benches --bin counting_quick -- [N] [PASSES]`
//! (default 10,000,000 keys, 5 passes). Thread CPU time, ns per operation.

use std::hint::black_box;

use bloomery_benches::counting::*;
use bloomery_benches::{chase_ns, cpu_now, positive_keys};

fn per_op(t: std::time::Duration, n: usize) -> f64 {
    t.as_nanos() as f64 / n as f64
}

fn insert_ns<S: Counted>(s: &mut S, keys: &[u64]) -> f64 {
    s.clear();
    let t = cpu_now();
    for &k in keys {
        s.insert(k);
    }
    per_op(cpu_now() - t, keys.len())
}

fn batch_ns<S: Counted>(s: &mut S, keys: &[u64]) -> f64 {
    s.clear();
    let t = cpu_now();
    s.insert_all(keys);
    per_op(cpu_now() - t, keys.len())
}

fn count_ns<S: Counted>(s: &S, keys: &[u64]) -> f64 {
    let t = cpu_now();
    let mut sum = 0u64;
    for &k in keys {
        sum = sum.wrapping_add(s.count(k));
    }
    black_box(sum);
    per_op(cpu_now() - t, keys.len())
}

fn remove_ns<S: Counted>(s: &mut S, keys: &[u64]) -> f64 {
    let t = cpu_now();
    let mut ok = 0u64;
    for &k in keys {
        ok += u64::from(s.remove(k));
    }
    black_box(ok);
    per_op(cpu_now() - t, keys.len())
}

/// One pass over one structure: batch insert (if `batch`), insert, count, remove.
fn pass<S: Counted>(s: &mut S, keys: &[u64], batch: bool, b: &mut [f64; 4]) {
    if batch {
        b[3] = b[3].min(batch_ns(s, keys));
    }
    b[0] = b[0].min(insert_ns(s, keys));
    b[1] = b[1].min(count_ns(s, keys));
    if s.removable() {
        b[2] = b[2].min(remove_ns(s, keys));
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let passes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let keys = positive_keys(n);
    let classic = Classic::new(n, 0.01);
    let (m, k) = classic.shape();
    let w = cms_width(n);
    let eps = Cms::with_error(CMS_EPSILON, CMS_DELTA, false);
    let (ew, ed) = eps.shape();
    let mut counting = Counting::with_shape(m, k);
    let mut blocked = BlockedCounting::same_k(n, 0.01, k);
    let blocked_bits = blocked.0.byte_len() * 8;
    let mut classic = classic;
    let mut eps = eps;
    let mut eps_cu = Cms::with_error(CMS_EPSILON, CMS_DELTA, true);
    let mut pc_eps = PcCms::new(ew);
    let mut big = Cms::new(w, false);
    let mut big_cu = Cms::new(w, true);
    let mut pc_big = PcCms::new(w);
    let names = [
        "classic",
        "counting (4-bit)",
        "blocked counting (4-bit)",
        "cms_eps",
        "cms_eps_cu",
        "pc_cms_eps",
        "cms",
        "cms_cu",
        "pc_cms",
    ];
    // [insert, count, remove, batch insert] minima per structure
    let mut best = [[f64::INFINITY; 4]; 9];
    let sizes = [
        ("classic", m.div_ceil(8) as usize),
        ("counting", counting.0.counter_len() as usize / 2),
        ("blocked counting", blocked.0.byte_len() as usize),
    ];
    let host = |when: &str| {
        let lat: Vec<String> = sizes
            .iter()
            .map(|&(name, bytes)| {
                format!(
                    "{name} {:.1} MB {:.0} ns",
                    bytes as f64 / 1e6,
                    chase_ns(bytes, 2_000_000)
                )
            })
            .collect();
        println!(
            "host, {when}: dependent-load latency at each structure's size: {}",
            lat.join(", ")
        );
    };
    host("before");
    for _ in 0..passes {
        // generic, not `dyn`: every structure's calls inline into its loop as in real use
        pass(&mut classic, &keys, false, &mut best[0]);
        pass(&mut counting, &keys, true, &mut best[1]);
        pass(&mut blocked, &keys, true, &mut best[2]);
        pass(&mut eps, &keys, true, &mut best[3]);
        pass(&mut eps_cu, &keys, true, &mut best[4]);
        pass(&mut pc_eps, &keys, false, &mut best[5]);
        pass(&mut big, &keys, true, &mut best[6]);
        pass(&mut big_cu, &keys, true, &mut best[7]);
        pass(&mut pc_big, &keys, false, &mut best[8]);
    }
    host("after");
    println!(
        "n = {n}, classic m = {m}, k = {k} ({:.2} bits/item; counting {:.2}, blocked counting \
         {:.2} bits/item, {} lines); count-min depth {CMS_DEPTH} × width {w} (cms*), \
         (ε, δ) = ({CMS_EPSILON}, {CMS_DELTA}) → depth {ed} × width {ew} (cms_eps*); \
         min of {passes} passes (ns/op, thread CPU time)",
        m as f64 / n as f64,
        4.0 * m as f64 / n as f64,
        blocked_bits as f64 / n as f64,
        blocked.0.blocks(),
    );
    println!("| structure | insert | batch insert | count | remove | insert / classic | count / classic | remove / classic insert |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let f = |x: f64| {
        if x.is_finite() {
            format!("{x:.1}")
        } else {
            "–".into()
        }
    };
    let r = |x: f64, by: f64| {
        if x.is_finite() {
            format!("{:.2}", x / by)
        } else {
            "–".into()
        }
    };
    for (name, b) in names.iter().zip(&best) {
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            f(b[0]),
            f(b[3]),
            f(b[1]),
            f(b[2]),
            r(b[0], best[0][0]),
            r(b[1], best[0][1]),
            r(b[2], best[0][0]),
        );
    }
}
