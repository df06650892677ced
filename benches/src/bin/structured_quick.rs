//! Interleaved min-of-N timing of the structured-key filters: a criterion-free
//! cross-check of docs/BENCHMARKS.md ("## Structured keys") that is robust to a busy machine
//! (each pass times every structure once, in turn; the minimum over passes is kept).
//!
//! * MLBF in the paper's shape (k = 3, m = 16,829,152 bits per layer, L = 4) against the
//!   classic filter of the same m and k on the same real URLs (`npm-urls.txt` from
//!   `$BLOOMERY_DATA`, default `target/data`; generated URLs without it): insert (into a fresh
//!   filter whose pages are already mapped), query of the inserted URLs, and the paper's
//!   queries (each URL with its index appended); and the MLBF's `check_and_insert_batch`
//!   (the crawler's URL-seen test, 16 URLs hashed and prefetched together) against the
//!   classic filter's one-by-one insert; `contains_batch` likewise against `contains`.
//!   With `STRUCTURED_PROBE=1`, also cache-resident shapes (compute alone) and `hash_url`.
//! * bloomery `XorFilter` (8-bit) against `xorf::BinaryFuse8` on the same u64 keys: build (ns
//!   per key), query of members and of non-members.
//!
//! `cargo run --release -p bloomery-benches --bin structured_quick -- [URLS] [STATIC_N] [PASSES]`
//! (default 200,000 URLs, 1,000,000 keys, 5 passes). Thread CPU time, ns per operation.

use std::hint::black_box;

use bloomery::keys::normalize_url;
use bloomery::{BloomFilter, Filter, KeyHasher, Merge, MultiLayerBloomFilter, XorFilter};
use bloomery_benches::{build_fuse, cpu_now, fuse_bits, key, negative_keys, positive_keys};
use xorf::Filter as _;

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
            .filter(|l| normalize_url(l, 4).is_ok() && seen.insert(*l))
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

fn per_op(t: std::time::Duration, n: usize) -> f64 {
    t.as_nanos() as f64 / n as f64
}

fn time<T>(items: &[T], mut op: impl FnMut(&T) -> bool) -> f64 {
    let mut hits = 0usize;
    let t = cpu_now();
    for x in items {
        hits += usize::from(op(x));
    }
    let d = cpu_now() - t;
    black_box(hits);
    per_op(d, items.len())
}

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .and_then(|a| a.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn main() {
    let (n_urls, n_static, passes) = (arg(1, 200_000), arg(2, 1_000_000), arg(3, 5));
    let (urls, source) = urls(n_urls);
    let queries: Vec<String> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| format!("{u}{i}"))
        .collect();
    println!("structured_quick: {source}; static n = {n_static}; {passes} passes");
    let new_classic = || {
        let mut f = BloomFilter::builder()
            .bits(MultiLayerBloomFilter::PAPER_BITS)
            .hashes(MultiLayerBloomFilter::PAPER_HASHES)
            .hasher(KeyHasher::new())
            .try_build()
            .expect("classic");
        // map the pages now, so inserts do not pay first-touch faults
        let empty = f.clone();
        f.union_with(&empty).expect("union");
        f
    };
    let new_mlbf = || {
        let mut f = MultiLayerBloomFilter::paper().expect("mlbf");
        let empty = f.clone();
        f.union_with(&empty).expect("union");
        f
    };
    let pos = positive_keys(n_static);
    let neg = negative_keys(n_static);

    // [insert, query_pos, query_neg] for classic, mlbf; [build, query_pos, query_neg] for the
    // static filters
    let mut url_best = [[f64::INFINITY; 3]; 2];
    let mut batch_best = f64::INFINITY;
    let mut qbatch_best = [f64::INFINITY; 2];
    let mut st_best = [[f64::INFINITY; 3]; 2];
    let mut ours = None;
    let mut fuse = None;
    for _ in 0..passes {
        let mut c = new_classic();
        let mut m = new_mlbf();
        let ci = time(&urls, |u| c.insert(u.as_str()));
        let mi = time(&urls, |u| m.insert(u).unwrap_or(false));
        let cp = time(&urls, |u| c.contains(u.as_str()));
        let mp = time(&urls, |u| m.contains(u).unwrap_or(false));
        let cn = time(&queries, |u| c.contains(u.as_str()));
        let mn = time(&queries, |u| m.contains(u).unwrap_or(false));
        for (b, set) in qbatch_best.iter_mut().zip([&urls, &queries]) {
            let t = cpu_now();
            let r = m.contains_batch(set);
            *b = b.min(per_op(cpu_now() - t, set.len()));
            black_box(r);
        }
        for (b, v) in url_best.iter_mut().zip([[ci, cp, cn], [mi, mp, mn]]) {
            for (x, y) in b.iter_mut().zip(v) {
                *x = x.min(y);
            }
        }
        drop((c, m));
        // the crawler's URL-seen test in groups (check, then insert if new), fresh filter
        let mut b = new_mlbf();
        let t = cpu_now();
        let seen = b.check_and_insert_batch(&urls);
        batch_best = batch_best.min(per_op(cpu_now() - t, urls.len()));
        black_box(seen);
        drop(b);

        let t = cpu_now();
        let o = XorFilter::try_from_keys(&pos).expect("xor build");
        let ob = per_op(cpu_now() - t, n_static);
        let t = cpu_now();
        let f = build_fuse(&pos);
        let fb = per_op(cpu_now() - t, n_static);
        let op = time(&pos, |k| o.contains(k));
        let fp = time(&pos, |k| f.contains(k));
        let on = time(&neg, |k| o.contains(k));
        let fneg = time(&neg, |k| f.contains(k));
        for (b, v) in st_best.iter_mut().zip([[ob, op, on], [fb, fp, fneg]]) {
            for (x, y) in b.iter_mut().zip(v) {
                *x = x.min(y);
            }
        }
        ours = Some(o);
        fuse = Some(f);
    }
    if std::env::var_os("STRUCTURED_PROBE").is_some() {
        // compute-only: cache-resident shapes; and the normaliser + hashes alone
        let mut best = [f64::INFINITY; 3];
        for _ in 0..passes {
            let mut c = BloomFilter::try_with_shape(1 << 15, 3).expect("c");
            let mut m = MultiLayerBloomFilter::try_with_shape(4, 1 << 15, 3).expect("m");
            let big = MultiLayerBloomFilter::paper().expect("mlbf");
            best[0] = best[0].min(time(&urls, |u| c.insert(u.as_str())));
            best[1] = best[1].min(time(&urls, |u| m.insert(u).unwrap_or(false)));
            best[2] = best[2].min(time(&urls, |u| big.hash_url(u).is_ok()));
        }
        println!(
            "small m: classic insert {:.1}, mlbf insert {:.1}; hash_url {:.1}",
            best[0], best[1], best[2]
        );
    }
    let row = |name: &str, a: f64, b: f64| {
        println!("{name:<34} {a:>9.1} {b:>9.1} {:>7.2}x", b / a);
    };
    println!(
        "{:<34} {:>9} {:>9} {:>8}",
        "ns/op (min)", "classic", "mlbf", "ratio"
    );
    row("insert", url_best[0][0], url_best[1][0]);
    row(
        "check_and_insert_batch (vs insert)",
        url_best[0][0],
        batch_best,
    );
    row("query, inserted URLs", url_best[0][1], url_best[1][1]);
    row("query, URL + index", url_best[0][2], url_best[1][2]);
    row(
        "contains_batch, inserted URLs",
        url_best[0][1],
        qbatch_best[0],
    );
    row(
        "contains_batch, URL + index",
        url_best[0][2],
        qbatch_best[1],
    );
    println!(
        "{:<34} {:>9} {:>9} {:>8}",
        "ns/op (min)", "xorf", "bloomery", "ratio"
    );
    row("build (per key)", st_best[1][0], st_best[0][0]);
    row("query, members", st_best[1][1], st_best[0][1]);
    row("query, non-members", st_best[1][2], st_best[0][2]);
    if let (Some(o), Some(f)) = (ours, fuse) {
        let fpr = |hit: &dyn Fn(&u64) -> bool| {
            neg.iter().filter(|k| hit(k)).count() as f64 / neg.len() as f64
        };
        println!(
            "bits/key: bloomery {:.3} (fpr {:.3e}), xorf {:.3} (fpr {:.3e})",
            o.bit_len() as f64 / n_static as f64,
            fpr(&|k| o.contains(k)),
            fuse_bits(&f) as f64 / n_static as f64,
            fpr(&|k| f.contains(k)),
        );
    }
}
