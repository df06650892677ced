//! `planetp`: PlanetP-style content summaries — every peer publishes a Bloom filter of its
//! keywords, and a query contacts the peers whose filter matches.
//!
//! Simulates Broder & Mitzenmacher §5.1, "Moderate-sized
//! P2P networks": for systems "of hundreds of nodes ... keeping a Bloom filter for every other
//! node may be tractable", "a Bloom filter could use 8 or 16 bits per object", and "false
//! positives in this situation yield extraneous requests for objects to nodes that do not have
//! them"; in PlanetP (Cuenca-Acuna et al.) the filters hold the keywords of each peer's
//! documents.
//!
//! `peers` peers each hold `keywords` distinct keywords drawn from a vocabulary of `vocabulary`
//! words with Zipf(`zipf`) popularity, so common words sit on many peers and rare ones on few.
//! Every peer's summary is a classic [`BloomFilter`] (`bits(m).hashes(k).seed(s)`, m = bits per
//! keyword × `keywords`, k optimal). `queries` one-word queries, drawn from the same popularity,
//! contact every peer whose filter matches: the holders (true contacts, which must all be
//! contacted) and the false positives, expected `(peers - holders) · (1-(1-1/m)^(k·keywords))^k`
//! per query ([`params::fpr_exact`]).

use anyhow::Context;
use bloomery::Hashed;
use bloomery::{params, BloomFilter, Filter, KeyHasher};
use rayon::prelude::*;

use crate::measure::{fill_rel_sigma, key, rate_sigma, Rng};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "planetp";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Peers in the community.
    pub peers: u64,
    /// Distinct keywords per peer.
    pub keywords: u64,
    /// Words in the vocabulary.
    pub vocabulary: u64,
    /// Zipf exponent of word popularity.
    pub zipf: f64,
    /// One-word queries per filter size.
    pub queries: u64,
    /// Filter sizes: bits per keyword.
    pub bits_per_keyword: Vec<u64>,
    /// Seed of the hasher, the peers' keywords and the queries.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: 100 peers × 1,000 keywords from 100,000 words, 10,000
    /// queries per size.
    pub fn quick(seed: u64) -> Self {
        Self {
            peers: 100,
            keywords: 1_000,
            vocabulary: 100_000,
            zipf: 1.0,
            queries: 10_000,
            bits_per_keyword: (2..=16).step_by(2).collect(),
            seed,
        }
    }

    /// The documented size: 300 peers × 5,000 keywords from 1,000,000 words, 40,000 queries
    /// per size.
    pub fn full(seed: u64) -> Self {
        Self {
            peers: 300,
            keywords: 5_000,
            vocabulary: 1_000_000,
            queries: 40_000,
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

/// One filter size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Bits per keyword.
    pub bits_per_keyword: u64,
    /// Bits of a peer's filter.
    pub m: u64,
    /// Hash functions.
    pub k: u32,
    /// `(1-(1-1/m)^(k·keywords))^k`.
    pub exact: f64,
    /// Queries asked.
    pub queries: u64,
    /// Peers contacted that hold the word.
    pub true_contacts: u64,
    /// Peers contacted that do not.
    pub false_contacts: u64,
    /// Holders whose filter did not match (must be 0).
    pub missed: u64,
    /// Expected false contacts over all queries.
    pub predicted: f64,
    /// Distinct queried words × peers not holding them.
    pub distinct_checks: u64,
    /// False matches among those distinct (word, peer) pairs.
    pub distinct_false: u64,
}

impl Row {
    /// False-positive rate over the distinct (word, peer) pairs the queries touched.
    pub fn pair_rate(&self) -> f64 {
        self.distinct_false as f64 / self.distinct_checks.max(1) as f64
    }
}

/// Zipf sampler over `0..n` by inverse CDF.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: u64, s: f64) -> Self {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n)
            .map(|r| {
                acc += (r as f64).powf(-s);
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Self(cdf)
    }

    fn sample(&self, rng: &mut Rng) -> u64 {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (self.0.partition_point(|&c| c < u) as u64).min(self.0.len() as u64 - 1)
    }
}

/// Every peer's keywords, sorted.
fn libraries(p: &Params, zipf: &Zipf) -> Vec<Vec<u64>> {
    (0..p.peers)
        .into_par_iter()
        .map(|i| {
            let mut rng = Rng::new(key(p.seed ^ 0x9EE4, i));
            let mut words = std::collections::BTreeSet::new();
            while (words.len() as u64) < p.keywords {
                words.insert(zipf.sample(&mut rng));
            }
            words.into_iter().collect()
        })
        .collect()
}

/// Build the peers' filters and run the queries for every size.
pub fn measure(p: &Params) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(p.peers >= 1 && p.keywords * 4 <= p.vocabulary);
    let hasher = KeyHasher::with_seed(p.seed);
    let zipf = Zipf::new(p.vocabulary, p.zipf);
    let libs = libraries(p, &zipf);
    let word = |w: u64| hasher.hash(&key(p.seed, w));
    let mut rng = Rng::new(p.seed ^ 0x0E4);
    let asked: Vec<u64> = (0..p.queries).map(|_| zipf.sample(&mut rng)).collect();
    let mut distinct = asked.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let holders =
        |w: u64| -> Vec<bool> { libs.iter().map(|l| l.binary_search(&w).is_ok()).collect() };
    p.bits_per_keyword
        .iter()
        .map(|&b| {
            let m = b * p.keywords;
            let k = params::optimal_k(p.keywords, m);
            let filters: Vec<BloomFilter> = libs
                .par_iter()
                .map(|l| -> anyhow::Result<BloomFilter> {
                    let mut f = BloomFilter::builder()
                        .bits(m)
                        .hashes(k)
                        .seed(p.seed)
                        .try_build()
                        .with_context(|| format!("peer filter m={m} k={k}"))?;
                    anyhow::ensure!(f.hasher() == &hasher);
                    for &w in l {
                        f.insert_hashed(word(w));
                    }
                    Ok(f)
                })
                .collect::<anyhow::Result<_>>()?;
            let exact = params::fpr_exact(p.keywords, m, k);
            // (true, false, missed, non-holders) over the words in `ws`
            let contacts = |ws: &[u64]| -> [u64; 4] {
                ws.par_iter()
                    .map(|&w| {
                        let h: Hashed = word(w);
                        let has = holders(w);
                        let mut s = [0u64; 4];
                        for (f, &held) in filters.iter().zip(&has) {
                            let hit = f.contains_hashed(h);
                            match (held, hit) {
                                (true, true) => s[0] += 1,
                                (false, true) => s[1] += 1,
                                (true, false) => s[2] += 1,
                                (false, false) => {}
                            }
                            s[3] += u64::from(!held);
                        }
                        s
                    })
                    .reduce(|| [0u64; 4], |a, b| std::array::from_fn(|j| a[j] + b[j]))
            };
            let all = contacts(&asked);
            let pairs = contacts(&distinct);
            Ok(Row {
                bits_per_keyword: b,
                m,
                k,
                exact,
                queries: p.queries,
                true_contacts: all[0],
                false_contacts: all[1],
                missed: all[2] + pairs[2],
                predicted: all[3] as f64 * exact,
                distinct_checks: pairs[3],
                distinct_false: pairs[1],
            })
        })
        .collect()
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row]) -> (String, Plot) {
    let per = |x: f64| x / p.queries as f64;
    let mut t = Table::new([
        "bits/keyword",
        "m",
        "k",
        "exact f'",
        "true contacts / query",
        "false contacts / query (formula)",
        "false contacts / query (measured)",
        "precision",
        "missed holders",
        "measured rate (distinct pairs)",
    ]);
    for r in rows {
        t.row([
            r.bits_per_keyword.to_string(),
            int(r.m),
            r.k.to_string(),
            rate(r.exact),
            num(per(r.true_contacts as f64), 2),
            num(per(r.predicted), 3),
            num(per(r.false_contacts as f64), 3),
            num(
                r.true_contacts as f64 / (r.true_contacts + r.false_contacts).max(1) as f64,
                4,
            ),
            int(r.missed),
            rate(r.pair_rate()),
        ]);
    }
    let mut md = format!(
        "# {NAME}: peers contacted by keyword queries over Bloom-filter summaries\n\n\
         Broder & Mitzenmacher §5.1 (PlanetP). {peers} peers, each with {kw} distinct keywords drawn from \
         {v} words with Zipf({z}) popularity; every peer's classic `BloomFilter` \
         (`bits(m).hashes(k).seed({seed})`, m = bits per keyword × {kw}, k optimal) is known to \
         all. {q} one-word queries from the same popularity contact every peer whose filter \
         matches. Formula: false contacts per query = peers without the word × \
         `(1-(1-1/m)^(k·{kw}))^k`. Popular words repeat, so the last column also gives the rate \
         over the distinct (word, peer) pairs queried.\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        peers = p.peers,
        kw = int(p.keywords),
        v = int(p.vocabulary),
        z = p.zipf,
        seed = p.seed,
        q = int(p.queries),
    );
    md.push_str(&t.to_markdown());

    let mut plot = Plot::new(
        format!(
            "PlanetP: peers contacted per query vs filter size ({} peers)",
            p.peers
        ),
        "bits per keyword",
        "peers contacted per query",
    )
    .log_y();
    let of = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|r| (r.bits_per_keyword as f64, g(r)))
            .collect()
    };
    plot.push(Series::new(
        "holders (true contacts)",
        of(&|r| per(r.true_contacts as f64)),
        Style::LinePoints,
        0,
    ));
    plot.push(Series::new(
        "false contacts, formula",
        of(&|r| per(r.predicted)),
        Style::Line,
        1,
    ));
    plot.push(Series::new(
        "false contacts, measured",
        of(&|r| per(r.false_contacts as f64)),
        Style::Points,
        1,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `planetp.md` and `planetp.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let rows = measure(&p)?;
    let (md, plot) = render(&p, &rows);
    write_report(opts, NAME, md, &plot)
}

/// σ of the distinct-pair rate: binomial over the pairs plus the peers' fill fluctuation.
pub fn pair_sigma(p: &Params, r: &Row) -> f64 {
    let rel = fill_rel_sigma(p.keywords, r.m, r.k) / (p.peers as f64).sqrt();
    rate_sigma(r.exact, r.distinct_checks, rel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::within;

    #[test]
    fn quick_run_contacts_every_holder() {
        let p = Params::quick(1);
        let rows = measure(&p).unwrap();
        assert_eq!(rows.len(), p.bits_per_keyword.len());
        for r in &rows {
            // no false negatives: every holder is contacted
            assert_eq!(r.missed, 0, "b={}", r.bits_per_keyword);
            assert!(r.true_contacts >= r.queries / 2);
            // the false-positive rate over distinct pairs follows the formula
            assert!(
                within(r.pair_rate(), r.exact, pair_sigma(&p, r), 5.0, 0.05),
                "b={}: measured {} exact {}",
                r.bits_per_keyword,
                r.pair_rate(),
                r.exact
            );
        }
        // the same queries, so the true contacts do not depend on the filter size
        assert!(rows
            .iter()
            .all(|r| r.true_contacts == rows[0].true_contacts));
        assert!(rows
            .windows(2)
            .all(|w| w[1].false_contacts < w[0].false_contacts));
        let dir = tempfile::tempdir().unwrap();
        let (md, plot) = render(&p, &rows);
        let opts = RunOptions {
            out_dir: dir.path().join("out"),
            quick: true,
            seed: 1,
        };
        let report = write_report(&opts, NAME, md, &plot).unwrap();
        assert!(report.files.iter().all(|f| f.exists()));
        assert!(report.markdown.contains("| bits/keyword"));
    }
}
