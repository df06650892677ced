//! Criterion benchmarks of the structured-key filters. Method and results:
//! docs/BENCHMARKS.md ("## Structured keys").
//!
//! * `mlbf_urls`: the multi-layer filter (Cen, Xu & Sun) against the classic filter on the same
//!   URLs, in the paper's shape (k = 3, m = 16,829,152 bits per filter, L = 4): insert, query of
//!   inserted URLs (`query_pos`) and of the paper's queries, each URL with its index appended
//!   (`query_neg`). URLs: the first `BLOOMERY_BENCH_URLS` (default 200k) distinct lines of
//!   `$BLOOMERY_DATA/npm-urls.txt` (default `target/data`; `scripts/fetch-data.sh npm`), or
//!   generated repository-like URLs when the file is missing (the run says which). Both
//!   filters take the URL string: the MLBF normalises and splits it and hashes each of its L
//!   segments, the classic filter hashes it once. `mlbf.check_and_insert_batch` is the
//!   crawler's URL-seen test over groups of 16 URLs (hashed and prefetched together);
//!   `mlbf.query_*_batch` are `contains_batch` over the same queries.
//! * `static`: bloomery's `XorFilter` (8-bit fingerprints, binary-fuse layout) against
//!   `xorf::BinaryFuse8` on the same u64 keys (`BLOOMERY_BENCH_STATIC_N`, default 1M): query
//!   of members and non-members, and the build of the whole filter (`build`, time per key).
//!   Bits per key are printed to stderr.
//!
//! Times are ns per operation of thread CPU time (`cpu_now`), as in `filters.rs`.

use std::hint::black_box;
use std::time::Duration;

use bloomery::{BloomFilter, Filter, KeyHasher, MultiLayerBloomFilter, XorFilter};
use bloomery_benches::*;
use criterion::{criterion_group, criterion_main, Criterion};
use xorf::Filter as _;

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.trim().replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// Distinct URLs from the npm file, or generated ones; and a description of the source.
fn urls(n: usize) -> (Vec<String>, String) {
    let dir = std::env::var_os("BLOOMERY_DATA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/data"));
    let path = dir.join("npm-urls.txt");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let mut seen = std::collections::HashSet::new();
        let v: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| bloomery::keys::normalize_url(l, 4).is_ok() && seen.insert(*l))
            .take(n)
            .map(str::to_owned)
            .collect();
        let d = format!("{} npm URLs from {}", v.len(), path.display());
        return (v, d);
    }
    let v = (0..n)
        .map(|i| {
            format!(
                "https://github.com/user{}/repo-{i}",
                key(i as u64) % (n as u64 / 3 + 1)
            )
        })
        .collect();
    (
        v,
        format!("{n} generated URLs ({} missing)", path.display()),
    )
}

/// Time `iters` operations over `items`, cycling.
fn time_cycle<T>(
    iters: u64,
    items: &[T],
    at: &mut usize,
    mut op: impl FnMut(&T) -> bool,
) -> Duration {
    let mut hits = 0usize;
    let t = cpu_now();
    for _ in 0..iters {
        if *at == items.len() {
            *at = 0;
        }
        hits += usize::from(op(&items[*at]));
        *at += 1;
    }
    let d = cpu_now() - t;
    black_box(hits);
    d
}

fn mlbf_urls(c: &mut Criterion) {
    let (urls, source) = urls(env_count("BLOOMERY_BENCH_URLS", 200_000));
    eprintln!("mlbf_urls: {source}");
    let queries: Vec<String> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| format!("{u}{i}"))
        .collect();
    let hasher = KeyHasher::new();
    let new_classic = || {
        BloomFilter::builder()
            .bits(MultiLayerBloomFilter::PAPER_BITS)
            .hashes(MultiLayerBloomFilter::PAPER_HASHES)
            .hasher(hasher)
            .try_build()
            .expect("classic")
    };
    let new_mlbf = || MultiLayerBloomFilter::paper().expect("mlbf");
    let mut g = c.benchmark_group("mlbf_urls");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    let mut classic = new_classic();
    let mut mlbf = new_mlbf();
    for u in &urls {
        classic.insert(u.as_str());
        mlbf.insert(u).expect("url");
    }
    for (name, set) in [("query_pos", &urls), ("query_neg", &queries)] {
        let mut at = 0;
        g.bench_function(format!("classic.{name}"), |b| {
            b.iter_custom(|it| time_cycle(it, set, &mut at, |u| classic.contains(u.as_str())))
        });
        let mut at = 0;
        g.bench_function(format!("mlbf.{name}"), |b| {
            b.iter_custom(|it| time_cycle(it, set, &mut at, |u| mlbf.contains(u).unwrap_or(false)))
        });
        let mut at = 0;
        g.bench_function(format!("mlbf.{name}_batch"), |b| {
            b.iter_custom(|it| {
                let mut left = it as usize;
                let mut d = Duration::ZERO;
                while left > 0 {
                    if at == set.len() {
                        at = 0;
                    }
                    let step = left.min(set.len() - at);
                    let t = cpu_now();
                    let r = mlbf.contains_batch(&set[at..at + step]);
                    d += cpu_now() - t;
                    black_box(r);
                    at += step;
                    left -= step;
                }
                d
            })
        });
    }
    // inserts into a filter being filled; a full pass restarts on a fresh filter (untimed)
    let mut at = 0;
    let mut f = new_classic();
    g.bench_function("classic.insert", |b| {
        b.iter_custom(|it| {
            if at + it as usize > urls.len() {
                f = new_classic();
                at = 0;
            }
            time_cycle(it, &urls, &mut at, |u| f.insert(u.as_str()))
        })
    });
    let mut at = 0;
    let mut f = new_mlbf();
    g.bench_function("mlbf.insert", |b| {
        b.iter_custom(|it| {
            if at + it as usize > urls.len() {
                f = new_mlbf();
                at = 0;
            }
            time_cycle(it, &urls, &mut at, |u| f.insert(u).unwrap_or(false))
        })
    });
    // the crawler's URL-seen test in groups of 16 (check, then insert if new), fresh filters
    let mut at = 0;
    let mut f = new_mlbf();
    g.bench_function("mlbf.check_and_insert_batch", |b| {
        b.iter_custom(|it| {
            let mut left = it as usize;
            if at + left > urls.len() {
                f = new_mlbf();
                at = 0;
            }
            // as `time_cycle`: past the end, the same URLs again (then all seen)
            let mut d = Duration::ZERO;
            while left > 0 {
                if at == urls.len() {
                    at = 0;
                }
                let step = left.min(urls.len() - at);
                let t = cpu_now();
                let r = f.check_and_insert_batch(&urls[at..at + step]);
                d += cpu_now() - t;
                black_box(r);
                at += step;
                left -= step;
            }
            d
        })
    });
    let mut at = 0;
    g.bench_function("mlbf.hash_url", |b| {
        b.iter_custom(|it| {
            time_cycle(it, &urls, &mut at, |u| {
                black_box(mlbf.hash_url(u).map_or(0, |v| v.len()))
                    == MultiLayerBloomFilter::PAPER_LAYERS as usize
            })
        })
    });
    g.finish();
}

fn static_filters(c: &mut Criterion) {
    let n = env_count("BLOOMERY_BENCH_STATIC_N", 1_000_000);
    let pos = positive_keys(n);
    let neg = negative_keys(n);
    let ours = XorFilter::try_from_keys(&pos).expect("xor build");
    let fuse = build_fuse(&pos);
    let fp = |f: &dyn Fn(&u64) -> bool| neg.iter().filter(|k| f(k)).count() as f64 / n as f64;
    eprintln!(
        "static n={n}: bloomery XorFilter {:.3} bits/key (fpr {:.3e}), xorf BinaryFuse8 {:.3} bits/key (fpr {:.3e}); lower bound at those rates {:.3} / {:.3}",
        ours.bit_len() as f64 / n as f64,
        fp(&|k| ours.contains(k)),
        fuse_bits(&fuse) as f64 / n as f64,
        fp(&|k| fuse.contains(k)),
        -fp(&|k| ours.contains(k)).log2(),
        -fp(&|k| fuse.contains(k)).log2(),
    );
    let mut g = c.benchmark_group(format!("static_{n}"));
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, set) in [("query_pos", &pos), ("query_neg", &neg)] {
        let mut at = 0;
        g.bench_function(format!("bloomery_xor8.{name}"), |b| {
            b.iter_custom(|it| time_cycle(it, set, &mut at, |k| ours.contains(k)))
        });
        let mut at = 0;
        g.bench_function(format!("xorf_bfuse8.{name}"), |b| {
            b.iter_custom(|it| time_cycle(it, set, &mut at, |k| fuse.contains(k)))
        });
    }
    // one iteration = one whole build; reported time / n = build ns per key
    g.bench_function("bloomery_xor8.build", |b| {
        b.iter_custom(|it| {
            let t = cpu_now();
            for _ in 0..it {
                black_box(XorFilter::try_from_keys(&pos).expect("xor build"));
            }
            (cpu_now() - t) / n as u32
        })
    });
    g.bench_function("xorf_bfuse8.build", |b| {
        b.iter_custom(|it| {
            let t = cpu_now();
            for _ in 0..it {
                black_box(build_fuse(&pos));
            }
            (cpu_now() - t) / n as u32
        })
    });
    g.finish();
}

criterion_group!(benches, mlbf_urls, static_filters);
criterion_main!(benches);
