//! `multicast`: Grönvall's multicast forwarding with one Bloom filter of group addresses per
//! interface, and group leaves handled by counting filters.
//!
//! Simulates Broder & Mitzenmacher §7.3, "Multicast":
//! instead of an interface list per multicast address, a router keeps a Bloom filter of
//! addresses per interface, and a packet arriving on one interface is forwarded on every other
//! interface whose filter matches its group. False positives forward packets onto links with no
//! subscriber; 002 leaves removal open ("one could imagine using a counting Bloom filter").
//!
//! A router with `interfaces` interfaces; each of `groups` group addresses is subscribed behind
//! each interface with probability `subscribe`. Phase 1 (static): one classic [`BloomFilter`]
//! per interface (`bits(m).hashes(k).seed(s)`, m = bits per group × the expected groups per
//! interface, k optimal); `packets` packets with a random group arrive on a random interface.
//! An extra forward is a match on an interface without a subscriber; its expected number is the
//! sum over those interfaces of `(1-(1-1/m)^(k n_j))^k` ([`params::fpr_exact`], n_j the groups
//! in interface j's filter). Phase 2 (churn): a fraction `churn` of every interface's groups
//! leaves and as many new groups join. A [`CountingBloomFilter`] per interface (m counters of
//! `counter_width` bits) removes the leaves with [`Remove::remove_hashed`]; a classic filter
//! cannot delete, so it keeps forwarding the groups that left. A missed delivery (a subscribed
//! interface whose filter does not match) must never happen.

use anyhow::Context;
use bloomery::Hashed;
use bloomery::{params, BloomFilter, CountingBloomFilter, Filter, KeyHasher, Remove};
use rayon::prelude::*;

use crate::measure::{fill_rel_sigma, key, Rng};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "multicast";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Interfaces of the router.
    pub interfaces: u64,
    /// Group addresses in use.
    pub groups: u64,
    /// Probability that a group has a subscriber behind a given interface.
    pub subscribe: f64,
    /// Fraction of every interface's groups that leave in phase 2 (as many new ones join).
    pub churn: f64,
    /// Packets routed per phase and size.
    pub packets: u64,
    /// Filter sizes: bits (or counters) per expected group of an interface.
    pub bits_per_group: Vec<u64>,
    /// Width of the counting filters' counters.
    pub counter_width: u32,
    /// Seed of the hasher, the memberships and the packets.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: 8 interfaces, 10,000 groups, 100,000 packets per phase.
    pub fn quick(seed: u64) -> Self {
        Self {
            interfaces: 8,
            groups: 10_000,
            subscribe: 0.1,
            churn: 0.5,
            packets: 100_000,
            bits_per_group: (2..=16).step_by(2).collect(),
            counter_width: 4,
            seed,
        }
    }

    /// The documented size: 16 interfaces, 200,000 groups, 2,000,000 packets per phase.
    pub fn full(seed: u64) -> Self {
        Self {
            interfaces: 16,
            groups: 200_000,
            packets: 2_000_000,
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

    /// Expected groups per interface (the filters' design load).
    pub fn expected_groups(&self) -> u64 {
        ((self.groups as f64 * self.subscribe).round() as u64).max(1)
    }
}

/// Extra and missed forwards of one phase.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Forwarding {
    /// Forwards to interfaces with a subscriber (needed).
    pub needed: u64,
    /// Forwards to interfaces without one.
    pub extra: u64,
    /// Subscribed interfaces whose filter did not match (must be 0).
    pub missed: u64,
    /// Expected extra forwards from the formula.
    pub predicted: f64,
}

impl Forwarding {
    fn add(self, o: Self) -> Self {
        Self {
            needed: self.needed + o.needed,
            extra: self.extra + o.extra,
            missed: self.missed + o.missed,
            predicted: self.predicted + o.predicted,
        }
    }
}

/// One filter size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Bits (counters) per expected group.
    pub bits_per_group: u64,
    /// Bits of a classic filter = counters of a counting one.
    pub m: u64,
    /// Hash functions.
    pub k: u32,
    /// Mean groups per interface before the churn.
    pub mean_groups: f64,
    /// Phase 1, classic filters.
    pub fixed: Forwarding,
    /// Phase 2, counting filters after the leaves were removed.
    pub counting: Forwarding,
    /// Phase 2, classic filters that could only add the joins.
    pub stale: Forwarding,
    /// Counters saturated in the counting filters (would make removal unsafe if > 0).
    pub saturated: u64,
}

/// Group memberships: `[interface][group]`, before and after the churn.
fn memberships(p: &Params) -> (Vec<Vec<bool>>, Vec<Vec<bool>>) {
    let mut rng = Rng::new(p.seed ^ 0x6C);
    let join = p.churn * p.subscribe / (1.0 - p.subscribe);
    let before: Vec<Vec<bool>> = (0..p.interfaces)
        .map(|_| (0..p.groups).map(|_| rng.chance(p.subscribe)).collect())
        .collect();
    let after = before
        .iter()
        .map(|row| {
            row.iter()
                .map(|&m| {
                    if m {
                        !rng.chance(p.churn)
                    } else {
                        rng.chance(join)
                    }
                })
                .collect()
        })
        .collect();
    (before, after)
}

/// Route `packets` packets through filters answering `matches(interface, group)`; `rate(j, g)`
/// is the probability that interface j (without a subscriber for g) matches g.
fn route(
    p: &Params,
    salt: u64,
    members: &[Vec<bool>],
    matches: impl Fn(usize, usize) -> bool + Sync,
    rate: impl Fn(usize, usize) -> f64 + Sync,
) -> Forwarding {
    (0..p.packets)
        .into_par_iter()
        .map(|i| {
            let mut rng = Rng::new(key(p.seed ^ salt, i));
            let g = rng.below(p.groups) as usize;
            let ingress = rng.below(p.interfaces) as usize;
            let mut f = Forwarding::default();
            for (j, m) in members.iter().enumerate() {
                if j == ingress {
                    continue;
                }
                let hit = matches(j, g);
                if m[g] {
                    f.needed += u64::from(hit);
                    f.missed += u64::from(!hit);
                } else {
                    f.extra += u64::from(hit);
                    f.predicted += rate(j, g);
                }
            }
            f
        })
        .reduce(Forwarding::default, Forwarding::add)
}

/// Build the filters and route both phases for every size.
pub fn measure(p: &Params) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(p.interfaces >= 2 && p.groups >= 1 && p.subscribe < 1.0);
    let hasher = KeyHasher::with_seed(p.seed);
    let hashed: Vec<Hashed> = (0..p.groups)
        .map(|g| hasher.hash(&key(p.seed, g)))
        .collect();
    let (before, after) = memberships(p);
    let count = |ms: &[Vec<bool>]| -> Vec<u64> {
        ms.iter()
            .map(|r| r.iter().filter(|&&b| b).count() as u64)
            .collect()
    };
    let (n_before, n_after) = (count(&before), count(&after));
    // groups a classic filter holds after the churn: the old ones plus the joins
    let n_stale: Vec<u64> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| b.iter().zip(a).filter(|(&x, &y)| x || y).count() as u64)
        .collect();
    let n0 = p.expected_groups();
    p.bits_per_group
        .iter()
        .map(|&b| {
            let m = b * n0;
            let k = params::optimal_k(n0, m);
            let classic = || -> anyhow::Result<BloomFilter> {
                let f = BloomFilter::builder()
                    .bits(m)
                    .hashes(k)
                    .seed(p.seed)
                    .try_build()
                    .with_context(|| format!("classic filter m={m} k={k}"))?;
                anyhow::ensure!(f.hasher() == &hasher);
                Ok(f)
            };
            let mut fixed = Vec::new();
            let mut counting = Vec::new();
            for row in &before {
                let mut f = classic()?;
                let mut c = CountingBloomFilter::builder()
                    .counters(m)
                    .hashes(k)
                    .counter_width(p.counter_width)
                    .seed(p.seed)
                    .try_build()
                    .with_context(|| format!("counting filter m={m} k={k}"))?;
                anyhow::ensure!(c.hasher() == &hasher);
                for (g, _) in row.iter().enumerate().filter(|(_, &x)| x) {
                    f.insert_hashed(hashed[g]);
                    c.insert_hashed(hashed[g]);
                }
                fixed.push(f);
                counting.push(c);
            }
            let fpr = |n: &[u64], j: usize| params::fpr_exact(n[j], m, k);
            let phase1 = route(
                p,
                0xF1,
                &before,
                |j, g| fixed[j].contains_hashed(hashed[g]),
                |j, _| fpr(&n_before, j),
            );
            // the churn: counting filters remove the leaves, classic ones can only add
            let mut stale = fixed;
            for (j, (b, a)) in before.iter().zip(&after).enumerate() {
                for g in 0..p.groups as usize {
                    match (b[g], a[g]) {
                        (true, false) => counting[j]
                            .remove_hashed(hashed[g])
                            .map_err(|e| anyhow::anyhow!("remove group {g}: {e:?}"))?,
                        (false, true) => {
                            counting[j].insert_hashed(hashed[g]);
                            stale[j].insert_hashed(hashed[g]);
                        }
                        _ => {}
                    }
                }
            }
            let phase2 = route(
                p,
                0xF2,
                &after,
                |j, g| counting[j].contains_hashed(hashed[g]),
                |j, _| fpr(&n_after, j),
            );
            let stale_fw = route(
                p,
                0xF2,
                &after,
                |j, g| stale[j].contains_hashed(hashed[g]),
                |j, g| {
                    if before[j][g] {
                        1.0
                    } else {
                        fpr(&n_stale, j)
                    }
                },
            );
            Ok(Row {
                bits_per_group: b,
                m,
                k,
                mean_groups: n_before.iter().sum::<u64>() as f64 / p.interfaces as f64,
                fixed: phase1,
                counting: phase2,
                stale: stale_fw,
                saturated: counting.iter().map(|c| c.saturated_counters()).sum(),
            })
        })
        .collect()
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row]) -> (String, Plot) {
    let per = |x: f64| x / p.packets as f64;
    let mut t = Table::new([
        "bits/group",
        "m",
        "k",
        "needed / pkt",
        "extra / pkt (formula)",
        "extra / pkt (measured)",
        "missed",
        "after churn: counting extra (formula)",
        "counting extra (measured)",
        "counting missed",
        "classic, no deletion: extra",
        "saturated counters",
    ]);
    for r in rows {
        t.row([
            r.bits_per_group.to_string(),
            int(r.m),
            r.k.to_string(),
            num(per(r.fixed.needed as f64), 3),
            rate(per(r.fixed.predicted)),
            rate(per(r.fixed.extra as f64)),
            int(r.fixed.missed),
            rate(per(r.counting.predicted)),
            rate(per(r.counting.extra as f64)),
            int(r.counting.missed),
            rate(per(r.stale.extra as f64)),
            int(r.saturated),
        ]);
    }
    let missed: u64 = rows
        .iter()
        .map(|r| r.fixed.missed + r.counting.missed)
        .sum();
    let mut md = format!(
        "# {NAME}: multicast forwarding with a Bloom filter per interface\n\n\
         Broder & Mitzenmacher §7.3 (Grönvall). A router with {i} interfaces; each of {g} groups is \
         subscribed behind each interface with probability {s}, so about {n0} groups per \
         interface. Every interface keeps a classic `BloomFilter` (`bits(m).hashes(k).seed({seed})`, \
         m = bits per group × {n0}, k optimal); {pk} packets per phase arrive with a random group \
         on a random interface and are forwarded on every other interface whose filter matches. \
         Then {churn:.0}% of every interface's groups leave and as many join: \
         `CountingBloomFilter`s ({w}-bit counters, m counters — {w}× the memory) remove the \
         leaves, classic filters can only add the joins. Formula: expected extra forwards = \
         Σ over interfaces without a subscriber of `(1-(1-1/m)^(k n_j))^k`; a group that left \
         counts 1 for the classic filter that still holds it.\n\n\
         ![{NAME}]({NAME}.svg)\n\n\
         Missed deliveries over all sizes and both phases: {missed}.\n\n",
        i = p.interfaces,
        g = int(p.groups),
        s = p.subscribe,
        n0 = int(p.expected_groups()),
        seed = p.seed,
        pk = int(p.packets),
        churn = p.churn * 100.0,
        w = p.counter_width,
        missed = int(missed),
    );
    md.push_str(&t.to_markdown());

    let mut plot = Plot::new(
        format!(
            "Multicast: extra forwards per packet vs filter size ({} interfaces)",
            p.interfaces
        ),
        "bits (counters) per group",
        "extra forwarded packets per packet",
    )
    .log_y();
    let of = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|r| (r.bits_per_group as f64, g(r)))
            .collect()
    };
    plot.push(Series::new(
        "classic, static: formula",
        of(&|r| per(r.fixed.predicted)),
        Style::Line,
        0,
    ));
    plot.push(Series::new(
        "classic, static: measured",
        of(&|r| per(r.fixed.extra as f64)),
        Style::Points,
        0,
    ));
    plot.push(Series::new(
        "counting, after churn: formula",
        of(&|r| per(r.counting.predicted)),
        Style::Dashed,
        1,
    ));
    plot.push(Series::new(
        "counting, after churn: measured",
        of(&|r| per(r.counting.extra as f64)),
        Style::Points,
        1,
    ));
    plot.push(Series::new(
        "classic without deletion, after churn: measured",
        of(&|r| per(r.stale.extra as f64)),
        Style::LinePoints,
        2,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `multicast.md` and `multicast.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let rows = measure(&p)?;
    let (md, plot) = render(&p, &rows);
    write_report(opts, NAME, md, &plot)
}

/// σ of an extra-forward count around its expectation. Packets reuse the same groups, so a
/// false-positive (interface, group) pair is hit `c = packets·(I-1)/(groups·I)` times on
/// average: the variance is `predicted·(c+1)` (which pairs are false positives, then how often
/// they are hit), plus the fluctuation of the interfaces' fills.
pub fn extra_sigma(p: &Params, r: &Row, f: &Forwarding) -> f64 {
    let i = p.interfaces as f64;
    let c = p.packets as f64 * (i - 1.0) / (p.groups as f64 * i);
    let rel = fill_rel_sigma(p.expected_groups(), r.m, r.k) / i.sqrt();
    (f.predicted * (c + 1.0) + (f.predicted * rel).powi(2)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::within;

    #[test]
    fn quick_run_never_misses_a_delivery() {
        let p = Params::quick(1);
        let rows = measure(&p).unwrap();
        assert_eq!(rows.len(), p.bits_per_group.len());
        for r in &rows {
            // no false negatives, before and after deletions
            assert_eq!(r.fixed.missed, 0, "b={}", r.bits_per_group);
            assert_eq!(r.counting.missed, 0, "b={}", r.bits_per_group);
            assert_eq!(r.stale.missed, 0, "b={}", r.bits_per_group);
            assert_eq!(r.saturated, 0);
            assert!(r.fixed.needed > 0);
            // extra forwards follow the formula (5σ plus a 5% model margin)
            for f in [&r.fixed, &r.counting, &r.stale] {
                assert!(
                    within(
                        f.extra as f64,
                        f.predicted,
                        extra_sigma(&p, r, f),
                        5.0,
                        0.05
                    ),
                    "b={}: extra {} predicted {}",
                    r.bits_per_group,
                    f.extra,
                    f.predicted
                );
            }
            // deleting beats keeping the groups that left
            assert!(r.stale.extra > r.counting.extra);
        }
        assert!(rows
            .windows(2)
            .all(|w| w[1].fixed.predicted < w[0].fixed.predicted));
        let dir = tempfile::tempdir().unwrap();
        let (md, plot) = render(&p, &rows);
        let opts = RunOptions {
            out_dir: dir.path().join("out"),
            quick: true,
            seed: 1,
        };
        let report = write_report(&opts, NAME, md, &plot).unwrap();
        assert!(report.files.iter().all(|f| f.exists()));
        assert!(report.markdown.contains("| bits/group"));
    }
}
