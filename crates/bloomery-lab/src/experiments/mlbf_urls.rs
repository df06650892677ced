//! `mlbf-urls`: the multi-layer Bloom filter against the classic filter on real URLs —
//! false positives (Fig. 5), insert time (Fig. 6) and query time (Fig. 7) of Cen, Xu & Sun
//! (Cen, Xu & Sun, §V), plus the comparison at equal memory.
//!
//! The paper's setup: k = 3, m = 16,829,152 bits per filter (eq. 2 for n = 3.5M at 0.1), L = 4;
//! the same URLs go into a classic filter of m bits and into the MLBF (L layers + the XOR
//! layer, so (L+1)·m bits); after the inserts every URL is queried with its unique id appended
//! ("link each URL with its unique ID"), a URL that was never inserted, so every positive is a
//! false positive. The paper's data (3.5M Sogou URLs) is not public; here the URLs are the
//! repository URLs of npm's `all-the-package-repos` (`scripts/fetch-data.sh npm` →
//! `$BLOOMERY_DATA/npm-urls.txt`, default `target/data`), distinct lines in file order, growing
//! prefixes of them. Quick runs (tests, CI) fall back to generated URLs with the same shape
//! (hosts, users, repositories) when the file is missing, and scale m with n.
//!
//! Also measured: a classic filter of (L+1)·m bits — the MLBF's total memory — with k = 3 and
//! with the optimal k, and a model for each count. Classic: `n·(ones/m)^k` from the filter's
//! own fill. MLBF: a query differs from its URL only in its last non-missing segment, so
//! every other layer passes for certain and only that layer and the XOR layer can reject it;
//! the model is the sum over the queries of `f_j · f_xor` (j the query's last layer, each
//! `f = (ones/m)^k` from that layer's fill) — not eq. 4's f^L, which assumes every segment of
//! a query is new. Times are ns of thread CPU time per URL (one thread, release build;
//! normalisation and hashing included), so other processes on a busy machine do not count.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use bloomery::keys::normalize_url;
use bloomery::{params, BloomFilter, Filter, KeyHasher, MultiLayerBloomFilter, Stats};

use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "mlbf-urls";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// URL layers L.
    pub layers: u32,
    /// Hashes k.
    pub hashes: u32,
    /// Bits per filter (per layer) m.
    pub bits: u64,
    /// Numbers of URLs inserted (growing prefixes; capped by the URLs available).
    pub sizes: Vec<u64>,
    /// The URL file.
    pub data: PathBuf,
    /// Use generated URLs when the file is missing (quick runs).
    pub allow_generated: bool,
    /// Hasher seed.
    pub seed: u64,
}

impl Params {
    /// Quick: 10k..40k URLs, m scaled from the paper's 16,829,152 for 3.5M.
    pub fn quick(seed: u64) -> Self {
        Self {
            layers: MultiLayerBloomFilter::PAPER_LAYERS,
            hashes: MultiLayerBloomFilter::PAPER_HASHES,
            bits: MultiLayerBloomFilter::PAPER_BITS * 40_000 / 3_500_000,
            sizes: vec![10_000, 20_000, 30_000, 40_000],
            data: url_file(),
            allow_generated: true,
            seed,
        }
    }

    /// The paper's shape and sizes (1, 1.5, 2, 2.5, 3 million URLs), on the real file.
    pub fn full(seed: u64) -> Self {
        Self {
            bits: MultiLayerBloomFilter::PAPER_BITS,
            sizes: vec![1_000_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000],
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

/// `$BLOOMERY_DATA/npm-urls.txt` (default `target/data`).
pub fn url_file() -> PathBuf {
    crate::pcap::data_dir().join("npm-urls.txt")
}

/// Where the URLs came from.
#[derive(Debug, Clone, PartialEq)]
pub enum UrlSource {
    /// The npm file: lines read, distinct usable URLs.
    File {
        /// The file.
        path: PathBuf,
        /// Non-empty lines in it.
        lines: u64,
    },
    /// Generated (the file was missing in a quick run).
    Generated {
        /// The path looked for.
        missing: PathBuf,
    },
}

/// Distinct URLs that normalise (the MLBF refuses a URL without a host), in first-seen order.
pub fn load_urls(p: &Params) -> anyhow::Result<(Vec<String>, UrlSource)> {
    let want = p.sizes.iter().copied().max().unwrap_or(0) as usize;
    match std::fs::read_to_string(&p.data) {
        Ok(text) => {
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            let mut lines = 0u64;
            for l in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                lines += 1;
                if out.len() < want && normalize_url(l, p.layers).is_ok() && seen.insert(l) {
                    out.push(l.to_owned());
                }
            }
            Ok((
                out,
                UrlSource::File {
                    path: p.data.clone(),
                    lines,
                },
            ))
        }
        Err(_) if p.allow_generated => Ok((
            {
                crate::note_generated(NAME, &p.data, "generated repository-like URLs", "npm");
                generated_urls(want as u64, p.seed)
            },
            UrlSource::Generated {
                missing: p.data.clone(),
            },
        )),
        Err(e) => anyhow::bail!(
            "{}: {e} (run `bash scripts/fetch-data.sh npm`, or set BLOOMERY_DATA)",
            p.data.display()
        ),
    }
}

/// Repository-like URLs: a few hosts, users with several repositories, some deeper paths.
pub fn generated_urls(n: u64, seed: u64) -> Vec<String> {
    let mut rng = crate::measure::Rng::new(seed ^ 0x0AB1);
    let hosts = [
        "github.com",
        "gitlab.com",
        "bitbucket.org",
        "git.example.org",
    ];
    (0..n)
        .map(|i| {
            let host = hosts[(rng.below(100) / 90).min(1) as usize * (1 + rng.below(3) as usize)];
            let user = rng.below(n / 3 + 1);
            let mut u = format!("https://{host}/user{user}/repo-{i}");
            if rng.chance(0.05) {
                u.push_str(&format!("/tree/master/pkg{}", rng.below(50)));
            }
            u
        })
        .collect()
}

/// One subset size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// URLs inserted.
    pub n: u64,
    /// False positives over the n queries: classic (m bits), MLBF, classic with (L+1)·m bits
    /// and k, classic with (L+1)·m bits and the optimal k.
    pub fp: [u64; 4],
    /// Model of each count (see the module docs).
    pub model: [f64; 4],
    /// Insert ns per URL, same order.
    pub insert_ns: [f64; 4],
    /// Query ns per URL, same order.
    pub query_ns: [f64; 4],
    /// Queries that were inserted URLs (not counted; expected 0).
    pub excluded: u64,
    /// Inserted URLs a filter did not find (must be 0).
    pub false_negatives: u64,
    /// Eq. 4 for the MLBF's shape: `f(k, m, n)^L`, times n.
    pub eq4: f64,
    /// The optimal k at (L+1)·m bits.
    pub k_opt: u32,
}

/// Labels of the four filters.
pub const FILTERS: [&str; 4] = [
    "classic (m bits, k)",
    "MLBF (L+1 arrays of m bits, k)",
    "classic, equal memory ((L+1)·m bits, k)",
    "classic, equal memory, optimal k",
];

/// Nanoseconds of CPU time this thread has used (not wall-clock: other processes on a busy
/// machine do not count), falling back to wall-clock time where the clock is unavailable.
fn thread_cpu_ns() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64)
}

fn time<R>(f: impl FnOnce() -> R) -> (R, f64) {
    let (t, c) = (Instant::now(), thread_cpu_ns());
    let r = f();
    match (c, thread_cpu_ns()) {
        (Some(a), Some(b)) => (r, b - a),
        _ => (r, t.elapsed().as_nanos() as f64),
    }
}

/// Measure one subset (the first `n` URLs).
pub fn measure_one(p: &Params, urls: &[String], n: usize) -> anyhow::Result<Row> {
    let urls = &urls[..n];
    let hasher = KeyHasher::with_seed(p.seed);
    let (m, k, l) = (p.bits, p.hashes, p.layers);
    let total = m * (u64::from(l) + 1);
    let k_opt = params::optimal_k(n as u64, total);
    let mut classic = BloomFilter::builder()
        .bits(m)
        .hashes(k)
        .hasher(hasher)
        .try_build()?;
    let mut mlbf = MultiLayerBloomFilter::builder()
        .layers(l)
        .bits(m)
        .hashes(k)
        .hasher(hasher)
        .try_build()?;
    let mut equal = BloomFilter::builder()
        .bits(total)
        .hashes(k)
        .hasher(hasher)
        .try_build()?;
    let mut equal_opt = BloomFilter::builder()
        .bits(total)
        .hashes(k_opt)
        .hasher(hasher)
        .try_build()?;
    let mut insert_ns = [0.0; 4];
    let nf = n as f64;
    insert_ns[0] = time(|| {
        urls.iter().for_each(|u| {
            classic.insert(u.as_str());
        })
    })
    .1 / nf;
    let (r, t) = time(|| urls.iter().try_for_each(|u| mlbf.insert(u).map(drop)));
    r?;
    insert_ns[1] = t / nf;
    insert_ns[2] = time(|| {
        urls.iter().for_each(|u| {
            equal.insert(u.as_str());
        })
    })
    .1 / nf;
    insert_ns[3] = time(|| {
        urls.iter().for_each(|u| {
            equal_opt.insert(u.as_str());
        })
    })
    .1 / nf;

    let inserted: HashSet<&str> = urls.iter().map(String::as_str).collect();
    let queries: Vec<String> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| format!("{u}{i}"))
        .collect();
    let real: Vec<bool> = queries
        .iter()
        .map(|q| !inserted.contains(q.as_str()))
        .collect();
    let excluded = real.iter().filter(|&&r| !r).count() as u64;
    let count = |hits: Vec<bool>| -> u64 {
        hits.iter().zip(&real).filter(|(&h, &r)| h && r).count() as u64
    };
    let mut query_ns = [0.0; 4];
    let mut fp = [0u64; 4];
    let (h, t) = time(|| {
        queries
            .iter()
            .map(|q| classic.contains(q.as_str()))
            .collect()
    });
    (fp[0], query_ns[0]) = (count(h), t / nf);
    let (h, t) = time(|| {
        queries
            .iter()
            .map(|q| mlbf.contains(q))
            .collect::<bloomery::Result<Vec<bool>>>()
    });
    (fp[1], query_ns[1]) = (count(h?), t / nf);
    let (h, t) = time(|| queries.iter().map(|q| equal.contains(q.as_str())).collect());
    (fp[2], query_ns[2]) = (count(h), t / nf);
    let (h, t) = time(|| {
        queries
            .iter()
            .map(|q| equal_opt.contains(q.as_str()))
            .collect()
    });
    (fp[3], query_ns[3]) = (count(h), t / nf);

    let mut false_negatives = 0u64;
    for u in urls {
        false_negatives += u64::from(!classic.contains(u.as_str()))
            + u64::from(!mlbf.contains(u)?)
            + u64::from(!equal.contains(u.as_str()))
            + u64::from(!equal_opt.contains(u.as_str()));
    }

    // models from each filter's own fill
    let fill_rate = |ones: u64, bits: u64, k: u32| (ones as f64 / bits as f64).powi(k as i32);
    let queries_real = (n as u64 - excluded) as f64;
    let layer_rate: Vec<f64> = (0..=l as usize)
        .map(|i| {
            let w = mlbf.layer_words(i).unwrap_or(&[]);
            let ones: u64 = w.iter().map(|x| u64::from(x.count_ones())).sum();
            fill_rate(ones, m, k)
        })
        .collect();
    let mut mlbf_model = 0.0;
    for (q, &r) in queries.iter().zip(&real) {
        if !r {
            continue;
        }
        let last = normalize_url(q, l)?
            .iter()
            .rposition(Option::is_some)
            .unwrap_or(0);
        mlbf_model += layer_rate[last] * layer_rate[l as usize];
    }
    let model = [
        queries_real * fill_rate(classic.count_ones(), m, k),
        mlbf_model,
        queries_real * fill_rate(equal.count_ones(), total, k),
        queries_real * fill_rate(equal_opt.count_ones(), total, k_opt),
    ];
    Ok(Row {
        n: n as u64,
        fp,
        model,
        insert_ns,
        query_ns,
        excluded,
        false_negatives,
        eq4: params::fpr_mlbf(n as u64, m, k, l) * queries_real,
        k_opt,
    })
}

/// The URLs, their source and the rows.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Where the URLs came from.
    pub source: UrlSource,
    /// Distinct usable URLs loaded (at most the largest size).
    pub available: u64,
    /// Per size.
    pub rows: Vec<Row>,
}

/// Load and measure every size (sequentially: the times must not compete).
pub fn measure(p: &Params) -> anyhow::Result<Outcome> {
    let (urls, source) = load_urls(p)?;
    let mut sizes: Vec<usize> = p
        .sizes
        .iter()
        .map(|&s| (s as usize).min(urls.len()))
        .filter(|&s| s > 0)
        .collect();
    sizes.dedup();
    let rows = sizes
        .iter()
        .map(|&n| measure_one(p, &urls, n))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Outcome {
        source,
        available: urls.len() as u64,
        rows,
    })
}

/// The markdown page and the three plots (false positives, insert time, query time).
pub fn render(p: &Params, o: &Outcome) -> (String, [Plot; 3]) {
    let src = match &o.source {
        UrlSource::File { path, lines } => format!(
            "npm `all-the-package-repos` repository URLs (`{}`: {} non-empty lines; the \
             first {} distinct URLs that have a host are used)",
            path.display(),
            int(*lines),
            int(o.available)
        ),
        UrlSource::Generated { missing } => format!(
            "**generated repository-like URLs** ({} of them; `{}` was not found — run \
             `bash scripts/fetch-data.sh npm` for the real ones)",
            int(o.available),
            missing.display()
        ),
    };
    let l = p.layers;
    let mut md = format!(
        "# {NAME}: multi-layer against classic Bloom filter on real URLs\n\n\
         Cen, Xu & Sun §V (Fig. 5-7). URLs: {src}. Shape: k = {k}, m = {m} bits per filter, L = {l} \
         (the MLBF holds {l} layers + the XOR layer = {mb} bits; the classic filter {m} bits). \
         Each inserted URL is queried with its index appended (`URL` + `i`), never an inserted \
         URL (queries equal to an inserted URL are excluded, column \"excl.\"), so every positive \
         is a false positive. Equal memory: classic filters of (L+1)·m = {mb} bits with k = {k} \
         and with the optimal k. Models: classic `q·(ones/m)^k` from its fill; MLBF the sum over \
         queries of `f_last · f_xor` (only the changed last segment's layer and the XOR layer \
         can reject a query); eq. 4 `q·f(k,m,n)^L` for reference. Times: ns of thread CPU time \
         per URL, one thread, release build, normalisation and hashing included (a shared \
         machine: caches are shared, compare columns within a row). Hasher seed {seed}.\n\n\
         ![false positives]({NAME}.svg) ![insert time]({NAME}-insert.svg) \
         ![query time]({NAME}-query.svg)\n\n",
        k = p.hashes,
        m = int(p.bits),
        mb = int(p.bits * (u64::from(l) + 1)),
        seed = p.seed,
    );
    let mut t = Table::new([
        "URLs n",
        "FP classic (model)",
        "FP MLBF (model)",
        "eq. 4 f^L·n",
        "FP classic (L+1)m, k",
        "FP classic (L+1)m, k_opt",
        "k_opt",
        "insert ns: classic / MLBF / (L+1)m / k_opt",
        "query ns: classic / MLBF / (L+1)m / k_opt",
        "MLBF/classic insert, query",
        "excl.",
        "false neg.",
    ]);
    for r in &o.rows {
        let ns = |v: &[f64; 4]| format!("{:.0} / {:.0} / {:.0} / {:.0}", v[0], v[1], v[2], v[3]);
        t.row([
            int(r.n),
            format!("{} ({})", int(r.fp[0]), num(r.model[0], 0)),
            format!("{} ({})", int(r.fp[1]), num(r.model[1], 0)),
            num(r.eq4, 1),
            format!("{} ({})", int(r.fp[2]), num(r.model[2], 1)),
            format!("{} ({})", int(r.fp[3]), rate(r.model[3])),
            r.k_opt.to_string(),
            ns(&r.insert_ns),
            ns(&r.query_ns),
            format!(
                "{:.2}×, {:.2}×",
                r.insert_ns[1] / r.insert_ns[0],
                r.query_ns[1] / r.query_ns[0]
            ),
            int(r.excluded),
            int(r.false_negatives),
        ]);
    }
    md.push_str(&t.to_markdown());
    let xs = |g: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        o.rows.iter().map(|r| (r.n as f64, g(r))).collect()
    };
    let mut fig5 = Plot::new(
        format!(
            "False positives over n queries (URL + id), k={}, L={l}",
            p.hashes
        ),
        "URLs inserted",
        "false positives",
    )
    .log_y();
    for (i, label) in FILTERS.iter().enumerate() {
        fig5.push(Series::new(
            *label,
            xs(&|r| r.fp[i] as f64),
            Style::LinePoints,
            i,
        ));
    }
    fig5.push(Series::new(
        "MLBF model (last layer × XOR layer)",
        xs(&|r| r.model[1]),
        Style::Dashed,
        1,
    ));
    fig5.push(Series::new(
        "eq. 4: f^L·n",
        xs(&|r| r.eq4),
        Style::Dashed,
        4,
    ));
    let timing = |title: &str, g: fn(&Row) -> [f64; 4]| {
        let mut pl = Plot::new(title.to_string(), "URLs inserted", "ns per URL");
        for (i, label) in FILTERS.iter().enumerate() {
            pl.push(Series::new(*label, xs(&|r| g(r)[i]), Style::LinePoints, i));
        }
        pl
    };
    let fig6 = timing("Insert time per URL (one thread)", |r| r.insert_ns);
    let fig7 = timing("Query time per URL (one thread)", |r| r.query_ns);
    (md, [fig5, fig6, fig7])
}

/// Run at the size the options ask; writes `mlbf-urls.md`, `.svg` (Fig. 5), `-insert.svg`
/// (Fig. 6) and `-query.svg` (Fig. 7).
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let o = measure(&p)?;
    let (md, [fig5, fig6, fig7]) = render(&p, &o);
    let mut report = write_report(opts, NAME, md, &fig5)?;
    for (suffix, plot) in [("insert", &fig6), ("query", &fig7)] {
        let path = opts.out_dir.join(format!("{NAME}-{suffix}.svg"));
        plot.write_svg(&path)?;
        report.files.push(path);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_no_false_negatives_and_counts_on_their_models() {
        let mut p = Params::quick(1);
        // always the generated URLs here, so the test does not depend on downloaded data
        p.data = PathBuf::from("/nonexistent/npm-urls.txt");
        let o = measure(&p).unwrap();
        assert!(matches!(o.source, UrlSource::Generated { .. }));
        assert_eq!(o.rows.len(), 4);
        for r in &o.rows {
            assert_eq!(r.false_negatives, 0, "n={}", r.n);
            // each count within 3σ (Poisson) + 10% of its fill-based model
            for (i, name) in FILTERS.iter().enumerate() {
                let (x, mu) = (r.fp[i] as f64, r.model[i]);
                assert!(
                    (x - mu).abs() <= 3.0 * mu.sqrt() + 0.1 * mu + 1.0,
                    "n={} {name}: {x} vs model {mu}",
                    r.n
                );
            }
            // the MLBF beats the classic filter of m bits, and eq. 4 is optimistic for the
            // paper's near-duplicate queries
            assert!(r.fp[1] < r.fp[0], "n={}", r.n);
            assert!(r.model[1] > r.eq4, "n={}", r.n);
        }
        // false positives grow with n (Fig. 5)
        assert!(o.rows.windows(2).all(|w| w[0].fp[0] < w[1].fp[0]));
        let (md, plots) = render(&p, &o);
        assert!(md.contains("generated repository-like URLs") && md.contains("| URLs n"));
        for pl in plots {
            assert!(pl.to_svg().unwrap().contains("<svg"));
        }
    }

    #[test]
    fn real_file_is_read_distinct_and_normalisable() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("u.txt");
        std::fs::write(
            &f,
            "https://a.org/x\n\nhttps://a.org/x\nhttp:///nohost\nb.org/y\n",
        )
        .unwrap();
        let p = Params {
            data: f,
            sizes: vec![10],
            allow_generated: false,
            ..Params::quick(1)
        };
        let (urls, src) = load_urls(&p).unwrap();
        assert_eq!(urls, ["https://a.org/x", "b.org/y"]);
        assert!(matches!(src, UrlSource::File { lines: 4, .. }));
        let missing = Params {
            data: dir.path().join("none"),
            ..p
        };
        assert!(load_urls(&missing).is_err());
    }
}
