//! `heavy-flows`: Estan & Varghese's heavy-flow detection with a multistage filter of byte
//! counters, with and without conservative update, on a real packet capture.
//!
//! Simulates Broder & Mitzenmacher §8.1, "Recording
//! heavy flows": every packet is hashed into counters that add its bytes; a flow whose
//! minimum counter reaches a threshold T is reported heavy. A light flow is reported by
//! mistake when its counters are shared with heavy flows or with several light ones.
//! Conservative update (Broder & Mitzenmacher, Figure 2) raises each counter only to `max(counter, min + B)`,
//! which never lets an estimate grow past the plain one, so its reports are a subset.
//!
//! The counters are a [`CountMinSketch`] (`depth` stages of `width` counters — Estan &
//! Varghese's parallel multistage filter), plain and conservative, fed the bytes on the wire
//! of every IP packet of Debian `pathspider`'s `tests/data/real.pcap` (per 5-tuple flow, see
//! [`crate::pcap`]; a synthetic Zipf trace in quick runs without the file). The exact per-flow
//! byte counts decide which flows are truly heavy (≥ T, T a fraction of all bytes); reported:
//! true heavy flows, missed heavy flows (never: counts never under-estimate), false heavy
//! flows, against the stage width. Bound for the plain filter: a light flow of s bytes passes
//! a stage of w counters when the other bytes hashed to its counter reach T - s; the expected
//! other bytes are at most (N - s)/w, so by Markov and independent stages it passes all of them
//! with probability at most `min(1, (N - s)/(w(T - s)))^depth`, and the expected number of false
//! heavy flows is at most the sum of that over the light flows.

use bloomery::{Count, CountMinSketch, KeyHasher};
use rayon::prelude::*;

use crate::pcap::{self, FlowSource, FlowTrace};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "heavy-flows";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Stages (rows of the sketch).
    pub depth: u32,
    /// Counters per stage.
    pub widths: Vec<u64>,
    /// The threshold as a fraction of all bytes.
    pub threshold_fraction: f64,
    /// Allow the synthetic trace when the capture is missing.
    pub allow_synthetic: bool,
    /// Hasher seeds the false reports are averaged over (`seed`, `seed + 1`, …).
    pub seeds: u64,
    /// Seed of the hasher (and of the synthetic trace).
    pub seed: u64,
}

impl Params {
    /// The quick size: the whole capture (62,038 packets) is small enough for a debug build.
    pub fn quick(seed: u64) -> Self {
        Self {
            depth: 4,
            widths: vec![256, 512, 1024, 2048, 4096, 8192, 16384],
            threshold_fraction: 5e-4,
            allow_synthetic: true,
            seeds: 4,
            seed,
        }
    }

    /// The documented size: the same capture (required), more widths, 16 hasher seeds.
    pub fn full(seed: u64) -> Self {
        Self {
            widths: vec![128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536],
            allow_synthetic: false,
            seeds: 16,
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

/// One width.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Counters per stage.
    pub width: u64,
    /// Truly heavy flows.
    pub heavy: u64,
    /// Mean false heavy flows, plain filter (over the hasher seeds).
    pub false_plain: f64,
    /// Mean false heavy flows, conservative update.
    pub false_cu: f64,
    /// Bound on the plain filter's expected false heavy flows.
    pub bound_plain: f64,
    /// Heavy flows missed, summed over seeds (must be 0).
    pub missed: u64,
    /// Flows reported by CU but not by the plain filter, summed over seeds (must be 0).
    pub cu_not_plain: u64,
    /// Mean over seeds of the mean overestimate of the heavy flows' bytes, plain and CU.
    pub heavy_overestimate: (f64, f64),
}

/// Measure every width on a trace.
pub fn measure_trace(p: &Params, t: &FlowTrace) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(p.depth >= 1 && !t.flows.is_empty());
    let total = t.total_bytes();
    let threshold = ((total as f64 * p.threshold_fraction).ceil() as u64).max(1);
    let bytes: Vec<u64> = t.totals.iter().map(|x| x.bytes).collect();
    let heavy: Vec<bool> = bytes.iter().map(|&b| b >= threshold).collect();
    let n_heavy = heavy.iter().filter(|&&h| h).count() as u64;
    let keys: Vec<Vec<u8>> = t.flows.iter().map(|f| f.to_bytes()).collect();
    let rows = p
        .widths
        .par_iter()
        .map(|&w| -> anyhow::Result<Row> {
            let bound_plain: f64 = bytes
                .iter()
                .filter(|&&s| s < threshold)
                .map(|&s| {
                    let per_stage = (total - s) as f64 / (w as f64 * (threshold - s) as f64);
                    per_stage.min(1.0).powi(p.depth as i32)
                })
                .sum();
            let mut row = Row {
                width: w,
                heavy: n_heavy,
                false_plain: 0.0,
                false_cu: 0.0,
                bound_plain,
                missed: 0,
                cu_not_plain: 0,
                heavy_overestimate: (0.0, 0.0),
            };
            for s in 0..p.seeds {
                let hasher = KeyHasher::with_seed(p.seed.wrapping_add(s));
                let hashed: Vec<_> = keys.iter().map(|k| hasher.hash(k)).collect();
                let build = |cu: bool| {
                    CountMinSketch::builder()
                        .dimensions(w, p.depth)
                        .conservative(cu)
                        .hasher(hasher)
                        .try_build()
                };
                let (mut plain, mut cons) = (build(false)?, build(true)?);
                for &(f, b) in &t.packets {
                    plain.insert_many_hashed(hashed[f as usize], u64::from(b));
                    cons.insert_many_hashed(hashed[f as usize], u64::from(b));
                }
                let (mut over_p, mut over_c) = (0u64, 0u64);
                for (i, &h) in hashed.iter().enumerate() {
                    let (ep, ec) = (plain.count_hashed(h), cons.count_hashed(h));
                    let (rp, rc) = (ep >= threshold, ec >= threshold);
                    if heavy[i] {
                        row.missed += u64::from(!rp) + u64::from(!rc);
                        over_p += ep - bytes[i].min(ep);
                        over_c += ec - bytes[i].min(ec);
                    } else {
                        row.false_plain += f64::from(u8::from(rp));
                        row.false_cu += f64::from(u8::from(rc));
                    }
                    row.cu_not_plain += u64::from(rc && !rp);
                }
                let nh = n_heavy.max(1) as f64;
                row.heavy_overestimate.0 += over_p as f64 / nh;
                row.heavy_overestimate.1 += over_c as f64 / nh;
            }
            let s = p.seeds as f64;
            row.false_plain /= s;
            row.false_cu /= s;
            row.heavy_overestimate.0 /= s;
            row.heavy_overestimate.1 /= s;
            Ok(row)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The trace, its source and the rows.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The trace.
    pub trace: FlowTrace,
    /// Where it came from.
    pub source: FlowSource,
    /// Per width.
    pub rows: Vec<Row>,
}

/// Load the trace and measure.
pub fn measure(p: &Params) -> anyhow::Result<Outcome> {
    let (trace, source) = pcap::load_or_synthetic(NAME, p.allow_synthetic, p.seed)?;
    let rows = measure_trace(p, &trace)?;
    Ok(Outcome {
        trace,
        source,
        rows,
    })
}

/// The markdown page and the plot.
pub fn render(p: &Params, o: &Outcome) -> (String, Plot) {
    let total = o.trace.total_bytes();
    let threshold = ((total as f64 * p.threshold_fraction).ceil() as u64).max(1);
    let light = o.trace.flows.len() as u64 - o.rows.first().map_or(0, |r| r.heavy);
    let mut t = Table::new([
        "counters/stage",
        "memory (KiB)",
        "heavy flows",
        "false heavy: plain (bound)",
        "false heavy: plain",
        "false heavy: CU",
        "CU / plain",
        "missed",
        "heavy overestimate (bytes): plain",
        "CU",
    ]);
    for r in &o.rows {
        t.row([
            int(r.width),
            num((r.width * u64::from(p.depth) * 8) as f64 / 1024.0, 0),
            int(r.heavy),
            num(r.bound_plain, 1),
            num(r.false_plain, 2),
            num(r.false_cu, 2),
            if r.false_plain > 0.0 {
                num(r.false_cu / r.false_plain, 3)
            } else {
                "–".into()
            },
            int(r.missed),
            num(r.heavy_overestimate.0, 1),
            num(r.heavy_overestimate.1, 1),
        ]);
    }
    let mut md = format!(
        "# {NAME}: heavy flows with a multistage filter, with and without conservative update\n\n\
         Broder & Mitzenmacher §8.1 (Estan & Varghese). Trace: {src}: {pk} IP packets, {fl} flows \
         (5-tuples), {by} bytes on the wire ({nonip} frames without IP left out). A flow is \
         heavy when its exact byte count reaches T = {frac}·N = {thr} bytes; {light} flows are \
         light. Counters: `CountMinSketch` of depth {d} (stages) × width, plain and conservative \
         update (CU), 8-byte counters; every packet adds its bytes. Means over {seeds} hasher \
         seeds from {seed}. The bound is Markov's per stage, `min(1, (N-s)/(w(T-s)))^{d}`, summed \
         over the light flows.\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        src = o.source.describe(),
        pk = int(o.trace.packets.len() as u64),
        fl = int(o.trace.flows.len() as u64),
        by = int(total),
        nonip = int(o.trace.non_ip_frames),
        frac = p.threshold_fraction,
        thr = int(threshold),
        light = int(light),
        d = p.depth,
        seeds = p.seeds,
        seed = p.seed,
    );
    md.push_str(&t.to_markdown());
    let mut plot = Plot::new(
        format!(
            "Heavy flows (≥ {} bytes): false reports vs stage width, depth {}",
            int(threshold),
            p.depth
        ),
        "counters per stage",
        "false heavy flows (mean)",
    )
    .log_x()
    .log_y();
    let of = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        o.rows
            .iter()
            .map(|r| (r.width as f64, g(r)))
            .filter(|&(_, y)| y > 0.0)
            .collect()
    };
    plot.push(Series::new(
        "plain: Markov bound",
        of(&|r| r.bound_plain.min(light as f64)),
        Style::Dashed,
        0,
    ));
    plot.push(Series::new(
        "plain",
        of(&|r| r.false_plain),
        Style::LinePoints,
        0,
    ));
    plot.push(Series::new(
        "conservative update",
        of(&|r| r.false_cu),
        Style::LinePoints,
        1,
    ));
    plot.push(Series::new(
        "truly heavy flows",
        of(&|r| r.heavy as f64),
        Style::Line,
        2,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `heavy-flows.md` and `.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let o = measure(&p)?;
    let (md, plot) = render(&p, &o);
    write_report(opts, NAME, md, &plot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_never_misses_and_cu_reports_a_subset() {
        let p = Params::quick(1);
        let o = measure(&p).unwrap();
        assert_eq!(o.rows.len(), p.widths.len());
        assert!(o.rows[0].heavy > 0);
        for r in &o.rows {
            // counts never under-estimate: no heavy flow is missed
            assert_eq!(r.missed, 0, "w={}", r.width);
            // CU's estimates never exceed the plain ones: its reports are a subset
            assert_eq!(r.cu_not_plain, 0, "w={}", r.width);
            assert!(r.false_cu <= r.false_plain);
            assert!(r.heavy_overestimate.1 <= r.heavy_overestimate.0);
            // the plain filter stays under its Markov bound (Poisson-like count: 4σ + 1)
            assert!(
                r.false_plain <= r.bound_plain + 4.0 * r.bound_plain.sqrt() + 1.0,
                "w={}: {} > bound {}",
                r.width,
                r.false_plain,
                r.bound_plain
            );
        }
        // the smallest filter reports light flows; the largest reports (almost) none
        let (first, last) = (&o.rows[0], o.rows.last().unwrap());
        assert!(first.false_plain > last.false_plain);
        assert!(last.false_cu < 1.0);
        // conservative update helps where there are false reports to remove
        assert!(o
            .rows
            .iter()
            .any(|r| r.false_plain >= 1.0 && r.false_cu < r.false_plain));
        let (md, plot) = render(&p, &o);
        assert!(md.contains("| counters/stage"));
        assert!(plot.to_svg().unwrap().contains("<svg"));
    }
}
