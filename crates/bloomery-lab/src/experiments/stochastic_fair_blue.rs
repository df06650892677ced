//! `stochastic-fair-blue`: Stochastic Fair Blue queue management with a counting Bloom filter
//! of the queued packets' flows, with and without moving hash functions.
//!
//! Simulates Broder & Mitzenmacher §7.2, "Queue
//! Management: Stochastic Fair Blue" (Feng, Shin, Kandlur & Saha): "each packet arrival
//! increments k counters of a counting Bloom filter based on ... hashes of the
//! source-destination pair ... When a packet is processed the corresponding counters are
//! decremented. Each Bloom filter entry has an associated value p_i ... \[which\] goes up by some
//! δ if ... the number of packets queued ... corresponding to that counter lies above some
//! threshold; similarly, if ... there are no packets queued ... the marking probability is
//! decreased ... The probability that a packet is marked ... is the minimum of the marking
//! probabilities associated with the k Bloom filter counters ... when it is above a certain
//! threshold, the router can limit the flow to a fixed amount of bandwidth." A false positive
//! is "a well-behaved flow \[that\] happens to hash into k counters that are also hashed into by
//! non-responsive flows"; the remedy is "to change the hash functions periodically".
//!
//! The queue's flow counts are a real [`CountingBloomFilter`] (m counters of 16 bits, k
//! hashes): an arrival inserts its flow id, a departure removes it; the bins' marking
//! probabilities are an array indexed by the filter's own positions ([`Hashed::indices`]).
//! Discrete time, one packet served per tick from a drop-tail FIFO of `buffer` packets.
//! `responsive` flows are AIMD (rate + `increase` per tick, halved on a drop at most once per
//! `rtt` ticks); `unresponsive` flows send at a fixed rate whatever happens. Blue updates a bin
//! at most once per `freeze` ticks: up by `delta` when it holds at least `bin_size` packets (or
//! the buffer overflowed), down by `delta / 10` when it is empty. A packet whose p_min is 1 goes
//! through a token bucket of `limit` packets per tick shared by all rate-limited flows;
//! otherwise it is dropped with probability p_min.
//!
//! **Moving hash functions** (Feng et al.): two filters with different hash seeds see every
//! arrival and departure; one decides, the other warms up; every `rehash` ticks they swap and
//! the old one restarts with a new seed (its counters rebuilt from the queue, its
//! probabilities zero). Without rehashing a flow keeps its bins.
//!
//! Measured per period of `rehash` ticks (after a warm-up period): a responsive flow is
//! **punished** when the mean p_min its packets met is at least 1/2 — it is treated like the
//! unresponsive flows, whose bins Blue holds near 1 (rate-limited at 1, dropped with p_min
//! just below). A flow is
//! **covered** when each of its k positions is also a position of an unresponsive flow — the
//! event 002 describes, of probability `(1-(1-1/m)^(kU))^k` ([`params::fpr_exact`] with U
//! items) for U unresponsive flows.

use anyhow::Context;
use bloomery::Hashed;
use bloomery::{params, CountingBloomFilter, Filter, KeyHasher, Remove};
use std::collections::VecDeque;

use crate::measure::{key, Rng};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "stochastic-fair-blue";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Responsive (AIMD) flows.
    pub responsive: u64,
    /// Unresponsive (constant rate) flows.
    pub unresponsive: u64,
    /// Rate of every unresponsive flow, packets per tick (the link serves 1).
    pub unresponsive_rate: f64,
    /// Buffer, packets.
    pub buffer: usize,
    /// Smallest bin size: a bin's marking probability rises when it holds at least
    /// `max(bin_size, ⌈k · buffer / m⌉)` packets (its share of the buffer; each packet counts in
    /// k of the m counters).
    pub bin_size: u32,
    /// Blue's step.
    pub delta: f64,
    /// Ticks between two updates of one bin.
    pub freeze: u64,
    /// Rate of the token bucket for rate-limited flows, packets per tick.
    pub limit: f64,
    /// AIMD: rate increase per tick.
    pub increase: f64,
    /// AIMD: ticks between two halvings.
    pub rtt: u64,
    /// Ticks per period (and between two rehashes when rehashing).
    pub period: u64,
    /// Periods measured (after one warm-up period).
    pub periods: u64,
    /// Hash functions (bins per flow).
    pub k: u32,
    /// Filter sizes: counters (bins).
    pub bins: Vec<u64>,
    /// Seed of the hashers and the flows.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: 40 responsive and 4 unresponsive flows, 8 periods of 4,000
    /// ticks.
    pub fn quick(seed: u64) -> Self {
        Self {
            responsive: 40,
            unresponsive: 4,
            unresponsive_rate: 0.5,
            buffer: 200,
            bin_size: 6,
            delta: 0.05,
            freeze: 10,
            limit: 0.02,
            increase: 2e-6,
            rtt: 100,
            period: 4_000,
            periods: 8,
            k: 2,
            bins: vec![8, 16, 32, 64, 128, 256],
            seed,
        }
    }

    /// The documented size: 100 responsive and 4 unresponsive flows, 30 periods of 10,000
    /// ticks, 8 to 1,024 bins.
    pub fn full(seed: u64) -> Self {
        Self {
            responsive: 100,
            period: 10_000,
            periods: 30,
            increase: 1e-6,
            bins: vec![8, 16, 32, 64, 128, 256, 512, 1024],
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

    fn flows(&self) -> usize {
        (self.responsive + self.unresponsive) as usize
    }
}

/// What one run (one size, with or without rehashing, or drop-tail) measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    /// Packets delivered by the unresponsive flows (measured periods).
    pub unresponsive_delivered: u64,
    /// Packets delivered in all (measured periods).
    pub delivered: u64,
    /// (flow, period) pairs of responsive flows measured.
    pub samples: u64,
    /// Of those, punished (the mean p_min of the flow's packets in the period ≥ 1/2).
    pub punished: u64,
    /// Of those, covered by the unresponsive flows' positions.
    pub covered: u64,
    /// Punished and covered.
    pub punished_covered: u64,
    /// Responsive flows punished in at least one period.
    pub flows_ever_punished: u64,
    /// The largest fraction of periods one responsive flow spent punished.
    pub worst_flow: f64,
}

impl Outcome {
    /// Share of the link the unresponsive flows got.
    pub fn unresponsive_share(&self) -> f64 {
        self.unresponsive_delivered as f64 / self.delivered.max(1) as f64
    }

    /// Fraction of (flow, period) samples punished.
    pub fn punished_rate(&self) -> f64 {
        self.punished as f64 / self.samples.max(1) as f64
    }

    /// Fraction of samples covered.
    pub fn covered_rate(&self) -> f64 {
        self.covered as f64 / self.samples.max(1) as f64
    }
}

/// One filter size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Counters (bins).
    pub bins: u64,
    /// `(1-(1-1/m)^(kU))^k`: the probability that a flow is covered.
    pub formula: f64,
    /// Fixed hash functions.
    pub fixed: Outcome,
    /// Moving hash functions.
    pub moving: Outcome,
}

/// One set of bins: the counting filter of queued flows, its hashes of every flow, the bins'
/// marking probabilities and last update times.
struct Bins {
    filter: CountingBloomFilter,
    bin_size: u32,
    hashed: Vec<Hashed>,
    p: Vec<f64>,
    last: Vec<u64>,
}

impl Bins {
    fn new(p: &Params, m: u64, seed: u64, queue: &VecDeque<usize>) -> anyhow::Result<Self> {
        let hasher = KeyHasher::with_seed(seed);
        let mut filter = CountingBloomFilter::builder()
            .counters(m)
            .hashes(p.k)
            .counter_width(16)
            .hasher(hasher)
            .try_build()
            .with_context(|| format!("counting filter m={m}"))?;
        let hashed: Vec<Hashed> = (0..p.flows() as u64)
            .map(|f| hasher.hash(&key(p.seed, f)))
            .collect();
        for &f in queue {
            filter.insert_hashed(hashed[f]);
        }
        let share = (u64::from(p.k) * p.buffer as u64).div_ceil(m);
        Ok(Self {
            filter,
            bin_size: p.bin_size.max(u32::try_from(share).unwrap_or(u32::MAX)),
            hashed,
            p: vec![0.0; m as usize],
            last: vec![0; m as usize],
        })
    }

    fn positions(&self, f: usize) -> impl Iterator<Item = u64> {
        self.hashed[f].indices(self.filter.hashes(), self.filter.counter_len())
    }

    /// Blue's update of flow f's bins at an arrival; returns p_min.
    fn arrive(&mut self, p: &Params, f: usize, now: u64) -> f64 {
        let mut pmin = f64::INFINITY;
        let pos: Vec<u64> = self.positions(f).collect();
        for i in pos {
            let (q, b) = (self.filter.counters().get(i), i as usize);
            if now >= self.last[b] + p.freeze {
                if q >= self.bin_size {
                    self.p[b] = (self.p[b] + p.delta).min(1.0);
                    self.last[b] = now;
                } else if q == 0 {
                    self.p[b] = (self.p[b] - p.delta / 10.0).max(0.0);
                    self.last[b] = now;
                }
            }
            pmin = pmin.min(self.p[b]);
        }
        pmin
    }

    /// The buffer overflowed on flow f's packet: raise its bins.
    fn overflow(&mut self, p: &Params, f: usize, now: u64) {
        let pos: Vec<u64> = self.positions(f).collect();
        for i in pos {
            let b = i as usize;
            if now >= self.last[b] + p.freeze {
                self.p[b] = (self.p[b] + p.delta).min(1.0);
                self.last[b] = now;
            }
        }
    }

    /// Is responsive flow f covered by the unresponsive flows' positions?
    fn covered(&self, p: &Params, f: usize) -> bool {
        let bad: Vec<u64> = (p.responsive as usize..p.flows())
            .flat_map(|u| self.positions(u))
            .collect();
        self.positions(f).all(|i| bad.contains(&i))
    }
}

/// How the queue decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    DropTail,
    Fixed,
    Moving,
}

/// Simulate one queue.
fn simulate(p: &Params, m: u64, mode: Mode) -> anyhow::Result<Outcome> {
    let nf = p.flows();
    let nr = p.responsive as usize;
    let mut rng = Rng::new(p.seed ^ 0x5FB);
    let mut queue: VecDeque<usize> = VecDeque::with_capacity(p.buffer);
    let mut epoch = 0u64;
    let seed_of = |e: u64| key(p.seed ^ 0xB1E, e);
    let mut active = Bins::new(p, m, seed_of(0), &queue)?;
    let mut standby = Bins::new(p, m, seed_of(1), &queue)?;
    let fair = 1.0 / nf as f64;
    let mut rate: Vec<f64> = (0..nf)
        .map(|f| if f < nr { fair } else { p.unresponsive_rate })
        .collect();
    let mut acc: Vec<f64> = (0..nf).map(|_| rng.below(1000) as f64 / 1000.0).collect();
    let mut last_cut = vec![0u64; nf];
    let mut tokens = 0.0f64;
    let mut out = Outcome::default();
    let mut delivered = vec![0u64; nf];
    // per responsive flow in this period: arrivals, sum of their p_min
    let mut arrivals = vec![(0u64, 0.0f64); nr];
    let mut punished_periods = vec![0u64; nr];
    let mut covered_now: Vec<bool> = (0..nr).map(|f| active.covered(p, f)).collect();
    let ticks = p.period * (p.periods + 1);
    for now in 0..ticks {
        if now > 0 && now % p.period == 0 {
            // close a period
            if now > p.period {
                for f in 0..nr {
                    let (a, sum) = arrivals[f];
                    let pun = a > 0 && sum >= a as f64 / 2.0;
                    out.samples += 1;
                    out.punished += u64::from(pun);
                    out.covered += u64::from(covered_now[f]);
                    out.punished_covered += u64::from(pun && covered_now[f]);
                    punished_periods[f] += u64::from(pun);
                }
                out.delivered += delivered.iter().sum::<u64>();
                out.unresponsive_delivered += delivered[nr..].iter().sum::<u64>();
            }
            delivered.iter_mut().for_each(|d| *d = 0);
            arrivals.iter_mut().for_each(|a| *a = (0, 0.0));
            if mode == Mode::Moving {
                epoch += 1;
                std::mem::swap(&mut active, &mut standby);
                standby = Bins::new(p, m, seed_of(epoch + 1), &queue)?;
                covered_now = (0..nr).map(|f| active.covered(p, f)).collect();
            }
        }
        tokens = (tokens + p.limit).min(5.0);
        for f in 0..nf {
            if f < nr {
                rate[f] += p.increase;
            }
            acc[f] += rate[f];
            while acc[f] >= 1.0 {
                acc[f] -= 1.0;
                let mut drop = false;
                if mode != Mode::DropTail {
                    let pmin = active.arrive(p, f, now);
                    if mode == Mode::Moving {
                        standby.arrive(p, f, now);
                    }
                    if f < nr {
                        arrivals[f].0 += 1;
                        arrivals[f].1 += pmin;
                    }
                    if pmin >= 1.0 {
                        if tokens >= 1.0 {
                            tokens -= 1.0;
                        } else {
                            drop = true;
                        }
                    } else {
                        drop = rng.chance(pmin);
                    }
                }
                if !drop && queue.len() >= p.buffer {
                    drop = true;
                    if mode != Mode::DropTail {
                        active.overflow(p, f, now);
                        if mode == Mode::Moving {
                            standby.overflow(p, f, now);
                        }
                    }
                }
                if drop {
                    if f < nr && now >= last_cut[f] + p.rtt {
                        rate[f] = (rate[f] / 2.0).max(1e-3);
                        last_cut[f] = now;
                    }
                } else {
                    queue.push_back(f);
                    active.filter.insert_hashed(active.hashed[f]);
                    standby.filter.insert_hashed(standby.hashed[f]);
                }
            }
        }
        if let Some(f) = queue.pop_front() {
            delivered[f] += 1;
            for b in [&mut active, &mut standby] {
                b.filter
                    .remove_hashed(b.hashed[f])
                    .map_err(|e| anyhow::anyhow!("departure of a queued flow refused: {e:?}"))?;
            }
        }
    }
    out.flows_ever_punished = punished_periods.iter().filter(|&&c| c > 0).count() as u64;
    out.worst_flow = punished_periods.iter().copied().max().unwrap_or(0) as f64 / p.periods as f64;
    Ok(out)
}

/// The drop-tail baseline and every size with fixed and moving hash functions.
pub fn measure(p: &Params) -> anyhow::Result<(Outcome, Vec<Row>)> {
    anyhow::ensure!(p.responsive >= 2 && p.unresponsive >= 1 && p.period > 0 && p.periods > 0);
    let base = simulate(p, 1, Mode::DropTail)?;
    let rows = p
        .bins
        .iter()
        .map(|&m| {
            let (fixed, moving) = rayon::join(
                || simulate(p, m, Mode::Fixed),
                || simulate(p, m, Mode::Moving),
            );
            Ok(Row {
                bins: m,
                formula: params::fpr_exact(p.unresponsive, m, p.k),
                fixed: fixed?,
                moving: moving?,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((base, rows))
}

/// The markdown page and the plot.
pub fn render(p: &Params, base: &Outcome, rows: &[Row]) -> (String, Plot) {
    let mut t = Table::new([
        "bins m",
        "unresponsive share (fixed / moving)",
        "covered: formula",
        "covered (fixed / moving)",
        "punished (fixed / moving)",
        "punished and covered (fixed / moving)",
        "flows ever punished (fixed / moving)",
        "worst flow's punished periods (fixed / moving)",
    ]);
    let pair = |a: String, b: String| format!("{a} / {b}");
    for r in rows {
        let (f, v) = (&r.fixed, &r.moving);
        t.row([
            int(r.bins),
            pair(
                num(f.unresponsive_share(), 3),
                num(v.unresponsive_share(), 3),
            ),
            rate(r.formula),
            pair(rate(f.covered_rate()), rate(v.covered_rate())),
            pair(rate(f.punished_rate()), rate(v.punished_rate())),
            pair(int(f.punished_covered), int(v.punished_covered)),
            pair(int(f.flows_ever_punished), int(v.flows_ever_punished)),
            pair(num(f.worst_flow, 3), num(v.worst_flow, 3)),
        ]);
    }
    let mut md = format!(
        "# {NAME}: Stochastic Fair Blue with a counting Bloom filter of queued flows\n\n\
         Broder & Mitzenmacher §7.2 (Feng et al.). One link serving one packet per tick, a {buf}-packet \
         FIFO; {r} responsive AIMD flows and {u} unresponsive flows at {ur} packets per tick \
         each ({load:.1}× the link). The queue's flows are counted in a `CountingBloomFilter` \
         (m counters, k = {k}, 16-bit counters); each counter has a Blue marking probability \
         (+{d} when it holds ≥ max({bs}, ⌈k·{buf}/m⌉) packets or on overflow, −{d10} when empty, once per {fr} \
         ticks); p_min = 1 sends a packet through a {lim}-packet-per-tick token bucket shared \
         by the rate-limited flows. {n} periods of {per} ticks after one warm-up period; \
         \"moving\" swaps to a warmed-up filter with a new hash seed every period. A flow is \
         punished in a period when its packets met a mean p_min ≥ 1/2, covered \
         when all its k counters are also counters of unresponsive flows (formula \
         `(1-(1-1/m)^(kU))^k`). Plain drop-tail without SFB: the unresponsive flows take \
         {share:.1}% of the link.\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        buf = p.buffer,
        r = p.responsive,
        u = p.unresponsive,
        ur = p.unresponsive_rate,
        load = p.unresponsive as f64 * p.unresponsive_rate,
        k = p.k,
        d = p.delta,
        d10 = p.delta / 10.0,
        bs = p.bin_size,
        fr = p.freeze,
        lim = p.limit,
        n = p.periods,
        per = int(p.period),
        share = base.unresponsive_share() * 100.0,
    );
    md.push_str(&t.to_markdown());

    let mut plot = Plot::new(
        "Stochastic Fair Blue: responsive flows punished by false positives",
        "bins (counters) m",
        "fraction",
    )
    .log_x()
    .log_y();
    let of = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|r| (r.bins as f64, g(r))).collect()
    };
    plot.push(Series::new(
        "covered: formula",
        of(&|r| r.formula),
        Style::Line,
        0,
    ));
    plot.push(Series::new(
        "punished, fixed hashes",
        of(&|r| r.fixed.punished_rate()),
        Style::Points,
        1,
    ));
    plot.push(Series::new(
        "punished, moving hashes",
        of(&|r| r.moving.punished_rate()),
        Style::Points,
        2,
    ));
    plot.push(Series::new(
        "worst flow's punished periods, fixed",
        of(&|r| r.fixed.worst_flow),
        Style::LinePoints,
        1,
    ));
    plot.push(Series::new(
        "worst flow's punished periods, moving",
        of(&|r| r.moving.worst_flow),
        Style::LinePoints,
        2,
    ));
    plot.push(Series::new(
        "unresponsive share of the link (moving)",
        of(&|r| r.moving.unresponsive_share()),
        Style::Dashed,
        3,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `stochastic-fair-blue.md` and `.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let (base, rows) = measure(&p)?;
    let (md, plot) = render(&p, &base, &rows);
    write_report(opts, NAME, md, &plot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_limits_unresponsive_flows_and_punishes_the_covered() {
        let p = Params::quick(1);
        let (base, rows) = measure(&p).unwrap();
        // drop-tail: the unresponsive flows (2× the link) take most of it
        assert!(
            base.unresponsive_share() > 0.6,
            "{}",
            base.unresponsive_share()
        );
        for r in &rows {
            // a covered flow shares every counter with an unresponsive flow: SFB cannot tell
            // it apart, so it is punished; after a swap the fresh filter may still lag
            let (f, v) = (&r.fixed, &r.moving);
            assert!(
                f.punished_covered * 10 >= f.covered * 9,
                "m={}: {f:?}",
                r.bins
            );
            assert!(
                v.punished_covered * 10 >= v.covered * 6,
                "m={}: {v:?}",
                r.bins
            );
            // with moving hashes every period is a fresh draw: the covered fraction is a mean of
            // `periods` independent values in [0, 1] with mean f, variance ≤ f(1-f)
            let f = r.formula;
            let sigma = (f * (1.0 - f) / p.periods as f64).sqrt();
            let c = r.moving.covered_rate();
            assert!(
                (c - f).abs() <= 4.0 * sigma + 0.2 * f,
                "m={}: {c} vs {f}",
                r.bins
            );
        }
        for r in rows.iter().filter(|r| r.bins >= 32) {
            // SFB holds the unresponsive flows well below their drop-tail share (moving hashes
            // let them through while a fresh filter warms up)
            for (o, cap) in [(&r.fixed, 0.5), (&r.moving, 0.7)] {
                assert!(
                    o.unresponsive_share() < base.unresponsive_share() * cap,
                    "m={}: {} vs drop-tail {}",
                    r.bins,
                    o.unresponsive_share(),
                    base.unresponsive_share()
                );
            }
        }
        // fixed hashes punish the same covered flows period after period; moving ones spread
        // the punishment thinner over more flows
        let with_covered: Vec<&Row> = rows.iter().filter(|r| r.fixed.covered > 0).collect();
        assert!(with_covered.len() >= 3);
        for r in with_covered {
            assert!(r.fixed.worst_flow >= 0.75, "m={}", r.bins);
            assert!(r.moving.worst_flow < r.fixed.worst_flow, "m={}", r.bins);
            assert!(r.moving.flows_ever_punished > r.fixed.flows_ever_punished);
        }
        let (md, plot) = render(&p, &base, &rows);
        assert!(md.contains("| bins m"));
        assert!(plot.to_svg().unwrap().contains("<svg"));
    }
}
