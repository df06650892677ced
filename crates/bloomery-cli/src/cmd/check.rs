//! `bloomery check` (grep semantics over a filter) and `bloomery count` (an estimate per
//! line), for every kind: a set kind answers membership, a counting kind its count.
//!
//! With `--edit-distance 1` a line also matches when a string within edit distance 1 of its
//! key may be in the set (Manber & Wu's password check, Broder & Mitzenmacher §3.1): the variants are those
//! of [`edit1_variants`] (the key, its deletions, adjacent transpositions, substitutions and
//! insertions over the alphabet, in that order), tested until the first hit, which is printed
//! after the line and a tab (hex when `--hex`).

use std::io::{BufWriter, Write};

use anyhow::{bail, Result};
use bloomery::keys::{edit1_variants, PRINTABLE_ASCII};
use bloomery::{AnyFilter, KeySet};

use bloomery::file::MappedFile;

use super::open::{open_read, read_mapped, Structure};
use crate::cli::{CheckArgs, CountArgs};
use crate::input::{self, Batch, KeySpec};
use crate::output::note;

/// `check` of the mapped file (see the [module docs](self)).
pub fn run(a: CheckArgs, file: &MappedFile) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let f = read_mapped(file, a.verify.verify())?;
    let hasher = *f.hasher();
    let structured = !f.hashed();
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let alphabet = alphabet(&a)?;
    let contains = |k: &[u8]| {
        if structured {
            f.contains_key(k) // an mlbf: the key is a URL
        } else {
            // every other kind has the pre-hashed path
            f.contains_hashed(hasher.hash_bytes(k))
        }
    };
    let mut matched = 0u64;
    let mut variant: Vec<u8> = Vec::new();
    let skip = a.skip_invalid && structured;
    let mut invalid = 0u64;
    if let (Structure::Set(s), false, None, false) = (&f, structured, &alphabet, skip) {
        // the plain case, a set kind with a pre-hashed path: a batch of lines at a time
        for_each_answered_batch(s, &a.inputs, &spec, |batch, found| {
            let mut found = found.iter();
            // the printed lines go out a run of consecutive ones at a time
            let mut run = 0;
            for i in 0..batch.len() {
                // a line without the key field is certainly not in the set
                let hit = batch.has_key(i) && found.next().copied().unwrap_or(true);
                if hit != a.invert {
                    matched += 1;
                } else {
                    if !a.count {
                        out.write_all(batch.lines_nl(run, i))?;
                    }
                    run = i + 1;
                }
            }
            if !a.count {
                out.write_all(batch.lines_nl(run, batch.len()))?;
            }
            Ok(())
        })?;
    } else {
        input::for_each_line(&a.inputs, &spec, |line, key| {
            // with --skip-invalid, a key that is not a URL is neither a match nor a non-match
            let mut exact = None;
            if let (true, Some(k), Structure::Set(f)) = (skip, key, &f) {
                match f.try_contains_key(k) {
                    Ok(hit) => exact = Some(hit),
                    Err(_) => {
                        invalid += 1;
                        return Ok(());
                    }
                }
            }
            // a line without the key field is certainly not in the set
            let hit = key.is_some_and(|k| match &alphabet {
                None => exact.unwrap_or_else(|| contains(k)),
                Some(abc) => edit1_variants(k, abc, |v| {
                    let hit = contains(v);
                    if hit {
                        variant.clear();
                        variant.extend_from_slice(v);
                    }
                    hit
                }),
            });
            if hit != a.invert {
                matched += 1;
                if !a.count {
                    out.write_all(line)?;
                    if hit && alphabet.is_some() {
                        out.write_all(b"\t")?;
                        if a.keys.hex {
                            out.write_all(hex::encode(&variant).as_bytes())?;
                        } else {
                            out.write_all(&variant)?;
                        }
                    }
                    out.write_all(b"\n")?;
                }
            }
            Ok(())
        })?;
    }
    if a.count {
        writeln!(out, "{matched}")?;
    }
    out.flush()?;
    if skip {
        note(&format!(
            "{} skipped as invalid URLs",
            crate::num::count(invalid, "line", "lines")
        ));
    }
    Ok(if matched > 0 { 0 } else { 1 })
}

/// `count`: `estimate<TAB>line` for each line: a counting kind's estimated count, a set
/// kind's 1 or 0. Keys are hashed a batch at a time and the structure's memory prefetched
/// ahead of each lookup (the library's batched calls; an mlbf, keyed by URL, one key at a
/// time).
pub fn count(a: &CountArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let f = open_read(&a.file, a.verify.verify())?;
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let mut digits = itoa::Buffer::new();
    // `line` then `end` (the batches' lines carry their `\n`)
    let mut print = |est: u64, line: &[u8], end: &[u8]| -> Result<()> {
        out.write_all(digits.format(est).as_bytes())?;
        out.write_all(b"\t")?;
        out.write_all(line)?;
        out.write_all(end)?;
        Ok(())
    };
    match &f {
        Structure::Counter(c) => {
            let mut counts = Vec::new();
            input::for_each_batch(&a.inputs, &spec, c.hasher(), |batch| {
                c.count_hashed_batch(&batch.hashes, &mut counts);
                let mut at = 0;
                for i in 0..batch.len() {
                    let est = if batch.has_key(i) {
                        at += 1;
                        counts[at - 1]
                    } else {
                        0
                    };
                    print(est, batch.lines_nl(i, i + 1), b"")?;
                }
                Ok(())
            })?;
        }
        Structure::Set(s) if f.hashed() => {
            for_each_answered_batch(s, &a.inputs, &spec, |batch, found| {
                let mut found = found.iter();
                for i in 0..batch.len() {
                    let hit = batch.has_key(i) && found.next().copied().unwrap_or(true);
                    print(u64::from(hit), batch.lines_nl(i, i + 1), b"")?;
                }
                Ok(())
            })?;
        }
        Structure::Set(s) => {
            // an mlbf, keyed by URL: one key at a time
            input::for_each_line(&a.inputs, &spec, |line, key| {
                let hit = key.is_some_and(|k| s.contains_key(k));
                print(u64::from(hit), line, b"\n")
            })?;
        }
    }
    out.flush()?;
    Ok(0)
}

/// Each batch of lines with the set's answers for its keyed lines (in the order of
/// `batch.hashes`), from the library's batched query: each key's memory is prefetched ahead
/// of its lookup, so the cache misses of a filter larger than the caches overlap. For a set
/// kind with a pre-hashed path (every kind but the mlbf). A batch the batched query refuses
/// is answered key by key, a refused key a "maybe", as `contains_hashed` answers.
fn for_each_answered_batch(
    s: &AnyFilter,
    inputs: &[String],
    spec: &KeySpec,
    mut each: impl FnMut(&Batch, &[bool]) -> Result<()>,
) -> Result<()> {
    let mut found = Vec::new();
    input::for_each_batch(inputs, spec, s.hasher(), |batch| {
        if s.contains_hashed_batch(&batch.hashes, &mut found).is_err() {
            found.clear();
            found.extend((batch.hashes.iter()).map(|&h| s.try_contains_hashed(h).unwrap_or(true)));
        }
        each(batch, &found)
    })?;
    Ok(())
}

/// The edit alphabet with `--edit-distance 1` (None: exact matching): the bytes of
/// `--alphabet` in order, duplicates dropped, or the printable ASCII bytes.
fn alphabet(a: &CheckArgs) -> Result<Option<Vec<u8>>> {
    if a.edit_distance == 0 {
        if a.alphabet.is_some() {
            bail!("--alphabet only applies with --edit-distance 1");
        }
        return Ok(None);
    }
    let Some(chars) = &a.alphabet else {
        return Ok(Some(PRINTABLE_ASCII.to_vec()));
    };
    let mut seen = [false; 256];
    let abc: Vec<u8> = chars
        .bytes()
        .filter(|&b| !std::mem::replace(&mut seen[b as usize], true))
        .collect();
    if abc.is_empty() {
        bail!("--alphabet must not be empty");
    }
    Ok(Some(abc))
}
