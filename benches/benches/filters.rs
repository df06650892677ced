//! Criterion benchmarks of bloomery's filters against fastbloom, sbbf-rs-safe, bloomfilter,
//! xorf and the raw random-read floor. Method and results: docs/BENCHMARKS.md ("## Library").
//!
//! Every reported time is **ns per operation**: each benchmark uses `iter_custom`, and one
//! criterion "iteration" is one operation (one insert, one query, one key of a batch, one
//! random read). A cursor walks the pre-generated key arrays across iterations, so successive
//! operations touch different, random cache lines (no warm re-reads of a small key set).
//!
//! * Filters are built once per (structure, size) — all n keys inserted, untimed — and the
//!   query benchmarks run on the full filter.
//! * Insert: the cursor walks the n keys in order, inserting into the filter; when it reaches
//!   n the filter is full, so the timer is paused, the filter cleared (memory kept, already
//!   faulted in) and the cursor restarts. Every insert is thus timed into a filter holding
//!   between 0 and n keys — the cost of building the filter, averaged over its fill.
//!
//! Sizes: `BLOOMERY_BENCH_N=1M,10M` (default), `BLOOMERY_BENCH_N=100M` for the big run.

use std::hint::black_box;
use std::time::Duration;

use bloomery_benches::*;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use xorf::Filter as _;

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Walks a key array cyclically.
struct Cursor<'k> {
    keys: &'k [u64],
    at: usize,
}

impl<'k> Cursor<'k> {
    fn new(keys: &'k [u64]) -> Self {
        Self { keys, at: 0 }
    }
    /// The next run of at most `max` keys (wrapping to the start at the end).
    #[inline]
    fn take(&mut self, max: usize) -> &'k [u64] {
        if self.at == self.keys.len() {
            self.at = 0;
        }
        let end = (self.at + max).min(self.keys.len());
        let s = &self.keys[self.at..end];
        self.at = end;
        s
    }
}

/// Time `iters` calls of `op` over keys drawn from `keys` (queries).
fn time_queries(iters: u64, cur: &mut Cursor<'_>, mut op: impl FnMut(&[u64]) -> usize) -> Duration {
    let mut left = iters as usize;
    let mut hits = 0;
    let t = cpu_now();
    while left > 0 {
        let run = cur.take(left.min(4096));
        hits += op(run);
        left -= run.len();
    }
    let d = cpu_now() - t;
    black_box(hits);
    d
}

fn bench_queries<S: Subject>(g: &mut Group<'_>, name: &str, s: &S, pos: &[u64], neg: &[u64]) {
    let mut cp = Cursor::new(pos);
    g.bench_function(format!("{name}.query_pos"), |b| {
        b.iter_custom(|iters| time_queries(iters, &mut cp, |ks| count(s, ks)))
    });
    let mut cn = Cursor::new(neg);
    g.bench_function(format!("{name}.query_neg"), |b| {
        b.iter_custom(|iters| time_queries(iters, &mut cn, |ks| count(s, ks)))
    });
}

fn bench_insert<S: Subject>(g: &mut Group<'_>, name: &str, s: &mut S, keys: &[u64]) {
    bench_insert_with(g, &format!("{name}.insert"), s, keys, |s, run| {
        for &k in run {
            black_box(s.insert(k));
        }
    });
}

/// Insert benchmark with a custom way to insert a run of keys (see the module docs).
fn bench_insert_with<S: Subject>(
    g: &mut Group<'_>,
    id: &str,
    s: &mut S,
    keys: &[u64],
    mut insert_run: impl FnMut(&mut S, &[u64]),
) {
    s.clear();
    let mut at = 0usize;
    g.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters as usize;
            while left > 0 {
                if at == keys.len() {
                    s.clear(); // untimed: the filter is full, start a fresh fill
                    at = 0;
                }
                let end = (at + left).min(keys.len());
                let t = cpu_now();
                insert_run(s, &keys[at..end]);
                total += cpu_now() - t;
                left -= end - at;
                at = end;
            }
            total
        })
    });
}

fn run_subject<S: Subject>(g: &mut Group<'_>, name: &str, mut s: S, pos: &[u64], neg: &[u64]) {
    fill(&mut s, pos);
    bench_queries(g, name, &s, pos, neg);
    bench_insert(g, name, &mut s, pos);
}

fn run_config(c: &mut Criterion, n: usize, p: f64) {
    let pos = positive_keys(n);
    let neg = negative_keys(n.min(10_000_000));
    let mut g = c.benchmark_group(label(n, p));
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    // bloomery blocked: scalar, then the batched paths
    let mut blocked = Blocked::new(n, p);
    let floor_len = blocked.0.as_words().len();
    fill(&mut blocked, &pos);
    bench_queries(&mut g, "blocked", &blocked, &pos, &neg);
    for (keys, tag) in [(&pos, "pos"), (&neg, "neg")] {
        let mut cur = Cursor::new(keys);
        g.bench_function(format!("blocked.count_batch_{tag}"), |b| {
            b.iter_custom(|iters| time_queries(iters, &mut cur, |ks| blocked.0.count_batch(ks)))
        });
        let mut cur = Cursor::new(keys);
        let mut out = vec![false; 4096];
        g.bench_function(format!("blocked.contains_batch_{tag}"), |b| {
            b.iter_custom(|iters| {
                time_queries(iters, &mut cur, |ks| {
                    let o = &mut out[..ks.len()];
                    blocked.0.contains_batch(ks, o).expect("batch");
                    o.iter().filter(|&&x| x).count()
                })
            })
        });
    }
    bench_insert(&mut g, "blocked", &mut blocked, &pos);
    // batched insert: `Extend`, pipelined with prefetch like the batched queries
    bench_insert_with(&mut g, "blocked.extend", &mut blocked, &pos, |s, run| {
        s.0.extend(run.iter().copied())
    });
    drop(blocked);
    // the positions layout (format kind 3), for comparison with the default sectors layout
    {
        let mut positions = Blocked::positions(n, p);
        fill(&mut positions, &pos);
        bench_queries(&mut g, "blocked_positions", &positions, &pos, &neg);
        bench_insert(&mut g, "blocked_positions", &mut positions, &pos);
    }

    // the physical floor: one independent random 8-byte read per op, same size as the filter
    {
        let f = WordsFloor::new(floor_len);
        let mut cur = Cursor::new(&neg);
        g.bench_function("floor_words.read", |b| {
            b.iter_custom(|iters| {
                time_queries(iters, &mut cur, |ks| floor_reads(f.words(), ks) as usize)
            })
        });
    }
    {
        let f = VecFloor::new(floor_len);
        let mut cur = Cursor::new(&neg);
        g.bench_function("floor_vec.read", |b| {
            b.iter_custom(|iters| {
                time_queries(iters, &mut cur, |ks| floor_reads(f.words(), ks) as usize)
            })
        });
    }

    let fast = FastBloom::new(n, p);
    let (fm, fk) = (fast.bits(), fast.k().unwrap_or(1));
    run_subject(&mut g, "fastbloom", fast, &pos, &neg);
    run_subject(&mut g, "classic", Classic::with_shape(fm, fk), &pos, &neg);
    run_subject(&mut g, "split_block", Split::new(n, p), &pos, &neg);
    run_subject(
        &mut g,
        "sbbf",
        Sbbf::new(Sbbf::bits_per_key_for(n, p), n),
        &pos,
        &neg,
    );
    run_subject(&mut g, "bloomfilter", RustBloom::new(n, p), &pos, &neg);

    // xorf BinaryFuse8: static (~0.39% FPR, only at 1%), queries only; its build time is
    // measured by the `bits_table` binary
    if p == 0.01 {
        let fuse = build_fuse(&pos);
        let mut cp = Cursor::new(&pos);
        g.bench_function("xorf_bfuse8.query_pos", |b| {
            b.iter_custom(|iters| {
                time_queries(iters, &mut cp, |ks| {
                    ks.iter().filter(|k| fuse.contains(k)).count()
                })
            })
        });
        let mut cn = Cursor::new(&neg);
        g.bench_function("xorf_bfuse8.query_neg", |b| {
            b.iter_custom(|iters| {
                time_queries(iters, &mut cn, |ks| {
                    ks.iter().filter(|k| fuse.contains(k)).count()
                })
            })
        });
    }
    g.finish();
}

fn filters(c: &mut Criterion) {
    for (n, p) in configs(&sizes_from_env()) {
        run_config(c, n, p);
    }
}

criterion_group!(benches, filters);
criterion_main!(benches);
