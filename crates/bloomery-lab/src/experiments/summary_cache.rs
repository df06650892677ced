//! `summary-cache`: Summary Cache (Fan, Cao, Almeida & Broder) — cooperating web proxies that
//! periodically send each other a compressed Bloom-filter digest of their caches.
//!
//! Simulates Broder & Mitzenmacher §4, "A Sample Network
//! Application: Distributed Caching" (also Salman §8.1): "proxies do not transfer URL lists
//! corresponding to the exact contents of their caches, but instead periodically broadcast Bloom
//! filters"; "false positives and false negatives may occur even without a Bloom filter, since
//! the cache contents may change between periodic updates"; caches "use a counting Bloom filter
//! to track their own cache contents, and broadcast the corresponding standard 0-1 Bloom
//! filter"; "delta compression and compressed Bloom filters ... can yield a further reduction in
//! the number of bits transmitted" (Broder & Mitzenmacher §2.6, Mitzenmacher).
//!
//! `proxies` proxies each run an LRU cache of `cache` URLs and track it with the library's
//! [`CountingBloomFilter`] (4-bit counters, `bits_per_entry × cache` counters, k hashes):
//! insert on admission, remove on eviction. Requests are Zipf(`zipf`) over real repository URLs
//! (`npm-urls.txt` from `bash scripts/fetch-data.sh npm`; generated URL-like keys in quick mode
//! when the file is missing), each sent to a uniformly chosen proxy. On a local miss the proxy
//! looks up the others' last digests: a **remote hit** when a proxy whose digest matches holds
//! the URL, a **false hit** when digests match but none of those proxies holds it (a wasted
//! query), a **missed hit** when no digest matches but another proxy holds it (its digest is
//! stale). Every `period` requests each proxy sends its standard filter
//! ([`CountingBloomFilter::to_bloom_filter`]); bytes are counted for the plain array, the
//! compressed array ([`bloomery::compress::compress_bits`]), the compressed delta against the
//! previous digest ([`bloomery::compress::diff`]), the exact URL list, and the exact list of
//! URLs added and removed since the last update. The exact-list protocol is simulated on the
//! same requests (snapshots of the caches at each update), so the false hits the filters add
//! over staleness alone are measured directly. The first fifth of the requests warms the
//! caches and is not counted.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::path::PathBuf;

use anyhow::Context;
use bloomery::compress::{compress_bits, diff};
use bloomery::Hashed;
use bloomery::{BloomFilter, CountingBloomFilter, Filter, KeyHasher, Remove};

use crate::measure::Rng;
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "summary-cache";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Cooperating proxies.
    pub proxies: usize,
    /// URLs each proxy's LRU cache holds.
    pub cache: usize,
    /// Distinct URLs requests are drawn from.
    pub urls: usize,
    /// Zipf exponent of URL popularity.
    pub zipf: f64,
    /// Requests per update period (the first fifth warms the caches).
    pub requests: u64,
    /// Update periods: requests between two digests of every proxy.
    pub periods: Vec<u64>,
    /// Counters (and digest bits) per cache entry.
    pub bits_per_entry: u64,
    /// Hash functions (Fan et al. use 4).
    pub hashes: u32,
    /// The URL file.
    pub data: PathBuf,
    /// Generate URL-like keys when the file is missing (quick mode).
    pub allow_generated: bool,
    /// Seed of the hasher, the requests and the generated URLs.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build: 4 proxies × 500 URLs, 20,000 URLs, 30,000 requests.
    pub fn quick(seed: u64) -> Self {
        Self {
            proxies: 4,
            cache: 500,
            urls: 20_000,
            zipf: 0.8,
            requests: 30_000,
            periods: vec![100, 1_000, 10_000],
            bits_per_entry: 16,
            hashes: 4,
            data: crate::experiments::mlbf_urls::url_file(),
            allow_generated: true,
            seed,
        }
    }

    /// The documented size: 8 proxies × 20,000 URLs, the first 1,000,000 npm URLs, 2,000,000
    /// requests, periods from 1,000 to 500,000 requests.
    pub fn full(seed: u64) -> Self {
        Self {
            proxies: 8,
            cache: 20_000,
            urls: 1_000_000,
            requests: 2_000_000,
            periods: vec![1_000, 10_000, 50_000, 200_000, 500_000],
            allow_generated: false,
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

/// One update period.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    /// Requests between updates.
    pub period: u64,
    /// Requests counted (after the warm-up).
    pub requests: u64,
    /// Served from the proxy's own cache.
    pub local_hits: u64,
    /// Bloom digests: served by another proxy whose digest matched.
    pub remote_hits: u64,
    /// Bloom digests: digests matched, no matching proxy held the URL.
    pub false_hits: u64,
    /// Bloom digests: no digest matched, another proxy held the URL.
    pub missed_hits: u64,
    /// Exact lists (same staleness, no false positives): remote hits.
    pub exact_remote_hits: u64,
    /// Exact lists: false hits (stale entries only).
    pub exact_false_hits: u64,
    /// Exact lists: missed hits.
    pub exact_missed_hits: u64,
    /// Digests sent (proxies × updates, warm-up included).
    pub digests: u64,
    /// Bytes of the plain bit arrays sent.
    pub bytes_plain: u64,
    /// Bytes of the compressed bit arrays.
    pub bytes_compressed: u64,
    /// Bytes of the compressed deltas against the previous digest.
    pub bytes_delta: u64,
    /// Bytes of the exact URL lists (one newline per URL).
    pub bytes_list: u64,
    /// Bytes of the exact changes (URL plus a +/- byte and a newline).
    pub bytes_list_delta: u64,
    /// URLs added to the caches between updates, summed over proxies and updates.
    pub changed: u64,
}

impl Row {
    fn per_request(&self, x: u64) -> f64 {
        x as f64 / self.requests.max(1) as f64
    }
    /// False hits per request (Bloom digests).
    pub fn false_hit_rate(&self) -> f64 {
        self.per_request(self.false_hits)
    }
    /// Missed hits per request (Bloom digests).
    pub fn missed_hit_rate(&self) -> f64 {
        self.per_request(self.missed_hits)
    }
}

/// Zipf sampler over `0..n` by inverse CDF.
struct Zipf(Vec<f64>);

impl Zipf {
    fn new(n: usize, s: f64) -> Self {
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

    fn sample(&self, rng: &mut Rng) -> u32 {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        self.0.partition_point(|&c| c < u).min(self.0.len() - 1) as u32
    }
}

/// Where the URLs came from.
#[derive(Debug, Clone, PartialEq)]
pub enum UrlSource {
    /// Read from the file (distinct lines, in order).
    File(PathBuf),
    /// Generated: the file was missing.
    Generated(PathBuf),
}

/// The first `p.urls` distinct URLs of the file, or generated ones in quick mode.
pub fn load_urls(p: &Params) -> anyhow::Result<(Vec<String>, UrlSource)> {
    match std::fs::File::open(&p.data) {
        Ok(f) => {
            let mut seen = HashSet::new();
            let mut out = Vec::with_capacity(p.urls);
            for line in std::io::BufReader::new(f).lines() {
                let line = line.with_context(|| p.data.display().to_string())?;
                let l = line.trim();
                if !l.is_empty() && seen.insert(l.to_owned()) {
                    out.push(l.to_owned());
                    if out.len() == p.urls {
                        break;
                    }
                }
            }
            anyhow::ensure!(
                out.len() >= p.cache * p.proxies * 2,
                "{}: only {} URLs",
                p.data.display(),
                out.len()
            );
            Ok((out, UrlSource::File(p.data.clone())))
        }
        Err(_) if p.allow_generated => Ok((
            {
                crate::note_generated(NAME, &p.data, "generated URL-like keys", "npm");
                crate::experiments::mlbf_urls::generated_urls(p.urls as u64, p.seed)
            },
            UrlSource::Generated(p.data.clone()),
        )),
        Err(e) => anyhow::bail!(
            "{}: {e} (run `bash scripts/fetch-data.sh npm`, or set BLOOMERY_DATA)",
            p.data.display()
        ),
    }
}

/// An LRU cache of URL ids: id → last use, and last use → id.
struct Lru {
    cap: usize,
    at: HashMap<u32, u64>,
    order: BTreeMap<u64, u32>,
}

impl Lru {
    fn new(cap: usize) -> Self {
        Self {
            cap,
            at: HashMap::with_capacity(cap + 1),
            order: BTreeMap::new(),
        }
    }
    fn contains(&self, u: u32) -> bool {
        self.at.contains_key(&u)
    }
    /// Use `u` at time `t`: true if it was cached.
    fn touch(&mut self, u: u32, t: u64) -> bool {
        match self.at.get_mut(&u) {
            Some(old) => {
                self.order.remove(old);
                *old = t;
                self.order.insert(t, u);
                true
            }
            None => false,
        }
    }
    /// Admit `u` at time `t`; returns the evicted id, if any.
    fn admit(&mut self, u: u32, t: u64) -> Option<u32> {
        self.at.insert(u, t);
        self.order.insert(t, u);
        if self.at.len() > self.cap {
            let (_, old) = self.order.pop_first()?;
            self.at.remove(&old);
            return Some(old);
        }
        None
    }
}

/// One proxy's state.
struct Proxy {
    lru: Lru,
    counting: CountingBloomFilter,
    /// The digest the others hold (what it sent last).
    digest: BloomFilter,
    /// The exact list the others would hold (snapshot at the last update).
    snapshot: HashSet<u32>,
    /// Net changes since the last update: +1 added, -1 removed.
    changes: HashMap<u32, i8>,
}

/// Run the protocol for one update period.
pub fn simulate(p: &Params, urls: &[String], period: u64) -> anyhow::Result<Row> {
    anyhow::ensure!(p.proxies >= 2 && p.cache >= 1 && period >= 1);
    let hasher = KeyHasher::with_seed(p.seed);
    let hashed: Vec<Hashed> = urls.iter().map(|u| hasher.hash(u.as_str())).collect();
    let m = p.bits_per_entry * p.cache as u64;
    let new_counting = || {
        CountingBloomFilter::builder()
            .counters(m)
            .hashes(p.hashes)
            .counter_width(4)
            .hasher(hasher)
            .try_build()
    };
    let mut proxies: Vec<Proxy> = (0..p.proxies)
        .map(|_| -> anyhow::Result<Proxy> {
            let c = new_counting()?;
            let digest = c.to_bloom_filter()?;
            Ok(Proxy {
                lru: Lru::new(p.cache),
                counting: c,
                digest,
                snapshot: HashSet::new(),
                changes: HashMap::new(),
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let zipf = Zipf::new(urls.len(), p.zipf);
    let mut rng = Rng::new(p.seed ^ 0x5CAC);
    let warm = p.requests / 5;
    let mut row = Row {
        period,
        ..Row::default()
    };
    for t in 0..p.requests {
        let u = zipf.sample(&mut rng);
        let i = rng.below(p.proxies as u64) as usize;
        let counted = t >= warm;
        if proxies[i].lru.touch(u, t) {
            row.local_hits += u64::from(counted);
        } else {
            let h = hashed[u as usize];
            let (mut claim, mut claim_true, mut exact_claim, mut exact_true, mut held) =
                (false, false, false, false, false);
            for (j, q) in proxies.iter().enumerate() {
                if j == i {
                    continue;
                }
                let has = q.lru.contains(u);
                held |= has;
                if q.digest.contains_hashed(h) {
                    claim = true;
                    claim_true |= has;
                }
                if q.snapshot.contains(&u) {
                    exact_claim = true;
                    exact_true |= has;
                }
            }
            if counted {
                row.remote_hits += u64::from(claim && claim_true);
                row.false_hits += u64::from(claim && !claim_true);
                row.missed_hits += u64::from(!claim && held);
                row.exact_remote_hits += u64::from(exact_claim && exact_true);
                row.exact_false_hits += u64::from(exact_claim && !exact_true);
                row.exact_missed_hits += u64::from(!exact_claim && held);
            }
            // The proxy fetches the page (from a peer or the web) and caches it.
            let q = &mut proxies[i];
            q.counting.insert_hashed(h);
            *q.changes.entry(u).or_insert(0) += 1;
            if let Some(old) = q.lru.admit(u, t) {
                q.counting
                    .remove_hashed(hashed[old as usize])
                    .map_err(|e| anyhow::anyhow!("counting filter remove: {e:?}"))?;
                *q.changes.entry(old).or_insert(0) -= 1;
            }
        }
        row.requests += u64::from(counted);
        if (t + 1) % period == 0 {
            for q in &mut proxies {
                let bf = q.counting.to_bloom_filter()?;
                row.digests += 1;
                row.bytes_plain += m.div_ceil(8);
                row.bytes_compressed += compress_bits(bf.as_words(), m)?.len() as u64;
                row.bytes_delta += diff(q.digest.as_words(), bf.as_words(), m)?.len() as u64;
                row.bytes_list += q
                    .lru
                    .at
                    .keys()
                    .map(|&u| urls[u as usize].len() as u64 + 1)
                    .sum::<u64>();
                for (&u, &c) in &q.changes {
                    match c.signum() {
                        1 => {
                            q.snapshot.insert(u);
                            row.changed += 1;
                        }
                        -1 => {
                            q.snapshot.remove(&u);
                        }
                        _ => continue,
                    }
                    row.bytes_list_delta += urls[u as usize].len() as u64 + 2;
                }
                q.changes.clear();
                q.digest = bf;
            }
        }
    }
    Ok(row)
}

/// Run every period.
pub fn measure(p: &Params) -> anyhow::Result<(Vec<Row>, UrlSource)> {
    let (urls, source) = load_urls(p)?;
    let rows = p
        .periods
        .iter()
        .map(|&period| simulate(p, &urls, period))
        .collect::<anyhow::Result<_>>()?;
    Ok((rows, source))
}

/// The markdown page and the plot.
pub fn render(p: &Params, rows: &[Row], source: &UrlSource) -> (String, Plot) {
    let src = match source {
        UrlSource::File(f) => format!(
            "the first {} distinct URLs of `{}`",
            int(p.urls as u64),
            f.display()
        ),
        UrlSource::Generated(f) => format!(
            "{} generated URL-like keys (`{}` is missing: run `bash scripts/fetch-data.sh npm`)",
            int(p.urls as u64),
            f.display()
        ),
    };
    let m = p.bits_per_entry * p.cache as u64;
    let mut t = Table::new([
        "update period (requests)",
        "URLs changed per update",
        "local hits",
        "remote hits",
        "false hits (Bloom)",
        "false hits (exact list)",
        "missed hits (Bloom)",
        "missed hits (exact list)",
    ]);
    let mut b = Table::new([
        "update period",
        "plain digest B",
        "compressed digest B",
        "compressed delta B",
        "exact list B",
        "exact changes B",
        "delta B per changed URL",
        "delta / exact changes",
    ]);
    for r in rows {
        let per = |x: u64| rate(r.per_request(x));
        let changed = r.changed as f64 / r.digests.max(1) as f64;
        t.row([
            int(r.period),
            num(changed, 1),
            per(r.local_hits),
            per(r.remote_hits),
            per(r.false_hits),
            per(r.exact_false_hits),
            per(r.missed_hits),
            per(r.exact_missed_hits),
        ]);
        let d = r.digests.max(1);
        b.row([
            int(r.period),
            int(r.bytes_plain / d),
            int(r.bytes_compressed / d),
            int(r.bytes_delta / d),
            int(r.bytes_list / d),
            int(r.bytes_list_delta / d),
            num(r.bytes_delta as f64 / r.changed.max(1) as f64, 2),
            num(r.bytes_delta as f64 / r.bytes_list_delta.max(1) as f64, 3),
        ]);
    }
    let mut md = format!(
        "# {NAME}: Summary Cache, proxies sharing compressed Bloom-filter digests\n\n\
         Broder & Mitzenmacher §4 (Fan, Cao, Almeida & Broder; also Salman §8.1) with Broder & Mitzenmacher §2.6 (compressed \
         filters, delta compression). {proxies} proxies, each an LRU cache of {cache} URLs \
         tracked by a `CountingBloomFilter` ({m} 4-bit counters, k = {k}, seed {seed}); every \
         *period* requests each sends its standard filter (`to_bloom_filter`, {bpe} bits per \
         cache entry) to the others. Requests: {req} per period (the first fifth warms the \
         caches), Zipf({z}) over {src}, each to a uniformly chosen proxy. Rates are per request. \
         *False hit*: the digests of other proxies match but none of those proxies holds the URL \
         (a wasted query); *missed hit*: no digest matches but another proxy holds it. The \
         exact-list columns replay the same requests with snapshots of the URL lists sent at the \
         same moments: their false and missed hits come from staleness alone.\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        proxies = p.proxies,
        cache = int(p.cache as u64),
        m = int(m),
        k = p.hashes,
        seed = p.seed,
        bpe = p.bits_per_entry,
        req = int(p.requests),
        z = p.zipf,
    );
    md.push_str(&t.to_markdown());
    md.push_str(
        "\n## Bytes per digest sent (per proxy and update)\n\n\
         *Compressed digest*: the range-coded bit array (`compress::compress_bits`); \
         *compressed delta*: the XOR with the previous digest, compressed (`compress::diff`, \
         with its two fingerprints); *exact list*: the cache's URLs, one per line; *exact \
         changes*: the URLs added or removed since the last update, with a +/- byte.\n\n",
    );
    md.push_str(&b.to_markdown());

    let mut plot = Plot::new(
        format!(
            "Summary Cache: {} proxies, {} URLs each",
            p.proxies, p.cache
        ),
        "update period (requests)",
        "per request",
    )
    .log_x()
    .log_y();
    let of = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .map(|r| (r.period as f64, g(r).max(1e-7)))
            .collect()
    };
    plot.push(Series::new(
        "false hits, Bloom digest",
        of(&|r| r.false_hit_rate()),
        Style::LinePoints,
        1,
    ));
    plot.push(Series::new(
        "false hits, exact list",
        of(&|r| r.per_request(r.exact_false_hits)),
        Style::Dashed,
        1,
    ));
    plot.push(Series::new(
        "missed hits, Bloom digest",
        of(&|r| r.missed_hit_rate()),
        Style::LinePoints,
        0,
    ));
    plot.push(Series::new(
        "missed hits, exact list",
        of(&|r| r.per_request(r.exact_missed_hits)),
        Style::Dashed,
        0,
    ));
    plot.push(Series::new(
        "remote hits",
        of(&|r| r.per_request(r.remote_hits)),
        Style::LinePoints,
        2,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `summary-cache.md` and `summary-cache.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let (rows, source) = measure(&p)?;
    let (md, plot) = render(&p, &rows, &source);
    write_report(opts, NAME, md, &plot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_protocol_properties() {
        let mut p = Params::quick(1);
        // the generated URLs, whatever the machine has
        p.data = PathBuf::from("/nonexistent/npm-urls.txt");
        let (rows, source) = measure(&p).unwrap();
        assert!(matches!(source, UrlSource::Generated(_)));
        assert_eq!(rows.len(), 3);
        for r in &rows {
            // the Bloom digests never miss what the exact lists see (no false negatives): a
            // missed hit of the filter protocol is one of the exact protocol's
            assert!(r.missed_hits <= r.exact_missed_hits, "{r:?}");
            // false positives only add false hits
            assert!(r.false_hits >= r.exact_false_hits, "{r:?}");
            // at 16 bits per entry and k = 4 the filters add little: f ≈ 0.0024 per proxy
            assert!(r.false_hits - r.exact_false_hits < r.requests / 50, "{r:?}");
            // a sparse digest compresses; the delta is smaller than the whole digest when few
            // entries changed
            assert!(r.bytes_compressed < r.bytes_plain, "{r:?}");
            assert!(r.bytes_compressed < r.bytes_list, "{r:?}");
            assert!(r.remote_hits > 0 && r.local_hits > 0);
        }
        // staleness grows with the period: more missed hits, and the frequent updates send
        // small deltas
        assert!(rows[2].missed_hits > rows[0].missed_hits, "{rows:?}");
        assert!(
            rows[0].bytes_delta < rows[0].bytes_compressed,
            "{:?}",
            rows[0]
        );
        let dir = tempfile::tempdir().unwrap();
        let (md, plot) = render(&p, &rows, &source);
        let opts = RunOptions {
            out_dir: dir.path().join("out"),
            quick: true,
            seed: 1,
        };
        let report = write_report(&opts, NAME, md, &plot).unwrap();
        assert!(report.files.iter().all(|f| f.exists()));
        assert!(report.markdown.contains("| update period"));
    }
}
