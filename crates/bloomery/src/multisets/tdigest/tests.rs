use super::*;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn digest(c: u64, values: &[f64]) -> TDigest {
    let mut td = TDigest::try_new(c).unwrap();
    for &v in values {
        td.insert(v).unwrap();
    }
    td
}

/// The rank error a quantile of a k₁ digest may have. Every merged centroid spans at most one
/// unit of k₁ (§2.1), and k₁'(q) = δ / (2π·√(q(1 − q))), so the centroid holding quantile q spans
/// at most about `2π·√(q(1 − q))/δ` of the ranks; interpolating inside it errs by less than its
/// span. In the tails the centroid itself reaches toward q, hence the `(π/δ)²` floor under the
/// root (k₁'s first centroid spans `sin²(π/δ) ≈ (π/δ)²`), and `2/n` covers the rounding of ranks
/// to whole observations.
fn rank_bound(q: f64, delta: f64, n: f64) -> f64 {
    let pi = std::f64::consts::PI;
    2.0 * pi / delta * (q * (1.0 - q) + (pi / delta).powi(2)).sqrt() + 2.0 / n
}

/// The distance from `q` to the range of ranks (as fractions) that `x` has in `sorted`.
fn rank_error(sorted: &[f64], x: f64, q: f64) -> f64 {
    let n = sorted.len() as f64;
    let below = sorted.partition_point(|&v| v < x) as f64 / n;
    let upto = sorted.partition_point(|&v| v <= x) as f64 / n;
    if q < below {
        below - q
    } else if q > upto {
        q - upto
    } else {
        0.0
    }
}

const QS: [f64; 11] = [
    0.0001, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999,
];

/// Checks quantiles and the CDF of `values` against the exact ranks; returns the largest rank
/// error of each relative to its bound.
fn check_accuracy(name: &str, values: &[f64], delta: u64) -> (f64, f64) {
    let td = digest(delta, values);
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let (mut worst_q, mut worst_cdf) = (0.0f64, 0.0f64);
    for &q in &QS {
        let bound = rank_bound(q, delta as f64, n);
        let x = td.quantile(q);
        let e = rank_error(&sorted, x, q);
        assert!(
            e <= bound,
            "{name}: quantile({q}) = {x}, rank error {e} > {bound}"
        );
        worst_q = worst_q.max(e / bound);
        // the CDF at the exact q-quantile: its half-counted rank
        let v = sorted[((q * n) as usize).min(sorted.len() - 1)];
        let below = sorted.partition_point(|&y| y < v) as f64;
        let equal = sorted.partition_point(|&y| y <= v) as f64 - below;
        let truth = (below + equal / 2.0) / n;
        let c = td.cdf(v);
        let e = (c - truth).abs();
        // a run of equal values is one step of the true CDF: any value inside it is right
        let step = equal / n / 2.0;
        let e = (e - step).max(0.0);
        assert!(
            e <= bound,
            "{name}: cdf({v}) = {c}, truth {truth}, error {e} > {bound}"
        );
        worst_cdf = worst_cdf.max(e / bound);
    }
    assert_eq!(td.min(), sorted[0], "{name}: min");
    assert_eq!(td.max(), sorted[sorted.len() - 1], "{name}: max");
    assert_eq!(td.quantile(0.0), sorted[0], "{name}: q = 0");
    assert_eq!(td.quantile(1.0), sorted[sorted.len() - 1], "{name}: q = 1");
    (worst_q, worst_cdf)
}

fn uniform(n: usize, seed: u64) -> Vec<f64> {
    let mut r = StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.gen::<f64>()).collect()
}

fn exponential(n: usize, seed: u64) -> Vec<f64> {
    let mut r = StdRng::seed_from_u64(seed);
    (0..n).map(|_| -(1.0 - r.gen::<f64>()).ln()).collect()
}

/// Quantile and CDF rank errors within the k₁ bound ([`rank_bound`]) at δ = 100 and δ = 500 on
/// 100 000 values: uniform, exponential, sorted, reversed and heavy duplicates (10 distinct
/// values, Zipf-like weights). Run with `--nocapture` for the worst error as a fraction of the
/// bound.
#[test]
fn quantiles_are_within_the_k1_bound() {
    let n = 100_000;
    let sorted: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let reversed: Vec<f64> = sorted.iter().rev().copied().collect();
    let mut r = StdRng::seed_from_u64(7);
    let dups: Vec<f64> = (0..n)
        .map(|_| {
            // value v with probability ∝ 1/(v + 1)
            let u: f64 = r.gen::<f64>() * 2.928_968;
            let mut acc = 0.0;
            for v in 0..10 {
                acc += 1.0 / (v as f64 + 1.0);
                if u < acc {
                    return v as f64;
                }
            }
            9.0
        })
        .collect();
    let sets: [(&str, Vec<f64>); 5] = [
        ("uniform", uniform(n, 1)),
        ("exponential", exponential(n, 2)),
        ("sorted", sorted),
        ("reversed", reversed),
        ("duplicates", dups),
    ];
    for delta in [100, 500] {
        for (name, values) in &sets {
            let (q, c) = check_accuracy(name, values, delta);
            println!("delta {delta} {name}: worst quantile error {q:.3} of the bound, cdf {c:.3}");
        }
    }
}

/// A digest keeps between δ/4 and about δ centroids once compressed (k₁ spans δ/2 units, each
/// centroid at most one, and greedy merging leaves at most two per unit).
#[test]
fn centroid_count_follows_the_compression() {
    for delta in [20u64, 100, 400] {
        let td = digest(delta, &uniform(200_000, delta));
        let c = td.centroid_list().len() as u64;
        assert!(
            c >= delta / 4 && c <= delta + 2,
            "delta {delta}: {c} centroids"
        );
        let total: u64 = td.centroid_list().iter().map(|c| c.1).sum();
        assert_eq!(total, 200_000);
        assert_eq!(td.capacity(), 6 * delta + 10);
    }
}

/// RedisBloom 2.6's documented replies for its examples (compression 1000, so every value is
/// its own centroid).
#[test]
fn matches_redisbloom_examples() {
    let v = [1., 2., 2., 3., 3., 3., 4., 4., 4., 4., 5., 5., 5., 5., 5.];
    let td = digest(1000, &v);
    let cdf: Vec<f64> = [0., 1., 2., 3., 4., 5., 6.].map(|x| td.cdf(x)).to_vec();
    let want = [0.0, 1. / 30., 2. / 15., 0.3, 8. / 15., 5. / 6., 1.0];
    for (g, w) in cdf.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "cdf {cdf:?}");
    }
    let ranks: Vec<u64> = (0..=15).collect();
    assert_eq!(
        td.by_ranks(&ranks, false),
        [
            1.,
            2.,
            2.,
            3.,
            3.,
            3.,
            4.,
            4.,
            4.,
            4.,
            5.,
            5.,
            5.,
            5.,
            5.,
            f64::INFINITY
        ]
    );
    assert_eq!(
        td.by_ranks(&ranks, true),
        [
            5.,
            5.,
            5.,
            5.,
            5.,
            4.,
            4.,
            4.,
            4.,
            3.,
            3.,
            3.,
            2.,
            2.,
            1.,
            f64::NEG_INFINITY
        ]
    );
    let td = digest(1000, &[10., 20., 30., 40., 50., 60.]);
    let xs = [0., 10., 20., 30., 40., 50., 60., 70.];
    assert_eq!(td.ranks(&xs, false), [-1, 0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(td.ranks(&xs, true), [6, 5, 4, 3, 2, 1, 0, -1]);
    let td = digest(100, &(1..=10).map(f64::from).collect::<Vec<_>>());
    assert_eq!(td.trimmed_mean(0.1, 0.6), 4.0);
    assert_eq!(td.trimmed_mean(0.3, 0.9), 6.5);
    assert_eq!(td.trimmed_mean(0.0, 1.0), 5.5);
}

#[test]
fn empty_digest_answers_as_redisbloom() {
    let td = TDigest::try_new(100).unwrap();
    assert!(td.min().is_nan() && td.max().is_nan());
    assert!(td.quantile(0.5).is_nan());
    assert!(td.cdf(1.0).is_nan());
    assert_eq!((td.rank(1.0), td.rev_rank(1.0)), (-2, -2));
    assert!(td.by_rank(0).is_nan() && td.by_rev_rank(3).is_nan());
    assert!(td.trimmed_mean(0.1, 0.9).is_nan());
    assert_eq!(
        (td.count(), td.merged_nodes(), td.unmerged_nodes()),
        (0, 0, 0)
    );
}

#[test]
fn one_value_and_edges() {
    let td = digest(100, &[42.0]);
    for q in [0.0, 0.3, 1.0] {
        assert_eq!(td.quantile(q), 42.0);
    }
    assert!(td.quantile(1.5).is_nan() && td.quantile(-0.1).is_nan());
    assert!(td.quantile(f64::NAN).is_nan());
    assert_eq!((td.cdf(41.0), td.cdf(42.0), td.cdf(43.0)), (0.0, 0.5, 1.0));
    assert_eq!((td.rank(41.0), td.rank(43.0)), (-1, 1));
    assert_eq!((td.rev_rank(41.0), td.rev_rank(43.0)), (1, -1));
    assert_eq!((td.by_rank(0), td.by_rank(1)), (42.0, f64::INFINITY));
    assert_eq!(td.by_rev_rank(1), f64::NEG_INFINITY);
    assert_eq!(td.trimmed_mean(0.2, 0.4), 42.0);
    assert!(td.trimmed_mean(-0.1, 0.4).is_nan());
}

#[test]
fn bad_input_is_refused_with_nothing_changed() {
    for c in [0, MAX_COMPRESSION + 1] {
        let e = TDigest::try_new(c).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidParameter {
                    name: "compression",
                    ..
                }
            ),
            "{e}"
        );
    }
    let e = TDigest::try_with_limit(100_000, 1 << 20).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    let mut td = digest(100, &[1.0, 2.0]);
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let e = td.insert(v).unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "value", .. }),
            "{e}"
        );
    }
    assert!(td.insert_weighted(1.0, 0).is_err());
    td.insert_weighted(3.0, MAX_WEIGHT - 2).unwrap();
    assert!(td.insert(4.0).is_err());
    assert_eq!((td.count(), td.max()), (MAX_WEIGHT, 3.0));
    let other = digest(100, &[1.0]);
    assert!(td.merge(&other).is_err());
    assert_eq!(td.count(), MAX_WEIGHT);
}

#[test]
fn buffer_compresses_when_full_and_reset_empties() {
    let mut td = TDigest::try_new(10).unwrap(); // 70 slots
    for i in 0..69 {
        td.insert(f64::from(i)).unwrap();
    }
    // as RedisBloom: the buffer is merged once it holds capacity − 1 nodes
    assert_eq!(
        (td.merged_nodes(), td.unmerged_nodes(), td.compressions()),
        (0, 69, 0)
    );
    td.insert(69.0).unwrap();
    assert_eq!(td.compressions(), 1);
    assert_eq!(td.unmerged_nodes(), 1);
    assert_eq!(td.count(), 70);
    let before = td.quantile(0.5);
    td.compress();
    assert_eq!(
        td.quantile(0.5),
        before,
        "a query merges a copy the same way"
    );
    assert_eq!((td.unmerged_nodes(), td.unmerged_weight()), (0, 0));
    td.reset();
    assert!(td.is_empty() && td.min().is_nan());
    assert_eq!(
        (td.compression(), td.compressions(), td.capacity()),
        (10, 0, 70)
    );
    td.insert(5.0).unwrap();
    assert_eq!((td.min(), td.max()), (5.0, 5.0));
}

/// Merging digests of two halves answers like one digest of everything, within the bound.
#[test]
fn merge_is_equivalent_to_one_digest() {
    let values = exponential(50_000, 9);
    let (a, b) = values.split_at(20_000);
    let mut m = TDigest::try_new(100).unwrap();
    m.merge(&digest(100, a)).unwrap();
    m.merge(&digest(50, b)).unwrap();
    assert_eq!(m.compression(), 100);
    let whole = digest(100, &values);
    assert_eq!(
        (m.count(), m.min(), m.max()),
        (whole.count(), whole.min(), whole.max())
    );
    let mut sorted = values.clone();
    sorted.sort_by(f64::total_cmp);
    for &q in &QS {
        // two layers of centroids: twice the single digest's bound
        let bound = 2.0 * rank_bound(q, 100.0, sorted.len() as f64);
        let e = rank_error(&sorted, m.quantile(q), q);
        assert!(e <= bound, "merged quantile({q}): error {e} > {bound}");
    }
    // merging an empty digest changes nothing but compresses
    let mut w = whole.try_clone().unwrap();
    w.merge(&TDigest::try_new(10).unwrap()).unwrap();
    assert_eq!(w.quantile(0.3), whole.quantile(0.3));
}

#[test]
fn round_trip_keeps_every_field() {
    let mut td = digest(50, &uniform(1000, 3));
    td.insert(0.5).unwrap(); // leaves a buffered value
    assert!(td.unmerged_nodes() > 0);
    let back = TDigest::from_bytes(&td.to_bytes()).unwrap();
    assert_eq!(back, td);
    assert_eq!(back.to_bytes(), td.to_bytes());
    let empty = TDigest::try_new(7).unwrap();
    assert_eq!(TDigest::from_bytes(&empty.to_bytes()).unwrap(), empty);
    assert_eq!(Kind::TDigest.id(), 25);
    assert!(!Kind::TDigest.is_set() && !Kind::TDigest.is_counter());
}

/// Rewrites the file's checksum after a change to its bytes, so the loader's own checks are
/// what refuses it.
fn reseal(bytes: &mut [u8]) {
    let n = bytes.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n]);
    bytes[n..].copy_from_slice(&sum.to_le_bytes());
}

/// Forged files are refused with a format error: every field of the parameters and each
/// centroid's bytes.
#[test]
fn forged_payloads_are_refused() {
    let td = digest(10, &[3.0, 1.0, 2.0, 2.0, 9.0]);
    let mut td2 = td.try_clone().unwrap();
    td2.compress();
    td2.insert(4.0).unwrap();
    let good = td2.to_bytes();
    let d = format::decode(&good, format::Verify::Checksum).unwrap();
    // locate the parameters by their encoding
    let p = &d.header.params;
    let at = good.windows(p.len()).position(|w| w == &p[..]).unwrap();
    let field = |i: usize| at + 8 * i;
    let pay = d.payload_offset;
    let forge = |at: usize, v: u64| {
        let mut b = good.clone();
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        reseal(&mut b);
        TDigest::from_bytes(&b)
    };
    assert!(forge(field(5), 77).is_ok(), "the compression count is free");
    // ... up to u64::MAX, where it stays
    let mut loaded = forge(field(5), u64::MAX).unwrap();
    loaded.compress();
    assert_eq!(loaded.compressions(), u64::MAX);
    let cases: [(&str, usize, u64); 15] = [
        ("compression 0", field(0), 0),
        ("compression 11", field(0), 11),
        ("huge compression", field(0), u64::MAX),
        ("merged past cap", field(1), 1000),
        ("unmerged + 1", field(2), 2),
        ("merged weight", field(3), 4),
        ("unmerged weight", field(4), u64::MAX),
        ("min NaN", field(6), f64::NAN.to_bits()),
        ("min above a mean", field(6), 2.5f64.to_bits()),
        ("max below min", field(7), 0.5f64.to_bits()),
        ("max infinite", field(7), f64::INFINITY.to_bits()),
        ("mean NaN", pay, f64::NAN.to_bits()),
        ("weight 0", pay + 8, 0),
        ("unsorted", pay, 8.5f64.to_bits()),
        ("slot after the centroids", pay + 16 * 9, 1),
    ];
    for (name, at, v) in cases {
        let e = forge(at, v).unwrap_err();
        assert!(matches!(e, Error::Format(_)), "{name}: {e}");
    }
    // the item count in the header must match the weights
    let mut b = good.clone();
    let items = d.header.items.to_le_bytes();
    let i = b.windows(8).position(|w| w == items).unwrap();
    b[i..i + 8].copy_from_slice(&7u64.to_le_bytes());
    reseal(&mut b);
    assert!(TDigest::from_bytes(&b).is_err());
    // truncated and lengthened payloads
    assert!(TDigest::from_bytes(&good[..good.len() - 9]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Quantiles never decrease in q, the CDF never decreases in x, and both stay within the
    /// values seen and [0, 1].
    #[test]
    fn quantile_and_cdf_are_monotone(
        values in proptest::collection::vec(-1e6f64..1e6, 1..400),
        reps in 1usize..4,
        delta in 5u64..200,
        mut qs in proptest::collection::vec(0.0f64..=1.0, 2..30),
        mut xs in proptest::collection::vec(-1.1e6f64..1.1e6, 2..30),
    ) {
        let mut td = TDigest::try_new(delta).unwrap();
        for _ in 0..reps {
            for &v in &values {
                td.insert(v).unwrap();
            }
        }
        qs.sort_by(f64::total_cmp);
        xs.sort_by(f64::total_cmp);
        let got = td.quantiles(&qs);
        for w in got.windows(2) {
            prop_assert!(w[0] <= w[1], "quantiles {:?} at {:?}", got, qs);
        }
        for &g in &got {
            prop_assert!(g >= td.min() && g <= td.max());
        }
        let cdf: Vec<f64> = xs.iter().map(|&x| td.cdf(x)).collect();
        for w in cdf.windows(2) {
            prop_assert!(w[0] <= w[1], "cdf {:?} at {:?}", cdf, xs);
        }
        for &c in &cdf {
            prop_assert!((0.0..=1.0).contains(&c));
        }
        let ranks = td.ranks(&xs, false);
        for w in ranks.windows(2) {
            prop_assert!(w[0] <= w[1]);
        }
    }
}

#[test]
fn queries_share_one_merge_until_the_next_write() {
    let mut td = TDigest::try_new(100).unwrap();
    for i in 0..1000 {
        td.insert(f64::from(i)).unwrap();
    }
    assert!(td.unmerged_nodes() > 0);
    assert_eq!(td.view_bytes(), 0);
    let before = td.clone();
    let q = td.quantile(0.5);
    let kept = td.view_bytes();
    assert!(kept > 0, "a query keeps the merged centroids");
    // later queries use them: same answers, nothing more kept, the digest itself unchanged
    assert_eq!(td.quantile(0.5).to_bits(), q.to_bits());
    assert_eq!(td.cdf(500.0), before.cdf(500.0));
    assert_eq!(td.view_bytes(), kept);
    assert!(td == before);
    assert_eq!(td.to_bytes(), before.to_bytes());
    // a write drops them, and the next query merges the new buffer
    td.insert(5000.0).unwrap();
    assert_eq!(td.view_bytes(), 0);
    assert_eq!(td.quantile(1.0), 5000.0);
    td.reset();
    assert_eq!(td.view_bytes(), 0);
}
