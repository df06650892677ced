//! `resource-routing`: requests routed on a tree by unified and per-child Bloom filters, with
//! backtracking after false positives.
//!
//! Simulates Broder & Mitzenmacher §6.1, "A Basic Routing
//! Protocol" (the framework of Czerwinski et al.'s resource discovery service): nodes of a rooted
//! tree hold resources; each node keeps a filter of its own resources and a unified filter of
//! everything in its subtree — the OR of its own and its children's unified filters, built with
//! [`Merge::union_with`] — and uses the children's unified filters as its per-child lists. A
//! request climbs toward the root until a node's unified filter matches, then descends into
//! every child whose filter matches; "false positives ... may cause a routing request to go down
//! an incorrect path. In such a case backtracking up the tree may be necessary".
//!
//! The tree is complete with `fanout` children per node and `depth` levels; each node holds
//! `resources` resources. Every filter is a classic [`BloomFilter`] of the same shape
//! (`bits(m).hashes(k).seed(s)`, m = bits per resource × all resources of the tree, k optimal
//! for the root's load), so unions are exact. A request for a random resource from a random node
//! climbs; at each node on the way whose unified filter matches it searches depth first the node
//! itself and the children it did not come from (a node checks its own storage when its own
//! filter matches). A dead end returns one hop up (a backtrack). Since filters have no false
//! negatives, every request must succeed; the extra hops over the tree distance are the price of
//! the false positives.

use anyhow::Context;
use bloomery::Hashed;
use bloomery::{params, BloomFilter, Filter, KeyHasher, Merge, Stats};
use rayon::prelude::*;

use crate::measure::{key, Rng};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "resource-routing";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Children per inner node.
    pub fanout: u64,
    /// Levels of the tree (1: the root alone).
    pub depth: u32,
    /// Resources held by every node.
    pub resources: u64,
    /// Requests routed per filter size.
    pub requests: u64,
    /// Filter sizes: bits per resource of the whole tree.
    pub bits_per_resource: Vec<u64>,
    /// Seed of the hasher and the requests.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: fanout 4, 4 levels (85 nodes), 10 resources each, 20,000
    /// requests per size.
    pub fn quick(seed: u64) -> Self {
        Self {
            fanout: 4,
            depth: 4,
            resources: 10,
            requests: 20_000,
            bits_per_resource: (1..=8).collect(),
            seed,
        }
    }

    /// The documented size: fanout 4, 6 levels (1,365 nodes), 10 resources each, 500,000
    /// requests per size.
    pub fn full(seed: u64) -> Self {
        Self {
            depth: 6,
            requests: 500_000,
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

    /// Nodes of the tree.
    pub fn nodes(&self) -> u64 {
        (0..self.depth).map(|l| self.fanout.pow(l)).sum()
    }
}

/// One filter size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Bits per resource.
    pub bits_per_resource: u64,
    /// Bits of every filter.
    pub m: u64,
    /// Hash functions.
    pub k: u32,
    /// Requests routed.
    pub requests: u64,
    /// Requests that reached the resource (must be all).
    pub found: u64,
    /// Requests that took fewer hops than the tree distance (impossible; must be 0).
    pub too_short: u64,
    /// Sum of the tree distances.
    pub optimal_hops: u64,
    /// Sum of the hops taken.
    pub hops: u64,
    /// Sum of the backtracks (hops back up after a dead end).
    pub backtracks: u64,
    /// Requests with at least one backtrack.
    pub with_backtrack: u64,
    /// Storage lookups at nodes whose own filter matched falsely.
    pub local_false: u64,
    /// Fill of the root's unified filter.
    pub root_fill: f64,
}

impl Row {
    /// Mean extra hops per request.
    pub fn extra_hops(&self) -> f64 {
        (self.hops - self.optimal_hops) as f64 / self.requests as f64
    }

    /// Mean backtracks per request.
    pub fn mean_backtracks(&self) -> f64 {
        self.backtracks as f64 / self.requests as f64
    }
}

/// The filters of the tree: per node its own and its unified filter.
struct Tree<'a> {
    p: &'a Params,
    local: Vec<BloomFilter>,
    unified: Vec<BloomFilter>,
}

/// Counters of one request.
#[derive(Default)]
struct Walk {
    hops: u64,
    backtracks: u64,
    local_false: u64,
}

impl Tree<'_> {
    fn children(&self, v: u64) -> impl Iterator<Item = u64> {
        let n = self.p.nodes();
        let f = self.p.fanout;
        (v * f + 1..=v * f + f).filter(move |&c| c < n)
    }

    fn parent(&self, v: u64) -> Option<u64> {
        (v > 0).then(|| (v - 1) / self.p.fanout)
    }

    /// Depth-first search below `u` (u itself, then its matching children except `skip`).
    fn search(&self, u: u64, skip: Option<u64>, x: Hashed, holder: u64, w: &mut Walk) -> bool {
        if self.local[u as usize].contains_hashed(x) {
            if u == holder {
                return true;
            }
            w.local_false += 1;
        }
        for c in self.children(u) {
            if Some(c) == skip || !self.unified[c as usize].contains_hashed(x) {
                continue;
            }
            w.hops += 1;
            if self.search(c, None, x, holder, w) {
                return true;
            }
            w.hops += 1;
            w.backtracks += 1;
        }
        false
    }

    /// Route a request from `start` for resource `x` held by `holder`: climb until the unified
    /// filter matches, search, keep climbing after a dead end.
    fn route(&self, start: u64, x: Hashed, holder: u64, w: &mut Walk) -> bool {
        let (mut v, mut from) = (start, None);
        loop {
            if self.unified[v as usize].contains_hashed(x) && self.search(v, from, x, holder, w) {
                return true;
            }
            match self.parent(v) {
                Some(up) => {
                    w.hops += 1;
                    (from, v) = (Some(v), up);
                }
                None => return false,
            }
        }
    }

    /// Tree distance between two nodes.
    fn distance(&self, mut a: u64, mut b: u64) -> u64 {
        let mut d = 0;
        while a != b {
            if a > b {
                a = (a - 1) / self.p.fanout;
            } else {
                b = (b - 1) / self.p.fanout;
            }
            d += 1;
        }
        d
    }
}

/// Build the tree's filters and route the requests for every size.
pub fn measure(p: &Params) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(p.fanout >= 2 && p.depth >= 2 && p.resources >= 1);
    let nodes = p.nodes();
    let total = nodes * p.resources;
    let hasher = KeyHasher::with_seed(p.seed);
    let ids: Vec<Hashed> = (0..total).map(|r| hasher.hash(&key(p.seed, r))).collect();
    p.bits_per_resource
        .iter()
        .map(|&b| {
            let m = b * total;
            let k = params::optimal_k(total, m);
            let empty = BloomFilter::builder()
                .bits(m)
                .hashes(k)
                .seed(p.seed)
                .try_build()
                .with_context(|| format!("filter m={m} k={k}"))?;
            anyhow::ensure!(empty.hasher() == &hasher);
            let local: Vec<BloomFilter> = (0..nodes)
                .into_par_iter()
                .map(|v| {
                    let mut f = empty.clone();
                    for r in v * p.resources..(v + 1) * p.resources {
                        f.insert_hashed(ids[r as usize]);
                    }
                    f
                })
                .collect();
            let mut tree = Tree {
                p,
                unified: local.clone(),
                local,
            };
            // children have larger indices: build the unions bottom-up
            for v in (0..nodes).rev() {
                let kids: Vec<u64> = tree.children(v).collect();
                for c in kids {
                    let (lo, hi) = tree.unified.split_at_mut(c as usize);
                    lo[v as usize].union_with(&hi[0])?;
                }
            }
            let root_fill = tree.unified[0].count_ones() as f64 / m as f64;
            // (found, too short, optimal, hops, backtracks, with backtrack, local false)
            let s = (0..p.requests)
                .into_par_iter()
                .map(|i| {
                    let mut rng = Rng::new(key(p.seed ^ 0x0E5, i));
                    let start = rng.below(nodes);
                    let r = rng.below(total);
                    let holder = r / p.resources;
                    let mut w = Walk::default();
                    let ok = tree.route(start, ids[r as usize], holder, &mut w);
                    let opt = tree.distance(start, holder);
                    [
                        u64::from(ok),
                        u64::from(w.hops < opt),
                        opt,
                        w.hops,
                        w.backtracks,
                        u64::from(w.backtracks > 0),
                        w.local_false,
                    ]
                })
                .reduce(|| [0u64; 7], |a, b| std::array::from_fn(|j| a[j] + b[j]));
            Ok(Row {
                bits_per_resource: b,
                m,
                k,
                requests: p.requests,
                found: s[0],
                too_short: s[1],
                optimal_hops: s[2],
                hops: s[3],
                backtracks: s[4],
                with_backtrack: s[5],
                local_false: s[6],
                root_fill,
            })
        })
        .collect()
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row]) -> (String, Plot) {
    let mut t = Table::new([
        "bits/resource",
        "m",
        "k",
        "root fill",
        "requests",
        "found",
        "mean tree distance",
        "mean hops",
        "mean extra hops",
        "mean backtracks",
        "requests with backtrack",
        "false storage lookups / req",
    ]);
    let per = |x: u64| x as f64 / p.requests as f64;
    for r in rows {
        t.row([
            r.bits_per_resource.to_string(),
            int(r.m),
            r.k.to_string(),
            num(r.root_fill, 3),
            int(r.requests),
            int(r.found),
            num(per(r.optimal_hops), 3),
            num(per(r.hops), 3),
            rate(r.extra_hops()),
            rate(r.mean_backtracks()),
            rate(per(r.with_backtrack)),
            rate(per(r.local_false)),
        ]);
    }
    let found: u64 = rows.iter().map(|r| r.found).sum();
    let asked: u64 = rows.iter().map(|r| r.requests).sum();
    let mut md = format!(
        "# {NAME}: resource routing on a tree with unified filters\n\n\
         Broder & Mitzenmacher §6.1 (Czerwinski et al.). A complete tree of {nodes} nodes (fanout {f}, {d} \
         levels), {r} resources per node ({total} in all). Every node has a classic \
         `BloomFilter` of its own resources and a unified one (its own OR its children's, by \
         `union_with`), all with m = bits per resource × {total} bits and k optimal for the \
         root's load (`seed({seed})`). {q} requests per size for a random resource from a random \
         node: climb until the unified filter matches, search depth first through matching \
         children, back up one hop at a dead end, keep climbing if the whole subtree was a false \
         match. Extra hops are counted over the tree distance; the climb never passes the \
         lowest common ancestor, so they are exactly two per backtrack.\n\n\
         ![{NAME}]({NAME}.svg)\n\n\
         Requests found: {found} of {asked}.\n\n",
        nodes = int(p.nodes()),
        f = p.fanout,
        d = p.depth,
        r = p.resources,
        total = int(p.nodes() * p.resources),
        seed = p.seed,
        q = int(p.requests),
        found = int(found),
        asked = int(asked),
    );
    md.push_str(&t.to_markdown());

    let mut plot = Plot::new(
        format!(
            "Resource routing on a tree: cost of false positives ({} nodes)",
            int(p.nodes())
        ),
        "bits per resource",
        "per request",
    )
    .log_y();
    let of = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|r| (r.bits_per_resource as f64, g(r)))
            .collect()
    };
    plot.push(Series::new(
        "mean extra hops",
        of(&|r| r.extra_hops()),
        Style::LinePoints,
        0,
    ));
    plot.push(Series::new(
        "false storage lookups",
        of(&|r| per(r.local_false)),
        Style::LinePoints,
        1,
    ));
    plot.push(Series::new(
        "fraction of requests that backtrack",
        of(&|r| per(r.with_backtrack)),
        Style::LinePoints,
        2,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `resource-routing.md` and `resource-routing.svg`.
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
    fn quick_run_always_finds_the_resource() {
        let p = Params::quick(1);
        assert_eq!(p.nodes(), 85);
        let rows = measure(&p).unwrap();
        assert_eq!(rows.len(), p.bits_per_resource.len());
        for r in &rows {
            // no false negatives: backtracking always reaches the resource
            assert_eq!(r.found, r.requests, "b={}", r.bits_per_resource);
            assert_eq!(r.too_short, 0);
            assert!(r.hops >= r.optimal_hops);
            // the climb stops at the lowest common ancestor, so every extra hop is half of a
            // wrong branch taken and backed out of
            assert_eq!(r.hops, r.optimal_hops + 2 * r.backtracks);
        }
        let (first, last) = (&rows[0], &rows[rows.len() - 1]);
        // tiny filters backtrack, big ones barely do
        assert!(first.backtracks > 0);
        assert!(last.extra_hops() < first.extra_hops() / 10.0);
        let dir = tempfile::tempdir().unwrap();
        let (md, plot) = render(&p, &rows);
        let opts = RunOptions {
            out_dir: dir.path().join("out"),
            quick: true,
            seed: 1,
        };
        let report = write_report(&opts, NAME, md, &plot).unwrap();
        assert!(report.files.iter().all(|f| f.exists()));
        assert!(report.markdown.contains("| bits/resource"));
    }
}
