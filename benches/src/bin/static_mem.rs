//! Peak memory of building a static filter: bloomery's `XorFilter` (8-bit) against
//! `xorf::BinaryFuse8` on the same n u64 keys, one build per process so that each peak is its
//! own. The peak is the process's high-water resident set (`VmHWM` in /proc/self/status)
//! after the build minus the resident set just before it (the keys are already in memory);
//! the filter's own size is printed next to it.
//!
//! `cargo run --release -p bloomery-benches --bin static_mem -- [N]` (default 10,000,000)
//! runs itself once per structure (`static_mem N bloomery|xorf`) and prints both.

use std::hint::black_box;

use bloomery::XorFilter;
use bloomery_benches::{build_fuse, cpu_now, fuse_bits, positive_keys};

/// A field of /proc/self/status in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn one(n: usize, which: &str) {
    let keys = positive_keys(n);
    let before = status_bytes("VmRSS:");
    let t = cpu_now();
    let size_bits = match which {
        "bloomery" => {
            let f = XorFilter::try_from_keys(&keys).expect("xor build");
            let b = f.bit_len();
            black_box(&f);
            b
        }
        "xorf" => {
            let f = build_fuse(&keys);
            let b = fuse_bits(&f);
            black_box(&f);
            b
        }
        other => {
            eprintln!("unknown structure {other:?} (bloomery | xorf)");
            std::process::exit(2);
        }
    };
    let secs = (cpu_now() - t).as_secs_f64();
    let peak = status_bytes("VmHWM:").saturating_sub(before);
    println!(
        "{which:<9} n={n}: build peak {:.1} MiB ({:.1} bytes/key), filter {:.2} MiB ({:.3} bits/key), build {:.1} ns/key",
        peak as f64 / (1 << 20) as f64,
        peak as f64 / n as f64,
        size_bits as f64 / 8.0 / (1 << 20) as f64,
        size_bits as f64 / n as f64,
        secs * 1e9 / n as f64,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|a| a.replace('_', "").parse().ok())
        .unwrap_or(10_000_000);
    if let Some(which) = args.get(2) {
        one(n, which);
        return;
    }
    let me = std::env::current_exe().expect("own path");
    for which in ["bloomery", "xorf"] {
        let status = std::process::Command::new(&me)
            .arg(n.to_string())
            .arg(which)
            .status()
            .expect("run self");
        if !status.success() {
            eprintln!("{which}: {status}");
        }
    }
}
