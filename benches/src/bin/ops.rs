//! One structure, one operation, for instruction counting under callgrind:
//! `ops STRUCT OP N` with STRUCT in blocked (the default layout, salted)|positions|sectors|sbbf|fastbloom|classic and OP in
//! fill|hit|miss (hit/miss include the fill; subtract a `fill` run).
use std::hint::black_box;

use bloomery_benches::*;

fn run<S: Subject>(mut s: S, op: &str, pos: &[u64], neg: &[u64]) {
    fill(&mut s, pos);
    match op {
        "hit" => {
            black_box(count(&s, pos));
        }
        "miss" => {
            black_box(count(&s, neg));
        }
        _ => {}
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a[3].parse().expect("n");
    let pos = positive_keys(n);
    let neg = negative_keys(n);
    let p = 0.01;
    match a[1].as_str() {
        "blocked" => run(Blocked::new(n, p), &a[2], &pos, &neg),
        "positions" => run(Blocked::positions(n, p), &a[2], &pos, &neg),
        "sectors" => run(Blocked::sectors(n, p), &a[2], &pos, &neg),
        "sbbf" => run(
            Sbbf::new(Sbbf::bits_per_key_for(n, p), n),
            &a[2],
            &pos,
            &neg,
        ),
        "fastbloom" => run(FastBloom::new(n, p), &a[2], &pos, &neg),
        "classic" => {
            let f = FastBloom::new(n, p);
            run(
                Classic::with_shape(f.bits(), f.k().unwrap_or(1)),
                &a[2],
                &pos,
                &neg,
            )
        }
        s => panic!("unknown {s}"),
    }
}
