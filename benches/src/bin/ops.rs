//! One structure, one operation, for instruction counting under callgrind:
//! `ops STRUCT OP N` with STRUCT in blocked (the default layout) | positions | sectors |
//! salted | salted256 | sbbf | fastbloom | classic (u64 keys) or blocked-url | sectors-url (str keys), and
//! OP in fill|hit|miss (hit/miss include the fill; subtract a `fill` run); for blocked also
//! extend (the batched insert, `Extend`, instead of the fill) and batch (the fill, then
//! `count_batch` of the absent keys).
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

/// `blocked-url` / `sectors-url`: the same operations on URL-like str keys (36–40 bytes,
/// xxh3's 17–128-byte path) instead of u64 keys.
fn run_urls(layout: bloomery::builders::BlockLayout, op: &str, n: usize) {
    use bloomery::{BlockedBloomFilter, Filter};
    let url = |i: usize| format!("https://example.org/k/{i:x}/page.html");
    let pos: Vec<String> = (0..n).map(url).collect();
    let neg: Vec<String> = (n..2 * n).map(url).collect();
    let mut f = BlockedBloomFilter::builder()
        .capacity(n as u64)
        .fpr(0.01)
        .layout(layout)
        .try_build()
        .expect("blocked");
    for k in &pos {
        black_box(f.insert(k.as_str()));
    }
    let keys = match op {
        "hit" => &pos,
        "miss" => &neg,
        _ => return,
    };
    black_box(keys.iter().filter(|k| f.contains(k.as_str())).count());
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a[3].parse().expect("n");
    match a[1].as_str() {
        "blocked-url" => return run_urls(bloomery::builders::BlockLayout::Salted, &a[2], n),
        "sectors-url" => return run_urls(bloomery::builders::BlockLayout::Sectors, &a[2], n),
        _ => {}
    }
    let pos = positive_keys(n);
    let neg = negative_keys(n);
    let p = 0.01;
    match (a[1].as_str(), a[2].as_str()) {
        ("blocked", "extend") => {
            let mut b = Blocked::new(n, p);
            b.0.extend(pos.iter().copied());
            black_box(&b);
            return;
        }
        ("blocked", "batch") => {
            let mut b = Blocked::new(n, p);
            fill(&mut b, &pos);
            black_box(b.0.count_batch(&neg));
            return;
        }
        _ => {}
    }
    match a[1].as_str() {
        "blocked" => run(Blocked::new(n, p), &a[2], &pos, &neg),
        "positions" => run(Blocked::positions(n, p), &a[2], &pos, &neg),
        "sectors" => run(Blocked::sectors(n, p), &a[2], &pos, &neg),
        "salted" => run(Blocked::salted(n, p), &a[2], &pos, &neg),
        "salted256" => run(Blocked::salted256(n, p), &a[2], &pos, &neg),
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
