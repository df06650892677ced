//! Criterion benchmarks of the counting family (counting, blocked counting, d-left, spectral, count-min,
//! iterative, space-code) against probabilistic-collections' `CountMinSketch` and `BloomFilter`,
//! with bloomery's classic filter at the same m and k as the reference. Method and results:
//! docs/BENCHMARKS.md ("## Counting family"); shapes: `bloomery_benches::counting`.
//!
//! As in `filters.rs`, every reported time is **ns per operation** of thread CPU time
//! (`iter_custom`), over the pre-generated fixed-seed keys, walked cyclically:
//!
//! * insert: into a structure holding between 0 and n keys (cleared, untimed, when full);
//! * count: the n inserted keys of the full structure;
//! * remove: removes the inserted keys from the full structure; when all are removed it is
//!   refilled, untimed;
//! * insert_batch (count-min and the counting filters): `insert_batch` over runs of up to 4096
//!   keys, from empty to full.
//!
//! Count-min shapes: `cms_eps*` sized by `(ε, δ) = (CMS_EPSILON, CMS_DELTA)` (the headline),
//! `cms*` the big table `cms_width(n)` × 4.
//!
//! Sizes: `BLOOMERY_BENCH_N=1M,10M` (default), at p = 1%.

use std::hint::black_box;
use std::time::Duration;

use bloomery_benches::counting::*;
use bloomery_benches::{cpu_now, label, positive_keys, sizes_from_env};
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Time `iters` operations, `op` applied to runs of keys starting at `*at` (wrapping, with
/// `reset` called untimed whenever the keys run out).
fn timed_walk<S>(
    iters: u64,
    s: &mut S,
    keys: &[u64],
    at: &mut usize,
    reset: &mut impl FnMut(&mut S),
    op: &mut impl FnMut(&mut S, &[u64]),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters as usize;
    while left > 0 {
        if *at == keys.len() {
            reset(s);
            *at = 0;
        }
        let end = (*at + left).min(keys.len()).min(*at + 4096);
        let t = cpu_now();
        op(s, &keys[*at..end]);
        total += cpu_now() - t;
        left -= end - *at;
        *at = end;
    }
    total
}

fn bench_one<S: Counted>(g: &mut Group<'_>, name: &str, s: S, keys: &[u64]) {
    bench_with(g, name, s, keys, false)
}

/// As [`bench_one`], and with `batch` also the structure's batched insert (`insert_all`).
fn bench_with<S: Counted>(g: &mut Group<'_>, name: &str, mut s: S, keys: &[u64], batch: bool) {
    // insert: from empty to full, cleared when full
    s.clear();
    let mut at = 0;
    g.bench_function(format!("{name}.insert"), |b| {
        b.iter_custom(|iters| {
            timed_walk(
                iters,
                &mut s,
                keys,
                &mut at,
                &mut |s| s.clear(),
                &mut |s, run| {
                    for &k in run {
                        s.insert(k);
                    }
                },
            )
        })
    });
    // batched insert (`insert_batch`): from empty to full, runs of 4096 keys
    if batch {
        s.clear();
        let mut at = 0;
        g.bench_function(format!("{name}.insert_batch"), |b| {
            b.iter_custom(|iters| {
                timed_walk(
                    iters,
                    &mut s,
                    keys,
                    &mut at,
                    &mut |s| s.clear(),
                    &mut |s, run| s.insert_all(run),
                )
            })
        });
    }
    // count: on the full structure
    s.clear();
    for &k in keys {
        s.insert(k);
    }
    let mut at = 0;
    g.bench_function(format!("{name}.count"), |b| {
        b.iter_custom(|iters| {
            let mut sum = 0u64;
            let d = timed_walk(iters, &mut s, keys, &mut at, &mut |_| {}, &mut |s, run| {
                for &k in run {
                    sum = sum.wrapping_add(s.count(k));
                }
            });
            black_box(sum);
            d
        })
    });
    // remove: from full to empty, refilled when empty
    if s.removable() {
        let mut at = 0;
        let refill = |s: &mut S| {
            s.clear();
            for &k in keys {
                s.insert(k);
            }
        };
        g.bench_function(format!("{name}.remove"), |b| {
            b.iter_custom(|iters| {
                let mut ok = 0u64;
                let d = timed_walk(
                    iters,
                    &mut s,
                    keys,
                    &mut at,
                    &mut { refill },
                    &mut |s, run| {
                        for &k in run {
                            ok += u64::from(s.remove(k));
                        }
                    },
                );
                black_box(ok);
                d
            })
        });
    }
}

fn run_size(c: &mut Criterion, n: usize) {
    let p = 0.01;
    let keys = positive_keys(n);
    let mut g = c.benchmark_group(format!("counting/{}", label(n, p)));
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let classic = Classic::new(n, p);
    let (m, k) = classic.shape();
    bench_one(&mut g, "classic", classic, &keys);
    bench_with(&mut g, "counting", Counting::with_shape(m, k), &keys, true);
    let blocked = BlockedCounting::same_k(n, p, k);
    bench_with(&mut g, "blocked_counting", blocked, &keys, true);
    bench_one(&mut g, "dlcbf", DLeft::new(n, p), &keys);
    bench_one(&mut g, "spectral", Spectral::with_shape(m, k), &keys);
    // count-min: sized by (ε, δ) (the headline), then the big table of `cms_width(n)`
    let eps = Cms::with_error(CMS_EPSILON, CMS_DELTA, false);
    let ew = eps.shape().0;
    bench_with(&mut g, "cms_eps", eps, &keys, true);
    let eps_cu = Cms::with_error(CMS_EPSILON, CMS_DELTA, true);
    bench_with(&mut g, "cms_eps_cu", eps_cu, &keys, true);
    bench_one(&mut g, "pc_cms_eps", PcCms::new(ew), &keys);
    let w = cms_width(n);
    bench_with(&mut g, "cms", Cms::new(w, false), &keys, true);
    bench_with(&mut g, "cms_cu", Cms::new(w, true), &keys, true);
    bench_one(&mut g, "pc_cms", PcCms::new(w), &keys);
    bench_one(&mut g, "ibf", Ibf::with_shape(m, k), &keys);
    bench_one(&mut g, "scbf", Scbf::new(n, p), &keys);
    bench_one(&mut g, "pc_bloom", PcBloom::new(n, p), &keys);
    g.finish();
}

fn counting(c: &mut Criterion) {
    for n in sizes_from_env() {
        run_size(c, n);
    }
}

criterion_group!(benches, counting);
criterion_main!(benches);
