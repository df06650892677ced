//! `fpr-vs-bits`: the false-positive rate of the classic Bloom filter against the bits per item
//! m/n, for k = 4, 5, 7 and the optimal k.
//!
//! Reproduces Salman §2, Figure 2 — "the false positive
//! rate f as a function of the number of bits allocated for each element, that is the ratio
//! m/n, for four values of k" — and checks it against Broder & Mitzenmacher (//! Broder & Mitzenmacher) §2.1: the exact rate `f' = (1-(1-1/m)^{kn})^k`
//! ([`params::fpr_exact`]) and the asymptotic `f = (1-e^{-kn/m})^k`
//! ([`params::fpr_asymptotic`]). The measured rate comes from the library's real
//! [`BloomFilter`] built with `bits(m).hashes(k).seed(s)`: n keys are inserted, then `queries`
//! keys that were never inserted are asked, so every positive is a false positive.

use anyhow::Context;
use bloomery::{params, BloomFilter, KeyHasher};
use rayon::prelude::*;

use crate::measure::{fill_rel_sigma, rate_sigma, z_score, HashedKeys};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Align, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "fpr-vs-bits";

/// Which k a curve uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hashes {
    /// A fixed number of hash functions.
    Fixed(u32),
    /// The k minimising the exact rate for each m ([`params::optimal_k`]).
    Optimal,
}

impl Hashes {
    /// The k for n items in m bits.
    pub fn k(self, n: u64, m: u64) -> u32 {
        match self {
            Self::Fixed(k) => k,
            Self::Optimal => params::optimal_k(n, m),
        }
    }

    /// Short label: `k=4` or `k=opt`.
    pub fn label(self) -> String {
        match self {
            Self::Fixed(k) => format!("k={k}"),
            Self::Optimal => "k=opt".into(),
        }
    }
}

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Items inserted.
    pub n: u64,
    /// Keys queried that were never inserted.
    pub queries: u64,
    /// The m/n values (m = n · value).
    pub bits_per_item: Vec<u64>,
    /// The curves.
    pub hashes: Vec<Hashes>,
    /// Seed of the hasher and of the key stream.
    pub seed: u64,
}

impl Params {
    fn curves() -> Vec<Hashes> {
        vec![
            Hashes::Fixed(4),
            Hashes::Fixed(5),
            Hashes::Fixed(7),
            Hashes::Optimal,
        ]
    }

    /// Seconds in a debug build: n = 20,000, 200,000 queries, m/n = 2, 4, …, 24.
    pub fn quick(seed: u64) -> Self {
        Self {
            n: 20_000,
            queries: 200_000,
            bits_per_item: (2..=24).step_by(2).collect(),
            hashes: Self::curves(),
            seed,
        }
    }

    /// The documented size: n = 1,000,000, 10,000,000 queries, m/n = 2..=24.
    pub fn full(seed: u64) -> Self {
        Self {
            n: 1_000_000,
            queries: 10_000_000,
            bits_per_item: (2..=24).collect(),
            hashes: Self::curves(),
            seed,
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

/// One (m/n, k) point.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// m/n.
    pub bits_per_item: u64,
    /// The curve it belongs to.
    pub hashes: Hashes,
    /// Bits.
    pub m: u64,
    /// Hash functions used.
    pub k: u32,
    /// `(1-(1-1/m)^{kn})^k`.
    pub exact: f64,
    /// `(1-e^{-kn/m})^k`.
    pub asymptotic: f64,
    /// False positives among the queries.
    pub false_positives: u64,
    /// `false_positives / queries`.
    pub measured: f64,
    /// Standard deviation of the measured rate around `exact` (binomial and fill).
    pub sigma: f64,
}

impl Row {
    /// (measured − exact) / σ.
    pub fn z(&self) -> f64 {
        z_score(self.measured, self.exact, self.sigma)
    }
}

/// Build, fill and query one filter per (m/n, curve).
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
            let mut f = BloomFilter::builder()
                .bits(m)
                .hashes(k)
                .seed(p.seed)
                .try_build()
                .with_context(|| format!("classic filter m={m} k={k}"))?;
            keys.fill(&mut f);
            let fp = keys.false_positives(&f);
            let exact = params::fpr_exact(p.n, m, k);
            Ok(Row {
                bits_per_item: b,
                hashes: h,
                m,
                k,
                exact,
                asymptotic: params::fpr_asymptotic(p.n, m, k),
                false_positives: fp,
                measured: fp as f64 / p.queries as f64,
                sigma: rate_sigma(exact, p.queries, fill_rel_sigma(p.n, m, k)),
            })
        })
        .collect()
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row]) -> (String, Plot) {
    let mut t = Table::new([
        "m/n",
        "curve",
        "k",
        "exact f'",
        "asymptotic f",
        "measured",
        "false pos.",
        "measured/exact",
        "z (σ)",
    ])
    .with_align(&[Align::Right, Align::Left]);
    for r in rows {
        t.row([
            r.bits_per_item.to_string(),
            r.hashes.label(),
            r.k.to_string(),
            rate(r.exact),
            rate(r.asymptotic),
            rate(r.measured),
            int(r.false_positives),
            if r.false_positives > 0 {
                num(r.measured / r.exact, 3)
            } else {
                "-".into()
            },
            num(r.z(), 2),
        ]);
    }
    let max_z = rows.iter().map(|r| r.z().abs()).fold(0.0, f64::max);
    let at10: Vec<String> = rows
        .iter()
        .filter(|r| r.bits_per_item == 10)
        .map(|r| {
            let label = match r.hashes {
                Hashes::Optimal => format!("k=opt (k={})", r.k),
                h => h.label(),
            };
            format!(
                "{label}: exact {:.3}%, asymptotic {:.3}%, measured {:.3}%",
                r.exact * 100.0,
                r.asymptotic * 100.0,
                r.measured * 100.0
            )
        })
        .collect();
    let mut md = format!(
        "# {NAME}: false-positive rate against bits per item\n\n\
         Salman §2 (Figure 2) and Broder & Mitzenmacher §2.1. The classic `BloomFilter` built with \
         `bits(m).hashes(k).seed({seed})`, n = {n} keys inserted, {q} keys never inserted \
         queried per point. Exact `f' = (1-(1-1/m)^(kn))^k`, asymptotic `f = (1-e^(-kn/m))^k`; \
         z is (measured − exact)/σ with σ the binomial deviation of the count combined with the \
         fluctuation of the filter's fill.\n\n\
         ![{NAME}]({NAME}.svg)\n\n\
         Largest |z| over all {rows} points: {max_z:.2}.\n",
        seed = p.seed,
        n = int(p.n),
        q = int(p.queries),
        rows = rows.len(),
    );
    if !at10.is_empty() {
        md.push_str("\nAt m/n = 10 (Salman §2 quotes 1.2% for k = 4 and 0.9% for k = 5):\n\n");
        for s in at10 {
            md.push_str(&format!("- {s}\n"));
        }
    }
    md.push('\n');
    md.push_str(&t.to_markdown());

    let mut plot = Plot::new(
        format!(
            "Classic Bloom filter: false-positive rate vs m/n (n = {})",
            int(p.n)
        ),
        "bits per item m/n",
        "false-positive rate",
    )
    .log_y();
    for (c, h) in p.hashes.iter().enumerate() {
        let of = |g: fn(&Row) -> f64| -> Vec<(f64, f64)> {
            rows.iter()
                .filter(|r| r.hashes == *h)
                .map(|r| (r.bits_per_item as f64, g(r)))
                .collect()
        };
        plot.push(Series::new(
            format!("{} exact", h.label()),
            of(|r| r.exact),
            Style::Line,
            c,
        ));
        plot.push(Series::new(
            format!("{} asymptotic", h.label()),
            of(|r| r.asymptotic),
            Style::Dashed,
            c,
        ));
        plot.push(Series::new(
            format!("{} measured", h.label()),
            of(|r| r.measured),
            Style::Points,
            c,
        ));
    }
    (md, plot)
}

/// Run at the size the options ask and write `fpr-vs-bits.md` and `fpr-vs-bits.svg`.
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
    fn quick_run_matches_the_exact_formula() {
        let p = Params::quick(1);
        let rows = measure(&p).unwrap();
        assert_eq!(rows.len(), p.bits_per_item.len() * p.hashes.len());
        for r in &rows {
            // 4σ plus a 3% margin for the double-hashing model
            assert!(
                within(r.measured, r.exact, r.sigma, 4.0, 0.03),
                "m/n={} k={}: measured {} exact {} σ {}",
                r.bits_per_item,
                r.k,
                r.measured,
                r.exact,
                r.sigma
            );
            // the optimal k is never beaten by a fixed k at the same m (formula)
            let best = rows
                .iter()
                .filter(|o| o.bits_per_item == r.bits_per_item)
                .map(|o| o.exact)
                .fold(f64::INFINITY, f64::min);
            if r.hashes == Hashes::Optimal {
                assert_eq!(r.exact, best);
            }
        }
        // the rate falls with m for every fixed k
        for h in &p.hashes {
            let e: Vec<f64> = rows
                .iter()
                .filter(|r| r.hashes == *h)
                .map(|r| r.exact)
                .collect();
            assert!(e.windows(2).all(|w| w[1] < w[0]), "{h:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let (md, plot) = render(&p, &rows);
        let opts = RunOptions {
            out_dir: dir.path().join("out"),
            quick: true,
            seed: 1,
        };
        let report = write_report(&opts, NAME, md, &plot).unwrap();
        assert_eq!(report.files.len(), 2);
        assert!(report.files.iter().all(|f| f.exists()));
        assert!(report.markdown.contains("| m/n"));
    }
}
