//! `bloomery dedup`: first occurrences only, in order, in memory bounded by the filter.

use std::io::{BufWriter, Write};

use anyhow::Result;
use bloomery::KeySet;

use crate::cli::DedupArgs;
use crate::cmd::create::{build, Sizing};
use crate::input::{self, KeySpec};
use crate::num::{bytes, count, group, rate};
use crate::output::note;

pub fn run(a: DedupArgs) -> Result<u8> {
    if bloomery::AnyCounter::holds(a.kind.kind()) {
        anyhow::bail!(
            "dedup needs a set kind (blocked, classic, partitioned, split-block, scalable, mlbf)"
        );
    }
    let spec = KeySpec::new(&a.keys)?;
    let mut f = match &a.state {
        Some(p) if p.exists() => super::load(p)?,
        _ => build(
            a.kind.kind(),
            &Sizing {
                capacity: Some(a.capacity),
                fpr: Some(a.fpr),
                seed: a.seed,
                layers: a.layers,
                ..Sizing::default()
            },
        )?,
    };
    let hasher = *f.hasher();
    let before = f.len();
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let mut printed = 0u64;
    let structured = f.is_structured();
    let mut n = 0u64;
    let mut invalid = 0u64;
    let counts = input::for_each_line(&a.inputs, &spec, |line, key| {
        n += 1;
        if let Some(k) = key {
            // an mlbf takes the key as a URL (its segments are hashed, not the whole key)
            let new = if structured {
                match f.try_insert_key(k) {
                    Ok(new) => new,
                    Err(_) if a.skip_invalid => {
                        invalid += 1;
                        return Ok(());
                    }
                    Err(e) => anyhow::bail!("line {n}: {e}"),
                }
            } else {
                f.try_insert_hashed(hasher.hash_bytes(k))?
            };
            if new {
                printed += 1;
                out.write_all(line)?;
                out.write_all(b"\n")?;
            }
        }
        Ok(())
    })?;
    out.flush()?;
    drop(out);
    if let Some(p) = &a.state {
        super::save(&f, p)?;
    }
    let i = f.info();
    let invalid_note = if a.skip_invalid && structured {
        format!(", {} skipped as invalid URLs", group(invalid))
    } else {
        String::new()
    };
    note(&format!(
        "{} read, {} printed, {} dropped as seen{invalid_note}; {} ({} in the filter, {}); fpr now {}",
        count(counts.lines, "line", "lines"),
        group(printed),
        group(counts.lines - printed - counts.skipped - invalid),
        count(f.len() - before, "new item", "new items"),
        group(i.items),
        bytes(i.bytes),
        rate(i.current_fpr)
    ));
    super::warn_if_over(&f);
    Ok(0)
}
