//! `ip-traceback`: hash-based IP traceback (SPIE) with per-window packet digests in every
//! router, kept as Iterative Bloom Filters so a trace also shows how often a packet passed.
//!
//! Simulates Broder & Mitzenmacher §8.2, "IP
//! Traceback" (Snoeren et al.'s Source Path Isolation Engine): every router records a digest
//! of the packets it forwards; a victim traces a packet back by asking its router's neighbours
//! whether they forwarded it, and so on; "a false positive would lead to a branch, giving
//! multiple possible paths", and the scheme must decide "how much information to store and
//! when to discard stale information". Matsumoto, Hazeyama &
//! Kadobayashi (in Japanese; see docs/PAPERS.md) propose its Iterative Bloom Filter
//! for exactly these digests — rotated per time window and dropped whole, so its lack of
//! deletion does not matter — so that repeats of a packet are counted as well.
//!
//! The network is a random tree of routers grown by preferential attachment (a few hubs, many
//! leaves); packets follow the tree path. Time is cut into windows; in each, `packets`
//! background packets run between random routers and `attacks` attack packets from a few
//! attacker routers run to the victim (a leaf), each attack packet sent `1..=max_repeat` times
//! with identical content (a flood of one packet). Every router keeps one
//! [`IterativeBloomFilter`] per window with `bits(b · load)` (load: the packets it forwards in
//! that window, copies included, as SPIE sizes digests by link capacity) and k optimal for b, under
//! its own hash seed per router and window (as SPIE varies its hash functions); a router keeps
//! the last `retention` windows and drops the oldest when a new one starts.
//!
//! After the last window the victim traces every attack packet: in the packet's window,
//! breadth first from its own router, every router that answers "seen" asks its other
//! neighbours. Packets of dropped windows cannot be traced. Filters have no false negatives, so
//! every traceable trace contains the whole true path; false positives add routers. Each
//! router on the path also reports the IBF's count of the packet (Matsumoto, Hazeyama & Kadobayashi: the run of ones after
//! the first k positions), never below the true number of copies, and Matsumoto, Hazeyama & Kadobayashi eq. 9's estimate.

use anyhow::Context;
use bloomery::Hashed;
use bloomery::{params, Count, Filter, IterativeBloomFilter, KeyHasher, Stats};
use rayon::prelude::*;

use crate::measure::{key, Rng};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "ip-traceback";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Routers of the tree.
    pub routers: u64,
    /// Attacker routers.
    pub attackers: u64,
    /// Time windows simulated.
    pub windows: u64,
    /// Windows of digests a router keeps.
    pub retention: u64,
    /// Background packets per window.
    pub packets: u64,
    /// Distinct attack packets per window.
    pub attacks: u64,
    /// Copies of an attack packet: uniform in `1..=max_repeat`.
    pub max_repeat: u64,
    /// Digest sizes: bits per packet (copies included) a router forwards in a window.
    pub bits_per_packet: Vec<u64>,
    /// Seed of the topology, the traffic and the hashers.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: 300 routers, 4 windows of 10,000 background and 100 attack
    /// packets, 2 kept.
    pub fn quick(seed: u64) -> Self {
        Self {
            routers: 300,
            attackers: 8,
            windows: 4,
            retention: 2,
            packets: 10_000,
            attacks: 100,
            max_repeat: 20,
            bits_per_packet: vec![2, 4, 6, 8, 10, 12, 16],
            seed,
        }
    }

    /// The documented size: 3,000 routers, 6 windows of 200,000 background and 1,000 attack
    /// packets, 3 kept.
    pub fn full(seed: u64) -> Self {
        Self {
            routers: 3_000,
            attackers: 20,
            windows: 6,
            retention: 3,
            packets: 200_000,
            attacks: 1_000,
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

/// One digest size.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    /// Bits per distinct packet.
    pub bits_per_packet: u64,
    /// Hash functions.
    pub k: u32,
    /// Digest bits of all routers in one window.
    pub bits_per_window: u64,
    /// Attack packets traced.
    pub traces: u64,
    /// Of those, in a window already dropped (cannot be traced).
    pub expired: u64,
    /// Traceable traces whose result contains the whole true path (must be all).
    pub path_found: u64,
    /// Sum of the true path lengths (routers) of the traceable traces.
    pub path_routers: u64,
    /// Sum of the routers in the traces' results.
    pub traced_routers: u64,
    /// Traces with at least one router off the true path.
    pub branched: u64,
    /// Queries to routers off the true path.
    pub off_path_queries: u64,
    /// Of those, answered "seen" (false positives).
    pub false_yes: u64,
    /// Expected false positives of those queries: the sum of the queried digests' `(ones/m)^k`.
    pub expected_yes: f64,
    /// Mean over the kept digests of Matsumoto, Hazeyama & Kadobayashi eq. 10 at their n and α.
    pub model_fpr: f64,
    /// Path routers whose count was below the packet's true copies (must be 0).
    pub undercounts: u64,
    /// Path routers whose count equals the true copies.
    pub exact_counts: u64,
    /// Sum over path routers of observed count / true copies.
    pub observed_ratio: f64,
    /// Sum over path routers of eq. 9 estimate / true copies.
    pub estimate_ratio: f64,
}

impl Row {
    /// Traceable traces.
    pub fn traced(&self) -> u64 {
        self.traces - self.expired
    }

    /// Mean routers off the true path per trace.
    pub fn false_routers(&self) -> f64 {
        (self.traced_routers - self.path_routers) as f64 / self.traced().max(1) as f64
    }

    /// Measured false-positive rate of the off-path queries.
    pub fn false_yes_rate(&self) -> f64 {
        self.false_yes as f64 / self.off_path_queries.max(1) as f64
    }

    /// Expected rate of those queries from the digests' fill.
    pub fn expected_rate(&self) -> f64 {
        self.expected_yes / self.off_path_queries.max(1) as f64
    }
}

/// The tree: parent (`u64::MAX` for the root), depth and neighbours of every router.
struct Tree {
    parent: Vec<u64>,
    depth: Vec<u32>,
    adj: Vec<Vec<u64>>,
}

impl Tree {
    /// Preferential attachment: router i links to an earlier router chosen with probability
    /// proportional to its degree.
    fn grow(n: u64, rng: &mut Rng) -> Self {
        let mut parent = vec![u64::MAX; n as usize];
        let mut depth = vec![0u32; n as usize];
        let mut adj = vec![Vec::new(); n as usize];
        let mut ends: Vec<u64> = vec![0];
        for i in 1..n {
            let p = ends[rng.below(ends.len() as u64) as usize];
            parent[i as usize] = p;
            depth[i as usize] = depth[p as usize] + 1;
            adj[i as usize].push(p);
            adj[p as usize].push(i);
            ends.extend([p, i]);
        }
        Self { parent, depth, adj }
    }

    /// The routers on the path from `a` to `b`, both included.
    fn path(&self, mut a: u64, mut b: u64) -> Vec<u64> {
        let (mut up, mut down) = (Vec::new(), Vec::new());
        while a != b {
            if self.depth[a as usize] >= self.depth[b as usize] {
                up.push(a);
                a = self.parent[a as usize];
            } else {
                down.push(b);
                b = self.parent[b as usize];
            }
        }
        up.push(a);
        up.extend(down.into_iter().rev());
        up
    }
}

/// An attack packet: id, window, source router, copies.
#[derive(Debug, Clone, Copy)]
struct Attack {
    id: u64,
    window: u64,
    src: u64,
    copies: u64,
}

/// The digests of one window: per router its filter and its own rate `(ones/m)^k`.
struct Window {
    index: u64,
    digests: Vec<(IterativeBloomFilter, f64)>,
    model: f64,
}

/// The packets of window `w` as (id, source, destination, copies), and its attacks.
fn traffic(p: &Params, w: u64, victim: u64, attackers: &[u64]) -> (Vec<[u64; 4]>, Vec<Attack>) {
    let mut rng = Rng::new(key(p.seed ^ 0x7AF, w));
    let base = w * (p.packets + p.attacks);
    let mut pk = Vec::with_capacity((p.packets + p.attacks) as usize);
    for j in 0..p.packets {
        let a = rng.below(p.routers);
        let b = (a + 1 + rng.below(p.routers - 1)) % p.routers;
        pk.push([base + j, a, b, 1]);
    }
    let mut attacks = Vec::new();
    for j in 0..p.attacks {
        let src = attackers[rng.below(attackers.len() as u64) as usize];
        let copies = 1 + rng.below(p.max_repeat);
        let id = base + p.packets + j;
        pk.push([id, src, victim, copies]);
        attacks.push(Attack {
            id,
            window: w,
            src,
            copies,
        });
    }
    (pk, attacks)
}

fn hasher_for(p: &Params, router: u64, window: u64) -> KeyHasher {
    KeyHasher::with_seed(key(p.seed ^ 0x5E1E, router * p.windows + window))
}

/// Build one window's digests.
fn build_window(
    p: &Params,
    tree: &Tree,
    w: u64,
    b: u64,
    k: u32,
    packets: &[[u64; 4]],
) -> anyhow::Result<Window> {
    let mut seen: Vec<Vec<(u64, u64)>> = vec![Vec::new(); p.routers as usize];
    for &[id, a, dst, copies] in packets {
        for r in tree.path(a, dst) {
            seen[r as usize].push((id, copies));
        }
    }
    let digests = seen
        .into_par_iter()
        .enumerate()
        .map(|(r, list)| {
            let m = (b * list.iter().map(|&(_, c)| c).sum::<u64>()).max(64);
            let h = hasher_for(p, r as u64, w);
            let mut f = IterativeBloomFilter::builder()
                .bits(m)
                .hashes(k)
                .hasher(h)
                .try_build()
                .with_context(|| format!("digest m={m} k={k}"))?;
            for (id, copies) in list {
                let x = h.hash(&key(p.seed, id));
                for _ in 0..copies {
                    f.insert_hashed(x);
                }
            }
            let own = params::fpr_from_fill(f.count_ones(), m, k);
            Ok((f, own))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let model = digests.iter().map(|(f, _)| f.model_fpr()).sum::<f64>() / digests.len() as f64;
    Ok(Window {
        index: w,
        digests,
        model,
    })
}

/// Trace one attack packet in its window's digests; add to the row.
fn trace(p: &Params, tree: &Tree, win: &Window, victim: u64, a: Attack, row: &mut Row) {
    let truth = tree.path(a.src, victim);
    let mut on_path = vec![false; p.routers as usize];
    for &r in &truth {
        on_path[r as usize] = true;
    }
    let hashed = |r: u64| -> Hashed { hasher_for(p, r, win.index).hash(&key(p.seed, a.id)) };
    let mut found = vec![false; p.routers as usize];
    found[victim as usize] = true;
    let mut queue = vec![victim];
    let mut traced = 1u64;
    while let Some(u) = queue.pop() {
        for &w in &tree.adj[u as usize] {
            if found[w as usize] {
                continue;
            }
            let (f, own) = &win.digests[w as usize];
            let hit = f.contains_hashed(hashed(w));
            if !on_path[w as usize] {
                row.off_path_queries += 1;
                row.false_yes += u64::from(hit);
                row.expected_yes += own;
            }
            if hit {
                found[w as usize] = true;
                traced += 1;
                queue.push(w);
            }
        }
    }
    row.path_routers += truth.len() as u64;
    row.traced_routers += traced;
    row.path_found += u64::from(truth.iter().all(|&r| found[r as usize]));
    row.branched += u64::from(traced > truth.len() as u64);
    for &r in &truth {
        let (f, _) = &win.digests[r as usize];
        let h = hashed(r);
        let observed = f.count_hashed(h);
        let t = a.copies as f64;
        row.undercounts += u64::from(observed < a.copies);
        row.exact_counts += u64::from(observed == a.copies);
        row.observed_ratio += observed as f64 / t;
        row.estimate_ratio += f.estimate_hashed(h) / t;
    }
}

/// Simulate every window and trace every attack packet, for every digest size.
pub fn measure(p: &Params) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(p.routers >= 3 && p.attackers >= 1 && p.retention >= 1 && p.max_repeat >= 1);
    let mut rng = Rng::new(p.seed ^ 0x70B0);
    let tree = Tree::grow(p.routers, &mut rng);
    let leaves: Vec<u64> = (0..p.routers)
        .filter(|&r| tree.adj[r as usize].len() == 1)
        .collect();
    let victim = leaves[rng.below(leaves.len() as u64) as usize];
    let attackers: Vec<u64> = (0..p.attackers)
        .map(|_| loop {
            let r = rng.below(p.routers);
            if r != victim {
                break r;
            }
        })
        .collect();
    p.bits_per_packet
        .iter()
        .map(|&b| {
            let k = params::optimal_k(1, b);
            let mut row = Row {
                bits_per_packet: b,
                k,
                ..Row::default()
            };
            let mut kept: std::collections::VecDeque<Window> = Default::default();
            let mut attacks = Vec::new();
            for w in 0..p.windows {
                let (packets, att) = traffic(p, w, victim, &attackers);
                attacks.extend(att);
                let win = build_window(p, &tree, w, b, k, &packets)?;
                row.bits_per_window = win.digests.iter().map(|(f, _)| f.bits()).sum();
                kept.push_back(win);
                if kept.len() as u64 > p.retention {
                    kept.pop_front();
                }
            }
            row.model_fpr = kept.iter().map(|w| w.model).sum::<f64>() / kept.len() as f64;
            let oldest = kept.front().map_or(0, |w| w.index);
            for a in attacks {
                row.traces += 1;
                if a.window < oldest {
                    row.expired += 1;
                    continue;
                }
                let win = &kept[(a.window - oldest) as usize];
                trace(p, &tree, win, victim, a, &mut row);
            }
            Ok(row)
        })
        .collect()
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row]) -> (String, Plot) {
    let mut t = Table::new([
        "bits/packet",
        "k",
        "digest bits / window",
        "traces",
        "expired",
        "true path found",
        "mean path routers",
        "mean false routers / trace",
        "traces with a false branch",
        "false \"seen\" rate (measured)",
        "expected from the digests' fill",
        "Matsumoto, Hazeyama & Kadobayashi eq. 10",
        "counts below truth",
        "counts exact",
        "mean count / copies",
        "mean eq. 9 estimate / copies",
    ]);
    for r in rows {
        let path = r.path_routers.max(1) as f64;
        t.row([
            r.bits_per_packet.to_string(),
            r.k.to_string(),
            int(r.bits_per_window),
            int(r.traces),
            int(r.expired),
            int(r.path_found),
            num(r.path_routers as f64 / r.traced().max(1) as f64, 2),
            rate(r.false_routers()),
            rate(r.branched as f64 / r.traced().max(1) as f64),
            rate(r.false_yes_rate()),
            rate(r.expected_rate()),
            rate(r.model_fpr),
            int(r.undercounts),
            rate(r.exact_counts as f64 / path),
            num(r.observed_ratio / path, 3),
            num(r.estimate_ratio / path, 3),
        ]);
    }
    let mut md = format!(
        "# {NAME}: hash-based IP traceback with per-window Iterative Bloom Filter digests\n\n\
         Broder & Mitzenmacher §8.2 (Snoeren et al., SPIE) with Matsumoto, Hazeyama & Kadobayashi's Iterative Bloom Filter as the \
         digest. A preferential-attachment tree of {r} routers; {w} windows, each with {pk} \
         background packets between random routers and {a} attack packets from {att} attacker \
         routers to the victim (a leaf), every attack packet sent 1..={rep} times unchanged. \
         Every router keeps one `IterativeBloomFilter` per window of b bits per packet it \
         forwarded, copies included (at least 64), k optimal for b, its own hash seed per window, and drops \
         digests older than {keep} windows. At the end the victim traces every attack packet \
         breadth first through the routers that answer \"seen\"; packets of dropped windows \
         expire. Each path router also reports the packet's IBF count (never below the true \
         copies) and Matsumoto, Hazeyama & Kadobayashi eq. 9's estimate (seed {seed}).\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        r = int(p.routers),
        w = p.windows,
        pk = int(p.packets),
        a = int(p.attacks),
        att = p.attackers,
        rep = p.max_repeat,
        keep = p.retention,
        seed = p.seed,
    );
    md.push_str(&t.to_markdown());

    let mut plot = Plot::new(
        format!(
            "IP traceback: false branches against digest size ({} routers)",
            int(p.routers)
        ),
        "digest bits per packet",
        "per trace / per query",
    )
    .log_y();
    let of = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|r| (r.bits_per_packet as f64, g(r)))
            .collect()
    };
    plot.push(Series::new(
        "false routers per trace",
        of(&|r| r.false_routers()),
        Style::LinePoints,
        0,
    ));
    plot.push(Series::new(
        "traces with a false branch",
        of(&|r| r.branched as f64 / r.traced().max(1) as f64),
        Style::LinePoints,
        1,
    ));
    plot.push(Series::new(
        "false \"seen\" per off-path query (measured)",
        of(&|r| r.false_yes_rate()),
        Style::Points,
        2,
    ));
    plot.push(Series::new(
        "expected from the digests' fill",
        of(&|r| r.expected_rate()),
        Style::Line,
        2,
    ));
    plot.push(Series::new(
        "mean IBF count / true copies on the path",
        of(&|r| r.observed_ratio / r.path_routers.max(1) as f64),
        Style::LinePoints,
        3,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `ip-traceback.md` and `ip-traceback.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let rows = measure(&p)?;
    let (md, plot) = render(&p, &rows);
    write_report(opts, NAME, md, &plot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{rate_sigma, within};

    #[test]
    fn quick_run_finds_every_path_and_never_undercounts() {
        let p = Params::quick(1);
        let rows = measure(&p).unwrap();
        let attacks = p.windows * p.attacks;
        let dropped = (p.windows - p.retention) * p.attacks;
        for r in &rows {
            assert_eq!(r.traces, attacks);
            // digests of dropped windows are gone: exactly those packets expire
            assert_eq!(r.expired, dropped);
            // no false negatives: the whole true path is in every trace
            assert_eq!(r.path_found, r.traced(), "b={}", r.bits_per_packet);
            assert!(r.traced_routers >= r.path_routers);
            // IBF counts are never below the copies sent
            assert_eq!(r.undercounts, 0);
            // the off-path answers follow the digests' own false-positive rate
            let (q, e) = (r.off_path_queries, r.expected_rate());
            assert!(q > 1000);
            assert!(
                within(r.false_yes_rate(), e, rate_sigma(e, q, 0.0), 5.0, 0.15),
                "b={}: {} vs {e}",
                r.bits_per_packet,
                r.false_yes_rate()
            );
        }
        let (first, last) = (&rows[0], &rows[rows.len() - 1]);
        assert!(first.false_routers() > 0.5);
        assert!(last.false_routers() < first.false_routers() / 20.0);
        // bigger digests over-count less
        let ratio = |r: &Row| r.observed_ratio / r.path_routers as f64;
        assert!(
            ratio(last) >= 1.0 && ratio(last) < ratio(first),
            "{} {}",
            ratio(first),
            ratio(last)
        );
        assert!(last.exact_counts > first.exact_counts);
        let (md, plot) = render(&p, &rows);
        assert!(md.contains("| bits/packet"));
        assert!(plot.to_svg().unwrap().contains("<svg"));
    }
}
