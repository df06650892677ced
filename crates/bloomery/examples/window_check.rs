//! Release checks of the sliding-window filter (`AgePartitionedBloomFilter`) at windows too
//! large for the debug test suite, and its time per operation.
//!
//! ```text
//! cargo run --release -p bloomery --example window_check -- rates 1000000,10000000 0.01
//! cargo run --release -p bloomery --example window_check -- speed 1000000 0.01 5
//! ```
//!
//! `rates`: for each window N and each layout (sliced, blocked), a stream of 100·N distinct
//! keys; at every worst point (the steady state, just before a shift) 2000 keys never
//! inserted are queried, and the rate found is compared with the target plus three standard
//! deviations; every 16th insertion the oldest key of the window is queried (a false negative
//! stops the run). Exits non-zero when a check fails.
//!
//! `speed`: ns per insertion and per query (keys inserted, keys never inserted) of the sliced
//! window, the blocked window and the blocked Bloom filter, each sized for (N, p); the window
//! filters timed in their steady state (3·N keys inserted first). Thread CPU time, minimum of
//! `reps` rounds, the structures alternating within each round.

use std::hint::black_box;
use std::time::Instant;

use bloomery::builders::WindowLayout;
use bloomery::{AgePartitionedBloomFilter, BlockedBloomFilter, Filter};

/// Keys never inserted: the high bit set.
const FRESH: u64 = 1 << 63;

fn window(n: u64, p: f64, layout: WindowLayout, seed: u64) -> AgePartitionedBloomFilter {
    AgePartitionedBloomFilter::builder()
        .capacity(n)
        .fpr(p)
        .layout(layout)
        .seed(seed)
        .try_build()
        .expect("window filter")
}

fn rates(windows: &[u64], p: f64) -> bool {
    let mut ok = true;
    println!(
        "| window | layout | k | l | bits/item | worst-point rate | probes | target + 3σ | stream | time |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &n in windows {
        for (layout, seed) in [(WindowLayout::Sliced, 31), (WindowLayout::Blocked, 32)] {
            let start = Instant::now();
            let mut f = window(n, p, layout, seed);
            let g = f.generation();
            let s = u64::from(f.hashes() + f.remembering_slices());
            let ring = s * g;
            let (mut fp, mut q) = (0u64, 0u64);
            let mut probe = FRESH;
            for t in 0..100 * n {
                f.insert(&t);
                if t % 16 == 0 && t + 1 >= n && !f.contains(&(t + 1 - n)) {
                    println!(
                        "FALSE NEGATIVE: window {n} {}: key {} at {t}",
                        layout.name(),
                        t + 1 - n
                    );
                    return false;
                }
                if t >= ring && f.position_in_generation() == g - 1 {
                    for _ in 0..2000 {
                        fp += u64::from(f.contains(&probe));
                        probe += 1;
                        q += 1;
                    }
                }
            }
            let rate = fp as f64 / q as f64;
            let bound = p + 3.0 * (p * (1.0 - p) / q as f64).sqrt();
            let pass = rate <= bound;
            ok &= pass;
            println!(
                "| {n} | {} | {} | {} | {:.2} | {rate:.4e} | {q} | {bound:.4e} | {} | {:.0} s |{}",
                layout.name(),
                f.hashes(),
                f.remembering_slices(),
                bloomery::Stats::bit_len(&f) as f64 / n as f64,
                100 * n,
                start.elapsed().as_secs_f64(),
                if pass { "" } else { " FAIL" }
            );
        }
    }
    ok
}

/// This thread's CPU time in ns (Linux: `/proc/thread-self/schedstat`), else wall time: the
/// machine may be shared, and time spent waiting for a core is not the structure's.
/// Nanoseconds of CPU time this thread has used (what other processes on a busy machine run
/// does not count); wall-clock time where that clock is unavailable.
fn now() -> f64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc == 0 {
        ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
    } else {
        START.get_or_init(Instant::now).elapsed().as_nanos() as f64
    }
}

fn ns(t: f64, ops: u64) -> f64 {
    (now() - t) / ops as f64
}

/// Best (insert, query present, query absent) ns over the rounds, per structure.
fn speed(n: u64, p: f64, reps: usize) {
    let mut best = [[f64::INFINITY; 3]; 3];
    let names = ["window, sliced", "window, blocked", "blocked Bloom filter"];
    for _ in 0..reps {
        for (i, layout) in [WindowLayout::Sliced, WindowLayout::Blocked]
            .into_iter()
            .enumerate()
        {
            let mut f = window(n, p, layout, 7);
            for t in 0..3 * n {
                f.insert(&t);
            }
            let t0 = now();
            for t in 3 * n..4 * n {
                f.insert(&t);
            }
            best[i][0] = best[i][0].min(ns(t0, n));
            let t0 = now();
            let hits = (3 * n..4 * n).filter(|t| f.contains(t)).count();
            best[i][1] = best[i][1].min(ns(t0, n));
            assert_eq!(hits as u64, n, "the last window is found");
            let t0 = now();
            black_box((0..n).filter(|t| f.contains(&(FRESH + t))).count());
            best[i][2] = best[i][2].min(ns(t0, n));
        }
        let mut b = BlockedBloomFilter::builder()
            .capacity(n)
            .fpr(p)
            .seed(7)
            .try_build()
            .expect("blocked filter");
        let t0 = now();
        for t in 0..n {
            b.insert(&t);
        }
        best[2][0] = best[2][0].min(ns(t0, n));
        let t0 = now();
        black_box((0..n).filter(|t| b.contains(t)).count());
        best[2][1] = best[2][1].min(ns(t0, n));
        let t0 = now();
        black_box((0..n).filter(|t| b.contains(&(FRESH + t))).count());
        best[2][2] = best[2][2].min(ns(t0, n));
    }
    println!("| n = {n}, p = {p} | insert ns | query ns (present) | query ns (absent) |");
    println!("|---|---|---|---|");
    for (name, b) in names.iter().zip(best) {
        println!("| {name} | {:.1} | {:.1} | {:.1} |", b[0], b[1], b[2]);
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mode = a.get(1).map_or("rates", String::as_str);
    let p: f64 = a.get(3).map_or(0.01, |s| s.parse().expect("fpr"));
    match mode {
        "rates" => {
            let windows: Vec<u64> = a
                .get(2)
                .map_or("1000000,10000000", String::as_str)
                .split(',')
                .map(|s| s.parse().expect("window"))
                .collect();
            if !rates(&windows, p) {
                std::process::exit(1);
            }
        }
        "speed" => {
            let n: u64 = a.get(2).map_or(1_000_000, |s| s.parse().expect("n"));
            let reps: usize = a.get(4).map_or(5, |s| s.parse().expect("reps"));
            speed(n, p, reps);
        }
        _ => {
            eprintln!("usage: window_check rates WINDOWS P | speed N P REPS");
            std::process::exit(2);
        }
    }
}
