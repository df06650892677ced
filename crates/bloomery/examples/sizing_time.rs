//! Time of sizing a scalable filter's sub-filters (`params::blocked_shape`, the blocked
//! filter's 512-bit blocks), for the sub-filter sequences of a few scalable filters.
//!
//! `cargo run --release -p bloomery --example sizing_time`: each sizing timed two ways, each
//! in fresh processes: **before**, a process that sizes one sub-filter and exits (no model kept
//! from an earlier call, as when every sizing computed its models afresh); **after**, a process
//! that runs `params::warm_blocked_sizing` (what the Redis module does at load) and then sizes
//! the whole sequence. Each time is the least of `ROUNDS` (default 3) such processes, so that
//! a busy machine's preemptions do not count. Prints a markdown table.
use std::process::Command;
use std::time::Instant;

fn time_one(n: u64, p: f64) -> f64 {
    let t = Instant::now();
    let s = bloomery::params::blocked_shape(n, p, 512).expect("a valid shape");
    let ms = t.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(s);
    ms
}

/// (capacity, rate) of every sub-filter: initial capacity, rate and growth of RedisBloom's
/// `BF.ADD` defaults and others, tightening 0.5.
fn subs() -> Vec<(u64, f64)> {
    let filters = [
        (100u64, 0.01f64, 2u64),
        (1000, 0.001, 2),
        (100_000, 0.01, 2),
        (100, 0.01, 4),
    ];
    let mut subs = Vec::new();
    for (n0, p0, g) in filters {
        for i in 0..15u32 {
            let n = n0 * g.pow(i);
            if n > 2_000_000_000 {
                break;
            }
            subs.push((n, p0 * 0.5 * 0.5f64.powi(i as i32)));
        }
    }
    subs
}

fn child(args: &[String]) -> Vec<f64> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let subs = subs();
    match args.get(1).map(String::as_str) {
        Some("one") => {
            let (n, p): (u64, f64) = (args[2].parse().unwrap(), args[3].parse().unwrap());
            println!("{}", time_one(n, p));
            return;
        }
        Some("sweep") => {
            let t = Instant::now();
            bloomery::params::warm_blocked_sizing(512);
            print!("{} ", t.elapsed().as_secs_f64() * 1e3);
            for &(n, p) in &subs {
                print!("{} ", time_one(n, p));
            }
            return;
        }
        _ => {}
    }
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let least = |a: Vec<f64>, b: Vec<f64>| -> Vec<f64> {
        a.iter().zip(&b).map(|(x, y)| x.min(*y)).collect()
    };
    let mut before = vec![f64::INFINITY; subs.len()];
    let mut after = vec![f64::INFINITY; subs.len() + 1];
    for _ in 0..rounds {
        let cold: Vec<f64> = subs
            .iter()
            .map(|&(n, p)| child(&["one".into(), n.to_string(), p.to_string()])[0])
            .collect();
        before = least(before, cold);
        after = least(after, child(&["sweep".into()]));
    }
    let warm_up = after.remove(0);
    let stat = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        (s[s.len() / 2], s[s.len() - 1])
    };
    let ((bm, bx), (am, ax)) = (stat(&before), stat(&after));
    println!(
        "{} sub-filter sizings, least of {rounds} processes each; warm-up {warm_up:.1} ms once",
        subs.len()
    );
    println!("| sizing of a sub-filter | median ms | max ms |");
    println!("|---|---:|---:|");
    println!("| models computed per call (before) | {bm:.3} | {bx:.3} |");
    println!("| models kept, computed at load (after) | {am:.3} | {ax:.3} |");
    println!("| ratio before/after | {:.0}× | {:.0}× |", bm / am, bx / ax);
}
