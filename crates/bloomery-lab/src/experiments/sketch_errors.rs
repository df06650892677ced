//! `sketch-errors`: the estimate errors of the spectral Bloom filter's three methods and of the
//! count-min sketch with and without conservative update, on a Zipf stream and on the packet
//! flows of a real capture.
//!
//! Reproduces Broder & Mitzenmacher §9 (Cohen &
//! Matias' spectral Bloom filters: Minimum Selection, Minimal Increase, Recurring Minimum;
//! Cormode & Muthukrishnan's count-min sketch) and §8.1 (Estan & Varghese's conservative
//! update). Every structure gets the same number of counters C:
//!
//! - [`SpectralBloomFilter`] MS and MI: C counters (32-bit), k = 4;
//! - RM: a primary of ⌈2C/3⌉ and a secondary of ⌊C/3⌋ counters, k = 4;
//! - [`CountMinSketch`] plain and conservative: depth 4, width C/4 (64-bit counters).
//!
//! Two streams: `zipf` (a Zipf law over a fixed universe, fixed seed) and `flows` (the packets
//! per 5-tuple flow of Debian `pathspider`'s `tests/data/real.pcap`, see [`crate::pcap`]; a
//! synthetic Zipf trace in quick runs without the file). Reported per stream, size and
//! structure: the mean additive error over the distinct keys, the fraction of keys estimated
//! wrong (Cohen & Matias' error ratio), the largest error, and the keys estimated below the
//! truth (only RM may). With the same hasher and counters, Minimal Increase's counters never
//! exceed Minimum Selection's, and conservative update's never exceed plain count-min's, so
//! `truth ≤ MI ≤ MS` and `truth ≤ CU ≤ CM` hold key by key; count-min also promises
//! `error ≤ (e/width)·N` for all but a fraction `e^-depth` of keys.

use anyhow::Context;
use bloomery::builders::SpectralMethod;
use bloomery::Hashed;
use bloomery::{params, Count, CountMinSketch, KeyHasher, SpectralBloomFilter};
use rayon::prelude::*;

use crate::measure::{key, Rng};
use crate::pcap::{self, FlowSource, Zipf};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "sketch-errors";

/// The structures, in table order.
pub const KINDS: [&str; 5] = [
    "spectral MS",
    "spectral MI",
    "spectral RM",
    "count-min",
    "count-min CU",
];

/// Hash functions of the spectral filters = rows of the sketches.
pub const K: u32 = 4;

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Items of the Zipf stream.
    pub zipf_items: u64,
    /// Universe of the Zipf stream.
    pub zipf_universe: u64,
    /// Its exponent.
    pub zipf_s: f64,
    /// Sizes: counters per distinct key.
    pub counters_per_key: Vec<f64>,
    /// Allow the synthetic flow trace when the capture is missing.
    pub allow_synthetic: bool,
    /// Seed of the hashers and the stream.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: 50,000 Zipf items over 20,000 values.
    pub fn quick(seed: u64) -> Self {
        Self {
            zipf_items: 50_000,
            zipf_universe: 20_000,
            zipf_s: 1.0,
            counters_per_key: vec![0.5, 1.0, 2.0, 4.0, 8.0],
            allow_synthetic: true,
            seed,
        }
    }

    /// The documented size: 10⁷ Zipf items over 10⁶ values; the real capture required.
    pub fn full(seed: u64) -> Self {
        Self {
            zipf_items: 10_000_000,
            zipf_universe: 1_000_000,
            counters_per_key: vec![0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0],
            allow_synthetic: false,
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

/// A multiset: distinct keys (hashed) with their true counts, and the update stream.
#[derive(Debug, Clone)]
pub struct Multiset {
    /// Name for the report.
    pub name: &'static str,
    /// One sentence on where it came from.
    pub source: String,
    /// Hashes of the distinct keys.
    pub keys: Vec<Hashed>,
    /// True counts, parallel to `keys`.
    pub truth: Vec<u64>,
    /// The stream as indices into `keys`.
    pub stream: Vec<u32>,
}

impl Multiset {
    /// Total count N.
    pub fn total(&self) -> u64 {
        self.stream.len() as u64
    }
}

/// The Zipf stream.
pub fn zipf_stream(p: &Params, hasher: &KeyHasher) -> Multiset {
    let z = Zipf::new(p.zipf_universe, p.zipf_s);
    let mut rng = Rng::new(p.seed ^ 0x21F);
    let raw: Vec<u64> = (0..p.zipf_items).map(|_| z.sample(&mut rng)).collect();
    let mut slot = vec![u32::MAX; p.zipf_universe as usize];
    let mut keys = Vec::new();
    let mut truth = Vec::new();
    let stream = raw
        .iter()
        .map(|&v| {
            let s = &mut slot[v as usize];
            if *s == u32::MAX {
                *s = keys.len() as u32;
                keys.push(hasher.hash(&key(p.seed ^ 0x21F, v)));
                truth.push(0);
            }
            truth[*s as usize] += 1;
            *s
        })
        .collect();
    Multiset {
        name: "zipf",
        source: format!(
            "{} items from a Zipf law of exponent {} over {} values",
            int(p.zipf_items),
            p.zipf_s,
            int(p.zipf_universe)
        ),
        keys,
        truth,
        stream,
    }
}

/// The packets per flow of the capture (or the synthetic trace).
pub fn flow_stream(p: &Params, hasher: &KeyHasher) -> anyhow::Result<(Multiset, FlowSource)> {
    let (trace, source) = pcap::load_or_synthetic(NAME, p.allow_synthetic, p.seed)?;
    let keys = trace
        .flows
        .iter()
        .map(|f| hasher.hash(&f.to_bytes()))
        .collect();
    Ok((
        Multiset {
            name: "flows",
            source: format!(
                "packets per 5-tuple flow of {}: {} packets, {} flows",
                source.describe(),
                int(trace.packets.len() as u64),
                int(trace.flows.len() as u64)
            ),
            keys,
            truth: trace.totals.iter().map(|t| t.packets).collect(),
            stream: trace.packets.iter().map(|&(f, _)| f).collect(),
        },
        source,
    ))
}

/// One structure's errors at one size.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Errors {
    /// Mean of (estimate - truth) over the distinct keys.
    pub mean_error: f64,
    /// Fraction of keys whose estimate is not exact.
    pub wrong: f64,
    /// Largest |estimate - truth|.
    pub max_error: u64,
    /// Keys estimated below the truth.
    pub below: u64,
    /// Keys whose error exceeds count-min's `(e/width)·N` (only meaningful for count-min).
    pub over_cm_bound: u64,
}

/// One size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Counters per distinct key.
    pub per_key: f64,
    /// Counters of every structure.
    pub counters: u64,
    /// Per structure, in [`KINDS`] order.
    pub errors: [Errors; 5],
    /// Keys where the MI estimate exceeds MS's, or CU's exceeds CM's (must be 0).
    pub order_violations: u64,
}

fn errors(ms: &Multiset, est: &[u64], bound: f64) -> Errors {
    let d = ms.keys.len().max(1) as f64;
    let mut e = Errors::default();
    let mut sum = 0.0;
    let mut wrong = 0u64;
    for (&t, &x) in ms.truth.iter().zip(est) {
        let diff = x as i128 - t as i128;
        sum += diff as f64;
        wrong += u64::from(diff != 0);
        e.max_error = e.max_error.max(diff.unsigned_abs() as u64);
        e.below += u64::from(diff < 0);
        e.over_cm_bound += u64::from(diff as f64 > bound);
    }
    e.mean_error = sum / d;
    e.wrong = wrong as f64 / d;
    e
}

/// Measure one multiset at every size.
pub fn measure_set(p: &Params, ms: &Multiset, hasher: &KeyHasher) -> anyhow::Result<Vec<Row>> {
    let distinct = ms.keys.len() as u64;
    p.counters_per_key
        .iter()
        .map(|&per| {
            let c = ((per * distinct as f64).round() as u64).max(u64::from(K) * 3);
            let width = c / u64::from(K);
            let spectral =
                |method, m: u64, m2: Option<u64>| -> anyhow::Result<SpectralBloomFilter> {
                    let mut b = SpectralBloomFilter::builder()
                        .counters(m)
                        .hashes(K)
                        .counter_width(32)
                        .method(method)
                        .hasher(*hasher);
                    if let Some(m2) = m2 {
                        b = b.secondary_counters(m2);
                    }
                    b.try_build()
                        .with_context(|| format!("spectral {method:?} m={m}"))
                };
            let cms = |cu: bool| {
                CountMinSketch::builder()
                    .dimensions(width, K)
                    .conservative(cu)
                    .hasher(*hasher)
                    .try_build()
                    .context("count-min")
            };
            let mut s_ms = spectral(SpectralMethod::MinimumSelection, c, None)?;
            let mut s_mi = spectral(SpectralMethod::MinimalIncrease, c, None)?;
            let mut s_rm = spectral(SpectralMethod::RecurringMinimum, c - c / 3, Some(c / 3))?;
            let mut cm = cms(false)?;
            let mut cu = cms(true)?;
            for &i in &ms.stream {
                let h = ms.keys[i as usize];
                s_ms.insert_many_hashed(h, 1);
                s_mi.insert_many_hashed(h, 1);
                s_rm.insert_many_hashed(h, 1);
                cm.insert_hashed(h);
                cu.insert_hashed(h);
            }
            anyhow::ensure!(
                s_ms.saturated_counters() + s_mi.saturated_counters() + s_rm.saturated_counters()
                    == 0
            );
            let counts: Vec<[u64; 5]> = ms
                .keys
                .par_iter()
                .map(|&h| {
                    [
                        s_ms.count_hashed(h),
                        s_mi.count_hashed(h),
                        s_rm.count_hashed(h),
                        cm.count_hashed(h),
                        cu.count_hashed(h),
                    ]
                })
                .collect();
            let order_violations =
                counts.iter().filter(|c| c[1] > c[0] || c[4] > c[3]).count() as u64;
            let (eps, _) = params::count_min_bounds(width, K);
            let bound = eps * ms.total() as f64;
            let errs = std::array::from_fn(|j| {
                let est: Vec<u64> = counts.iter().map(|c| c[j]).collect();
                errors(ms, &est, bound)
            });
            Ok(Row {
                per_key: per,
                counters: c,
                errors: errs,
                order_violations,
            })
        })
        .collect()
}

/// Everything the experiment measures.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The streams with their rows.
    pub sets: Vec<(Multiset, Vec<Row>)>,
    /// Where the flows came from.
    pub flow_source: FlowSource,
}

/// Run both streams.
pub fn measure(p: &Params) -> anyhow::Result<Outcome> {
    let hasher = KeyHasher::with_seed(p.seed);
    let z = zipf_stream(p, &hasher);
    let (f, flow_source) = flow_stream(p, &hasher)?;
    let mut sets = Vec::new();
    for ms in [z, f] {
        let rows = measure_set(p, &ms, &hasher)?;
        sets.push((ms, rows));
    }
    Ok(Outcome { sets, flow_source })
}

/// The markdown page and the plot.
pub fn render(p: &Params, o: &Outcome) -> (String, Plot) {
    let mut md = format!(
        "# {NAME}: spectral Bloom filters and count-min sketches, estimate errors\n\n\
         Broder & Mitzenmacher §9 (Cohen & Matias; Cormode & Muthukrishnan) and §8.1 (conservative update). \
         Every structure has the same number of counters C: spectral MS and MI C counters \
         (32-bit), RM a primary of C - ⌊C/3⌋ and a secondary of ⌊C/3⌋, k = {K}; count-min depth \
         {K} × width C/{K} (64-bit counters), plain and conservative (CU). Errors are over the \
         distinct keys: mean (estimate - truth), the fraction estimated wrong, the largest \
         error, keys below the truth. Seed {seed}.\n\n\
         Flows: {flows}.\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        seed = p.seed,
        flows = o.flow_source.describe(),
    );
    for (ms, rows) in &o.sets {
        md.push_str(&format!(
            "## {} — {}, {} distinct keys, N = {}\n\n",
            ms.name,
            ms.source,
            int(ms.keys.len() as u64),
            int(ms.total())
        ));
        let mut t = Table::new([
            "counters/key",
            "C",
            "structure",
            "mean error",
            "wrong",
            "max error",
            "below truth",
            "error > (e/w)·N",
        ]);
        for r in rows {
            for (j, e) in r.errors.iter().enumerate() {
                t.row([
                    num(r.per_key, 2),
                    int(r.counters),
                    KINDS[j].to_string(),
                    num(e.mean_error, 3),
                    rate(e.wrong),
                    int(e.max_error),
                    int(e.below),
                    if j >= 3 {
                        int(e.over_cm_bound)
                    } else {
                        "–".to_string()
                    },
                ]);
            }
        }
        md.push_str(&t.to_markdown());
        md.push('\n');
    }
    let mut plot = Plot::new(
        "Mean additive error per distinct key at equal counters (k = depth = 4)",
        "counters per distinct key",
        "mean (estimate - truth)",
    )
    .log_x()
    .log_y();
    for (si, (ms, rows)) in o.sets.iter().enumerate() {
        for (j, kind) in KINDS.iter().enumerate() {
            let pts: Vec<(f64, f64)> = rows
                .iter()
                .map(|r| (r.per_key, r.errors[j].mean_error))
                .filter(|&(_, y)| y > 0.0)
                .collect();
            plot.push(Series::new(
                format!("{kind}, {}", ms.name),
                pts,
                if si == 0 {
                    Style::LinePoints
                } else {
                    Style::Dashed
                },
                j,
            ));
        }
    }
    (md, plot)
}

/// Run at the size the options ask and write `sketch-errors.md` and `.svg`.
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
    fn quick_run_keeps_the_orders_and_bounds() {
        let p = Params::quick(1);
        let o = measure(&p).unwrap();
        assert_eq!(o.sets.len(), 2);
        for (ms, rows) in &o.sets {
            assert_eq!(ms.truth.iter().sum::<u64>(), ms.total());
            for r in rows {
                // MI ≤ MS and CU ≤ CM key by key (same hasher, same counters)
                assert_eq!(r.order_violations, 0, "{} C={}", ms.name, r.counters);
                // MS, MI and both count-mins never under-count
                for j in [0, 1, 3, 4] {
                    assert_eq!(r.errors[j].below, 0, "{} {}", ms.name, KINDS[j]);
                }
                // hence their mean errors are ordered too
                assert!(r.errors[1].mean_error <= r.errors[0].mean_error);
                assert!(r.errors[4].mean_error <= r.errors[3].mean_error);
                // count-min's guarantee: error > (e/w)·N for at most a fraction e^-4 of keys
                // (Markov per row, rows independent), with 4σ of a binomial count
                let d = ms.keys.len() as u64;
                let delta = (-(K as f64)).exp();
                let allowed = delta + 4.0 * rate_sigma(delta, d, 0.0);
                for j in [3, 4] {
                    let f = r.errors[j].over_cm_bound as f64 / d as f64;
                    assert!(f <= allowed, "{} {}: {f}", ms.name, KINDS[j]);
                }
            }
            // more counters, smaller errors (each size doubles C)
            for (j, kind) in KINDS.iter().enumerate() {
                let first = rows.first().unwrap().errors[j].mean_error.abs();
                let last = rows.last().unwrap().errors[j].mean_error.abs();
                assert!(last < first, "{} {kind}: {first} -> {last}", ms.name);
            }
            // conservative update is strictly better somewhere on a skewed stream
            assert!(rows
                .iter()
                .any(|r| r.errors[4].mean_error < r.errors[3].mean_error));
        }
        let (md, plot) = render(&p, &o);
        assert!(md.contains("## flows"));
        assert!(plot.to_svg().unwrap().contains("<svg"));
    }
}
