//! `bloomery check`: grep semantics over a filter.
//!
//! With `--edit-distance 1` a line also matches when a string within edit distance 1 of its
//! key may be in the set (Manber & Wu's password check, Broder & Mitzenmacher §3.1): the variants are those
//! of [`edit1_variants`] (the key, its deletions, adjacent transpositions, substitutions and
//! insertions over the alphabet, in that order), tested until the first hit, which is printed
//! after the line and a tab (hex when `--hex`).

use std::io::{BufWriter, Write};

use anyhow::{bail, Result};
use bloomery::KeySet;
use bloomery::{edit1_variants, PRINTABLE_ASCII};

use crate::cli::CheckArgs;
use crate::input::{self, KeySpec};
use crate::output::note;

pub fn run(a: CheckArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let f = super::load(&a.file)?;
    let hasher = *f.hasher();
    let structured = f.is_structured();
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let alphabet = alphabet(&a)?;
    let contains = |k: &[u8]| {
        if structured {
            f.contains_key(k) // an mlbf: the key is a URL
        } else {
            // every other set kind has the pre-hashed path
            f.try_contains_hashed(hasher.hash_bytes(k)).unwrap_or(true)
        }
    };
    let mut matched = 0u64;
    let mut variant: Vec<u8> = Vec::new();
    let skip = a.skip_invalid && structured;
    let mut invalid = 0u64;
    input::for_each_line(&a.inputs, &spec, |line, key| {
        // with --skip-invalid, a key that is not a URL is neither a match nor a non-match
        let mut exact = None;
        if let (true, Some(k)) = (skip, key) {
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
