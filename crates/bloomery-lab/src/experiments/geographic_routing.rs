//! `geographic-routing`: Hsiao's geographic routing over a recursive quad-tree of regions with
//! a Bloom filter of the reachable hosts per region and level.
//!
//! Simulates Broder & Mitzenmacher §6.3, "Geographic
//! Routing": the square space of side `2^L` is recursively cut into four squares down to unit
//! cells, giving `L + 1` levels; "each node contains a Bloom filter representing the list of
//! mobile hosts reachable through itself or through its three siblings at each level. Using
//! these filters, a source finds the level corresponding to the smallest geographic region that
//! currently contains it and its desired destination, and then forwards a message to the center
//! of the sibling at that level that contains the destination node. Intermediate nodes forward
//! the message appropriately, recursing down the implicit tree until the destination is
//! reached."
//!
//! Every region of level `l` (side `2^l`) has one classic [`BloomFilter`] of the hosts inside it,
//! `bits(b · h · 4^l).hashes(k)` for `b` bits per host and `h` hosts per unit cell on average
//! (k optimal for `b`), which every node of its parent region holds. A unit cell's node knows
//! its own hosts exactly. A message from a random host to another random host (not in the same
//! cell) starts at the source's cell; for `l = 0, 1, …` the node checks the three siblings of its
//! own level-`l` region and searches every sibling whose filter matches, nearest first: move to
//! the sibling's center, then recursively into its matching children, nearest first, down to a
//! cell, whose node checks its host list. A false positive sends the message into a region
//! without the destination (a **misroute**); the search backs out of it and goes on with the
//! next matching region. Filters have no false negatives, so every message is delivered.
//!
//! Distances are Euclidean between region centers (unit cells). **Stretch** is the distance
//! travelled over the straight-line distance between the two cells. The same search with
//! exact host lists gives the stretch the region hierarchy costs anyway; the false positives'
//! price is the rest. Its waypoints are a subsequence of the Bloom route's, so the Bloom route is
//! never shorter.

use anyhow::Context;
use bloomery::Hashed;
use bloomery::{params, BloomFilter, Filter, KeyHasher, Stats};
use rayon::prelude::*;

use crate::measure::{key, Rng};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "geographic-routing";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Levels below the whole square: the side is `2^levels` unit cells.
    pub levels: u32,
    /// Mean hosts per unit cell (hosts are placed uniformly at random).
    pub hosts_per_cell: u64,
    /// Messages routed per filter size.
    pub messages: u64,
    /// Filter sizes: bits per expected host of a region.
    pub bits_per_host: Vec<u64>,
    /// Seed of the hasher, the placement and the messages.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: a 16 × 16 grid, 4 hosts per cell (1,024 hosts), 5,000
    /// messages per size.
    pub fn quick(seed: u64) -> Self {
        Self {
            levels: 4,
            hosts_per_cell: 4,
            messages: 5_000,
            bits_per_host: vec![1, 2, 3, 4, 6, 8, 10, 12, 16],
            seed,
        }
    }

    /// The documented size: a 64 × 64 grid, 4 hosts per cell (16,384 hosts), 200,000
    /// messages per size.
    pub fn full(seed: u64) -> Self {
        Self {
            levels: 6,
            messages: 200_000,
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

    /// Side of the square in unit cells.
    pub fn side(&self) -> u64 {
        1 << self.levels
    }

    /// Hosts in all.
    pub fn hosts(&self) -> u64 {
        self.side() * self.side() * self.hosts_per_cell
    }
}

/// One filter size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Bits per expected host.
    pub bits_per_host: u64,
    /// Hash functions.
    pub k: u32,
    /// Bits of all filters of one level (the same for every level).
    pub bits_per_level: u64,
    /// Messages routed.
    pub messages: u64,
    /// Messages delivered (must be all).
    pub delivered: u64,
    /// Sum of the straight-line distances.
    pub direct: f64,
    /// Sum of the distances travelled with exact host lists.
    pub exact: f64,
    /// Sum of the distances travelled with the filters.
    pub travelled: f64,
    /// Messages whose filter route was shorter than the exact-list route (must be 0).
    pub shorter_than_exact: u64,
    /// Misroutes: searches entered into a region without the destination.
    pub misroutes: u64,
    /// Messages with at least one misroute.
    pub misrouted: u64,
    /// Per level: filter checks of regions without the destination.
    pub wrong_checks: Vec<u64>,
    /// Per level: of those, false matches.
    pub false_matches: Vec<u64>,
    /// Per level: the expected false matches of those checks, the sum of the checked filters'
    /// own rates `(ones/m)^k`.
    pub expected_matches: Vec<f64>,
    /// Per level: the exact formula at the mean load of a region.
    pub level_formula: Vec<f64>,
}

impl Row {
    /// Mean stretch with the filters (distance travelled / straight-line distance).
    pub fn stretch(&self) -> f64 {
        self.travelled / self.direct
    }

    /// Mean stretch with exact host lists.
    pub fn exact_stretch(&self) -> f64 {
        self.exact / self.direct
    }

    /// Misroutes per message.
    pub fn misroutes_per_message(&self) -> f64 {
        self.misroutes as f64 / self.messages as f64
    }

    /// Measured false-match rate of the level-`l` filters.
    pub fn measured_rate(&self, l: usize) -> f64 {
        self.false_matches[l] as f64 / self.wrong_checks[l].max(1) as f64
    }

    /// Expected false-match rate of the level-`l` checks from the checked filters' fill.
    pub fn expected_rate(&self, l: usize) -> f64 {
        self.expected_matches[l] / self.wrong_checks[l].max(1) as f64
    }
}

/// A region: level and coordinates in units of its side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Region {
    level: u32,
    x: u64,
    y: u64,
}

impl Region {
    fn cell(x: u64, y: u64) -> Self {
        Self { level: 0, x, y }
    }

    fn parent(self) -> Self {
        Self {
            level: self.level + 1,
            x: self.x / 2,
            y: self.y / 2,
        }
    }

    fn ancestor(self, level: u32) -> Self {
        let s = level - self.level;
        Self {
            level,
            x: self.x >> s,
            y: self.y >> s,
        }
    }

    fn children(self) -> [Self; 4] {
        let (l, x, y) = (self.level - 1, self.x * 2, self.y * 2);
        [(0, 0), (1, 0), (0, 1), (1, 1)].map(|(dx, dy)| Self {
            level: l,
            x: x + dx,
            y: y + dy,
        })
    }

    fn center(self) -> (f64, f64) {
        let s = (1u64 << self.level) as f64;
        ((self.x as f64 + 0.5) * s, (self.y as f64 + 0.5) * s)
    }
}

fn dist(a: (f64, f64), b: (f64, f64)) -> f64 {
    (a.0 - b.0).hypot(a.1 - b.1)
}

/// The state of one message.
struct Msg<'a, M: Fn(Region) -> (bool, f64)> {
    /// Does the region's filter match the destination, and its rate `(ones/m)^k`.
    matches: &'a M,
    /// The destination's cell.
    dest: Region,
    pos: (f64, f64),
    travelled: f64,
    misroutes: u64,
    /// Per level: (wrong-region checks, false matches, expected false matches).
    checks: Vec<(u64, u64, f64)>,
}

impl<M: Fn(Region) -> (bool, f64)> Msg<'_, M> {
    fn check(&mut self, r: Region) -> bool {
        let (hit, f) = (self.matches)(r);
        if !self.holds(r) {
            let c = &mut self.checks[r.level as usize];
            c.0 += 1;
            c.1 += u64::from(hit);
            c.2 += f;
        }
        hit
    }

    fn holds(&self, r: Region) -> bool {
        self.dest.ancestor(r.level) == r
    }

    fn go(&mut self, r: Region) {
        let c = r.center();
        self.travelled += dist(self.pos, c);
        self.pos = c;
    }

    /// Move into `r` (whose filter matched) and search it; true when delivered.
    fn search(&mut self, r: Region) -> bool {
        self.go(r);
        if !self.holds(r) {
            self.misroutes += 1;
        }
        if r.level == 0 {
            // the cell's node knows its hosts exactly
            return r == self.dest;
        }
        let mut kids: Vec<Region> = r
            .children()
            .into_iter()
            .filter(|&c| self.check(c))
            .collect();
        self.nearest_first(&mut kids);
        kids.into_iter().any(|c| self.search(c))
    }

    fn nearest_first(&self, rs: &mut [Region]) {
        let p = self.pos;
        rs.sort_by(|a, b| dist(p, a.center()).total_cmp(&dist(p, b.center())));
    }

    /// Route from the source cell up the levels; true when delivered.
    fn route(&mut self, src: Region, levels: u32) -> bool {
        if src == self.dest {
            return true;
        }
        for l in 0..levels {
            let own = src.ancestor(l);
            let mut sib: Vec<Region> = own
                .parent()
                .children()
                .into_iter()
                .filter(|&s| s != own && self.check(s))
                .collect();
            self.nearest_first(&mut sib);
            for s in sib {
                if self.search(s) {
                    return true;
                }
            }
        }
        false
    }
}

/// Place the hosts, build every level's filters and route the messages for every size.
pub fn measure(p: &Params) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!((1..=10).contains(&p.levels) && p.hosts_per_cell >= 1);
    let side = p.side();
    let hosts = p.hosts();
    // one hasher per level: the same hash reduced into filters of m and 4m bits would put a
    // key's bits at nearly proportional positions, so a parent's false match would predict
    // its children's
    let hashers: Vec<KeyHasher> = (0..p.levels)
        .map(|l| KeyHasher::with_seed(key(p.seed, u64::from(l))))
        .collect();
    let ids: Vec<Vec<Hashed>> = hashers
        .iter()
        .map(|h| (0..hosts).map(|i| h.hash(&key(p.seed, i))).collect())
        .collect();
    let mut rng = Rng::new(p.seed ^ 0x6E0);
    let cell: Vec<Region> = (0..hosts)
        .map(|_| Region::cell(rng.below(side), rng.below(side)))
        .collect();
    // the messages: (source host, destination host), in different cells
    let msgs: Vec<(usize, usize)> = (0..p.messages)
        .map(|i| {
            let mut r = Rng::new(key(p.seed ^ 0x3E5, i));
            loop {
                let (a, b) = (r.below(hosts) as usize, r.below(hosts) as usize);
                if cell[a] != cell[b] {
                    return (a, b);
                }
            }
        })
        .collect();
    let levels = p.levels;
    let index = |r: Region| (r.y * (side >> r.level) + r.x) as usize;
    // exact routes do not depend on the filter size
    let exact: Vec<Option<f64>> = msgs
        .par_iter()
        .map(|&(a, b)| {
            let dest = cell[b];
            let truth = |r: Region| (dest.ancestor(r.level) == r, 0.0);
            let mut m = Msg {
                matches: &truth,
                dest,
                pos: cell[a].center(),
                travelled: 0.0,
                misroutes: 0,
                checks: vec![(0, 0, 0.0); levels as usize],
            };
            (m.route(cell[a], levels) && m.misroutes == 0).then_some(m.travelled)
        })
        .collect();
    let exact: Vec<f64> = exact
        .into_iter()
        .collect::<Option<_>>()
        .context("an exact-list route failed (a bug in the simulation)")?;
    p.bits_per_host
        .iter()
        .map(|&b| {
            let k = params::optimal_k(p.hosts_per_cell, b * p.hosts_per_cell);
            // filters[l][index]: the hosts inside each region of level l
            let (mut filters, mut rates, mut level_formula) = (Vec::new(), Vec::new(), Vec::new());
            for l in 0..levels {
                let per_side = side >> l;
                let load = p.hosts_per_cell << (2 * l);
                let m = b * load;
                let empty = BloomFilter::builder()
                    .bits(m)
                    .hashes(k)
                    .hasher(hashers[l as usize])
                    .try_build()
                    .with_context(|| format!("filter m={m} k={k}"))?;
                let mut fs = vec![empty; (per_side * per_side) as usize];
                for (h, c) in cell.iter().enumerate() {
                    fs[index(c.ancestor(l))].insert_hashed(ids[l as usize][h]);
                }
                let own: Vec<f64> = fs
                    .iter()
                    .map(|f| params::fpr_from_fill(f.count_ones(), m, k))
                    .collect();
                rates.push(own);
                level_formula.push(params::fpr_exact(load, m, k));
                filters.push(fs);
            }
            let bits_per_level = b * hosts;
            // (delivered, shorter, misroutes, misrouted, travelled, direct, checks per level)
            type Acc = (u64, u64, u64, u64, f64, f64, Vec<(u64, u64, f64)>);
            let zero = || -> Acc { (0, 0, 0, 0, 0.0, 0.0, vec![(0, 0, 0.0); levels as usize]) };
            let acc = msgs
                .par_iter()
                .zip(&exact)
                .map(|(&(a, d), &ex)| {
                    let dest = cell[d];
                    let matches = |r: Region| {
                        let (l, i) = (r.level as usize, index(r));
                        (filters[l][i].contains_hashed(ids[l][d]), rates[l][i])
                    };
                    let mut m = Msg {
                        matches: &matches,
                        dest,
                        pos: cell[a].center(),
                        travelled: 0.0,
                        misroutes: 0,
                        checks: vec![(0, 0, 0.0); levels as usize],
                    };
                    let ok = m.route(cell[a], levels);
                    (
                        u64::from(ok),
                        u64::from(m.travelled < ex - 1e-9),
                        m.misroutes,
                        u64::from(m.misroutes > 0),
                        m.travelled,
                        dist(cell[a].center(), dest.center()),
                        m.checks,
                    )
                })
                .reduce(zero, |a, b| {
                    (
                        a.0 + b.0,
                        a.1 + b.1,
                        a.2 + b.2,
                        a.3 + b.3,
                        a.4 + b.4,
                        a.5 + b.5,
                        a.6.iter()
                            .zip(&b.6)
                            .map(|(x, y)| (x.0 + y.0, x.1 + y.1, x.2 + y.2))
                            .collect(),
                    )
                });
            Ok(Row {
                bits_per_host: b,
                k,
                bits_per_level,
                messages: p.messages,
                delivered: acc.0,
                shorter_than_exact: acc.1,
                misroutes: acc.2,
                misrouted: acc.3,
                travelled: acc.4,
                direct: acc.5,
                exact: exact.iter().sum(),
                wrong_checks: acc.6.iter().map(|c| c.0).collect(),
                false_matches: acc.6.iter().map(|c| c.1).collect(),
                expected_matches: acc.6.iter().map(|c| c.2).collect(),
                level_formula,
            })
        })
        .collect()
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row]) -> (String, Plot) {
    let mut t = Table::new([
        "bits/host",
        "k",
        "filter bits per level",
        "messages",
        "delivered",
        "stretch (exact lists)",
        "stretch (filters)",
        "misroutes / msg",
        "misrouted msgs",
        "false-match rate per level 0..L-1: measured / expected from the checked filters' (ones/m)^k",
    ]);
    for r in rows {
        let levels: Vec<String> = (0..r.wrong_checks.len())
            .map(|l| {
                format!(
                    "{} / {}",
                    rate(r.measured_rate(l)),
                    rate(r.expected_rate(l))
                )
            })
            .collect();
        t.row([
            r.bits_per_host.to_string(),
            r.k.to_string(),
            int(r.bits_per_level),
            int(r.messages),
            int(r.delivered),
            num(r.exact_stretch(), 4),
            num(r.stretch(), 4),
            rate(r.misroutes_per_message()),
            rate(r.misrouted as f64 / r.messages as f64),
            levels.join("; "),
        ]);
    }
    let delivered: u64 = rows.iter().map(|r| r.delivered).sum();
    let sent: u64 = rows.iter().map(|r| r.messages).sum();
    let mut md = format!(
        "# {NAME}: geographic routing over a quad-tree of region filters\n\n\
         Broder & Mitzenmacher §6.3 (Hsiao). A {s} × {s} square of unit cells ({lv} levels of regions below \
         the whole square), {h} hosts placed uniformly ({hc} per cell on average). Every region \
         of level l has a classic `BloomFilter` of its hosts with b × {hc} × 4^l bits and k \
         optimal for b bits per host (`seed({seed})`), held by the nodes of its parent region; \
         a cell's node knows its own hosts exactly. {q} messages per size between random hosts in \
         different cells: the source checks its siblings level by level and searches every \
         matching region nearest first, descending through matching children to a cell; a false \
         match is a misroute the search backs out of. Stretch = distance travelled between \
         region centers / straight-line distance; exact host lists give the stretch of the \
         hierarchy itself.\n\n\
         ![{NAME}]({NAME}.svg)\n\n\
         Delivered: {d} of {sent}.\n\n",
        s = p.side(),
        lv = p.levels,
        h = int(p.hosts()),
        hc = p.hosts_per_cell,
        seed = p.seed,
        q = int(p.messages),
        d = int(delivered),
        sent = int(sent),
    );
    md.push_str(&t.to_markdown());

    let mut plot = Plot::new(
        format!(
            "Geographic routing: cost of false positives ({s}x{s} cells, {h} hosts)",
            s = p.side(),
            h = int(p.hosts())
        ),
        "bits per host (per level)",
        "per message",
    )
    .log_y();
    let of = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|r| (r.bits_per_host as f64, g(r)))
            .collect()
    };
    plot.push(Series::new(
        "misroutes per message",
        of(&|r| r.misroutes_per_message()),
        Style::LinePoints,
        0,
    ));
    plot.push(Series::new(
        "stretch - exact-list stretch",
        of(&|r| r.stretch() - r.exact_stretch()),
        Style::LinePoints,
        1,
    ));
    plot.push(Series::new(
        "fraction of messages misrouted",
        of(&|r| r.misrouted as f64 / r.messages as f64),
        Style::LinePoints,
        2,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `geographic-routing.md` and `.svg`.
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
    fn quick_run_delivers_and_false_matches_follow_the_filters() {
        let p = Params::quick(1);
        let rows = measure(&p).unwrap();
        assert_eq!(rows.len(), p.bits_per_host.len());
        for r in &rows {
            // no false negatives: every message arrives, never by a shorter path than the
            // exact lists' (their waypoints are a subsequence of the filter route's)
            assert_eq!(r.delivered, r.messages, "b={}", r.bits_per_host);
            assert_eq!(r.shorter_than_exact, 0);
            assert!(r.exact_stretch() >= 1.0 && r.stretch() >= r.exact_stretch());
            assert_eq!(r.misroutes == 0, r.travelled == r.exact);
            // in-situ false-match rate of every level against the filters' own rate
            for l in 0..r.wrong_checks.len() {
                let (q, e) = (r.wrong_checks[l], r.expected_rate(l));
                assert!(q > 1000, "b={} level {l}: {q} checks", r.bits_per_host);
                let sigma = rate_sigma(e, q, 0.0);
                assert!(
                    within(r.measured_rate(l), e, sigma, 5.0, 0.25),
                    "b={} level {l}: {} vs {e}",
                    r.bits_per_host,
                    r.measured_rate(l)
                );
            }
        }
        let (first, last) = (&rows[0], &rows[rows.len() - 1]);
        assert!(first.misroutes_per_message() > 1.0);
        assert!(last.misroutes_per_message() < first.misroutes_per_message() / 100.0);
        let (md, plot) = render(&p, &rows);
        assert!(md.contains("| bits/host"));
        assert!(plot.to_svg().unwrap().contains("<svg"));
    }
}
