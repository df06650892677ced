//! Probes behind docs/BENCHMARKS.md "Counting family": why the blocked
//! counting filter's single-key operations follow the host's cache at 1M keys, and what
//! shortens them.
//!
//! * `chase`: [`chase_ns`] (dependent-load latency) over buffers of 0.25 … 48 MB: which sizes
//!   this host answers from cache right now.
//! * `loads N`: a copy of the blocked counting filter's 4-bit count that reads 1, 2, 4 or 7
//!   counters of the key's line (always one line per key), over the filter sized for N keys
//!   at 1% with k = 7 and filled with them: whether the time follows the instructions per key
//!   or the lines touched.
//! * `remove N`: the two 4-bit removes compared on the same array of lines, interleaved — the
//!   two-pass one (check every counter, then decrement) and the one-pass one the library uses
//!   (decrement while checking, keep a copy of the line to restore on a refusal). Both are
//!   copies of the scalar path in `crates/bloomery/src/blocked_counting/nibbles.rs`, over the
//!   library's hash and line choice; the lines are refilled by the same insert before each
//!   remove.
//! * `ops N`: the scalar insert / count / remove with k read at run time (`Loop`, the
//!   library's earlier code) and with k a compile-time constant (`Unrolled`, the
//!   library's scalar path now), interleaved. Each phase is its own function, so
//!   `valgrind --tool=cachegrind` counts the instructions of each.
//! * `lib N [ROUNDS] [P]`: the library's own calls, the classic filter's insert / contains
//!   against the blocked counting filter's insert / count / remove at the same k (n keys,
//!   rate P, default 1%),
//!   interleaved; run it with and without `BLOOMERY_NO_SIMD=1` to compare the AVX2 path with
//!   the portable one. Each phase is its own function (for cachegrind).
//!
//! `cargo run --release -p bloomery-benches --bin line_probe -- chase|loads N|remove N|ops N|lib N [ROUNDS]`
//! (thread CPU time, ns per operation).

use std::hint::black_box;

use bloomery::hashing::reduce;
use bloomery::{BlockedCountingBloomFilter, BloomFilter, Count, Filter, Remove};
use bloomery::{Hashed, KeyHasher};
use bloomery_benches::{chase_ns, cpu_now, positive_keys};

fn per_op(t: std::time::Duration, n: usize) -> f64 {
    t.as_nanos() as f64 / n as f64
}

/// Word and shift of each of the key's k counters (the library's 4-bit digits of `hi`).
#[inline(always)]
fn cells(hi: u64, k: u32) -> impl Iterator<Item = (usize, u32)> + Clone {
    (0..k).map(move |i| {
        let p = ((hi << (7 * i)) >> 57) as usize;
        (p >> 4, (p as u32 & 15) * 4)
    })
}

/// Time a count that reads the first `loads` counters of each key's line.
#[inline(never)]
fn count_reading(f: &BlockedCountingBloomFilter, keys: &[u64], loads: u32) -> f64 {
    let hasher = *f.hasher();
    let (words, blocks) = (f.as_words(), f.blocks());
    let t = cpu_now();
    let mut sum = 0u64;
    for k in keys {
        let h = hasher.hash(k);
        let b = reduce(h.lo, blocks) as usize * 8;
        let line = &words[b..b + 8];
        let m = cells(h.hi, loads).fold(15, |m, (w, s)| m.min((line[w] >> s) & 15));
        sum = sum.wrapping_add(m);
    }
    black_box(sum);
    per_op(cpu_now() - t, keys.len())
}

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u64; 8]);

#[inline(always)]
fn insert(line: &mut [u64; 8], hi: u64, k: u32) {
    for (w, s) in cells(hi, k) {
        let v = line[w];
        line[w] = v + (u64::from((v >> s) & 15 != 15) << s);
    }
}

#[inline(always)]
fn decrement(line: &mut [u64; 8], hi: u64, k: u32) {
    for (w, s) in cells(hi, k) {
        let v = line[w];
        let c = (v >> s) & 15;
        line[w] = v - (u64::from(c.wrapping_sub(1) < 14) << s);
    }
}

#[inline(always)]
fn remove_two_pass(line: &mut [u64; 8], hi: u64, k: u32) -> bool {
    if cells(hi, k).fold(15, |m, (w, s)| m.min((line[w] >> s) & 15)) == 0 {
        return false;
    }
    decrement(line, hi, k);
    true
}

#[cold]
#[inline(never)]
fn restore(line: &mut [u64; 8], before: [u64; 8], hi: u64, k: u32) -> bool {
    *line = before;
    remove_two_pass(line, hi, k)
}

#[inline(always)]
fn remove_one_pass(line: &mut [u64; 8], hi: u64, k: u32) -> bool {
    let before = *line;
    let mut zero = false;
    for (w, s) in cells(hi, k) {
        let v = line[w];
        let c = (v >> s) & 15;
        zero |= c == 0;
        line[w] = v - (u64::from(c.wrapping_sub(1) < 14) << s);
    }
    if zero {
        return restore(line, before, hi, k);
    }
    true
}

/// The same k positions as [`cells`], for a compile-time k (the unrolled variant).
#[inline(always)]
fn cells_const<const K: u32>(hi: u64) -> impl Iterator<Item = (usize, u32)> + Clone {
    cells(hi, K)
}

/// The variants of the per-key sequence compared by `ops`.
#[derive(Clone, Copy, Debug)]
enum Seq {
    /// The library's loop over a run-time k.
    Loop,
    /// The same code with k a constant (fully unrolled), as the library's scalar path.
    Unrolled,
}

const SEQS: [Seq; 2] = [Seq::Loop, Seq::Unrolled];

#[inline(always)]
fn min_seq<const K: u32>(seq: Seq, line: &[u64; 8], hi: u64, k: u32) -> u64 {
    match seq {
        Seq::Loop => cells(hi, k).fold(15, |m, (w, s)| m.min((line[w] >> s) & 15)),
        Seq::Unrolled => cells_const::<K>(hi).fold(15, |m, (w, s)| m.min((line[w] >> s) & 15)),
    }
}

/// Add one to each counter (saturating at 15); true when one was zero.
#[inline(always)]
fn insert_cells(line: &mut [u64; 8], cells: impl Iterator<Item = (usize, u32)>) -> bool {
    let mut zero = false;
    for (w, s) in cells {
        let v = line[w];
        let c = v.wrapping_shr(s) & 15;
        zero |= c == 0;
        line[w] = v.wrapping_add(u64::from(c != 15).wrapping_shl(s));
    }
    zero
}

#[inline(always)]
fn insert_seq<const K: u32>(seq: Seq, line: &mut [u64; 8], hi: u64, k: u32) -> bool {
    match seq {
        Seq::Loop => insert_cells(line, cells(hi, k)),
        Seq::Unrolled => insert_cells(line, cells_const::<K>(hi)),
    }
}

/// The library's one-pass remove over the given positions (restore and two passes on a zero).
#[inline(always)]
fn remove_cells<I: Iterator<Item = (usize, u32)> + Clone>(line: &mut [u64; 8], cells: I) -> bool {
    let before = *line;
    let mut zero = false;
    for (w, s) in cells.clone() {
        let v = line[w];
        let c = v.wrapping_shr(s) & 15;
        zero |= c == 0;
        line[w] = v.wrapping_sub(u64::from(c.wrapping_sub(1) < 14).wrapping_shl(s));
    }
    if zero {
        *line = before;
        return remove_cold(line, cells);
    }
    true
}

#[cold]
#[inline(never)]
fn remove_cold(line: &mut [u64; 8], cells: impl Iterator<Item = (usize, u32)> + Clone) -> bool {
    if cells
        .clone()
        .fold(15, |m, (w, s)| m.min(line[w].wrapping_shr(s) & 15))
        == 0
    {
        return false;
    }
    for (w, s) in cells {
        let v = line[w];
        let c = v.wrapping_shr(s) & 15;
        line[w] = v.wrapping_sub(u64::from(c.wrapping_sub(1) < 14).wrapping_shl(s));
    }
    true
}

#[inline(always)]
fn remove_seq<const K: u32>(seq: Seq, line: &mut [u64; 8], hi: u64, k: u32) -> bool {
    match seq {
        Seq::Loop => remove_cells(line, cells(hi, k)),
        Seq::Unrolled => remove_cells(line, cells_const::<K>(hi)),
    }
}

/// Insert every key with variant `S` (k = `K`; the `Loop` variant reads k at run time).
#[inline(never)]
fn insert_phase<const K: u32, const S: u8>(lines: &mut [Line], hashes: &[Hashed]) -> u64 {
    let (k, seq, blocks) = (black_box(K), SEQS[S as usize], lines.len() as u64);
    let mut new = 0u64;
    for h in hashes {
        let line = &mut lines[reduce(h.lo, blocks) as usize].0;
        new += u64::from(insert_seq::<K>(seq, line, h.hi, k));
    }
    new
}

/// Count every key with variant `S`.
#[inline(never)]
fn count_phase<const K: u32, const S: u8>(lines: &[Line], hashes: &[Hashed]) -> u64 {
    let (k, seq, blocks) = (black_box(K), SEQS[S as usize], lines.len() as u64);
    let mut sum = 0u64;
    for h in hashes {
        let line = &lines[reduce(h.lo, blocks) as usize].0;
        sum = sum.wrapping_add(min_seq::<K>(seq, line, h.hi, k));
    }
    sum
}

/// Remove every key with variant `S`.
#[inline(never)]
fn remove_phase<const K: u32, const S: u8>(lines: &mut [Line], hashes: &[Hashed]) -> u64 {
    let (k, seq, blocks) = (black_box(K), SEQS[S as usize], lines.len() as u64);
    let mut ok = 0u64;
    for h in hashes {
        let line = &mut lines[reduce(h.lo, blocks) as usize].0;
        ok += u64::from(remove_seq::<K>(seq, line, h.hi, k));
    }
    ok
}

/// Insert, count and remove every key with variant `S`, each phase timed: ns per key.
fn time_ops<const K: u32, const S: u8>(lines: &mut [Line], hashes: &[Hashed]) -> [f64; 3] {
    lines.fill(Line([0; 8]));
    let t = cpu_now();
    let new = insert_phase::<K, S>(lines, hashes);
    let ins = per_op(cpu_now() - t, hashes.len());
    let t = cpu_now();
    let sum = count_phase::<K, S>(lines, hashes);
    let cnt = per_op(cpu_now() - t, hashes.len());
    let t = cpu_now();
    let ok = remove_phase::<K, S>(lines, hashes);
    let rem = per_op(cpu_now() - t, hashes.len());
    assert!(lines.iter().all(|l| l.0 == [0; 8]), "every key removed");
    black_box((new, sum, ok));
    [ins, cnt, rem]
}

/// The library's blocked counting insert of every key (the phases of `lib` are separate
/// functions, so a profiler such as cachegrind counts each one's instructions).
#[inline(never)]
fn lib_insert(f: &mut BlockedCountingBloomFilter, keys: &[u64]) -> u64 {
    keys.iter().map(|k| u64::from(f.insert(k))).sum()
}

#[inline(never)]
fn lib_count(f: &BlockedCountingBloomFilter, keys: &[u64]) -> u64 {
    keys.iter().map(|k| Count::count(f, k)).sum()
}

#[inline(never)]
fn lib_remove(f: &mut BlockedCountingBloomFilter, keys: &[u64]) -> u64 {
    keys.iter().map(|k| u64::from(f.remove(k).is_ok())).sum()
}

#[inline(never)]
fn classic_insert(f: &mut BloomFilter, keys: &[u64]) -> u64 {
    keys.iter().map(|k| u64::from(f.insert(k))).sum()
}

#[inline(never)]
fn classic_contains(f: &BloomFilter, keys: &[u64]) -> u64 {
    keys.iter().map(|k| u64::from(f.contains(k))).sum()
}

/// Time `f(keys)`: ns per key.
fn timed(keys: &[u64], f: impl FnOnce(&[u64]) -> u64) -> f64 {
    let t = cpu_now();
    black_box(f(keys));
    per_op(cpu_now() - t, keys.len())
}

/// Fill the lines with every key, then time `remove` of every key.
#[inline(never)]
fn time_remove(
    lines: &mut [Line],
    hashes: &[Hashed],
    remove: impl Fn(&mut [u64; 8], u64, u32) -> bool,
) -> f64 {
    const K: u32 = 7;
    lines.fill(Line([0; 8]));
    let blocks = lines.len() as u64;
    for h in hashes {
        insert(&mut lines[reduce(h.lo, blocks) as usize].0, h.hi, K);
    }
    let t = cpu_now();
    let mut ok = 0u64;
    for h in hashes {
        ok += u64::from(remove(&mut lines[reduce(h.lo, blocks) as usize].0, h.hi, K));
    }
    black_box(ok);
    per_op(cpu_now() - t, hashes.len())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3);
    match args.first().map(String::as_str) {
        Some("chase") => {
            for mb in [0.25, 1.2, 3.0, 5.5, 8.0, 16.0, 48.0] {
                let ns = chase_ns((mb * 1e6) as usize, 2_000_000);
                println!("{mb:>5} MB: {ns:.1} ns per dependent load");
            }
        }
        Some("loads") => {
            let mut f = BlockedCountingBloomFilter::builder()
                .capacity(n as u64)
                .fpr(0.01)
                .hashes(7)
                .try_build()
                .expect("shape");
            let keys = positive_keys(n);
            for k in &keys {
                f.insert(k);
            }
            println!("n = {n}, {:.1} MB of counters", f.byte_len() as f64 / 1e6);
            for _ in 0..rounds {
                let t: Vec<String> = [1, 2, 4, 7]
                    .iter()
                    .map(|&l| format!("{l}: {:.1}", count_reading(&f, &keys, l)))
                    .collect();
                println!("counters read per key → ns/key  {}", t.join("  "));
            }
        }
        Some("remove") => {
            // the blocked counting filter's line count for (n, 1%) at k = 7
            let shape = BlockedCountingBloomFilter::builder()
                .capacity(n as u64)
                .fpr(0.01)
                .hashes(7)
                .try_build()
                .expect("shape");
            let mut lines = vec![Line([0; 8]); shape.blocks() as usize];
            drop(shape);
            let hasher = KeyHasher::default();
            let hashes: Vec<Hashed> = positive_keys(n).iter().map(|k| hasher.hash(k)).collect();
            println!("n = {n}, {} lines", lines.len());
            for _ in 0..rounds {
                let one = time_remove(&mut lines, &hashes, remove_one_pass);
                let two = time_remove(&mut lines, &hashes, remove_two_pass);
                println!("remove ns/key: one pass + copy {one:.1}  two passes {two:.1}");
            }
        }
        Some("ops") => {
            // the blocked counting filter's line count for (n, 1%) at k = 7
            let shape = BlockedCountingBloomFilter::builder()
                .capacity(n as u64)
                .fpr(0.01)
                .hashes(7)
                .try_build()
                .expect("shape");
            let mut lines = vec![Line([0; 8]); shape.blocks() as usize];
            let bytes = shape.byte_len() as usize;
            drop(shape);
            let hasher = KeyHasher::default();
            let hashes: Vec<Hashed> = positive_keys(n).iter().map(|k| hasher.hash(k)).collect();
            println!(
                "n = {n}, {} lines ({:.1} MB, dependent load {:.0} ns); insert / count / remove ns/key, k = 7",
                lines.len(),
                bytes as f64 / 1e6,
                chase_ns(bytes, 2_000_000)
            );
            let mut best = [[f64::INFINITY; 3]; 2];
            for _ in 0..rounds {
                let mut row = Vec::new();
                for (i, seq) in SEQS.iter().enumerate() {
                    // one function per variant, so each is compiled (and profiled) on its own
                    let r = match seq {
                        Seq::Loop => time_ops::<7, 0>(&mut lines, &hashes),
                        Seq::Unrolled => time_ops::<7, 1>(&mut lines, &hashes),
                    };
                    for j in 0..3 {
                        best[i][j] = best[i][j].min(r[j]);
                    }
                    row.push(format!("{seq:?} {:.1}/{:.1}/{:.1}", r[0], r[1], r[2]));
                }
                println!("{}", row.join("  "));
            }
            let row: Vec<String> = SEQS
                .iter()
                .zip(&best)
                .map(|(seq, b)| format!("{seq:?} {:.1}/{:.1}/{:.1}", b[0], b[1], b[2]))
                .collect();
            println!("min: {}", row.join("  "));
            println!("dependent load after: {:.0} ns", chase_ns(bytes, 2_000_000));
        }
        Some("lib") => {
            // the library's own calls: classic filter (n, p; p = 1% unless given) and blocked
            // counting filter at its k, interleaved, minimum over the rounds
            let p: f64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(0.01);
            let mut classic = BloomFilter::try_new(n as u64, p).expect("classic");
            let mut f = BlockedCountingBloomFilter::builder()
                .capacity(n as u64)
                .fpr(p)
                .hashes(classic.hashes())
                .try_build()
                .expect("shape");
            let keys = positive_keys(n);
            let (cb, fb) = (classic.bits() as usize / 8, f.byte_len() as usize);
            let lat = |when: &str| {
                println!(
                    "{when}: dependent load at {:.1} MB {:.0} ns, at {:.1} MB {:.0} ns",
                    cb as f64 / 1e6,
                    chase_ns(cb, 2_000_000),
                    fb as f64 / 1e6,
                    chase_ns(fb, 2_000_000)
                )
            };
            lat("before");
            let mut best = [f64::INFINITY; 5];
            for _ in 0..rounds {
                classic.clear();
                f.clear();
                let r = [
                    timed(&keys, |k| classic_insert(&mut classic, k)),
                    timed(&keys, |k| lib_insert(&mut f, k)),
                    timed(&keys, |k| classic_contains(&classic, k)),
                    timed(&keys, |k| lib_count(&f, k)),
                    timed(&keys, |k| lib_remove(&mut f, k)),
                ];
                for (b, x) in best.iter_mut().zip(r) {
                    *b = b.min(x);
                }
            }
            lat("after");
            println!(
                "n = {n}, k = {}, paths {}: classic insert {:.1} contains {:.1}; blocked counting insert \
                 {:.1} count {:.1} remove {:.1} ns/key (min of {rounds}); ratios insert {:.2} \
                 count {:.2} remove/classic insert {:.2}",
                classic.hashes(),
                bloomery::tuning::simd_paths(),
                best[0],
                best[2],
                best[1],
                best[3],
                best[4],
                best[1] / best[0],
                best[3] / best[2],
                best[4] / best[0]
            );
        }
        _ => eprintln!(
            "usage: line_probe chase | loads N [ROUNDS] | remove N [ROUNDS] | ops N [ROUNDS] | \
             lib N [ROUNDS]"
        ),
    }
}
