//! `blocked-model`: does the sizing of the cache-blocked filters deliver the rate asked for?
//!
//! The blocked filter ([`BlockedBloomFilter::try_new`]`(n, p)`), the Parquet split-block
//! filter ([`SplitBlockBloomFilter`]) and the blocked counting filter
//! ([`BlockedCountingBloomFilter`], 128 four-bit counters per 64-byte line, a nonzero counter
//! standing for a set bit) keep each key in one block, so at equal memory they are
//! worse than the classic filter of Broder & Mitzenmacher §2.1; the library
//! sizes them with an exact model of blocked filters (Putze, Sanders & Singler 2007:
//! [`params::fpr_blocked`], [`params::fpr_split_block`]). This experiment asks for
//! p = 1e-1 … 1e-6 at several n, fills each filter with n keys, queries enough never-inserted
//! keys to expect thousands of false positives, and compares the measured rate with the
//! request (it should land within ±15%). It also puts the bits spent per item next to the
//! lower bound `log2(1/ε)` of Broder & Mitzenmacher §2.2 ([`params::lower_bound_bits`]) and the optimal classic
//! filter's size ([`params::classic_shape`]).

use anyhow::Context;
use bloomery::{
    params, BlockedBloomFilter, BlockedCountingBloomFilter, SplitBlockBloomFilter, Stats,
};
use rayon::prelude::*;

use crate::measure;
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "blocked-model";

/// The relative tolerance the sizing promises: measured within ±15% of the request.
pub const TOLERANCE: f64 = 0.15;

/// Which blocked structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// [`BlockedBloomFilter`]: 512-bit blocks, tunable k.
    Blocked,
    /// [`SplitBlockBloomFilter`]: Parquet's 256-bit blocks, one bit in each of 8 words.
    SplitBlock,
    /// [`BlockedCountingBloomFilter`]: 64-byte lines of 128 four-bit counters, tunable k.
    BlockedCounting,
}

impl Kind {
    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Blocked => "blocked",
            Self::SplitBlock => "split-block",
            Self::BlockedCounting => "blocked counting",
        }
    }
}

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Item counts.
    pub ns: Vec<u64>,
    /// Requested false-positive rates.
    pub rates: Vec<f64>,
    /// Structures.
    pub kinds: Vec<Kind>,
    /// Queries are sized to expect this many false positives at the requested rate …
    pub expected_false_positives: f64,
    /// … but never more than this many.
    pub max_queries: u64,
    /// Seed of the blocked filter's hasher and of the key stream (the split-block filter keeps
    /// Parquet's xxHash64).
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: n = 40,000 and 100,000, p = 1e-1 … 1e-3, about 1,000 expected
    /// false positives per point.
    pub fn quick(seed: u64) -> Self {
        Self {
            ns: vec![40_000, 100_000],
            rates: vec![1e-1, 1e-2, 1e-3],
            kinds: vec![Kind::Blocked, Kind::SplitBlock, Kind::BlockedCounting],
            expected_false_positives: 1_000.0,
            max_queries: 1_000_000,
            seed,
        }
    }

    /// The documented size: n = 10⁴, 10⁵, 10⁶, p = 1e-1 … 1e-6, about 1,000 expected false
    /// positives per point but at most 10⁸ queries (so about 100 at p = 1e-6).
    pub fn full(seed: u64) -> Self {
        Self {
            ns: vec![10_000, 100_000, 1_000_000],
            rates: vec![1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6],
            kinds: vec![Kind::Blocked, Kind::SplitBlock, Kind::BlockedCounting],
            expected_false_positives: 1_000.0,
            max_queries: 100_000_000,
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

    /// Queries for a requested rate.
    pub fn queries(&self, p: f64) -> u64 {
        ((self.expected_false_positives / p).ceil() as u64).clamp(1, self.max_queries)
    }
}

/// One (structure, n, p) point.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Structure.
    pub kind: Kind,
    /// Items.
    pub n: u64,
    /// Requested rate.
    pub target: f64,
    /// Bits of memory chosen by the sizing (4 per counter for the blocked counting filter).
    pub m: u64,
    /// Bits per key chosen by the sizing.
    pub k: u32,
    /// The model's rate for the chosen shape.
    pub model: f64,
    /// Queries asked.
    pub queries: u64,
    /// False positives among them.
    pub false_positives: u64,
    /// Measured rate.
    pub measured: f64,
    /// The filter's own rate, computed exactly from its contents (no query noise): what this
    /// instance would measure with infinitely many queries.
    pub contents: f64,
    /// Bits of the optimal classic filter for (n, p).
    pub classic_bits: u64,
}

impl Row {
    /// measured / requested.
    pub fn ratio(&self) -> f64 {
        self.measured / self.target
    }
    /// Relative standard deviation of the measured rate from the query count alone.
    pub fn rel_sigma(&self) -> f64 {
        1.0 / (self.target * self.queries as f64).sqrt()
    }
    /// Bits per item spent.
    pub fn bits_per_item(&self) -> f64 {
        self.m as f64 / self.n as f64
    }
    /// The lower bound `log2(1/p)` bits per item.
    pub fn lower_bound(&self) -> f64 {
        params::lower_bound_bits(self.n, self.target) / self.n as f64
    }
}

/// The exact false-positive rate of a blocked filter's contents: the mean over its 512-bit
/// blocks of the probability that a query's k probes (drawn with replacement, so D ≤ k
/// distinct bits) all land on set bits, `Σ_d P(D=d)·C(ones,d)/C(512,d)`.
pub fn blocked_contents_fpr(words: &[u64], k: u32) -> f64 {
    const B: usize = 512;
    let k = k as usize;
    // P(D = d) for k uniform draws from 512 values
    let mut dist = vec![0.0f64; k + 1];
    dist[0] = 1.0;
    for _ in 0..k {
        let mut next = vec![0.0f64; k + 1];
        for d in 0..k {
            next[d] += dist[d] * d as f64 / B as f64;
            next[d + 1] += dist[d] * (B - d) as f64 / B as f64;
        }
        dist = next;
    }
    // rate for a block with `ones` set bits, tabulated once
    let table: Vec<f64> = (0..=B)
        .map(|ones| {
            let mut all = 1.0; // C(ones,d)/C(512,d)
            let mut sum = 0.0;
            for (d, &pd) in dist.iter().enumerate() {
                if d > 0 {
                    all *= (ones as f64 - (d - 1) as f64).max(0.0) / (B - (d - 1)) as f64;
                }
                sum += pd * all;
            }
            sum
        })
        .collect();
    let blocks = words.chunks_exact(B / 64);
    let count = blocks.len().max(1);
    let sum: f64 = blocks
        .map(|b| table[b.iter().map(|w| w.count_ones() as usize).sum::<usize>()])
        .sum();
    sum / count as f64
}

/// Size, fill and query one filter per (structure, n, p).
pub fn measure(p: &Params) -> anyhow::Result<Vec<Row>> {
    let mut points = Vec::new();
    for &kind in &p.kinds {
        for &n in &p.ns {
            for &target in &p.rates {
                points.push((kind, n, target));
            }
        }
    }
    points
        .par_iter()
        .map(|&(kind, n, target)| {
            let queries = p.queries(target);
            let (m, k, model, fp, contents) = match kind {
                Kind::Blocked => {
                    let mut f = BlockedBloomFilter::builder()
                        .capacity(n)
                        .fpr(target)
                        .seed(p.seed)
                        .try_build()
                        .with_context(|| format!("blocked n={n} p={target}"))?;
                    measure::fill(&mut f, p.seed, n);
                    let model = params::fpr_blocked(n, f.blocks(), 512, f.hashes());
                    let fp = measure::false_positives(&f, p.seed, n, queries);
                    let contents = blocked_contents_fpr(f.as_words(), f.hashes());
                    (f.bit_len(), f.hashes(), model, fp, contents)
                }
                Kind::SplitBlock => {
                    let mut f = SplitBlockBloomFilter::try_new(n, target)
                        .with_context(|| format!("split-block n={n} p={target}"))?;
                    measure::fill(&mut f, p.seed, n);
                    let model = params::fpr_split_block(n, f.blocks());
                    let fp = measure::false_positives(&f, p.seed, n, queries);
                    (f.bit_len(), 8, model, fp, f.current_fpr())
                }
                Kind::BlockedCounting => {
                    let mut f = BlockedCountingBloomFilter::builder()
                        .capacity(n)
                        .fpr(target)
                        .seed(p.seed)
                        .try_build()
                        .with_context(|| format!("blocked counting n={n} p={target}"))?;
                    measure::fill(&mut f, p.seed, n);
                    let cells = f.cells_per_line();
                    let model = params::fpr_blocked(n, f.blocks(), cells, f.hashes());
                    let fp = measure::false_positives(&f, p.seed, n, queries);
                    // a nonzero counter is a set bit: (nonzero / cells)^k averaged over the
                    // lines, as `blocked_contents_fpr` for bits
                    let contents = f.current_fpr();
                    (f.byte_len() * 8, f.hashes(), model, fp, contents)
                }
            };
            Ok(Row {
                kind,
                n,
                target,
                m,
                k,
                model,
                queries,
                false_positives: fp,
                measured: fp as f64 / queries as f64,
                contents,
                classic_bits: params::classic_shape(n, target)?.m,
            })
        })
        .collect()
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row]) -> (String, Plot) {
    let mut t = Table::new([
        "structure",
        "n",
        "requested",
        "k",
        "model",
        "contents",
        "measured",
        "measured/requested",
        "±1σ",
        "queries",
        "bits/item",
        "lower bound",
        "× bound",
        "classic bits/item",
    ]);
    for r in rows {
        t.row([
            r.kind.name().to_string(),
            int(r.n),
            rate(r.target),
            r.k.to_string(),
            rate(r.model),
            rate(r.contents),
            rate(r.measured),
            num(r.ratio(), 3),
            num(r.rel_sigma(), 3),
            int(r.queries),
            num(r.bits_per_item(), 2),
            num(r.lower_bound(), 2),
            num(r.bits_per_item() / r.lower_bound(), 3),
            num(r.classic_bits as f64 / r.n as f64, 2),
        ]);
    }
    let (lo, hi) = rows
        .iter()
        .map(Row::ratio)
        .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    let inside = rows
        .iter()
        .filter(|r| (r.ratio() - 1.0).abs() <= TOLERANCE)
        .count();
    let over = |kind: Kind| {
        let v: Vec<f64> = rows
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| r.m as f64 / r.classic_bits as f64)
            .collect();
        let (a, b) = v
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        (a, b)
    };
    let (bl, bh) = over(Kind::Blocked);
    let (sl, sh) = over(Kind::SplitBlock);
    let (cl, ch) = over(Kind::BlockedCounting);
    let md = format!(
        "# {NAME}: requested against measured rate of the blocked filters\n\n\
         `BlockedBloomFilter::builder().capacity(n).fpr(p).seed({seed})` (the sizing of \
         `try_new(n, p)`), `SplitBlockBloomFilter::try_new(n, p)` (Parquet's xxHash64) and \
         `BlockedCountingBloomFilter::builder().capacity(n).fpr(p).seed({seed})` (4-bit \
         counters, 128 per 64-byte line; a nonzero counter answers like a set bit), \
         filled with n keys and queried with never-inserted keys, enough to expect about \
         {efp} false positives (at most {maxq} queries). \"model\" is the library's blocked \
         model for the chosen shape (its expectation over filters); \"contents\" is the built \
         filter's own rate computed exactly from its bits, so measured − contents is query noise \
         and contents − model is the filter-to-filter spread, which shrinks as n grows; ±1σ is \
         the relative binomial deviation of the measurement. The lower bound is `log2(1/p)` bits \
         per item (Broder & Mitzenmacher §2.2).\n\n\
         ![{NAME}]({NAME}.svg)\n\n\
         {inside} of {total} points land within ±{tol:.0}% of the requested rate \
         (measured/requested from {lo:.3} to {hi:.3}). The blocked filter spends \
         {bl:.2}–{bh:.2}× the bits of the optimal classic filter, the split-block filter \
         (fixed k = 8) {sl:.2}–{sh:.2}×, the blocked counting filter {cl:.2}–{ch:.2}× \
         (four bits per counter: the classic-layout counting filter spends 4×).\n\n{table}",
        seed = p.seed,
        efp = int(p.expected_false_positives as u64),
        maxq = int(p.max_queries),
        total = rows.len(),
        tol = TOLERANCE * 100.0,
        table = t.to_markdown(),
    );
    let mut plot = Plot::new(
        "Blocked filters: measured / requested false-positive rate",
        "requested false-positive rate p",
        "measured / requested",
    )
    .log_x();
    let xs: Vec<f64> = p.rates.clone();
    let flat = |y: f64| xs.iter().map(|&x| (x, y)).collect::<Vec<_>>();
    plot.push(Series::new("requested", flat(1.0), Style::Line, 7));
    plot.push(Series::new(
        format!("±{:.0}%", TOLERANCE * 100.0),
        flat(1.0 + TOLERANCE),
        Style::Dashed,
        7,
    ));
    plot.push(Series::new("", flat(1.0 - TOLERANCE), Style::Dashed, 7));
    let mut c = 0;
    for &kind in &p.kinds {
        for &n in &p.ns {
            let pts = rows
                .iter()
                .filter(|r| r.kind == kind && r.n == n)
                .map(|r| (r.target, r.ratio()))
                .collect();
            plot.push(Series::new(
                format!("{} n={}", kind.name(), int(n)),
                pts,
                Style::LinePoints,
                c,
            ));
            c += 1;
        }
    }
    (md, plot)
}

/// Run at the size the options ask and write `blocked-model.{md,svg}`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let rows = measure(&p)?;
    let (md, plot) = render(&p, &rows);
    write_report(opts, NAME, md, &plot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_lands_within_fifteen_percent_of_the_request() {
        let p = Params::quick(3);
        let rows = measure(&p).unwrap();
        assert_eq!(rows.len(), p.kinds.len() * p.ns.len() * p.rates.len());
        for r in &rows {
            // the measurement agrees with the filter's exact rate up to query noise
            let sigma = (r.contents / r.queries as f64).sqrt();
            assert!(
                (r.measured - r.contents).abs() <= 4.0 * sigma + 0.02 * r.contents,
                "{r:?}"
            );
            // the query count must be able to resolve ±15% (4σ inside it)
            assert!(4.0 * r.rel_sigma() < TOLERANCE, "{r:?}");
            assert!(
                (r.ratio() - 1.0).abs() <= TOLERANCE,
                "{} n={} p={}: measured {} ({:.3}× the request)",
                r.kind.name(),
                r.n,
                r.target,
                r.measured,
                r.ratio()
            );
            assert!(r.model <= r.target, "{r:?}");
            assert!(r.bits_per_item() > r.lower_bound(), "{r:?}");
            // blocking costs cells against the classic filter, but not too much
            let cells = match r.kind {
                Kind::BlockedCounting => r.m as f64 / 4.0,
                Kind::Blocked | Kind::SplitBlock => r.m as f64,
            };
            assert!(cells >= 0.99 * r.classic_bits as f64, "{r:?}");
            assert!(cells <= 1.6 * r.classic_bits as f64, "{r:?}");
        }
        let (md, plot) = render(&p, &rows);
        assert!(md.contains("split-block") && md.contains("blocked counting"));
        assert_eq!(plot.series.len(), 3 + p.kinds.len() * p.ns.len());
    }
}
