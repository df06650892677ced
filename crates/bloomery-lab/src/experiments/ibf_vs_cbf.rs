//! `ibf-vs-cbf`: the Iterative Bloom Filter against the counting and the plain Bloom filter at
//! equal memory (Matsumoto, Hazeyama & Kadobayashi Fig. 5 and 6), and the IBF's count estimate (Matsumoto, Hazeyama & Kadobayashi eq. 9).
//!
//! Reproduces Matsumoto, Hazeyama & Kadobayashi (in
//! Japanese; see docs/PAPERS.md) §4.2–4.3. Every structure gets the same memory
//! of M bits and k hashes:
//!
//! - [`BloomFilter`]: M bits, holds the αn distinct inputs (it cannot count);
//!   rate `(1-(1-1/M)^(k·αn))^k`.
//! - [`IterativeBloomFilter`]: M bits; each repeat sets one more bit, rate by Matsumoto, Hazeyama & Kadobayashi eq. 10,
//!   `(1 - exp(-(αnk + (1-α)n)/M))^k` ([`params::ibf_fpr`]), whatever the skew.
//! - [`CountingBloomFilter`]: counters of c bits sized for the largest count of the skew
//!   case (Matsumoto, Hazeyama & Kadobayashi Table 5, [`params::max_count_for_skew`], [`params::counter_bits_for`]), so only
//!   M/c counters fit (Matsumoto, Hazeyama & Kadobayashi §4.3.2): rate `(1-(1-c/M)^(k·αn))^k`.
//!
//! Inputs: n values with distinctness rate α (αn distinct values, `(1-α)n` repeats) in a
//! random order, the repeats spread per Matsumoto, Hazeyama & Kadobayashi Table 4: case 1 (small skew) evenly over the
//! distinct values, case 2 (medium) half of them on one value and the rest evenly, case 3
//! (large) all on one value. Fig. 5: rate against α at fixed n; Fig. 6: rate against n at
//! α = 0.5. The false-positive rate is measured with keys never inserted.
//!
//! Count estimate: a Zipf stream into one IBF; for every distinct value, the observed count
//! `j'` (the run of ones, never below the truth) and eq. 9's estimate `(1 - p/2)·j'` against
//! the true count, grouped by true count.
//!
//! Two effects beyond the paper, both measured here: eq. 10 underestimates the IBF's rate as
//! repeats grow, because a repeat always sets a *zero* bit (repeat bits never collide, so the
//! filter holds more ones than random throws would set); and with one heavily repeated value
//! (cases 2, 3) the IBF measures above the rate of its own ones, because that value's repeat
//! bits are one long enhanced-double-hashing run, a structured set that queries' own
//! double-hashing positions hit more often than a random one. An IBF repeat walks its key's
//! run, so one value repeated r times costs r²/2 probes (Matsumoto, Hazeyama & Kadobayashi Table 3: insert O(k + C_x)).

use anyhow::Context;
use bloomery::params::{self, Skew};
use bloomery::Hashed;
use bloomery::{
    BloomFilter, Count, CountingBloomFilter, Filter, IterativeBloomFilter, KeyHasher, Stats,
};
use rayon::prelude::*;

use crate::measure::{fill_rel_sigma, key, rate_sigma, Rng};
use crate::pcap::Zipf;
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "ibf-vs-cbf";

/// The three skew cases of Matsumoto, Hazeyama & Kadobayashi Table 4.
pub const SKEWS: [Skew; 3] = [Skew::Small, Skew::Medium, Skew::Large];

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Memory of every structure, in bits.
    pub memory_bits: u64,
    /// Hash functions of every structure.
    pub k: u32,
    /// Inputs for the rate-against-α sweep (Fig. 5).
    pub n: u64,
    /// Distinctness rates of Fig. 5.
    pub alphas: Vec<f64>,
    /// Inputs of Fig. 6 (at α = 0.5).
    pub ns: Vec<u64>,
    /// Queries (never inserted) per filter.
    pub queries: u64,
    /// Count estimate: inputs, distinct values they are drawn from, Zipf exponent.
    pub count_inputs: u64,
    /// Values the count stream draws from.
    pub count_values: u64,
    /// Zipf exponent of the count stream.
    pub count_zipf: f64,
    /// Seed of the hashers, streams and queries.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: M = 2¹⁵ bits, n = 4,000, 40,000 queries per filter.
    pub fn quick(seed: u64) -> Self {
        Self {
            memory_bits: 1 << 15,
            k: 4,
            n: 4_000,
            alphas: vec![0.05, 0.2, 0.5, 0.8, 1.0],
            ns: vec![1_000, 2_000, 4_000, 8_000],
            queries: 40_000,
            count_inputs: 4_000,
            count_values: 2_000,
            count_zipf: 1.0,
            seed,
        }
    }

    /// The documented size: M = 2²⁰ bits (128 KiB), n = 125,000 (8.4 bits per input), 2·10⁶
    /// queries per filter. (An IBF repeat walks its key's run, so one value repeated r times
    /// costs r²/2 steps: the large-skew case is quadratic in n.)
    pub fn full(seed: u64) -> Self {
        Self {
            memory_bits: 1 << 20,
            n: 125_000,
            alphas: vec![
                0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0,
            ],
            ns: vec![
                15_625, 31_250, 62_500, 125_000, 187_500, 250_000, 375_000, 500_000,
            ],
            queries: 2_000_000,
            count_inputs: 125_000,
            count_values: 62_500,
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

/// A skew case's number (1, 2, 3) and name.
pub fn case_name(s: Skew) -> &'static str {
    match s {
        Skew::Small => "case 1 (small skew)",
        Skew::Medium => "case 2 (medium skew)",
        Skew::Large => "case 3 (large skew)",
    }
}

/// The input stream: value indices (0..distinct) in random order, and the number of distinct
/// values. Each value occurs once, plus its repeats per the skew case.
pub fn stream(n: u64, alpha: f64, skew: Skew, seed: u64) -> (Vec<u32>, u64) {
    let d = ((alpha * n as f64).round() as u64).clamp(1, n.max(1));
    let r = n.saturating_sub(d);
    let mut v: Vec<u32> = (0..d as u32).collect();
    v.reserve(r as usize);
    let half = r.div_ceil(2);
    for i in 0..r {
        let x = match skew {
            Skew::Small => i % d,
            Skew::Medium if i < half || d == 1 => 0,
            Skew::Medium => 1 + (i - half) % (d - 1),
            Skew::Large => 0,
        };
        v.push(x as u32);
    }
    let mut rng = Rng::new(seed ^ 0x1BF);
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    (v, d)
}

/// One structure's measurement at one point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// False positives among the queries.
    pub fp: u64,
    /// The formula's rate.
    pub model: f64,
    /// σ of the measured rate around the model.
    pub sigma: f64,
    /// The rate the filter's actual contents give: `(ones/m)^k` (nonzero counters for the CBF).
    pub contents: f64,
}

impl Measured {
    /// The measured rate.
    pub fn rate(&self, queries: u64) -> f64 {
        self.fp as f64 / queries as f64
    }
}

/// One point (α, n): the three structures, IBF and CBF once per skew case.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Distinctness rate.
    pub alpha: f64,
    /// Inputs.
    pub n: u64,
    /// Distinct inputs.
    pub distinct: u64,
    /// The plain filter.
    pub bf: Measured,
    /// The IBF, per skew case.
    pub ibf: [Measured; 3],
    /// The CBF, per skew case.
    pub cbf: [Measured; 3],
    /// The CBF's counter bits per case (Matsumoto, Hazeyama & Kadobayashi Table 5).
    pub cbf_bits: [u32; 3],
    /// Saturated CBF counters per skew case. Table 5 sizes a counter for the largest count of
    /// one value, but a counter holds the sum of every value hashed to it, so the small-skew
    /// case (every value at the maximum) saturates shared counters.
    pub cbf_saturated: [u64; 3],
    /// Inserted values with a count or membership below the truth (must be 0).
    pub false_negatives: u64,
}

/// Measure one point.
pub fn point(p: &Params, n: u64, alpha: f64) -> anyhow::Result<Point> {
    let hasher = KeyHasher::with_seed(p.seed);
    let salt = p.seed ^ n.rotate_left(17) ^ alpha.to_bits();
    let q: Vec<Hashed> = (0..p.queries)
        .into_par_iter()
        .map(|i| hasher.hash(&key(salt, n + i)))
        .collect();
    let fps = |f: &(dyn Fn(Hashed) -> bool + Sync)| -> u64 {
        q.par_chunks(1 << 14)
            .map(|c| c.iter().filter(|&&h| f(h)).count() as u64)
            .sum()
    };
    let m = p.memory_bits;
    let k = p.k;
    let mut ibf = [None; 3];
    let mut cbf = [None; 3];
    let mut cbf_bits = [0; 3];
    let mut saturated = [0; 3];
    let mut false_negatives = 0;
    let mut bf_out = None;
    let mut distinct = 0;
    for (s_i, &skew) in SKEWS.iter().enumerate() {
        let (values, d) = stream(n, alpha, skew, salt);
        distinct = d;
        let hashed: Vec<Hashed> = (0..d)
            .into_par_iter()
            .map(|v| hasher.hash(&key(salt, v)))
            .collect();
        let mut counts = vec![0u64; d as usize];
        for &v in &values {
            counts[v as usize] += 1;
        }
        let max_count = counts.iter().copied().max().unwrap_or(1);
        // Matsumoto, Hazeyama & Kadobayashi Table 5: the counters must hold the largest count of the case
        let c = params::counter_bits_for(params::max_count_for_skew(n, alpha, skew).max(max_count));
        anyhow::ensure!(c <= 32, "counter of {c} bits");
        cbf_bits[s_i] = c;
        let mut cb = CountingBloomFilter::builder()
            .counters((m / u64::from(c)).max(1))
            .hashes(k)
            .counter_width(c)
            .seed(p.seed)
            .try_build()
            .with_context(|| format!("CBF c={c}"))?;
        let mut ib = IterativeBloomFilter::builder()
            .bits(m)
            .hashes(k)
            .seed(p.seed)
            .try_build()?;
        anyhow::ensure!(cb.hasher() == &hasher && ib.hasher() == &hasher);
        for &v in &values {
            cb.insert_hashed(hashed[v as usize]);
            ib.insert_hashed(hashed[v as usize]);
        }
        saturated[s_i] = cb.saturated_counters();
        false_negatives += hashed
            .par_iter()
            .zip(counts.par_iter())
            .filter(|(&h, &t)| cb.count_hashed(h) < t || ib.count_hashed(h) < t)
            .count() as u64;
        let cm = cb.counter_len();
        cbf[s_i] = Some(Measured {
            fp: fps(&|h| cb.contains_hashed(h)),
            model: params::fpr_exact(d, cm, k),
            sigma: 0.0,
            contents: (cb.counters().count_nonzero() as f64 / cm as f64).powi(k as i32),
        });
        // the IBF's bits: k per distinct input, one per repeat (eq. 10)
        let throws = (params::ibf_bits_set(n, k, d as f64 / n as f64) / k as f64).round() as u64;
        let ibf_model = params::ibf_fpr(n, m, k, d as f64 / n as f64);
        ibf[s_i] = Some(Measured {
            fp: fps(&|h| ib.contains_hashed(h)),
            model: ibf_model,
            sigma: rate_sigma(ibf_model, p.queries, fill_rel_sigma(throws, m, k)),
            contents: (ib.count_ones() as f64 / m as f64).powi(k as i32),
        });
        if let Some(c) = cbf[s_i].as_mut() {
            c.sigma = rate_sigma(c.model, p.queries, fill_rel_sigma(d, cm, k));
        }
        if bf_out.is_none() {
            let mut bf = BloomFilter::builder()
                .bits(m)
                .hashes(k)
                .seed(p.seed)
                .try_build()?;
            for &h in &hashed {
                bf.insert_hashed(h);
            }
            false_negatives += hashed.iter().filter(|&&h| !bf.contains_hashed(h)).count() as u64;
            let model = params::fpr_exact(d, m, k);
            bf_out = Some(Measured {
                fp: fps(&|h| bf.contains_hashed(h)),
                model,
                sigma: rate_sigma(model, p.queries, fill_rel_sigma(d, m, k)),
                contents: (bf.count_ones() as f64 / m as f64).powi(k as i32),
            });
            debug_assert_eq!(bf.bit_len(), m);
        }
    }
    let unwrap3 = |a: [Option<Measured>; 3]| a.map(|x| x.expect("every case measured"));
    Ok(Point {
        alpha,
        n,
        distinct,
        bf: bf_out.context("no case")?,
        ibf: unwrap3(ibf),
        cbf: unwrap3(cbf),
        cbf_bits,
        cbf_saturated: saturated,
        false_negatives,
    })
}

/// One true-count group of the count-estimate part.
#[derive(Debug, Clone, PartialEq)]
pub struct CountRow {
    /// Smallest true count in the group.
    pub lo: u64,
    /// Largest true count in the group.
    pub hi: u64,
    /// Values in the group.
    pub values: u64,
    /// Mean true count.
    pub truth: f64,
    /// Mean observed count j'.
    pub observed: f64,
    /// Mean eq. 9 estimate.
    pub estimate: f64,
    /// Mean |j' - c| / c.
    pub observed_rel_err: f64,
    /// Mean |E - c| / c.
    pub estimate_rel_err: f64,
    /// Values whose observed count is below the truth (must be 0).
    pub below: u64,
}

/// The count-estimate part's summary.
#[derive(Debug, Clone, PartialEq)]
pub struct CountOutcome {
    /// Groups by true count (1, 2, 3–4, 5–8, …).
    pub rows: Vec<CountRow>,
    /// Distinctness rate the filter tracked.
    pub alpha_tracked: f64,
    /// True distinctness rate.
    pub alpha_true: f64,
    /// Collision probability p of eq. 9.
    pub p_collision: f64,
}

/// The count-estimate part: a Zipf stream into one IBF of the same memory.
pub fn count_estimate(p: &Params) -> anyhow::Result<CountOutcome> {
    let mut f = IterativeBloomFilter::builder()
        .bits(p.memory_bits)
        .hashes(p.k)
        .seed(p.seed)
        .try_build()?;
    let hasher = *f.hasher();
    let zipf = Zipf::new(p.count_values, p.count_zipf);
    let mut rng = Rng::new(p.seed ^ 0xC0);
    let salt = p.seed ^ 0xC0C0;
    let hashed: Vec<Hashed> = (0..p.count_values)
        .into_par_iter()
        .map(|v| hasher.hash(&key(salt, v)))
        .collect();
    let mut truth = vec![0u64; p.count_values as usize];
    for _ in 0..p.count_inputs {
        let v = zipf.sample(&mut rng) as usize;
        truth[v] += 1;
        f.insert_hashed(hashed[v]);
    }
    let seen: Vec<(u64, u64, f64)> = truth
        .par_iter()
        .zip(hashed.par_iter())
        .filter(|(&t, _)| t > 0)
        .map(|(&t, &h)| (t, f.count_hashed(h), f.estimate_hashed(h)))
        .collect();
    let distinct = seen.len() as u64;
    let mut rows = Vec::new();
    let (mut lo, mut hi) = (1u64, 1u64);
    let top = seen.iter().map(|x| x.0).max().unwrap_or(1);
    while lo <= top {
        let g: Vec<&(u64, u64, f64)> = seen.iter().filter(|x| (lo..=hi).contains(&x.0)).collect();
        if !g.is_empty() {
            let c = g.len() as f64;
            let mean =
                |fx: &dyn Fn(&(u64, u64, f64)) -> f64| g.iter().map(|x| fx(x)).sum::<f64>() / c;
            rows.push(CountRow {
                lo,
                hi,
                values: g.len() as u64,
                truth: mean(&|x| x.0 as f64),
                observed: mean(&|x| x.1 as f64),
                estimate: mean(&|x| x.2),
                observed_rel_err: mean(&|x| (x.1 as f64 - x.0 as f64).abs() / x.0 as f64),
                estimate_rel_err: mean(&|x| (x.2 - x.0 as f64).abs() / x.0 as f64),
                below: g.iter().filter(|x| x.1 < x.0).count() as u64,
            });
        }
        lo = hi + 1;
        hi *= 2;
    }
    let alpha_true = distinct as f64 / p.count_inputs as f64;
    Ok(CountOutcome {
        rows,
        alpha_tracked: f.distinctness(),
        alpha_true,
        p_collision: params::ibf_collision_probability(
            p.count_inputs,
            p.memory_bits,
            p.k,
            f.distinctness(),
        ),
    })
}

/// Everything the experiment measures.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Fig. 5: rate against α at n.
    pub by_alpha: Vec<Point>,
    /// Fig. 6: rate against n at α = 0.5.
    pub by_n: Vec<Point>,
    /// The count estimate.
    pub counts: CountOutcome,
}

/// Run every part.
pub fn measure(p: &Params) -> anyhow::Result<Outcome> {
    anyhow::ensure!(p.memory_bits >= 64 && p.k >= 1 && p.queries >= 1);
    let by_alpha = p
        .alphas
        .iter()
        .map(|&a| point(p, p.n, a))
        .collect::<anyhow::Result<_>>()?;
    let by_n =
        p.ns.iter()
            .map(|&n| point(p, n, 0.5))
            .collect::<anyhow::Result<_>>()?;
    Ok(Outcome {
        by_alpha,
        by_n,
        counts: count_estimate(p)?,
    })
}

fn point_table(p: &Params, pts: &[Point]) -> Table {
    let mut t = Table::new([
        "α",
        "n",
        "distinct",
        "BF (formula)",
        "BF",
        "IBF eq. 10",
        "IBF (ones/M)^k, case 1/2/3",
        "IBF case 1",
        "IBF case 2",
        "IBF case 3",
        "CBF c bits (1/2/3)",
        "CBF case 1 (formula)",
        "CBF case 1",
        "CBF case 2 (formula)",
        "CBF case 2",
        "CBF case 3 (formula)",
        "CBF case 3",
        "CBF saturated (1/2/3)",
    ]);
    let q = p.queries;
    for x in pts {
        t.row([
            num(x.alpha, 2),
            int(x.n),
            int(x.distinct),
            rate(x.bf.model),
            rate(x.bf.rate(q)),
            rate(x.ibf[0].model),
            format!(
                "{}/{}/{}",
                rate(x.ibf[0].contents),
                rate(x.ibf[1].contents),
                rate(x.ibf[2].contents)
            ),
            rate(x.ibf[0].rate(q)),
            rate(x.ibf[1].rate(q)),
            rate(x.ibf[2].rate(q)),
            format!("{}/{}/{}", x.cbf_bits[0], x.cbf_bits[1], x.cbf_bits[2]),
            rate(x.cbf[0].model),
            rate(x.cbf[0].rate(q)),
            rate(x.cbf[1].model),
            rate(x.cbf[1].rate(q)),
            rate(x.cbf[2].model),
            rate(x.cbf[2].rate(q)),
            format!(
                "{}/{}/{}",
                int(x.cbf_saturated[0]),
                int(x.cbf_saturated[1]),
                int(x.cbf_saturated[2])
            ),
        ]);
    }
    t
}

/// Palette colours of the three IBF cases: distinct from each other and from the CBF cases
/// (2, 3, 4) and the plain filter (0); case 1 shares the red of the IBF formula.
const IBF_CASE_COLORS: [usize; 3] = [1, 5, 6];

fn fpr_plot(
    title: String,
    x_label: &str,
    pts: &[Point],
    x: impl Fn(&Point) -> f64,
    q: u64,
) -> Plot {
    let mut plot = Plot::new(title, x_label, "false-positive rate").log_y();
    let of = |g: &dyn Fn(&Point) -> f64| -> Vec<(f64, f64)> {
        pts.iter()
            .map(|p| (x(p), g(p)))
            .filter(|&(_, y)| y > 0.0)
            .collect()
    };
    plot.push(Series::new(
        "BF: formula",
        of(&|p| p.bf.model),
        Style::Line,
        0,
    ));
    plot.push(Series::new("BF", of(&|p| p.bf.rate(q)), Style::Points, 0));
    plot.push(Series::new(
        "IBF: eq. 10",
        of(&|p| p.ibf[0].model),
        Style::Line,
        1,
    ));
    // one colour per IBF case (the CBF cases take 2, 3 and 4)
    for (i, s) in SKEWS.iter().enumerate() {
        plot.push(Series::new(
            format!("IBF, {}", case_name(*s)),
            of(&|p| p.ibf[i].rate(q)),
            Style::Points,
            IBF_CASE_COLORS[i],
        ));
    }
    for (i, s) in SKEWS.iter().enumerate() {
        plot.push(Series::new(
            format!("CBF, {}: formula", case_name(*s)),
            of(&|p| p.cbf[i].model),
            Style::Dashed,
            2 + i,
        ));
        plot.push(Series::new(
            format!("CBF, {}", case_name(*s)),
            of(&|p| p.cbf[i].rate(q)),
            Style::Points,
            2 + i,
        ));
    }
    plot
}

/// The markdown page and the three plots (rate against α, rate against n, count estimate).
pub fn render(p: &Params, o: &Outcome) -> (String, [Plot; 3]) {
    let q = p.queries;
    let fig5 = fpr_plot(
        format!(
            "Matsumoto, Hazeyama & Kadobayashi Fig. 5: false positives against α (M = {} bits, k = {}, n = {})",
            int(p.memory_bits),
            p.k,
            int(p.n)
        ),
        "distinctness rate α",
        &o.by_alpha,
        |x| x.alpha,
        q,
    );
    let fig6 = fpr_plot(
        format!(
            "Matsumoto, Hazeyama & Kadobayashi Fig. 6: false positives against inputs n (α = 0.5, M = {} bits, k = {})",
            int(p.memory_bits),
            p.k
        ),
        "inputs n",
        &o.by_n,
        |x| x.n as f64,
        q,
    );
    let mut cplot = Plot::new(
        format!(
            "IBF count estimate (Zipf {} stream, α = {:.3})",
            p.count_zipf, o.counts.alpha_true
        ),
        "true count (group mean)",
        "mean count",
    )
    .log_x()
    .log_y();
    let pts = |g: &dyn Fn(&CountRow) -> f64| -> Vec<(f64, f64)> {
        o.counts.rows.iter().map(|r| (r.truth, g(r))).collect()
    };
    cplot.push(Series::new("true count", pts(&|r| r.truth), Style::Line, 0));
    cplot.push(Series::new(
        "observed j' (run of ones)",
        pts(&|r| r.observed),
        Style::LinePoints,
        1,
    ));
    cplot.push(Series::new(
        "eq. 9 estimate (1 - p/2)·j'",
        pts(&|r| r.estimate),
        Style::LinePoints,
        2,
    ));

    let fneg: u64 = o
        .by_alpha
        .iter()
        .chain(&o.by_n)
        .map(|x| x.false_negatives)
        .sum();
    let mut md = format!(
        "# {NAME}: Iterative Bloom Filter against counting and plain filters\n\n\
         Matsumoto, Hazeyama & Kadobayashi §4 (Fig. 5, 6, Tables 4, 5). Every structure \
         has M = {m} bits and k = {k}: `BloomFilter` (M bits, the distinct inputs), \
         `IterativeBloomFilter` (M bits) and `CountingBloomFilter` with c-bit counters sized for \
         the largest count of the skew case (Table 5), so M/c counters. Inputs: n values with \
         distinctness rate α in random order, repeats spread per Table 4 (case 1: evenly; case \
         2: half on one value, half evenly; case 3: all on one value). {q} never-inserted \
         queries per filter; seed {seed}. Inserted values answered absent or below their count \
         (any structure, all points): {fneg}. Table 5 sizes a counter for the largest count of \
         one value, but a counter holds the sum of all values hashed to it: in case 1 every \
         value has the largest count, so shared counters saturate (column \"CBF saturated\"; \
         membership is unaffected, but those counters can no longer count or be decremented). \
         At α = 1 the counters have one bit and the CBF is a plain filter of M bits.\n\n\
         ## Fig. 5: rate against the distinctness rate α (n = {n})\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        m = int(p.memory_bits),
        k = p.k,
        q = int(q),
        seed = p.seed,
        fneg = int(fneg),
        n = int(p.n),
    );
    md.push_str(&point_table(p, &o.by_alpha).to_markdown());
    md.push_str(&format!(
        "\n## Fig. 6: rate against inputs n (α = 0.5)\n\n![{NAME}-n]({NAME}-n.svg)\n\n"
    ));
    md.push_str(&point_table(p, &o.by_n).to_markdown());
    md.push_str(&format!(
        "\n## Count estimate (eq. 9)\n\n![{NAME}-count]({NAME}-count.svg)\n\n\
         {inputs} inputs drawn from a Zipf law of exponent {z} over {vals} values into one IBF \
         (M = {m} bits, k = {k}); true α = {at:.4}, tracked α = {atr:.4}, collision probability \
         p = {pc:.4}, so eq. 9 multiplies the observed count by {f:.4}.\n\n",
        inputs = int(p.count_inputs),
        z = p.count_zipf,
        vals = int(p.count_values),
        m = int(p.memory_bits),
        k = p.k,
        at = o.counts.alpha_true,
        atr = o.counts.alpha_tracked,
        pc = o.counts.p_collision,
        f = 1.0 - o.counts.p_collision / 2.0,
    ));
    let mut t = Table::new([
        "true count",
        "values",
        "mean true",
        "mean observed j'",
        "mean eq. 9",
        "rel. error j'",
        "rel. error eq. 9",
        "j' below truth",
    ]);
    for r in &o.counts.rows {
        t.row([
            if r.lo == r.hi {
                r.lo.to_string()
            } else {
                format!("{}–{}", r.lo, r.hi)
            },
            int(r.values),
            num(r.truth, 2),
            num(r.observed, 2),
            num(r.estimate, 2),
            num(r.observed_rel_err, 4),
            num(r.estimate_rel_err, 4),
            int(r.below),
        ]);
    }
    md.push_str(&t.to_markdown());
    (md, [fig5, fig6, cplot])
}

/// Run at the size the options ask and write `ibf-vs-cbf.md`, `ibf-vs-cbf.svg` (Fig. 5),
/// `ibf-vs-cbf-n.svg` (Fig. 6) and `ibf-vs-cbf-count.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let o = measure(&p)?;
    let (md, [fig5, fig6, cplot]) = render(&p, &o);
    let mut report = write_report(opts, NAME, md, &fig5)?;
    for (suffix, plot) in [("n", &fig6), ("count", &cplot)] {
        let path = opts.out_dir.join(format!("{NAME}-{suffix}.svg"));
        plot.write_svg(&path)?;
        report.files.push(path);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::within;

    #[test]
    fn streams_follow_table_4() {
        let (v, d) = stream(1000, 0.5, Skew::Small, 1);
        assert_eq!((v.len(), d), (1000, 500));
        let count = |v: &[u32], x: u32| v.iter().filter(|&&y| y == x).count() as u64;
        assert!((0..500).all(|x| count(&v, x) == 2));
        let (v, _) = stream(1000, 0.5, Skew::Medium, 1);
        assert_eq!(count(&v, 0), 251);
        assert_eq!(
            count(&v, 0),
            params::max_count_for_skew(1000, 0.5, Skew::Medium)
        );
        let (v, _) = stream(1000, 0.5, Skew::Large, 1);
        assert_eq!(count(&v, 0), 501);
    }

    #[test]
    fn quick_run_follows_the_formulas() {
        let p = Params::quick(1);
        let o = measure(&p).unwrap();
        let q = p.queries;
        for x in o.by_alpha.iter().chain(&o.by_n) {
            assert_eq!(x.false_negatives, 0, "α={} n={}", x.alpha, x.n);
            // Table 5 sizes the counters for the largest count: with one dominant value
            // (cases 2, 3) the other values' sums stay far below it, nothing saturates
            if x.alpha < 1.0 {
                assert_eq!(x.cbf_saturated[1..], [0, 0], "α={} n={}", x.alpha, x.n);
            }
            // BF and CBF: measured within 5σ + 5% of the formula (σ: queries and fill), and
            // of the rate their contents give (σ: queries)
            for (m, what) in [(x.bf, "BF")]
                .into_iter()
                .chain(x.cbf.iter().map(|&m| (m, "CBF")))
            {
                assert!(
                    within(m.rate(q), m.model, m.sigma, 5.0, 0.05),
                    "{what} α={} n={}: {} vs {}",
                    x.alpha,
                    x.n,
                    m.rate(q),
                    m.model
                );
                let s = rate_sigma(m.contents, q, 0.0);
                assert!(within(m.rate(q), m.contents, s, 5.0, 0.05), "{what}");
            }
            // IBF: a repeat always sets a zero bit, so its bits never collide and the filter
            // holds at least eq. 10's expected ones: contents ≥ eq. 10 (5σ of the fill)
            for m in &x.ibf {
                let rel = m.sigma / m.model.max(f64::MIN_POSITIVE);
                assert!(m.contents >= m.model * (1.0 - 5.0 * rel), "α={}", x.alpha);
            }
            // cases 1 and 2 measure what their contents give; case 3's one long run of
            // double-hashing positions is not uniform, its rate can only be higher
            for (i, m) in x.ibf.iter().enumerate() {
                let s = rate_sigma(m.contents, q, 0.0);
                if i < 2 {
                    assert!(
                        within(m.rate(q), m.contents, s, 5.0, 0.05),
                        "IBF case {} α={} n={}: {} vs {}",
                        i + 1,
                        x.alpha,
                        x.n,
                        m.rate(q),
                        m.contents
                    );
                } else {
                    assert!(m.rate(q) >= m.contents - 5.0 * s, "α={}", x.alpha);
                }
            }
            // the IBF does not care about skew, the CBF pays for it in counter bits
            assert!(x.cbf_bits[0] <= x.cbf_bits[1] && x.cbf_bits[1] <= x.cbf_bits[2]);
            if x.alpha < 1.0 {
                assert!(x.cbf[2].model > x.cbf[0].model);
            }
            // a plain filter of the same memory holds only the distinct inputs: lowest rate
            assert!(x.bf.model <= x.ibf[0].model * (1.0 + 1e-3));
        }
        // Fig. 5: the IBF beats the large-skew CBF at every α < 1, and loses to the small-skew
        // CBF at the smallest α (Matsumoto, Hazeyama & Kadobayashi §5.3)
        let first = &o.by_alpha[0];
        assert!(first.ibf[0].model > first.cbf[0].model);
        assert!(o
            .by_alpha
            .iter()
            .filter(|x| x.alpha < 1.0)
            .all(|x| x.ibf[0].model < x.cbf[2].model));
        // count estimate: the run of ones never under-counts; eq. 9 shrinks it
        assert!(o.counts.rows.iter().all(|r| r.below == 0));
        assert!(o
            .counts
            .rows
            .iter()
            .all(|r| r.estimate <= r.observed && r.observed >= r.truth));
        assert!((o.counts.alpha_tracked - o.counts.alpha_true).abs() < 0.05);
        let (md, plots) = render(&p, &o);
        assert!(md.contains("## Fig. 6"));
        assert!(plots.iter().all(|pl| pl.to_svg().unwrap().contains("<svg")));
    }
}
