//! `partitioned-vs-classic`: the partitioned Bloom filter against the classic one at equal
//! bits m and hash count k.
//!
//! Broder & Mitzenmacher §2.1: splitting the m bits
//! into k disjoint slices of m/k bits, hash i setting one bit in slice i, gives the rate
//! `(1-(1-k/m)^n)^k` ([`params::fpr_partitioned`]); "asymptotically, the performance is the
//! same", and since `(1-1/m)^k ≥ 1-k/m` the partitioned rate is never lower than the classic
//! one ([`params::fpr_exact`]). Both real structures — [`BloomFilter`] and
//! [`PartitionedBloomFilter`], built with `bits(m).hashes(k).seed(s)` — are filled with the same
//! keys and asked the same never-inserted keys.

use anyhow::Context;
use bloomery::{params, BloomFilter, KeyHasher, PartitionedBloomFilter, Stats};
use rayon::prelude::*;

use super::fpr_vs_bits::Hashes;
use crate::measure::{fill_rel_sigma, rate_sigma, z_score, HashedKeys};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Align, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "partitioned-vs-classic";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Items inserted.
    pub n: u64,
    /// Keys queried that were never inserted.
    pub queries: u64,
    /// The m/n values.
    pub bits_per_item: Vec<u64>,
    /// The curves.
    pub hashes: Vec<Hashes>,
    /// Item counts of the formula-only table showing where the two differ (small sets).
    pub small_n: Vec<u64>,
    /// Seed of the hashers and of the key stream.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: n = 20,000, 200,000 queries, m/n = 2, 4, …, 24.
    pub fn quick(seed: u64) -> Self {
        Self {
            n: 20_000,
            queries: 200_000,
            bits_per_item: (2..=24).step_by(2).collect(),
            hashes: vec![Hashes::Fixed(4), Hashes::Optimal],
            small_n: vec![4, 16, 64, 256, 1024, 1 << 20],
            seed,
        }
    }

    /// The documented size: n = 1,000,000, 10,000,000 queries, m/n = 2..=24.
    pub fn full(seed: u64) -> Self {
        Self {
            n: 1_000_000,
            queries: 10_000_000,
            bits_per_item: (2..=24).collect(),
            ..Self::quick(seed)
        }
    }

    /// Quick or full, as the options ask.
    pub fn for_options(opts: &RunOptions) -> Self {
        if opts.quick {
            Self::quick(opts.seed)
        } else {
            Self::full(opts.seed)
        }
    }
}

/// One (m/n, k) point, both structures.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// m/n.
    pub bits_per_item: u64,
    /// The curve.
    pub hashes: Hashes,
    /// Bits given to both (the partitioned filter uses `k·⌊m/k⌋` of them).
    pub m: u64,
    /// Hash functions.
    pub k: u32,
    /// Classic exact rate.
    pub classic_formula: f64,
    /// Partitioned rate.
    pub partitioned_formula: f64,
    /// Classic measured rate.
    pub classic_measured: f64,
    /// Partitioned measured rate.
    pub partitioned_measured: f64,
    /// σ of the classic measurement.
    pub classic_sigma: f64,
    /// σ of the partitioned measurement.
    pub partitioned_sigma: f64,
}

/// Build, fill and query both structures per (m/n, curve).
pub fn measure(p: &Params) -> anyhow::Result<Vec<Row>> {
    let points: Vec<(u64, Hashes)> = p
        .bits_per_item
        .iter()
        .flat_map(|&b| p.hashes.iter().map(move |&h| (b, h)))
        .collect();
    let keys = HashedKeys::new(KeyHasher::with_seed(p.seed), p.seed, p.n, p.queries);
    points
        .par_iter()
        .map(|&(b, h)| {
            let m = p.n * b;
            let k = h.k(p.n, m);
            let mut c = BloomFilter::builder()
                .bits(m)
                .hashes(k)
                .seed(p.seed)
                .try_build()
                .with_context(|| format!("classic filter m={m} k={k}"))?;
            let mut pf = PartitionedBloomFilter::builder()
                .bits(m)
                .hashes(k)
                .seed(p.seed)
                .try_build()
                .with_context(|| format!("partitioned filter m={m} k={k}"))?;
            keys.fill(&mut c);
            keys.fill(&mut pf);
            let q = p.queries as f64;
            let cf = params::fpr_exact(p.n, m, k);
            let pff = params::fpr_partitioned(p.n, m, k);
            let slice = pf.slice_bits();
            // k independent slices, each n throws into `slice` bits
            let p_rel = (k as f64).sqrt() * fill_rel_sigma(p.n, slice, 1);
            Ok(Row {
                bits_per_item: b,
                hashes: h,
                m,
                k,
                classic_formula: cf,
                partitioned_formula: pff,
                classic_measured: keys.false_positives(&c) as f64 / q,
                partitioned_measured: keys.false_positives(&pf) as f64 / q,
                classic_sigma: rate_sigma(cf, p.queries, fill_rel_sigma(p.n, c.bit_len(), k)),
                partitioned_sigma: rate_sigma(pff, p.queries, p_rel),
            })
        })
        .collect()
}

/// Formula-only: partitioned/classic at m/n = 8 and the optimal k, for small n, where the
/// difference shows.
pub fn small_sets(p: &Params) -> Vec<(u64, u32, f64, f64)> {
    p.small_n
        .iter()
        .map(|&n| {
            let m = 8 * n;
            let k = params::optimal_k(n, m);
            (
                n,
                k,
                params::fpr_exact(n, m, k),
                params::fpr_partitioned(n, m, k),
            )
        })
        .collect()
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row]) -> (String, Plot) {
    let mut t = Table::new([
        "m/n",
        "curve",
        "k",
        "classic f'",
        "partitioned f",
        "partitioned/classic",
        "classic measured",
        "partitioned measured",
        "z classic",
        "z partitioned",
    ])
    .with_align(&[Align::Right, Align::Left]);
    for r in rows {
        t.row([
            r.bits_per_item.to_string(),
            r.hashes.label(),
            r.k.to_string(),
            rate(r.classic_formula),
            rate(r.partitioned_formula),
            num(r.partitioned_formula / r.classic_formula, 6),
            rate(r.classic_measured),
            rate(r.partitioned_measured),
            num(
                z_score(r.classic_measured, r.classic_formula, r.classic_sigma),
                2,
            ),
            num(
                z_score(
                    r.partitioned_measured,
                    r.partitioned_formula,
                    r.partitioned_sigma,
                ),
                2,
            ),
        ]);
    }
    let mut small = Table::new([
        "n",
        "m",
        "k",
        "classic f'",
        "partitioned f",
        "partitioned/classic",
    ])
    .with_align(&[Align::Right]);
    for (n, k, c, pp) in small_sets(p) {
        small.row([
            int(n),
            int(8 * n),
            k.to_string(),
            rate(c),
            rate(pp),
            num(pp / c, 4),
        ]);
    }
    let worst = rows
        .iter()
        .map(|r| r.partitioned_formula / r.classic_formula)
        .fold(1.0, f64::max);
    let mean_ratio = |g: fn(&Row) -> f64| {
        let v: Vec<f64> = rows.iter().map(g).filter(|x| x.is_finite()).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let measured_ratio = mean_ratio(|r| {
        if r.classic_measured > 0.0 {
            r.partitioned_measured / r.classic_measured
        } else {
            f64::NAN
        }
    });
    let md = format!(
        "# {NAME}: partitioned against classic at equal m and k\n\n\
         Broder & Mitzenmacher §2.1. `BloomFilter` and `PartitionedBloomFilter` built with \
         `bits(m).hashes(k).seed({seed})`, n = {n} keys inserted, {q} never-inserted keys \
         queried per point. Classic `f' = (1-(1-1/m)^(kn))^k`, partitioned \
         `f = (1-(1-1/⌊m/k⌋)^n)^k`; z is (measured − formula)/σ.\n\n\
         ![{NAME}]({NAME}.svg)\n\n\
         At this n the formulas differ by at most a factor {worst:.6} (partitioned/classic), \
         and the measured rates by a mean factor {measured_ratio:.3} — the two are \
         indistinguishable for large filters, as Broder & Mitzenmacher §2.1 says. The difference only shows for \
         tiny filters (formula, m/n = 8, optimal k):\n\n{small}\n{table}",
        seed = p.seed,
        n = int(p.n),
        q = int(p.queries),
        small = small.to_markdown(),
        table = t.to_markdown(),
    );
    let mut plot = Plot::new(
        format!(
            "Partitioned vs classic: false-positive rate vs m/n (n = {})",
            int(p.n)
        ),
        "bits per item m/n",
        "false-positive rate",
    )
    .log_y();
    for (i, h) in p.hashes.iter().enumerate() {
        let of = |g: fn(&Row) -> f64| -> Vec<(f64, f64)> {
            rows.iter()
                .filter(|r| r.hashes == *h)
                .map(|r| (r.bits_per_item as f64, g(r)))
                .collect()
        };
        let (cc, pc) = (2 * i, 2 * i + 1);
        let l = h.label();
        plot.push(Series::new(
            format!("{l} classic formula"),
            of(|r| r.classic_formula),
            Style::Line,
            cc,
        ));
        plot.push(Series::new(
            format!("{l} classic measured"),
            of(|r| r.classic_measured),
            Style::Points,
            cc,
        ));
        plot.push(Series::new(
            format!("{l} partitioned formula"),
            of(|r| r.partitioned_formula),
            Style::Dashed,
            pc,
        ));
        plot.push(Series::new(
            format!("{l} partitioned measured"),
            of(|r| r.partitioned_measured),
            Style::Points,
            pc,
        ));
    }
    (md, plot)
}

/// Run at the size the options ask and write `partitioned-vs-classic.{md,svg}`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let rows = measure(&p)?;
    let (md, plot) = render(&p, &rows);
    write_report(opts, NAME, md, &plot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::within;

    #[test]
    fn quick_run_partitioned_never_below_classic_and_both_match_their_formulas() {
        let p = Params::quick(2);
        let rows = measure(&p).unwrap();
        assert_eq!(rows.len(), p.bits_per_item.len() * p.hashes.len());
        for r in &rows {
            assert!(
                r.partitioned_formula >= r.classic_formula,
                "m/n={} k={}",
                r.bits_per_item,
                r.k
            );
            assert!(
                within(
                    r.classic_measured,
                    r.classic_formula,
                    r.classic_sigma,
                    4.0,
                    0.03
                ),
                "classic m/n={} k={}: {} vs {}",
                r.bits_per_item,
                r.k,
                r.classic_measured,
                r.classic_formula
            );
            assert!(
                within(
                    r.partitioned_measured,
                    r.partitioned_formula,
                    r.partitioned_sigma,
                    4.0,
                    0.03
                ),
                "partitioned m/n={} k={}: {} vs {}",
                r.bits_per_item,
                r.k,
                r.partitioned_measured,
                r.partitioned_formula
            );
        }
        // for tiny sets the partitioned filter is visibly worse, for large ones not
        let small = small_sets(&p);
        let (first, last) = (small[0], small[small.len() - 1]);
        assert!(first.3 / first.2 > 1.05, "{first:?}");
        assert!(last.3 / last.2 < 1.001, "{last:?}");
        let (md, _plot) = render(&p, &rows);
        assert!(md.contains("partitioned/classic"));
    }
}
