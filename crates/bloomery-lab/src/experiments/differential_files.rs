//! `differential-files`: a Bloom filter of changed record keys in front of a differential file,
//! and delta updates of a shared filter.
//!
//! Simulates Broder & Mitzenmacher §3.2, differential
//! files (Gremillion; Mullin): "A differential file then keeps track of changes that occur
//! during the day. If one wants to read a record, one has to know if the record has been
//! changed ... Instead of keeping a list of all records that have changed, one can keep a Bloom
//! filter of records that have been changed. Here, a false positive forces one to read the
//! differential file and the database even when a record has not been changed." Without the
//! filter every read first searches the differential file; with it only reads of changed
//! records and false positives do.
//!
//! The second table measures the delta updates of Salman §8.1
//! and Broder & Mitzenmacher §4/§2.6 ("using delta compression and compressed Bloom filters ... can yield a
//! further reduction in the number of bits transmitted"): a peer holding version t of a filter
//! receives [`bloomery::compress::diff`] of versions t and t+1 — the XOR of the arrays,
//! range-coded, with fingerprints of both versions — instead of the whole (compressed) filter
//! or the list of new keys. Each new key flips at most k bits, so the delta costs about
//! `k · log2(e·m / (k·c)) / 8` bytes per changed key (c keys changed), the entropy of choosing
//! the flipped bits.

use bloomery::compress::{compress_bits, diff, patch};
use bloomery::{params, BloomFilter, Filter, KeyHasher};

use crate::measure::{key, Rng};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "differential-files";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Records in the database.
    pub records: u64,
    /// Records changed during the day (in the differential file).
    pub changed: u64,
    /// Reads, uniformly over the records.
    pub reads: u64,
    /// Filter sizes: bits per changed record.
    pub bits: Vec<u64>,
    /// Items of the shared filter (delta updates).
    pub items: u64,
    /// Bits per item of the shared filter.
    pub bits_per_item: u64,
    /// Hash functions of the shared filter.
    pub hashes: u32,
    /// New items between two versions.
    pub deltas: Vec<u64>,
    /// Seed of the hasher, the reads and the keys.
    pub seed: u64,
}

impl Params {
    /// Seconds in a debug build.
    pub fn quick(seed: u64) -> Self {
        Self {
            records: 1_000_000,
            changed: 10_000,
            reads: 50_000,
            bits: vec![1, 2, 4, 6, 8, 10, 12],
            items: 20_000,
            bits_per_item: 16,
            hashes: 4,
            deltas: vec![1, 10, 100, 1_000, 10_000],
            seed,
        }
    }

    /// The documented size: 100 M records, 1 M changed, 2 M reads; a shared filter of 1 M
    /// items at 16 bits per item.
    pub fn full(seed: u64) -> Self {
        Self {
            records: 100_000_000,
            changed: 1_000_000,
            reads: 2_000_000,
            items: 1_000_000,
            deltas: vec![1, 10, 100, 1_000, 10_000, 100_000, 1_000_000],
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

/// One filter size of the differential file.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRow {
    /// Bits per changed record.
    pub bits: u64,
    /// Hash functions (optimal).
    pub k: u32,
    /// Reads of changed records (the differential file must be read).
    pub changed_reads: u64,
    /// Reads of unchanged records the filter passed (needless differential-file reads).
    pub false_positives: u64,
    /// Expected false positives.
    pub predicted: f64,
    /// Reads of changed records the filter missed (must be 0).
    pub missed: u64,
}

/// One delta size.
#[derive(Debug, Clone, PartialEq)]
pub struct DeltaRow {
    /// New keys between the versions.
    pub changed: u64,
    /// Bits that differ.
    pub flipped: u64,
    /// Bytes of the delta.
    pub delta_bytes: u64,
    /// Bytes of the new version, compressed whole.
    pub full_bytes: u64,
    /// `k · log2(e·m/(k·c)) / 8` per changed key, times c, plus the fixed 39 bytes.
    pub predicted: f64,
}

/// Everything measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    /// The differential file, per filter size.
    pub reads: Vec<ReadRow>,
    /// Delta updates, per number of changed keys.
    pub deltas: Vec<DeltaRow>,
    /// Bits of the shared filter.
    pub m: u64,
}

fn filter(m: u64, k: u32, seed: u64) -> anyhow::Result<BloomFilter> {
    Ok(BloomFilter::builder()
        .bits(m)
        .hashes(k)
        .hasher(KeyHasher::with_seed(seed))
        .try_build()?)
}

/// Run both parts.
pub fn measure(p: &Params) -> anyhow::Result<Results> {
    anyhow::ensure!(p.changed >= 1 && p.changed <= p.records);
    // Changed records: every (records/changed)-th record id.
    let step = p.records / p.changed;
    let is_changed = |r: u64| r.is_multiple_of(step) && r / step < p.changed;
    let mut rng = Rng::new(p.seed ^ 0xD1FF);
    let reads: Vec<u64> = (0..p.reads).map(|_| rng.below(p.records)).collect();
    let changed_reads = reads.iter().filter(|&&r| is_changed(r)).count() as u64;
    let mut rows = Vec::new();
    for &b in &p.bits {
        let m = b * p.changed;
        let k = params::optimal_k(p.changed, m);
        let mut f = filter(m, k, p.seed)?;
        for i in 0..p.changed {
            f.insert(&(i * step));
        }
        let mut row = ReadRow {
            bits: b,
            k,
            changed_reads,
            false_positives: 0,
            predicted: (p.reads - changed_reads) as f64 * params::fpr_exact(p.changed, m, k),
            missed: 0,
        };
        for &r in &reads {
            let hit = f.contains(&r);
            match (is_changed(r), hit) {
                (true, false) => row.missed += 1,
                (false, true) => row.false_positives += 1,
                _ => {}
            }
        }
        rows.push(row);
    }
    // Delta updates of a shared filter.
    let m = p.items * p.bits_per_item;
    let mut base = filter(m, p.hashes, p.seed)?;
    for i in 0..p.items {
        base.insert(&key(p.seed, i));
    }
    let mut deltas = Vec::new();
    for &c in &p.deltas {
        let mut next = base.clone();
        for i in 0..c {
            next.insert(&key(p.seed, (1 << 42) + i));
        }
        let d = diff(base.as_words(), next.as_words(), m)?;
        anyhow::ensure!(
            patch(base.as_words(), &d, m, 1 << 34)? == next.as_words(),
            "patch must give the new version"
        );
        let flipped = base
            .as_words()
            .iter()
            .zip(next.as_words())
            .map(|(a, b)| u64::from((a ^ b).count_ones()))
            .sum();
        let k = f64::from(p.hashes);
        let per = k * (std::f64::consts::E * m as f64 / (k * c as f64)).log2() / 8.0;
        deltas.push(DeltaRow {
            changed: c,
            flipped,
            delta_bytes: d.len() as u64,
            full_bytes: compress_bits(next.as_words(), m)?.len() as u64,
            predicted: per * c as f64 + 39.0,
        });
    }
    Ok(Results {
        reads: rows,
        deltas,
        m,
    })
}

/// The markdown page and the plot.
pub fn render(p: &Params, r: &Results) -> (String, Plot) {
    let mut t = Table::new([
        "bits/changed record",
        "k",
        "filter size",
        "differential-file reads (changed + false positives)",
        "false positives (formula)",
        "(measured)",
        "reads saved vs no filter",
        "accesses per read",
    ]);
    for row in &r.reads {
        let diff_reads = row.changed_reads + row.false_positives;
        t.row([
            row.bits.to_string(),
            row.k.to_string(),
            crate::table::int(row.bits * p.changed / 8) + " B",
            int(diff_reads),
            num(row.predicted, 1),
            int(row.false_positives),
            rate((p.reads - diff_reads) as f64 / p.reads as f64),
            num(1.0 + diff_reads as f64 / p.reads as f64, 4),
        ]);
    }
    let mut d = Table::new([
        "changed keys c",
        "bits flipped",
        "delta B",
        "delta B per changed key",
        "formula B per key (k·log2(e·m/kc)/8)",
        "compressed filter whole B",
        "keys as a list B (8 per key)",
        "delta / whole",
    ]);
    for row in &r.deltas {
        d.row([
            int(row.changed),
            int(row.flipped),
            int(row.delta_bytes),
            num(row.delta_bytes as f64 / row.changed as f64, 2),
            num((row.predicted - 39.0) / row.changed as f64, 2),
            int(row.full_bytes),
            int(row.changed * 8),
            num(row.delta_bytes as f64 / row.full_bytes as f64, 4),
        ]);
    }
    let mut md = format!(
        "# {NAME}: a filter of changed records, and delta updates\n\n\
         ## Differential file (Broder & Mitzenmacher §3.2)\n\n\
         {rec} records, {ch} changed during the day (listed in the differential file); {reads} \
         reads uniformly over the records. Without a filter every read searches the \
         differential file before the database (2 accesses per read); with a classic \
         `BloomFilter` of the changed keys (optimal k, seed {seed}) only reads that hit the \
         filter do. No changed record is ever missed.\n\n\
         ![{NAME}]({NAME}.svg)\n\n",
        rec = int(p.records),
        ch = int(p.changed),
        reads = int(p.reads),
        seed = p.seed,
    );
    md.push_str(&t.to_markdown());
    md.push_str(&format!(
        "\n## Delta updates (Salman §8.1, Broder & Mitzenmacher §4 and §2.6)\n\n\
         A shared classic filter of {n} items, m = {m} bits ({bpi} per item), k = {k}. Version \
         t+1 adds c new keys; the peer holding version t receives `compress::diff` (XOR of the \
         arrays, range-coded, 39 bytes of headers and fingerprints) and `compress::patch` \
         checks it rebuilds version t+1. The formula is the entropy of the flipped bits, about \
         k of the m per new key.\n\n",
        n = int(p.items),
        m = int(r.m),
        bpi = p.bits_per_item,
        k = p.hashes,
    ));
    md.push_str(&d.to_markdown());

    let mut plot = Plot::new(
        format!(
            "Differential file: reads that search it ({} reads, {} changed of {} records)",
            p.reads, p.changed, p.records
        ),
        "filter bits per changed record",
        "reads",
    )
    .log_y();
    let of = |g: &dyn Fn(&ReadRow) -> f64| -> Vec<(f64, f64)> {
        r.reads
            .iter()
            .map(|x| (x.bits as f64, g(x).max(0.5)))
            .collect()
    };
    plot.push(Series::new(
        "differential-file reads, measured",
        of(&|x| (x.changed_reads + x.false_positives) as f64),
        Style::LinePoints,
        0,
    ));
    plot.push(Series::new(
        "false positives, formula",
        of(&|x| x.predicted),
        Style::Line,
        1,
    ));
    plot.push(Series::new(
        "false positives, measured",
        of(&|x| x.false_positives as f64),
        Style::Points,
        1,
    ));
    plot.push(Series::new(
        "without a filter (every read)",
        of(&|_| p.reads as f64),
        Style::Dashed,
        2,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `differential-files.md` and `.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let r = measure(&p)?;
    let (md, plot) = render(&p, &r);
    write_report(opts, NAME, md, &plot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{rate_sigma, within};

    #[test]
    fn quick_run_saves_reads_and_deltas_are_small() {
        let p = Params::quick(1);
        let r = measure(&p).unwrap();
        for row in &r.reads {
            assert_eq!(row.missed, 0);
            let trials = p.reads - row.changed_reads;
            let sigma = rate_sigma(row.predicted / trials as f64, trials, 0.0) * trials as f64;
            assert!(
                within(row.false_positives as f64, row.predicted, sigma, 5.0, 0.05),
                "{row:?}"
            );
        }
        // 8 bits per changed record: about 2 % false positives, so almost every read is saved
        let b8 = r.reads.iter().find(|x| x.bits == 8).unwrap();
        assert!(b8.false_positives < p.reads / 20, "{b8:?}");
        for row in &r.deltas {
            assert!(row.flipped <= row.changed * u64::from(p.hashes));
            // within 3 % of the entropy estimate (plus the fixed headers)
            assert!(
                (row.delta_bytes as f64) < row.predicted * 1.03 + 8.0,
                "{row:?}"
            );
        }
        // a small update costs a small fraction of the whole filter
        let c100 = r.deltas.iter().find(|x| x.changed == 100).unwrap();
        assert!(c100.delta_bytes * 20 < c100.full_bytes, "{c100:?}");
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
