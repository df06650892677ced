//! `set-reconciliation`: approximate set reconciliation (Byers, Considine, Mitzenmacher & Rost)
//! — peer B sends a Bloom filter of its set, peer A sends back what the filter does not hold.
//!
//! Simulates Broder & Mitzenmacher §5.2, "Approximate
//! Set Reconciliation for Content Delivery": "Peer B would like to send peer A a succinct data
//! structure so that A can start sending B items that B does not have, that is, items in
//! S_A − S_B ... B send A a Bloom filter; A then runs through its elements, checking each one
//! against the Bloom filter, and sending any element that does not lie in S_B according to the
//! filter. Because of false positives, not all elements in S_A − S_B will be sent, but most
//! will." The items are 64-bit identifiers of encoded packets, as in the paper's content
//! delivery setting, where "obtaining a large fraction of S_A − S_B rather than the entire set
//! is sufficient".
//!
//! B holds `set` identifiers; A holds the same number, of which a fraction `difference` is not
//! in S_B. B's classic [`BloomFilter`] has `bits` per element and the optimal k; it is sent
//! plain and compressed ([`bloomery::compress::compress_bits`]); the alternative is sending S_B
//! whole (8 bytes per identifier). The fraction of S_A − S_B recovered is `1 − f`, f the
//! filter's false-positive rate ([`params::fpr_exact`]). The last rows use the sparser shapes
//! [`params::compressed_shape`] picks for the same number of *transmitted* bits (Broder & Mitzenmacher §2.6).

use bloomery::compress::compress_bits;
use bloomery::{params, BloomFilter, Filter, KeyHasher};

use crate::measure::{key, rate_sigma, within};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "set-reconciliation";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Elements of each peer's set.
    pub set: u64,
    /// Fraction of S_A not in S_B.
    pub difference: f64,
    /// Filter sizes: bits per element of S_B.
    pub bits: Vec<u64>,
    /// Transmitted bits per element for the compressed shapes.
    pub compressed_budgets: Vec<f64>,
    /// Seed of the hasher and the identifiers.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: 20,000 elements, 10 % different.
    pub fn quick(seed: u64) -> Self {
        Self {
            set: 20_000,
            difference: 0.1,
            bits: vec![2, 4, 6, 8, 10, 12, 16],
            compressed_budgets: vec![4.0, 8.0],
            seed,
        }
    }

    /// The documented size: 1,000,000 elements, 10 % different.
    pub fn full(seed: u64) -> Self {
        Self {
            set: 1_000_000,
            compressed_budgets: vec![4.0, 6.0, 8.0, 12.0],
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

/// One filter shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Bits of the filter.
    pub m: u64,
    /// Hash functions.
    pub k: u32,
    /// True for a shape chosen by `compressed_shape` for a transmitted budget.
    pub compressed_shape: bool,
    /// That budget, transmitted bits per element (0 for the optimal-k rows).
    pub budget: f64,
    /// Bytes of the plain bit array.
    pub plain_bytes: u64,
    /// Bytes of the compressed bit array.
    pub compressed_bytes: u64,
    /// |S_A − S_B|.
    pub difference: u64,
    /// Elements of S_A − S_B that A sent (not matched by the filter).
    pub recovered: u64,
    /// Elements of S_A ∩ S_B that A sent (must be 0: no false negatives).
    pub wrongly_sent: u64,
    /// Formula: the fraction recovered, `1 − f`.
    pub predicted: f64,
}

impl Row {
    /// Fraction of S_A − S_B recovered.
    pub fn fraction(&self) -> f64 {
        self.recovered as f64 / self.difference.max(1) as f64
    }
}

fn run_shape(p: &Params, m: u64, k: u32, budget: f64) -> anyhow::Result<Row> {
    let hasher = KeyHasher::with_seed(p.seed);
    let mut f = BloomFilter::builder()
        .bits(m)
        .hashes(k)
        .hasher(hasher)
        .try_build()?;
    // S_B = keys 0..set; S_A = the first (1 − d)·set of them plus d·set others.
    let shared = p.set - (p.set as f64 * p.difference).round() as u64;
    for i in 0..p.set {
        f.insert(&key(p.seed, i));
    }
    let mut recovered = 0;
    let mut wrongly_sent = 0;
    for i in 0..shared {
        wrongly_sent += u64::from(!f.contains(&key(p.seed, i)));
    }
    for i in 0..p.set - shared {
        recovered += u64::from(!f.contains(&key(p.seed, (1 << 40) + i)));
    }
    Ok(Row {
        m,
        k,
        compressed_shape: budget > 0.0,
        budget,
        plain_bytes: m.div_ceil(8),
        compressed_bytes: compress_bits(f.as_words(), m)?.len() as u64,
        difference: p.set - shared,
        recovered,
        wrongly_sent,
        predicted: 1.0 - params::fpr_exact(p.set, m, k),
    })
}

/// Every shape.
pub fn measure(p: &Params) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(p.set > 0 && p.difference > 0.0 && p.difference < 1.0);
    let mut rows = Vec::new();
    for &b in &p.bits {
        let m = b * p.set;
        rows.push(run_shape(p, m, params::optimal_k(p.set, m), 0.0)?);
    }
    for &z in &p.compressed_budgets {
        let s = params::compressed_shape(p.set, z, 64.0)?;
        rows.push(run_shape(p, s.m, s.k, z)?);
    }
    Ok(rows)
}

/// σ of the recovered fraction (binomial over the difference).
pub fn sigma(r: &Row) -> f64 {
    rate_sigma(1.0 - r.predicted, r.difference, 0.0)
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row]) -> (String, Plot) {
    let whole = p.set * 8;
    let mut t = Table::new([
        "shape",
        "m/n",
        "k",
        "plain filter B",
        "compressed B",
        "S_B whole B",
        "sent / whole",
        "recovered (1−f, formula)",
        "recovered (measured)",
        "shared elements sent",
    ]);
    for r in rows {
        t.row([
            if r.compressed_shape {
                format!("compressed_shape, z/n ≤ {}", r.budget)
            } else {
                "optimal k".into()
            },
            num(r.m as f64 / p.set as f64, 1),
            r.k.to_string(),
            int(r.plain_bytes),
            int(r.compressed_bytes),
            int(whole),
            num(
                r.compressed_bytes.min(r.plain_bytes) as f64 / whole as f64,
                4,
            ),
            rate(r.predicted),
            rate(r.fraction()),
            int(r.wrongly_sent),
        ]);
    }
    let mut md = format!(
        "# {NAME}: approximate set reconciliation with a Bloom filter\n\n\
         Broder & Mitzenmacher §5.2 (Byers, Considine, Mitzenmacher & Rost). Peers A and B hold {n} 64-bit \
         identifiers each; {d:.0} % of A's are not in S_B (|S_A − S_B| = {diff}). B sends a \
         classic `BloomFilter` of S_B (seed {seed}); A sends every element the filter does not \
         hold. Recovered: the fraction of S_A − S_B that A sends, `1 − f` with f the exact \
         false-positive rate. Sending S_B whole costs 8 bytes per element. The last rows use \
         the larger, sparser filters `params::compressed_shape` picks for a budget of z \
         transmitted bits per element, m/n at most 64 (Broder & Mitzenmacher §2.6): for the same bytes on the \
         wire they recover more.\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        n = int(p.set),
        d = p.difference * 100.0,
        diff = int(rows.first().map_or(0, |r| r.difference)),
        seed = p.seed,
    );
    md.push_str(&t.to_markdown());
    let mut plot = Plot::new(
        format!(
            "Set reconciliation: S_A − S_B missed vs bytes sent (n = {})",
            p.set
        ),
        "bytes sent per element of S_B",
        "fraction of S_A − S_B not recovered",
    )
    .log_y();
    let pts = |shape: bool, g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.compressed_shape == shape)
            .map(|r| (r.compressed_bytes as f64 / p.set as f64, g(r).max(1e-7)))
            .collect()
    };
    plot.push(Series::new(
        "optimal k, formula",
        pts(false, &|r| 1.0 - r.predicted),
        Style::Line,
        0,
    ));
    plot.push(Series::new(
        "optimal k, measured",
        pts(false, &|r| 1.0 - r.fraction()),
        Style::Points,
        0,
    ));
    plot.push(Series::new(
        "compressed_shape, measured",
        pts(true, &|r| 1.0 - r.fraction()),
        Style::LinePoints,
        1,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `set-reconciliation.md` and `.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let rows = measure(&p)?;
    let (md, plot) = render(&p, &rows);
    write_report(opts, NAME, md, &plot)
}

/// True when a row's measured fraction is within 5σ (plus 2 % relative) of the formula.
pub fn agrees(r: &Row) -> bool {
    within(1.0 - r.fraction(), 1.0 - r.predicted, sigma(r), 5.0, 0.02)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_recovers_what_the_formula_says() {
        let p = Params::quick(1);
        let rows = measure(&p).unwrap();
        assert_eq!(rows.len(), p.bits.len() + p.compressed_budgets.len());
        for r in &rows {
            assert_eq!(r.wrongly_sent, 0, "no false negatives");
            assert!(agrees(r), "{r:?}");
        }
        // more bits, more recovered
        let plain: Vec<&Row> = rows.iter().filter(|r| !r.compressed_shape).collect();
        assert!(plain.windows(2).all(|w| w[1].recovered >= w[0].recovered));
        // a compressed shape sent in about as many bytes as an optimal filter of that many
        // bits per element recovers more (Table 1's effect)
        assert_eq!(p.compressed_budgets[1], 8.0);
        let z8 = &rows[p.bits.len() + 1];
        let b8 = rows
            .iter()
            .find(|r| !r.compressed_shape && r.m == 8 * p.set)
            .unwrap();
        assert!(z8.compressed_bytes <= b8.plain_bytes + 64, "{z8:?} {b8:?}");
        assert!(z8.predicted > b8.predicted, "{z8:?} {b8:?}");
        let dir = tempfile::tempdir().unwrap();
        let (md, plot) = render(&p, &rows);
        let opts = RunOptions {
            out_dir: dir.path().join("out"),
            quick: true,
            seed: 1,
        };
        let report = write_report(&opts, NAME, md, &plot).unwrap();
        assert!(report.files.iter().all(|f| f.exists()));
    }
}
