//! Interleaved min-of-N timing of the multi-layer URL filters against the classic filter on the
//! same real URLs (the "within 1.5×" target; docs/BENCHMARKS.md, "Structured keys"):
//!
//! * `classic`: one classic filter, k = 3, m = 16,829,152 bits (the paper's per-layer shape),
//!   hashing the raw URL once;
//! * `classic 5m`: the classic filter at the MLBF's total memory, (L+1)·m bits, k = 3;
//! * `mlbf`: [`MultiLayerBloomFilter::paper`] (classic layers, kind `mlbf`);
//! * `mlbf-blocked`: the prototype `bloomery_benches::mlbf_proto::BlockedMlbf` (blocked
//!   layers, no file format; the same bits per layer rounded up to whole blocks).
//!
//! Operations: insert into a fresh filter whose pages are already mapped, query of the
//! inserted URLs, and the paper's queries (each URL with its index appended, Cen, Xu & Sun §V). Each
//! pass times every structure once, in turn; the minimum over passes is printed (thread CPU
//! time, ns per operation). With `small` as the fourth argument every filter is cache-resident
//! (m = 2¹⁵ bits per array), which measures compute alone. A second table times the same
//! operations with the hashes computed beforehand (`insert_hashed` / `contains_hashed`, the
//! prototype's precomputed slots): the probes and their memory traffic alone.
//!
//! `cargo run --release -p bloomery-benches --bin mlbf_quick -- [URLS] [PASSES] [small]`;
//! `mlbf_quick ops STRUCT insert|query N` runs one structure's inserts (then queries of the
//! members) once, untimed, for `valgrind --tool=callgrind`.

use std::hint::black_box;

use bloomery::keys::normalize_url;
use bloomery::{BloomFilter, Filter, Hashed, KeyHasher, Merge, MultiLayerBloomFilter};
use bloomery_benches::cpu_now;
use bloomery_benches::mlbf_proto::{BlockedMlbf, MAX_L};

fn urls(n: usize) -> Vec<String> {
    let dir = std::env::var_os("BLOOMERY_DATA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/data"));
    let path = dir.join("npm-urls.txt");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/fetch-data.sh npm)", path.display()));
    let mut seen = std::collections::HashSet::new();
    text.lines()
        .map(str::trim)
        .filter(|l| {
            normalize_url(l, MultiLayerBloomFilter::PAPER_LAYERS).is_ok() && seen.insert(*l)
        })
        .take(n)
        .map(str::to_owned)
        .collect()
}

/// The four structures under test behind one interface.
enum Subject {
    Classic(BloomFilter),
    Mlbf(MultiLayerBloomFilter),
    Blocked(BlockedMlbf<3>),
}

impl Subject {
    fn new(name: &str, small: bool) -> Self {
        let m = if small {
            1 << 15
        } else {
            MultiLayerBloomFilter::PAPER_BITS
        };
        let l = MultiLayerBloomFilter::PAPER_LAYERS;
        let mut s = match name {
            "classic" => Self::Classic(classic(m)),
            "classic5m" => Self::Classic(classic(m * u64::from(l + 1))),
            "mlbf" => Self::Mlbf(
                MultiLayerBloomFilter::try_with_shape(l, m, MultiLayerBloomFilter::PAPER_HASHES)
                    .expect("mlbf"),
            ),
            "mlbf-blocked" => Self::Blocked(BlockedMlbf::new(l, m.div_ceil(512))),
            s => panic!("unknown structure {s}"),
        };
        s.prefault();
        s
    }

    /// Map the pages now, so inserts do not pay first-touch faults.
    fn prefault(&mut self) {
        match self {
            Self::Classic(f) => f.union_with(&f.clone()).expect("union"),
            Self::Mlbf(f) => f.union_with(&f.clone()).expect("union"),
            Self::Blocked(_) => {} // a zeroed Vec, written by `vec!`
        }
    }

    #[inline]
    fn insert(&mut self, u: &str) -> bool {
        match self {
            Self::Classic(f) => f.insert(u),
            Self::Mlbf(f) => f.insert(u).unwrap_or(false),
            Self::Blocked(f) => f.insert(u).unwrap_or(false),
        }
    }

    #[inline]
    fn contains(&self, u: &str) -> bool {
        match self {
            Self::Classic(f) => f.contains(u),
            Self::Mlbf(f) => f.contains(u).unwrap_or(false),
            Self::Blocked(f) => f.contains(u).unwrap_or(false),
        }
    }
}

fn classic(m: u64) -> BloomFilter {
    BloomFilter::builder()
        .bits(m)
        .hashes(MultiLayerBloomFilter::PAPER_HASHES)
        .hasher(KeyHasher::new())
        .try_build()
        .expect("classic")
}

/// Per-structure loops, monomorphised per variant so the timed loop has no dispatch.
fn time_insert(s: &mut Subject, urls: &[String]) -> f64 {
    fn go<F>(urls: &[String], mut f: F) -> f64
    where
        F: FnMut(&str) -> bool,
    {
        let mut hits = 0usize;
        let t = cpu_now();
        for u in urls {
            hits += usize::from(f(u));
        }
        let d = cpu_now() - t;
        black_box(hits);
        d.as_nanos() as f64 / urls.len() as f64
    }
    match s {
        Subject::Classic(f) => go(urls, |u| f.insert(u)),
        Subject::Mlbf(f) => go(urls, |u| f.insert(u).unwrap_or(false)),
        Subject::Blocked(f) => go(urls, |u| f.insert(u).unwrap_or(false)),
    }
}

fn time_query(s: &Subject, urls: &[String]) -> f64 {
    fn go<F>(urls: &[String], f: F) -> f64
    where
        F: Fn(&str) -> bool,
    {
        let mut hits = 0usize;
        let t = cpu_now();
        for u in urls {
            hits += usize::from(f(u));
        }
        let d = cpu_now() - t;
        black_box(hits);
        d.as_nanos() as f64 / urls.len() as f64
    }
    match s {
        Subject::Classic(f) => go(urls, |u| f.contains(u)),
        Subject::Mlbf(f) => go(urls, |u| f.contains(u).unwrap_or(false)),
        Subject::Blocked(f) => go(urls, |u| f.contains(u).unwrap_or(false)),
    }
}

/// The untimed `ops` run (a separate function, for `--toggle-collect=*run_ops*`).
#[inline(never)]
fn run_ops(mut s: Subject, urls: &[String], query: bool) -> usize {
    let mut hits = 0usize;
    for u in urls {
        hits += usize::from(s.insert(u));
    }
    if query {
        for u in urls {
            hits += usize::from(s.contains(u));
        }
    }
    hits
}

/// `ops hash url|segments N`: xxh3-128 (the one hash path) of each URL, or of each of its
/// present layer values (for callgrind's `--toggle-collect=*run_hashes*`).
#[inline(never)]
fn run_hashes(urls: &[String], segs: &[Vec<String>], segments: bool) -> u64 {
    let h = KeyHasher::new();
    let mut acc = 0u64;
    if segments {
        for s in segs.iter().flatten() {
            acc ^= h.hash_bytes(s.as_bytes()).lo;
        }
    } else {
        for u in urls {
            acc ^= h.hash_bytes(u.as_bytes()).lo;
        }
    }
    acc
}

/// Time `op` over `items` (thread CPU time, ns per item).
fn time<T>(items: &[T], mut op: impl FnMut(&T) -> bool) -> f64 {
    let mut hits = 0usize;
    let t = cpu_now();
    for x in items {
        hits += usize::from(op(x));
    }
    let d = cpu_now() - t;
    black_box(hits);
    d.as_nanos() as f64 / items.len() as f64
}

/// One URL's hashes for each structure, computed before timing.
struct Pre {
    classic: Hashed,
    layers: [Hashed; MAX_L],
    slots: [(usize, u64); MAX_L + 1],
}

fn precompute(urls: &[String], m: &MultiLayerBloomFilter, b: &BlockedMlbf<3>) -> Vec<Pre> {
    let h = KeyHasher::new();
    urls.iter()
        .map(|u| {
            let mut layers = [Hashed::default(); MAX_L];
            let l = m.hash_url_into(u, &mut layers).expect("valid");
            let mut slots = [(0, 0); MAX_L + 1];
            b.slots(&layers[..l], &mut slots);
            Pre {
                classic: h.hash(u.as_str()),
                layers,
                slots,
            }
        })
        .collect()
}

/// The probes alone: every structure of [`NAMES`] fed hashes computed beforehand.
/// [insert, query members, query URL + index] per structure, min over `passes`.
fn probe_only(
    urls: &[String],
    queries: &[String],
    small: bool,
    passes: usize,
) -> [[f64; 3]; NAMES.len()] {
    let l = MultiLayerBloomFilter::PAPER_LAYERS as usize;
    let (m0, b0) = match (
        Subject::new("mlbf", small),
        Subject::new("mlbf-blocked", small),
    ) {
        (Subject::Mlbf(m), Subject::Blocked(b)) => (m, b),
        _ => unreachable!(),
    };
    let pos = precompute(urls, &m0, &b0);
    let neg = precompute(queries, &m0, &b0);
    let mut best = [[f64::INFINITY; 3]; NAMES.len()];
    for _ in 0..passes {
        for (i, name) in NAMES.iter().enumerate() {
            let t = match Subject::new(name, small) {
                Subject::Classic(mut f) => [
                    time(&pos, |p| f.insert_hashed(p.classic)),
                    time(&pos, |p| f.contains_hashed(p.classic)),
                    time(&neg, |p| f.contains_hashed(p.classic)),
                ],
                Subject::Mlbf(mut f) => [
                    time(&pos, |p| f.insert_hashed(&p.layers[..l]).unwrap_or(false)),
                    time(&pos, |p| f.contains_hashed(&p.layers[..l]).unwrap_or(false)),
                    time(&neg, |p| f.contains_hashed(&p.layers[..l]).unwrap_or(false)),
                ],
                Subject::Blocked(mut f) => [
                    time(&pos, |p| f.insert_slots(&p.slots[..=l])),
                    time(&pos, |p| f.contains_slots(&p.slots[..=l])),
                    time(&neg, |p| f.contains_slots(&p.slots[..=l])),
                ],
            };
            for (x, y) in best[i].iter_mut().zip(t) {
                *x = x.min(y);
            }
        }
    }
    best
}

fn print_table(title: &str, best: &[[f64; 3]; NAMES.len()], fps: Option<&[usize]>) {
    println!(
        "{title:<14} {:>9} {:>9} {:>9}   {:>7} {:>7} {:>7}  {}",
        "insert",
        "members",
        "URL+id",
        "ins/c",
        "mem/c",
        "id/c",
        if fps.is_some() { "FPs (URL + id)" } else { "" }
    );
    for (i, name) in NAMES.iter().enumerate() {
        let r = |j: usize| best[i][j] / best[0][j];
        println!(
            "{name:<14} {:>9.1} {:>9.1} {:>9.1}   {:>6.2}x {:>6.2}x {:>6.2}x  {}",
            best[i][0],
            best[i][1],
            best[i][2],
            r(0),
            r(1),
            r(2),
            fps.map_or(String::new(), |f| f[i].to_string())
        );
    }
}

/// The untimed `ops-given` run (for `--toggle-collect=*run_given*`).
#[inline(never)]
fn run_given(s: Subject, pre: &[Pre], query: bool) -> usize {
    let l = MultiLayerBloomFilter::PAPER_LAYERS as usize;
    let mut hits = 0usize;
    match s {
        Subject::Classic(mut f) => {
            for p in pre {
                hits += usize::from(f.insert_hashed(p.classic));
            }
            if query {
                hits += pre.iter().filter(|p| f.contains_hashed(p.classic)).count();
            }
        }
        Subject::Mlbf(mut f) => {
            for p in pre {
                hits += usize::from(f.insert_hashed(&p.layers[..l]).unwrap_or(false));
            }
            if query {
                let q = |p: &&Pre| f.contains_hashed(&p.layers[..l]).unwrap_or(false);
                hits += pre.iter().filter(q).count();
            }
        }
        Subject::Blocked(mut f) => {
            for p in pre {
                hits += usize::from(f.insert_slots(&p.slots[..=l]));
            }
            if query {
                hits += pre
                    .iter()
                    .filter(|p| f.contains_slots(&p.slots[..=l]))
                    .count();
            }
        }
    }
    hits
}

const NAMES: [&str; 4] = ["classic", "classic5m", "mlbf", "mlbf-blocked"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("ops") {
        let n: usize = args[4].parse().expect("N");
        let urls = urls(n);
        if args[2] == "hash" {
            // the mandated hash path alone: the whole URL once (the classic filter's hash)
            // against each of its layer values (the MLBF's hashes)
            let segs: Vec<Vec<String>> = urls
                .iter()
                .map(|u| {
                    normalize_url(u, MultiLayerBloomFilter::PAPER_LAYERS)
                        .expect("valid")
                        .into_iter()
                        .flatten()
                        .collect()
                })
                .collect();
            println!("{}", run_hashes(&urls, &segs, args[3] == "segments"));
            return;
        }
        let s = Subject::new(&args[2], args.get(5).is_some_and(|a| a == "small"));
        println!("{}", run_ops(s, &urls, args[3] == "query"));
        return;
    }
    if args.get(1).map(String::as_str) == Some("ops-given") {
        // `ops-given STRUCT insert|query N [small]`: as `ops`, with the hashes precomputed
        let n: usize = args[4].parse().expect("N");
        let urls = urls(n);
        let small = args.get(5).is_some_and(|a| a == "small");
        let (m0, b0) = match (
            Subject::new("mlbf", small),
            Subject::new("mlbf-blocked", small),
        ) {
            (Subject::Mlbf(m), Subject::Blocked(b)) => (m, b),
            _ => unreachable!(),
        };
        let pre = precompute(&urls, &m0, &b0);
        let s = Subject::new(&args[2], small);
        println!("{}", run_given(s, &pre, args[3] == "query"));
        return;
    }
    let arg = |i: usize, d: usize| {
        args.get(i)
            .and_then(|a| a.replace('_', "").parse().ok())
            .unwrap_or(d)
    };
    let (n, passes) = (arg(1, 200_000), arg(2, 7));
    let small = args.get(3).is_some_and(|a| a == "small");
    let urls = urls(n);
    let queries: Vec<String> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| format!("{u}{i}"))
        .collect();
    println!(
        "mlbf_quick: {} npm URLs, {passes} passes, {}",
        urls.len(),
        if small {
            "cache-resident (m = 2^15 per array)"
        } else {
            "paper shape (m = 16,829,152 per array)"
        }
    );
    // [insert, query members, query URL + index] per structure
    let mut best = [[f64::INFINITY; 3]; NAMES.len()];
    let mut fps = [0usize; NAMES.len()];
    for _ in 0..passes {
        for (b, (name, fp)) in best.iter_mut().zip(NAMES.iter().zip(fps.iter_mut())) {
            let mut s = Subject::new(name, small);
            let t = [
                time_insert(&mut s, &urls),
                time_query(&s, &urls),
                time_query(&s, &queries),
            ];
            for (x, y) in b.iter_mut().zip(t) {
                *x = x.min(y);
            }
            *fp = queries.iter().filter(|q| s.contains(q)).count();
        }
    }
    print_table("ns/op (min)", &best, Some(&fps));
    print_table(
        "hashes given",
        &probe_only(&urls, &queries, small, passes),
        None,
    );
}
