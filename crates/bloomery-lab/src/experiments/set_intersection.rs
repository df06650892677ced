//! `set-intersection`: set intersection for keyword search (Reynolds & Vahdat), the Bloom
//! semi-join of distributed databases, and join-size estimation from two filters.
//!
//! Simulates Broder & Mitzenmacher:
//! - §5.3, "Set Intersection for Keyword Searches": "Peer B can send a Bloom filter
//!   representing S_B to A; peer A then sends the elements of S_A that appear to be in S_B
//!   according to the filter. False positives yield elements of S_A that are in fact not in
//!   S_B, but, if desired, B can then determine these elements to find S_A ∩ S_B exactly. The
//!   Bloom filter approach allows S_A ∩ S_B to be determined with fewer bits transmitted than A
//!   sending the entire set S_A." Here S_A and S_B are the document lists of two keywords of a
//!   conjunctive query, held by the nodes responsible for them; the exact protocol sends the
//!   smaller list whole.
//! - §3.2, "Databases": the semi-join — one host holds the cities whose cost of living is over
//!   the threshold, the other the employees and their cities; "the first could send a Bloom
//!   filter of this list. The second host can then send a list of potential employee/city
//!   pairs back to the first database, where false positives can be removed"; and "Bloom
//!   filters can be used to estimate the size of semi-join operations, using the fact that
//!   Bloom filters can be used to estimate intersections" (§2.4;
//!   [`BloomFilter::estimate_intersection`]).
//!
//! Filters are classic [`BloomFilter`]s with the optimal k, sent compressed
//! ([`bloomery::compress::compress_bits`]); identifiers are 8 bytes on the wire, employee
//! tuples `tuple_bytes`, city names their length plus a newline.

use bloomery::compress::compress_bits;
use bloomery::{params, BloomFilter, Filter, KeyHasher};

use crate::measure::{key, rate_sigma, within, Rng};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "set-intersection";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// |S_A|: documents of the common keyword.
    pub docs_a: u64,
    /// |S_B|: documents of the rarer keyword (the filter's set).
    pub docs_b: u64,
    /// |S_A ∩ S_B|.
    pub common: u64,
    /// Filter sizes: bits per element.
    pub bits: Vec<u64>,
    /// Cities in the database.
    pub cities: u64,
    /// Cities over the cost-of-living threshold (the semi-join's filter set).
    pub expensive: u64,
    /// Employees, each living in a uniformly chosen city.
    pub employees: u64,
    /// Bytes of an employee/city tuple on the wire.
    pub tuple_bytes: u64,
    /// Overlaps for the join-size estimate, as fractions of |S_B|.
    pub overlaps: Vec<f64>,
    /// Seed of the hasher and the sets.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build.
    pub fn quick(seed: u64) -> Self {
        Self {
            docs_a: 50_000,
            docs_b: 5_000,
            common: 500,
            bits: vec![2, 4, 6, 8, 10, 12, 16],
            cities: 5_000,
            expensive: 500,
            employees: 50_000,
            tuple_bytes: 40,
            overlaps: vec![0.0, 0.01, 0.1, 0.5, 1.0],
            seed,
        }
    }

    /// The documented size: |S_A| = 2,000,000, |S_B| = 200,000, 20,000 in common; 100,000
    /// cities, 10,000 expensive, 2,000,000 employees.
    pub fn full(seed: u64) -> Self {
        Self {
            docs_a: 2_000_000,
            docs_b: 200_000,
            common: 20_000,
            cities: 100_000,
            expensive: 10_000,
            employees: 2_000_000,
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

/// One filter size of the keyword-search intersection.
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordRow {
    /// Bits per element of S_B.
    pub bits: u64,
    /// Hash functions.
    pub k: u32,
    /// Bytes of the compressed filter (step 1).
    pub filter_bytes: u64,
    /// Elements of S_A that matched (step 2 sends them).
    pub matched: u64,
    /// Of those, not in S_B: removed by B at step 3.
    pub false_positives: u64,
    /// Expected false positives, `(|S_A| − |S_A ∩ S_B|) · f`.
    pub predicted: f64,
    /// Elements of the intersection that did not match (must be 0).
    pub missed: u64,
}

/// One filter size of the semi-join.
#[derive(Debug, Clone, PartialEq)]
pub struct SemiJoinRow {
    /// Bits per expensive city.
    pub bits: u64,
    /// Bytes of the compressed filter.
    pub filter_bytes: u64,
    /// Employees in expensive cities (the join's result).
    pub true_tuples: u64,
    /// Employees sent whose city is not expensive (removed by the first host).
    pub false_tuples: u64,
    /// Expected false tuples.
    pub predicted: f64,
}

/// One overlap of the join-size estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct EstimateRow {
    /// True |A ∩ B|.
    pub truth: u64,
    /// Estimate from the two filters.
    pub estimate: f64,
}

/// Everything measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    /// Keyword search, per filter size.
    pub keyword: Vec<KeywordRow>,
    /// Bytes of S_B sent whole (the exact protocol).
    pub exact_keyword_bytes: u64,
    /// Semi-join, per filter size.
    pub semijoin: Vec<SemiJoinRow>,
    /// Bytes of the expensive city names sent whole.
    pub city_list_bytes: u64,
    /// Join-size estimates, per overlap (bits: 8 per element of the larger set).
    pub estimates: Vec<EstimateRow>,
}

fn filter(m: u64, k: u32, seed: u64) -> anyhow::Result<BloomFilter> {
    Ok(BloomFilter::builder()
        .bits(m)
        .hashes(k)
        .hasher(KeyHasher::with_seed(seed))
        .try_build()?)
}

fn city(i: u64) -> String {
    format!("city-{i:06}")
}

/// Run the three protocols.
pub fn measure(p: &Params) -> anyhow::Result<Results> {
    anyhow::ensure!(p.common <= p.docs_b && p.docs_b <= p.docs_a && p.expensive <= p.cities);
    // Documents: S_B = ids 0..docs_b; S_A = the first `common` of them plus others.
    let doc = |i: u64| key(p.seed, i);
    let mut keyword = Vec::new();
    for &b in &p.bits {
        let m = b * p.docs_b;
        let k = params::optimal_k(p.docs_b, m);
        let mut f = filter(m, k, p.seed)?;
        for i in 0..p.docs_b {
            f.insert(&doc(i));
        }
        let mut row = KeywordRow {
            bits: b,
            k,
            filter_bytes: compress_bits(f.as_words(), m)?.len() as u64,
            matched: 0,
            false_positives: 0,
            predicted: (p.docs_a - p.common) as f64 * params::fpr_exact(p.docs_b, m, k),
            missed: 0,
        };
        for i in 0..p.common {
            let hit = f.contains(&doc(i));
            row.matched += u64::from(hit);
            row.missed += u64::from(!hit);
        }
        for i in 0..p.docs_a - p.common {
            if f.contains(&doc((1 << 40) + i)) {
                row.matched += 1;
                row.false_positives += 1;
            }
        }
        keyword.push(row);
    }
    // Semi-join: expensive cities are every (cities/expensive)-th one.
    let step = p.cities / p.expensive.max(1);
    let is_expensive = |c: u64| c.is_multiple_of(step) && c / step < p.expensive;
    let mut rng = Rng::new(p.seed ^ 0x5E41);
    let homes: Vec<u64> = (0..p.employees).map(|_| rng.below(p.cities)).collect();
    let true_tuples = homes.iter().filter(|&&c| is_expensive(c)).count() as u64;
    let city_list_bytes = (0..p.expensive)
        .map(|i| city(i * step).len() as u64 + 1)
        .sum();
    let mut semijoin = Vec::new();
    for &b in &p.bits {
        let m = b * p.expensive;
        let k = params::optimal_k(p.expensive, m);
        let mut f = filter(m, k, p.seed)?;
        for i in 0..p.expensive {
            f.insert(city(i * step).as_str());
        }
        // Each distinct city is tested once; its employees follow its answer.
        let passes: Vec<bool> = (0..p.cities)
            .map(|c| f.contains(city(c).as_str()))
            .collect();
        let mut row = SemiJoinRow {
            bits: b,
            filter_bytes: compress_bits(f.as_words(), m)?.len() as u64,
            true_tuples,
            false_tuples: 0,
            predicted: (p.employees - true_tuples) as f64 * params::fpr_exact(p.expensive, m, k),
        };
        for &c in &homes {
            if passes[c as usize] && !is_expensive(c) {
                row.false_tuples += 1;
            }
            anyhow::ensure!(passes[c as usize] || !is_expensive(c), "false negative");
        }
        semijoin.push(row);
    }
    // Join-size estimates: filters of A (docs_b elements) and B (docs_b elements), overlap x.
    let m = 8 * p.docs_b;
    let k = params::optimal_k(p.docs_b, m);
    let mut estimates = Vec::new();
    for &o in &p.overlaps {
        let x = (o * p.docs_b as f64).round() as u64;
        let mut fa = filter(m, k, p.seed)?;
        let mut fb = filter(m, k, p.seed)?;
        for i in 0..p.docs_b {
            fa.insert(&doc(i));
            fb.insert(&doc(if i < x { i } else { (1 << 41) + i }));
        }
        estimates.push(EstimateRow {
            truth: x,
            estimate: fa.estimate_intersection(&fb)?,
        });
    }
    Ok(Results {
        keyword,
        exact_keyword_bytes: p.docs_b * 8,
        semijoin,
        city_list_bytes,
        estimates,
    })
}

/// σ of a false-positive count with expectation `e` over `trials` Bernoulli trials.
fn count_sigma(e: f64, trials: u64) -> f64 {
    rate_sigma(e / trials.max(1) as f64, trials, 0.0) * trials as f64
}

/// The markdown page and the plot.
pub fn render(p: &Params, r: &Results) -> (String, Plot) {
    let mut t = Table::new([
        "bits/element",
        "k",
        "step 1: filter B (compressed)",
        "step 2: matches sent B",
        "total B",
        "exact: S_B whole B",
        "total / exact",
        "false positives removed at step 3 (formula)",
        "(measured)",
    ]);
    for row in &r.keyword {
        let total = row.filter_bytes + row.matched * 8;
        t.row([
            row.bits.to_string(),
            row.k.to_string(),
            int(row.filter_bytes),
            int(row.matched * 8),
            int(total),
            int(r.exact_keyword_bytes),
            num(total as f64 / r.exact_keyword_bytes as f64, 3),
            num(row.predicted, 1),
            int(row.false_positives),
        ]);
    }
    let mut s = Table::new([
        "bits/city",
        "filter B (compressed)",
        "tuples sent (true + false)",
        "false tuples removed (formula)",
        "(measured)",
        "Bloom semi-join total B",
        "exact semi-join total B",
        "Bloom / exact",
    ]);
    for row in &r.semijoin {
        let bloom = row.filter_bytes + (row.true_tuples + row.false_tuples) * p.tuple_bytes;
        let exact = r.city_list_bytes + row.true_tuples * p.tuple_bytes;
        s.row([
            row.bits.to_string(),
            int(row.filter_bytes),
            int(row.true_tuples + row.false_tuples),
            num(row.predicted, 1),
            int(row.false_tuples),
            int(bloom),
            int(exact),
            num(bloom as f64 / exact as f64, 3),
        ]);
    }
    let mut e = Table::new(["true |A ∩ B|", "estimate from the filters", "error"]);
    for row in &r.estimates {
        e.row([
            int(row.truth),
            num(row.estimate, 1),
            num(row.estimate - row.truth as f64, 1),
        ]);
    }
    let mut md = format!(
        "# {NAME}: keyword-search intersection, Bloom semi-join, join-size estimates\n\n\
         Broder & Mitzenmacher §5.3 (Reynolds & Vahdat) and §3.2 (semi-joins, join-size estimates via \
         §2.4). Classic `BloomFilter`s with the optimal k and seed {seed}, sent compressed \
         (`compress::compress_bits`).\n\n\
         ## Keyword search: S_A ∩ S_B\n\n\
         |S_A| = {a} documents, |S_B| = {b}, {c} in common; ids are 8 bytes. B sends a filter \
         of S_B (step 1), A sends the elements of S_A it matches (step 2), B removes the false \
         positives (step 3) and has S_A ∩ S_B exactly. The exact protocol sends S_B whole.\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        seed = p.seed,
        a = int(p.docs_a),
        b = int(p.docs_b),
        c = int(p.common),
    );
    md.push_str(&t.to_markdown());
    md.push_str(&format!(
        "\n## Semi-join: employees living in expensive cities\n\n\
         {cities} cities, {exp} of them over the cost-of-living threshold (host 1); {emp} \
         employees (host 2), each in a uniformly chosen city; a tuple is {tb} bytes. Host 1 \
         sends a filter of the expensive cities, host 2 sends the tuples whose city matches, \
         host 1 removes the false ones. The exact semi-join sends the {exp} city names \
         ({list} bytes) instead of the filter.\n\n",
        cities = int(p.cities),
        exp = int(p.expensive),
        emp = int(p.employees),
        tb = p.tuple_bytes,
        list = int(r.city_list_bytes),
    ));
    md.push_str(&s.to_markdown());
    md.push_str(&format!(
        "\n## Join size from two filters\n\n\
         Two sets of {b} elements with the given overlap, each in a filter of {m} bits \
         (8 per element): `BloomFilter::estimate_intersection` (Broder & Mitzenmacher §2.4) before any element \
         is sent.\n\n",
        b = int(p.docs_b),
        m = int(8 * p.docs_b),
    ));
    md.push_str(&e.to_markdown());

    let mut plot = Plot::new(
        format!(
            "Keyword search: bytes to find S_A ∩ S_B (|S_A| = {}, |S_B| = {})",
            p.docs_a, p.docs_b
        ),
        "filter bits per element of S_B",
        "bytes sent",
    )
    .log_y();
    let of = |g: &dyn Fn(&KeywordRow) -> f64| -> Vec<(f64, f64)> {
        r.keyword.iter().map(|x| (x.bits as f64, g(x))).collect()
    };
    plot.push(Series::new(
        "Bloom protocol, total",
        of(&|x| (x.filter_bytes + x.matched * 8) as f64),
        Style::LinePoints,
        0,
    ));
    plot.push(Series::new(
        "step 1: compressed filter",
        of(&|x| x.filter_bytes as f64),
        Style::Dashed,
        2,
    ));
    plot.push(Series::new(
        "step 2: matches",
        of(&|x| (x.matched * 8) as f64),
        Style::Dashed,
        3,
    ));
    plot.push(Series::new(
        "exact: S_B whole",
        of(&|_| r.exact_keyword_bytes as f64),
        Style::Line,
        1,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `set-intersection.md` and `.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let r = measure(&p)?;
    let (md, plot) = render(&p, &r);
    write_report(opts, NAME, md, &plot)
}

/// True when a measured false-positive count is within 5σ (plus 5 %) of its formula.
pub fn agrees(measured: u64, predicted: f64, trials: u64) -> bool {
    within(
        measured as f64,
        predicted,
        count_sigma(predicted, trials),
        5.0,
        0.05,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_run_matches_the_formulas() {
        let p = Params::quick(1);
        let r = measure(&p).unwrap();
        for row in &r.keyword {
            assert_eq!(row.missed, 0);
            assert_eq!(row.matched, p.common + row.false_positives);
            assert!(
                agrees(row.false_positives, row.predicted, p.docs_a - p.common),
                "{row:?}"
            );
        }
        // at 8 bits per element the Bloom protocol beats sending S_B whole
        let b8 = r.keyword.iter().find(|x| x.bits == 8).unwrap();
        assert!(
            b8.filter_bytes + b8.matched * 8 < r.exact_keyword_bytes / 2,
            "{b8:?}"
        );
        let true_tuples = r.semijoin[0].true_tuples;
        for row in &r.semijoin {
            assert_eq!(row.true_tuples, true_tuples);
            // one test per distinct city, so the count is lumpy: allow 8σ-equivalent
            assert!(
                (row.false_tuples as f64 - row.predicted).abs()
                    <= 8.0 * count_sigma(row.predicted, p.employees) * 10f64.sqrt()
                        + 0.1 * row.predicted,
                "{row:?}"
            );
        }
        assert!(r
            .semijoin
            .windows(2)
            .all(|w| w[1].false_tuples <= w[0].false_tuples));
        for e in &r.estimates {
            let tol = 0.05 * p.docs_b as f64;
            assert!((e.estimate - e.truth as f64).abs() < tol, "{e:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let (md, plot) = render(&p, &r);
        let opts = RunOptions {
            out_dir: dir.path().join("out"),
            quick: true,
            seed: 1,
        };
        let report = write_report(&opts, NAME, md, &plot).unwrap();
        assert!(report.files.iter().all(|f| f.exists()));
    }
}
