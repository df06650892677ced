//! `counting-overflow`: the largest counter of a counting Bloom filter over many trials, against
//! the overflow bound of Broder & Mitzenmacher §2.5.
//!
//! Reproduces Broder & Mitzenmacher §2.5, "Counting
//! Bloom filters": a counter is `Binomial(nk, 1/m)`, so `P(c ≥ j) ≤ C(nk, j)/m^j ≤
//! (e·nk/(j·m))^j`, and by the union bound `P(max ≥ j) ≤ m·(e·nk/(j·m))^j`
//! ([`params::counter_overflow_bound`]); at the optimal `k = (m/n) ln 2` and `j = 16` this is
//! `1.37e-15·m`, which is why 4-bit counters suffice.
//!
//! Each trial fills a [`CountingBloomFilter`] of m counters (8-bit, so the true maximum is
//! observed; 4-bit counters would saturate at 15) with n fresh keys under a fresh hasher seed,
//! at the paper's operating point: `k = 7` and `n = m·ln 2 / 7`, so `nk/m = ln 2`. The measured
//! fraction of trials whose maximum counter is at least j is compared with three curves: the
//! independent-counter estimate `1 - (1 - P(c ≥ j))^m` (balls in bins are negatively
//! associated, so this is also an upper bound), the exact union bound `m·P(c ≥ j)`
//! ([`params::counter_tail`]) and Broder & Mitzenmacher's bound.

use bloomery::{params, CountingBloomFilter, Filter};
use rayon::prelude::*;

use crate::measure::key;
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "counting-overflow";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Counters per filter.
    pub m: u64,
    /// Hash functions.
    pub k: u32,
    /// Independent filters.
    pub trials: u64,
    /// Base seed (trial t uses seed `seed + t` for its hasher and keys).
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: 200 filters of 2¹⁴ counters.
    pub fn quick(seed: u64) -> Self {
        Self {
            m: 1 << 14,
            k: 7,
            trials: 200,
            seed,
        }
    }

    /// The documented size: 2,000 filters of 2²⁰ counters (2.1·10⁹ counters in all).
    pub fn full(seed: u64) -> Self {
        Self {
            m: 1 << 20,
            trials: 2_000,
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

    /// Items per filter: `m·ln 2 / k`, so that `nk/m = ln 2` (the optimal k's load).
    pub fn n(&self) -> u64 {
        (self.m as f64 * std::f64::consts::LN_2 / self.k as f64).round() as u64
    }
}

/// Largest threshold tabulated.
pub const MAX_J: u32 = 16;

/// One threshold j.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The threshold.
    pub j: u32,
    /// Trials whose largest counter is at least j.
    pub trials_at_least: u64,
    /// `1 - (1 - P(c ≥ j))^m`.
    pub independent: f64,
    /// `m·P(c ≥ j)`.
    pub union: f64,
    /// Broder & Mitzenmacher's bound `m·(e·nk/(j·m))^j`.
    pub bound: f64,
}

/// The measurement: rows for j = 1..=16, and the largest counter of each trial.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Per threshold.
    pub rows: Vec<Row>,
    /// Largest counter per trial.
    pub maxima: Vec<u32>,
    /// Counters that reached 15 (a 4-bit counter's saturation value) over all trials.
    pub at_fifteen: u64,
}

/// Run the trials.
pub fn measure(p: &Params) -> anyhow::Result<Outcome> {
    anyhow::ensure!(p.m >= 16 && p.k >= 1 && p.trials >= 1);
    let n = p.n();
    let per_trial: Vec<(u32, u64)> = (0..p.trials)
        .into_par_iter()
        .map(|t| -> anyhow::Result<(u32, u64)> {
            let s = p.seed.wrapping_add(t);
            let mut f = CountingBloomFilter::builder()
                .counters(p.m)
                .hashes(p.k)
                .counter_width(8)
                .seed(s)
                .try_build()?;
            for i in 0..n {
                f.insert(&key(s, i));
            }
            let c = f.counters();
            let (mut max, mut fifteen) = (0u32, 0u64);
            for i in 0..p.m {
                let v = c.get(i);
                max = max.max(v);
                fifteen += u64::from(v >= 15);
            }
            anyhow::ensure!(f.saturated_counters() == 0, "an 8-bit counter saturated");
            Ok((max, fifteen))
        })
        .collect::<anyhow::Result<_>>()?;
    let maxima: Vec<u32> = per_trial.iter().map(|x| x.0).collect();
    let rows = (1..=MAX_J)
        .map(|j| {
            let tail = params::counter_tail(n, p.m, p.k, j);
            Row {
                j,
                trials_at_least: maxima.iter().filter(|&&x| x >= j).count() as u64,
                independent: -(p.m as f64 * (-tail).ln_1p()).exp_m1(),
                union: p.m as f64 * tail,
                bound: params::counter_overflow_bound(n, p.m, p.k, j),
            }
        })
        .collect();
    Ok(Outcome {
        rows,
        maxima,
        at_fifteen: per_trial.iter().map(|x| x.1).sum(),
    })
}

/// The markdown page and the plot.
pub fn render(p: &Params, o: &Outcome) -> (String, Plot) {
    let tr = p.trials as f64;
    let mut t = Table::new([
        "j",
        "trials with max ≥ j",
        "measured P(max ≥ j)",
        "1-(1-P(c≥j))^m",
        "union bound m·P(c≥j)",
        "002 bound m(e·nk/jm)^j",
    ]);
    for r in &o.rows {
        t.row([
            r.j.to_string(),
            int(r.trials_at_least),
            rate(r.trials_at_least as f64 / tr),
            rate(r.independent),
            rate(r.union),
            rate(r.bound),
        ]);
    }
    let hist_max = o.maxima.iter().copied().max().unwrap_or(0);
    let mut hist = Table::new(["largest counter", "trials"]);
    for v in o.maxima.iter().copied().min().unwrap_or(0)..=hist_max {
        hist.row([
            v.to_string(),
            int(o.maxima.iter().filter(|&&x| x == v).count() as u64),
        ]);
    }
    let bound16 = params::counter_overflow_bound(p.n(), p.m, p.k, 16);
    let mut md = format!(
        "# {NAME}: the largest counter of a counting Bloom filter\n\n\
         Broder & Mitzenmacher §2.5. {tr} trials, each a `CountingBloomFilter` of m = {m} counters (8-bit, so \
         the true maximum is seen), k = {k}, n = {n} keys (nk/m = {load:.4} ≈ ln 2, the optimal \
         k's load), hasher seed and keys new per trial (base seed {seed}). Broder & Mitzenmacher's bound at j = 16: \
         m·(e ln2/16)^16 = {b16} (= {per:.3e}·m). Largest counter seen in any trial: {hist_max}; \
         counters at 15 or more (where a 4-bit counter saturates) over all trials: {f15}.\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        tr = int(p.trials),
        m = int(p.m),
        k = p.k,
        n = int(p.n()),
        load = p.n() as f64 * p.k as f64 / p.m as f64,
        seed = p.seed,
        b16 = rate(bound16),
        per = bound16 / p.m as f64,
        f15 = int(o.at_fifteen),
    );
    md.push_str(&t.to_markdown());
    md.push_str("\nLargest counter per trial:\n\n");
    md.push_str(&hist.to_markdown());

    let mut plot = Plot::new(
        format!(
            "Counting filter overflow: P(max counter ≥ j), m = {}, k = {}, nk/m = ln 2",
            int(p.m),
            p.k
        ),
        "j",
        "P(largest counter ≥ j)",
    )
    .log_y();
    let of = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        o.rows
            .iter()
            .map(|r| (r.j as f64, g(r)))
            .filter(|&(_, y)| y > 0.0)
            .collect()
    };
    plot.push(Series::new(
        "002 bound m(e·nk/(jm))^j",
        of(&|r| r.bound),
        Style::Dashed,
        1,
    ));
    plot.push(Series::new(
        "union bound m·P(c ≥ j)",
        of(&|r| r.union),
        Style::Line,
        2,
    ));
    plot.push(Series::new(
        "1-(1-P(c ≥ j))^m",
        of(&|r| r.independent),
        Style::Line,
        0,
    ));
    plot.push(Series::new(
        format!("measured ({} trials)", int(p.trials)),
        of(&|r| r.trials_at_least as f64 / tr),
        Style::Points,
        0,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `counting-overflow.md` and `.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let o = measure(&p)?;
    let (md, plot) = render(&p, &o);
    write_report(opts, NAME, md, &plot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::rate_sigma;

    #[test]
    fn quick_run_stays_under_the_bounds() {
        let p = Params::quick(1);
        let o = measure(&p).unwrap();
        let tr = p.trials as f64;
        assert_eq!(o.rows.len(), MAX_J as usize);
        for r in &o.rows {
            let measured = r.trials_at_least as f64 / tr;
            // the bounds are ordered: estimate ≤ exact union bound ≤ Broder & Mitzenmacher's bound
            assert!(r.independent <= r.union * (1.0 + 1e-9), "j={}", r.j);
            assert!(r.union <= r.bound * (1.0 + 1e-9), "j={}", r.j);
            // the measured fraction sits on the negatively-associated estimate: 4σ of the
            // binomial count over the trials plus 5% for the dependence of a key's k counters
            let sigma = rate_sigma(r.independent, p.trials, 0.0);
            assert!(
                measured <= r.independent + 4.0 * sigma + 0.05,
                "j={}: {measured} > {}",
                r.j,
                r.independent
            );
            if (0.1..0.9).contains(&r.independent) {
                assert!(
                    (measured - r.independent).abs() <= 4.0 * sigma + 0.1 * r.independent,
                    "j={}: {measured} vs {}",
                    r.j,
                    r.independent
                );
            }
        }
        // the union bound falls with j all the way to 16, where 1 - P(c < j) would cancel to
        // 0: past the mean (nk/m = ln 2) each step multiplies it by about ln 2 / j, below 0.1
        // from j = 8 on
        for w in o.rows.windows(2) {
            let step = if w[1].j >= 8 { 0.1 } else { 1.0 };
            assert!(
                w[1].union > 0.0 && w[1].union < w[0].union * step,
                "j={}: {} after {}",
                w[1].j,
                w[1].union,
                w[0].union
            );
        }
        // every filter holds n·k ≥ 1 increments, so max ≥ 1 always; nobody reaches 16
        assert_eq!(o.rows[0].trials_at_least, p.trials);
        assert_eq!(o.rows[15].trials_at_least, 0);
        // Broder & Mitzenmacher's headline number: (e ln 2 / 16)^16 = 1.37e-15
        let per_counter = o.rows[15].bound / p.m as f64;
        assert!((per_counter / 1.37e-15 - 1.0).abs() < 0.02, "{per_counter}");
        let (md, plot) = render(&p, &o);
        assert!(md.contains("trials with max"));
        assert!(plot.to_svg().unwrap().contains("<svg"));
    }
}
