//! Probes behind docs/BENCHMARKS.md "Counting family → session 5": why the blocked counting
//! filter's single-key operations follow the host's cache at 1M keys.
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
//!   copies of `nibbles` in `crates/bloomery/src/blocked_counting.rs`, over the library's hash
//!   and line choice; the lines are refilled by the same insert before each remove.
//!
//! `cargo run --release -p bloomery-benches --bin line_probe -- chase|loads N|remove N [ROUNDS]`
//! (thread CPU time, ns per operation).

use std::hint::black_box;

use bloomery::hash::{reduce, Hashed, KeyHasher};
use bloomery::{BlockedCountingBloomFilter, Filter};
use bloomery_benches::{chase_ns, cpu_now, positive_keys};

fn per_op(t: std::time::Duration, n: usize) -> f64 {
    t.as_nanos() as f64 / n as f64
}

/// Word and shift of each of the key's k counters (the library's 4-bit digits of `hi`).
#[inline(always)]
fn cells(hi: u64, k: u32) -> impl Iterator<Item = (usize, u32)> {
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
        _ => eprintln!("usage: line_probe chase | loads N [ROUNDS] | remove N [ROUNDS]"),
    }
}
