//! A quick, criterion-free timing of the main operations (the source of docs/BENCHMARKS.md
//! "Library", and a tool for profiling and iterating on optimisations). Every structure is
//! built and filled first; then each operation is timed over the whole key array, round-robin
//! across structures, `reps` times, and the minimum (thread CPU time) is printed in ns/op.
//!
//! `cargo run --release -p bloomery-benches --bin quick -- [n] [fpr] [reps]`

use std::hint::black_box;

use bloomery_benches::*;

fn ns(t: std::time::Duration, ops: usize) -> f64 {
    (cpu_now() - t).as_nanos() as f64 / ops as f64
}

fn time<S: Subject>(s: &mut S, pos: &[u64], neg: &[u64], best: &mut [f64; 3]) {
    s.clear();
    let t = cpu_now();
    fill(s, pos);
    best[0] = best[0].min(ns(t, pos.len()));
    let t = cpu_now();
    black_box(count(s, pos));
    best[1] = best[1].min(ns(t, pos.len()));
    let t = cpu_now();
    black_box(count(s, neg));
    best[2] = best[2].min(ns(t, neg.len()));
}

/// The batched-query pipeline rebuilt on the public API with a chosen prefetch distance (to
/// tune `BATCH_AHEAD` without touching the library).
fn pipelined<const D: usize>(f: &bloomery::BlockedBloomFilter, keys: &[u64]) -> usize {
    use bloomery::Filter as _;
    let mut ring = [bloomery::Hashed::default(); D];
    let mut hits = 0;
    for (i, k) in keys.iter().enumerate() {
        let h = f.hasher().hash(k);
        f.prefetch_hashed(h);
        if i >= D {
            hits += usize::from(f.contains_hashed(ring[i % D]));
        }
        ring[i % D] = h;
    }
    for i in keys.len().saturating_sub(D)..keys.len() {
        hits += usize::from(f.contains_hashed(ring[i % D]));
    }
    hits
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a.get(1).map_or(10_000_000, |s| s.parse().expect("n"));
    let p: f64 = a.get(2).map_or(0.01, |s| s.parse().expect("fpr"));
    let reps: usize = a.get(3).map_or(5, |s| s.parse().expect("reps"));
    let pos = positive_keys(n);
    let neg = negative_keys(n.min(10_000_000));
    let mut blocked = Blocked::new(n, p);
    let mut positions = Blocked::positions(n, p);
    let mut sectors = Blocked::sectors(n, p);
    let mut salted = Blocked::salted(n, p);
    let mut salted256 = Blocked::salted256(n, p);
    let mut sbbf = Sbbf::new(Sbbf::bits_per_key_for(n, p), n);
    let mut fast = FastBloom::new(n, p);
    let mut classic = Classic::with_shape(fast.bits(), fast.k().unwrap_or(1));
    let mut split = Split::new(n, p);
    let floor = WordsFloor::new(blocked.0.as_words().len());
    fill(&mut blocked, &pos);
    fill(&mut positions, &pos);
    fill(&mut sectors, &pos);
    fill(&mut salted, &pos);
    fill(&mut salted256, &pos);
    fill(&mut sbbf, &pos);
    fill(&mut fast, &pos);
    fill(&mut classic, &pos);
    fill(&mut split, &pos);
    let inf = [f64::INFINITY; 3];
    let (mut tb, mut ts, mut tf, mut tc, mut tp, mut tx) = (inf, inf, inf, inf, inf, inf);
    let mut tq = inf;
    let (mut t512, mut t256) = (inf, inf);
    let (mut batch, mut fl) = ([f64::INFINITY; 3], f64::INFINITY);
    for _ in 0..reps {
        time(&mut blocked, &pos, &neg, &mut tb);
        for (i, keys) in [&pos, &neg].into_iter().enumerate() {
            let t = cpu_now();
            black_box(blocked.0.count_batch(keys));
            batch[i] = batch[i].min(ns(t, keys.len()));
        }
        blocked.clear();
        let t = cpu_now();
        blocked.0.extend(pos.iter().copied());
        batch[2] = batch[2].min(ns(t, pos.len()));
        let t = cpu_now();
        black_box(floor_reads(floor.words(), &neg));
        fl = fl.min(ns(t, neg.len()));
        time(&mut salted256, &pos, &neg, &mut t256);
        time(&mut sbbf, &pos, &neg, &mut ts);
        time(&mut salted, &pos, &neg, &mut t512);
        time(&mut fast, &pos, &neg, &mut tf);
        time(&mut sectors, &pos, &neg, &mut tq);
        time(&mut positions, &pos, &neg, &mut tp);
        time(&mut classic, &pos, &neg, &mut tc);
        time(&mut split, &pos, &neg, &mut tx);
    }
    let mut dist = [f64::INFINITY; 4];
    for _ in 0..reps {
        for (j, f) in [
            pipelined::<8> as fn(&bloomery::BlockedBloomFilter, &[u64]) -> usize,
            pipelined::<16>,
            pipelined::<32>,
            pipelined::<64>,
        ]
        .into_iter()
        .enumerate()
        {
            let t = cpu_now();
            black_box(f(&blocked.0, &neg));
            dist[j] = dist[j].min(ns(t, neg.len()));
        }
    }
    println!("prefetch distance 8/16/32/64 (neg keys): {dist:.2?}");
    println!(
        "n={n} p={p} (min of {reps}; ns/op: insert, query pos, query neg); blocked layout {}, positions k={}",
        blocked.0.layout().name(),
        positions.0.hashes()
    );
    for (name, t) in [
        ("blocked", tb),
        ("salted", t512),
        ("salted256", t256),
        ("sectors", tq),
        ("positions", tp),
        ("sbbf", ts),
        ("split", tx),
        ("fastbloom", tf),
        ("classic", tc),
    ] {
        println!("{name:>10}: {:6.2} {:6.2} {:6.2}", t[0], t[1], t[2]);
    }
    println!(
        "{:>10}: count_batch pos {:6.2} neg {:6.2}, extend {:6.2}; floor {fl:6.2}",
        "blocked", batch[0], batch[1], batch[2]
    );
    println!(
        "bytes: salted {} salted256 {} sbbf {} fastbloom {}",
        salted.bits() / 8,
        salted256.bits() / 8,
        sbbf.bits() / 8,
        fast.bits() / 8
    );
}
