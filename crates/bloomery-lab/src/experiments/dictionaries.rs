//! `dictionaries`: a spell checker and a weak-password blocklist over a real word list, with
//! Manber & Wu's edit-distance-1 extension, against an exact set.
//!
//! Reproduces Broder & Mitzenmacher §3.1,
//! "Dictionaries" (and Salman §8's applications): "a Bloom filter representation of the
//! dictionary was stored. A false positive could allow a misspelled word to be ignored";
//! Spafford's filter of unsuitable passwords, which "Manber and Wu ... extend ... so that
//! passwords that are within edit distance 1 of the dictionary word are also not allowed. In
//! this setting, a false positive could force a user to avoid a password even if does not lie
//! in the set of unsuitable passwords."
//!
//! The dictionary is Debian's `wamerican-insane` (`scripts/fetch-data.sh words`, read from
//! `$BLOOMERY_DATA/words`, default `target/data/words`). The quick size uses a deterministic
//! sample of it, or — when the file is missing — a generated word list, and says so.
//!
//! **Spell checker.** A classic [`BloomFilter`] of all words with m = b · words bits and k
//! optimal, b = 2…20 bits per word; the queries are real misspellings — edit-distance-1
//! variants of dictionary words that are not words themselves (checked against the exact
//! set) — so every positive is a false positive. Measured against `(1-(1-1/m)^(kn))^k`.
//!
//! **Password check.** A candidate is rejected when it or any string within edit distance 1
//! may be in the filter ([`edit1_variants`], the same generator `bloomery check
//! --edit-distance 1` uses). Words and their variants are always rejected (no false negatives);
//! random strong passwords are rejected only by false positives, with probability
//! `1-(1-f)^V` for V distinct strings tested. Memory and time against a `HashSet` of the words.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use bloomery::keys::{edit1_variants, PRINTABLE_ASCII};
use bloomery::{params, BloomFilter, Filter, KeyHasher, Stats};
use rayon::prelude::*;

use crate::measure::{rate_sigma, Rng};
use crate::plot::Plot;
use crate::plot::Series;
use crate::plot::Style;
use crate::table::{int, num, rate, Table};
use crate::{write_report, Report, RunOptions};

/// Name on the command line.
pub const NAME: &str = "dictionaries";

/// The experiment's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Words used (a deterministic sample when fewer than the list has; 0 = all).
    pub words: usize,
    /// Misspellings queried per size.
    pub misspellings: usize,
    /// Random strong passwords checked per size.
    pub passwords: usize,
    /// Length of a random password.
    pub password_len: usize,
    /// Filter sizes: bits per word.
    pub bits_per_word: Vec<u64>,
    /// Sizes for the password check (bits per word).
    pub password_bits: Vec<u64>,
    /// Seed of the hasher and the samples.
    pub seed: u64,
    /// Quick size (a generated list may stand in for a missing file).
    pub quick: bool,
}

impl Params {
    /// Seconds in a debug build: 20,000 words, 100,000 misspellings, 300 passwords.
    pub fn quick(seed: u64) -> Self {
        Self {
            words: 20_000,
            misspellings: 100_000,
            passwords: 300,
            password_len: 10,
            bits_per_word: (2..=20).step_by(2).collect(),
            password_bits: vec![16, 20, 24, 28, 32],
            seed,
            quick: true,
        }
    }

    /// The documented size: all 663k words, 5,000,000 misspellings, 20,000 passwords.
    pub fn full(seed: u64) -> Self {
        Self {
            words: 0,
            misspellings: 5_000_000,
            passwords: 20_000,
            quick: false,
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

/// Where the word list is: `$BLOOMERY_DATA/words`, default `target/data/words`.
pub fn words_path() -> PathBuf {
    std::env::var_os("BLOOMERY_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/data"))
        .join("words")
}

/// The dictionary and where it came from.
#[derive(Debug, Clone)]
pub struct Dictionary {
    /// Distinct words.
    pub words: Vec<Vec<u8>>,
    /// A sentence on the source.
    pub source: String,
}

/// Load the word list (or generate one in quick mode when it is missing).
pub fn dictionary(p: &Params) -> anyhow::Result<Dictionary> {
    let path = words_path();
    let (mut words, mut source): (Vec<Vec<u8>>, String) = match std::fs::read(&path) {
        Ok(bytes) => {
            let mut w: Vec<Vec<u8>> = bytes
                .split(|&b| b == b'\n')
                .map(|l| l.strip_suffix(b"\r").unwrap_or(l).to_vec())
                .filter(|l| !l.is_empty())
                .collect();
            w.sort();
            w.dedup();
            let n = w.len();
            (
                w,
                format!(
                    "Debian `wamerican-insane` ({} distinct words, `{}`)",
                    int(n as u64),
                    path.display()
                ),
            )
        }
        Err(e) if p.quick => {
            crate::note_generated(NAME, &path, "a generated word list", "words");
            // a stand-in: pronounceable lower-case strings of 3..=12 letters
            let mut rng = Rng::new(p.seed ^ 0xD1C);
            let (cons, vow) = (b"bcdfghjklmnprstvwz", b"aeiou");
            let mut set = HashSet::new();
            while set.len() < p.words.max(1000) {
                let len = 3 + rng.below(10) as usize;
                let w: Vec<u8> = (0..len)
                    .map(|i| {
                        if i % 2 == 0 {
                            cons[rng.below(cons.len() as u64) as usize]
                        } else {
                            vow[rng.below(vow.len() as u64) as usize]
                        }
                    })
                    .collect();
                set.insert(w);
            }
            let mut w: Vec<Vec<u8>> = set.into_iter().collect();
            w.sort();
            (
                w,
                format!(
                    "a GENERATED word list: `{}` could not be read ({e}); run \
                     `bash scripts/fetch-data.sh words` for the real one",
                    path.display()
                ),
            )
        }
        Err(e) => {
            return Err(e).with_context(|| {
                format!(
                    "cannot read the word list `{}` (run `bash scripts/fetch-data.sh words`, \
                     or set BLOOMERY_DATA)",
                    path.display()
                )
            })
        }
    };
    if p.words > 0 && words.len() > p.words {
        // a deterministic sample: keep words whose hash falls under the wanted fraction
        let h = KeyHasher::with_seed(p.seed ^ 0x5A);
        let keep = p.words as f64 / words.len() as f64;
        words.retain(|w| (h.hash_bytes(w).lo >> 11) as f64 / (1u64 << 53) as f64 <= keep);
        source = format!("{source}, a sample of {} of them", int(words.len() as u64));
    }
    Ok(Dictionary { words, source })
}

/// Spell checking at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct SpellRow {
    /// Bits per word.
    pub bits_per_word: u64,
    /// Bits.
    pub m: u64,
    /// Hash functions.
    pub k: u32,
    /// Misspellings queried.
    pub queries: u64,
    /// Accepted as words (false positives).
    pub accepted: u64,
    /// Exact formula.
    pub formula: f64,
    /// The filter's own rate `(ones/m)^k`.
    pub from_fill: f64,
    /// Dictionary words rejected (must be 0).
    pub false_negatives: u64,
}

impl SpellRow {
    /// Measured rate.
    pub fn measured(&self) -> f64 {
        self.accepted as f64 / self.queries.max(1) as f64
    }
}

/// The password check at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct PasswordRow {
    /// Bits per word.
    pub bits_per_word: u64,
    /// Filter bytes.
    pub filter_bytes: u64,
    /// Hash functions.
    pub k: u32,
    /// Dictionary words and variants checked.
    pub weak: u64,
    /// Of those, accepted (must be 0).
    pub weak_accepted: u64,
    /// Random passwords checked.
    pub strong: u64,
    /// Of those, rejected by the filter.
    pub strong_rejected: u64,
    /// Of those, rejected by the exact set (a real neighbour of a word).
    pub strong_rejected_exact: u64,
    /// Expected false rejections: Σ over passwords of `1-(1-f)^V`, V its distinct strings.
    pub expected_rejected: f64,
    /// Nanoseconds per check of a strong password with the filter.
    pub filter_ns: f64,
    /// Nanoseconds per check with the exact set.
    pub exact_ns: f64,
}

/// Everything measured.
#[derive(Debug, Clone)]
pub struct Results {
    /// The dictionary's source sentence.
    pub source: String,
    /// Words.
    pub words: u64,
    /// Bytes of the exact set: the words' bytes plus a `Vec<u8>` header and a hash-table slot
    /// per word.
    pub exact_bytes: u64,
    /// Spell checking.
    pub spell: Vec<SpellRow>,
    /// Password checks.
    pub passwords: Vec<PasswordRow>,
}

fn filter_for(n: u64, b: u64, seed: u64) -> anyhow::Result<BloomFilter> {
    let m = b * n;
    BloomFilter::builder()
        .bits(m)
        .hashes(params::optimal_k(n, m))
        .seed(seed)
        .try_build()
        .with_context(|| format!("filter m={m}"))
}

/// Load the words and measure both parts.
pub fn measure(p: &Params) -> anyhow::Result<Results> {
    let dict = dictionary(p)?;
    let words = &dict.words;
    let n = words.len() as u64;
    anyhow::ensure!(n > 0, "empty word list");
    let exact: HashSet<&[u8]> = words.iter().map(|w| w.as_slice()).collect();
    let exact_bytes = words.iter().map(|w| w.len() as u64).sum::<u64>()
        + n * (std::mem::size_of::<Vec<u8>>() as u64 + 8)
        + exact.capacity() as u64 * std::mem::size_of::<&[u8]>() as u64;
    // misspellings: a random edit of a random word, kept when it is not a word
    let mut rng = Rng::new(p.seed ^ 0x5BE11);
    let mut misspellings: Vec<Vec<u8>> = Vec::with_capacity(p.misspellings);
    while misspellings.len() < p.misspellings {
        let w = &words[rng.below(n) as usize];
        let mut v = w.clone();
        let c = b'a' + rng.below(26) as u8;
        match rng.below(3) {
            0 if v.len() > 1 => {
                v.remove(rng.below(v.len() as u64) as usize);
            }
            1 => {
                let i = rng.below(v.len() as u64) as usize;
                v[i] = c;
            }
            _ => v.insert(rng.below(v.len() as u64 + 1) as usize, c),
        }
        if !exact.contains(v.as_slice()) {
            misspellings.push(v);
        }
    }
    let spell = p
        .bits_per_word
        .iter()
        .map(|&b| {
            let mut f = filter_for(n, b, p.seed)?;
            for w in words {
                f.insert(w.as_slice());
            }
            let (m, k) = (f.bit_len(), f.hashes());
            let false_negatives = words
                .par_iter()
                .filter(|w| !f.contains(w.as_slice()))
                .count();
            let accepted = misspellings
                .par_iter()
                .filter(|w| f.contains(w.as_slice()))
                .count();
            Ok(SpellRow {
                bits_per_word: b,
                m,
                k,
                queries: misspellings.len() as u64,
                accepted: accepted as u64,
                formula: params::fpr_exact(n, m, k),
                from_fill: params::fpr_from_fill(f.count_ones(), m, k),
                false_negatives: false_negatives as u64,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;

    // the password check
    let alphabet = PRINTABLE_ASCII;
    let strong: Vec<Vec<u8>> = (0..p.passwords)
        .map(|_| {
            (0..p.password_len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect()
        })
        .collect();
    // weak candidates: words, and one random variant of a word each
    let weak: Vec<Vec<u8>> = (0..p.passwords)
        .flat_map(|i| {
            let w = words[(i as u64 * 7919 % n) as usize].clone();
            let mut v = w.clone();
            v.push(alphabet[i % alphabet.len()]);
            [w, v]
        })
        .collect();
    let distinct_strings = |s: &[u8]| -> u64 {
        let mut all = HashSet::new();
        edit1_variants(s, alphabet, |v| {
            all.insert(v.to_vec());
            false
        });
        all.len() as u64
    };
    let strong_distinct: Vec<u64> = strong.par_iter().map(|s| distinct_strings(s)).collect();
    let exact_check = |s: &[u8]| edit1_variants(s, alphabet, |v| exact.contains(v));
    let t = Instant::now();
    let strong_rejected_exact = strong.iter().filter(|s| exact_check(s)).count() as u64;
    let exact_ns = t.elapsed().as_nanos() as f64 / strong.len().max(1) as f64;
    let passwords = p
        .password_bits
        .iter()
        .map(|&b| {
            let mut f = filter_for(n, b, p.seed)?;
            for w in words {
                f.insert(w.as_slice());
            }
            let h = *f.hasher();
            let check =
                |s: &[u8]| edit1_variants(s, alphabet, |v| f.contains_hashed(h.hash_bytes(v)));
            let weak_accepted = weak.iter().filter(|s| !check(s)).count() as u64;
            let t = Instant::now();
            let strong_rejected = strong.iter().filter(|s| check(s)).count() as u64;
            let filter_ns = t.elapsed().as_nanos() as f64 / strong.len().max(1) as f64;
            let fpr = params::fpr_from_fill(f.count_ones(), f.bit_len(), f.hashes());
            let expected_rejected = strong_distinct
                .iter()
                .map(|&v| 1.0 - (1.0 - fpr).powf(v as f64))
                .sum();
            Ok(PasswordRow {
                bits_per_word: b,
                filter_bytes: f.bit_len().div_ceil(8),
                k: f.hashes(),
                weak: weak.len() as u64,
                weak_accepted,
                strong: strong.len() as u64,
                strong_rejected,
                strong_rejected_exact,
                expected_rejected,
                filter_ns,
                exact_ns,
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Results {
        source: dict.source,
        words: n,
        exact_bytes,
        spell,
        passwords,
    })
}

/// The markdown page and the plot.
pub fn render(p: &Params, r: &Results) -> (String, Plot) {
    let mut t = Table::new([
        "bits/word",
        "m",
        "k",
        "misspellings",
        "accepted (measured)",
        "formula",
        "filter's (ones/m)^k",
        "z",
        "words rejected",
    ]);
    for s in &r.spell {
        let sigma = rate_sigma(s.formula, s.queries, 0.0);
        t.row([
            s.bits_per_word.to_string(),
            int(s.m),
            s.k.to_string(),
            int(s.queries),
            rate(s.measured()),
            rate(s.formula),
            rate(s.from_fill),
            num((s.measured() - s.formula) / sigma, 2),
            int(s.false_negatives),
        ]);
    }
    let mut pw = Table::new([
        "bits/word",
        "filter bytes",
        "k",
        "weak candidates accepted",
        "random passwords",
        "rejected: filter",
        "expected 1-(1-f)^V",
        "rejected: exact set",
        "µs per check: filter",
        "µs per check: exact set",
    ]);
    for s in &r.passwords {
        pw.row([
            s.bits_per_word.to_string(),
            int(s.filter_bytes),
            s.k.to_string(),
            format!("{} of {}", int(s.weak_accepted), int(s.weak)),
            int(s.strong),
            int(s.strong_rejected),
            num(s.expected_rejected, 1),
            int(s.strong_rejected_exact),
            num(s.filter_ns / 1000.0, 1),
            num(s.exact_ns / 1000.0, 1),
        ]);
    }
    let mut md = format!(
        "# {NAME}: spell checking and a password blocklist with edit distance 1\n\n\
         Broder & Mitzenmacher §3.1. Dictionary: {src}; {n} words. A classic `BloomFilter` of the words, m = \
         bits per word × {n}, k optimal, `seed({seed})`.\n\n\
         ![{NAME}]({NAME}.svg)\n\n\
         ## Spell checking\n\n\
         Queries: misspellings — one random deletion, substitution or insertion (a–z) of a \
         random word, kept only when the result is not a word (exact set), so every accepted \
         query is a false positive.\n\n",
        src = r.source,
        n = int(r.words),
        seed = p.seed,
    );
    md.push_str(&t.to_markdown());
    md.push_str(&format!(
        "\n## Password blocklist, edit distance 1 (Manber & Wu)\n\n\
         A password is rejected when it or any string within edit distance 1 (deletions, \
         adjacent transpositions, substitutions and insertions over the {a} printable ASCII \
         bytes) may be in the filter — the check of `bloomery check --edit-distance 1`. Weak \
         candidates: {w} words and one-insertion variants of words (all must be rejected). \
         Random passwords: {s} strings of {len} random printable bytes, each testing V ≈ 2 × 95 \
         × {len} distinct strings; a rejection by the filter but not by the exact set is a false \
         positive. The exact set (`HashSet` of the words) takes about {eb} bytes.\n\n",
        a = PRINTABLE_ASCII.len(),
        w = int(p.passwords as u64),
        s = int(p.passwords as u64),
        len = p.password_len,
        eb = int(r.exact_bytes),
    ));
    md.push_str(&pw.to_markdown());

    let mut plot = Plot::new(
        format!("Dictionary of {} words: false positives", int(r.words)),
        "bits per word",
        "rate",
    )
    .log_y();
    plot.push(Series::new(
        "misspelling accepted: formula",
        r.spell
            .iter()
            .map(|s| (s.bits_per_word as f64, s.formula))
            .collect(),
        Style::Line,
        0,
    ));
    plot.push(Series::new(
        "misspelling accepted: measured",
        r.spell
            .iter()
            .map(|s| (s.bits_per_word as f64, s.measured()))
            .collect(),
        Style::Points,
        0,
    ));
    plot.push(Series::new(
        "random password rejected (edit distance 1): expected",
        r.passwords
            .iter()
            .map(|s| {
                (
                    s.bits_per_word as f64,
                    s.expected_rejected / s.strong as f64,
                )
            })
            .collect(),
        Style::Line,
        1,
    ));
    plot.push(Series::new(
        "random password rejected: measured",
        r.passwords
            .iter()
            .map(|s| {
                (
                    s.bits_per_word as f64,
                    s.strong_rejected as f64 / s.strong as f64,
                )
            })
            .collect(),
        Style::Points,
        1,
    ));
    (md, plot)
}

/// Run at the size the options ask and write `dictionaries.md` and `dictionaries.svg`.
pub fn run(opts: &RunOptions) -> anyhow::Result<Report> {
    let p = Params::for_options(opts);
    let r = measure(&p)?;
    let (md, plot) = render(&p, &r);
    write_report(opts, NAME, md, &plot)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::within;

    #[test]
    fn quick_run_follows_the_formula_and_never_accepts_weak_passwords() {
        let p = Params::quick(1);
        let r = measure(&p).unwrap();
        assert!(r.words >= 1000);
        for s in &r.spell {
            assert_eq!(s.false_negatives, 0);
            let sigma = rate_sigma(s.formula, s.queries, 0.0);
            assert!(
                within(s.measured(), s.formula, sigma, 5.0, 0.1),
                "b={}: {} vs {}",
                s.bits_per_word,
                s.measured(),
                s.formula
            );
        }
        for s in &r.passwords {
            // no false negatives: every word and every neighbour of a word is rejected
            assert_eq!(s.weak_accepted, 0, "b={}", s.bits_per_word);
            // the filter rejects at least what the exact set rejects
            assert!(s.strong_rejected >= s.strong_rejected_exact);
            // false rejections: a sum of independent Bernoulli trials
            let e = s.expected_rejected + s.strong_rejected_exact as f64;
            let sd = e.sqrt();
            assert!(
                (s.strong_rejected as f64 - e).abs() <= 5.0 * sd + 0.2 * e + 2.0,
                "b={}: {} vs {e}",
                s.bits_per_word,
                s.strong_rejected
            );
        }
        let (first, last) = (&r.passwords[0], &r.passwords[r.passwords.len() - 1]);
        assert!(first.strong_rejected > last.strong_rejected);
        let (md, plot) = render(&p, &r);
        assert!(md.contains("| bits/word"));
        assert!(plot.to_svg().unwrap().contains("<svg"));
    }
}
