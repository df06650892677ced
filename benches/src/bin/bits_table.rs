//! Bits per element, ratio to the lower bound n·log2(1/ε), measured false-positive rate and
//! build time of every structure in the benchmark, as a Markdown table.
//!
//! `cargo run --release -p bloomery-benches --bin bits_table` (sizes from `BLOOMERY_BENCH_N`,
//! as for the criterion benches). The FPR is measured with 10M keys disjoint from the inserted
//! ones; every inserted key is checked too (a false negative aborts).

use bloomery_benches::*;
use xorf::Filter as _;

struct Row {
    name: String,
    k: String,
    bits: u64,
    fpr: f64,
    build_ns: f64,
}

fn measure<S: Subject>(name: &str, mut s: S, pos: &[u64], neg: &[u64]) -> Row {
    let t = fill(&mut s, pos);
    assert_eq!(count(&s, pos), pos.len(), "{name}: false negative");
    Row {
        name: name.into(),
        k: s.k().map_or("-".into(), |k| k.to_string()),
        bits: s.bits(),
        fpr: count(&s, neg) as f64 / neg.len() as f64,
        build_ns: t.as_nanos() as f64 / pos.len() as f64,
    }
}

fn main() {
    let neg = negative_keys(10_000_000);
    for (n, p) in configs(&sizes_from_env()) {
        let pos = positive_keys(n);
        let mut rows = Vec::new();
        rows.push(measure("bloomery blocked", Blocked::new(n, p), &pos, &neg));
        let fast = FastBloom::new(n, p);
        let (fm, fk) = (fast.bits(), fast.k().unwrap_or(1));
        rows.push(measure("fastbloom (foldhash)", fast, &pos, &neg));
        rows.push(measure(
            "bloomery classic (fastbloom's m, k)",
            Classic::with_shape(fm, fk),
            &pos,
            &neg,
        ));
        rows.push(measure(
            "bloomery split-block",
            Split::new(n, p),
            &pos,
            &neg,
        ));
        let bpk = Sbbf::bits_per_key_for(n, p);
        rows.push(measure(
            &format!("sbbf-rs-safe ({bpk} bits/key, xxh3-64)"),
            Sbbf::new(bpk, n),
            &pos,
            &neg,
        ));
        rows.push(measure(
            "bloomfilter (SipHash)",
            RustBloom::new(n, p),
            &pos,
            &neg,
        ));
        if p == 0.01 {
            let t = cpu_now();
            let fuse = build_fuse(&pos);
            let build_ns = (cpu_now() - t).as_nanos() as f64 / n as f64;
            assert!(pos.iter().all(|k| fuse.contains(k)), "xorf: false negative");
            let fp = neg.iter().filter(|k| fuse.contains(k)).count();
            rows.push(Row {
                name: "xorf BinaryFuse8 (static)".into(),
                k: "-".into(),
                bits: fuse_bits(&fuse),
                fpr: fp as f64 / neg.len() as f64,
                build_ns,
            });
        }
        let lb = bloomery::params::lower_bound_bits(n as u64, p);
        println!(
            "\n#### {} (lower bound n·log2(1/ε) = {:.2} bits/element)\n",
            label(n, p),
            lb / n as f64
        );
        println!("| structure | k | bits/element | × lower bound | measured FPR | FPR / target | build ns/key |");
        println!("|---|---|---|---|---|---|---|");
        for r in rows {
            println!(
                "| {} | {} | {:.2} | {:.3} | {:.4}% | {:.2} | {:.1} |",
                r.name,
                r.k,
                r.bits as f64 / n as f64,
                r.bits as f64 / lb,
                r.fpr * 100.0,
                r.fpr / p,
                r.build_ns
            );
        }
    }
}
