//! `bloomery add`: load, insert in memory, save atomically (a failed add leaves the file as
//! it was).

use std::path::Path;

use anyhow::{bail, Context, Result};
use bloomery::Pipeline;
use bloomery::{AnyFilter, BlockedBloomFilter, Filter, KeySet};

use crate::cli::AddArgs;
use crate::input::{self, Counts, KeySpec};
use crate::num::{count, group, rate, target};
use crate::output::{note, warn};

pub fn run(a: AddArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let threads = match a.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let mut f = if threads > 1 {
        load_parallel(&a.file, threads)?
    } else {
        super::load(&a.file)?
    };
    let before = f.len();
    let mut invalid = None;
    let counts = match &mut f {
        AnyFilter::Blocked(b) if threads > 1 => {
            super::add_threads::run(b, &a.inputs, &spec, threads)?
        }
        other => {
            if threads > 1 {
                warn(&format!(
                    "--threads applies to blocked filters; inserting into this {} filter with one thread",
                    other.kind().name()
                ));
            }
            if other.is_structured() {
                let (counts, bad) = sequential_urls(other, &a.inputs, &spec, a.skip_invalid)?;
                invalid = a.skip_invalid.then_some(bad);
                counts
            } else {
                sequential(other, &a.inputs, &spec)?
            }
        }
    };
    // A compressed file is written back compressed (it keeps the form its owner chose).
    let save = || super::compress::save_filter_in_place(&f, &a.file);
    let i = if threads > 1 {
        // the summary's counts (two passes over the filter) while the file is written
        std::thread::scope(|s| {
            let info = s.spawn(|| f.info());
            save()?;
            info.join()
                .map_err(|_| anyhow::anyhow!("the summary thread failed"))
        })?
    } else {
        save()?;
        f.info()
    };
    let mut skipped = if counts.skipped > 0 {
        format!(" ({} without field, skipped)", group(counts.skipped))
    } else {
        String::new()
    };
    if let Some(bad) = invalid {
        skipped.push_str(&format!(" ({} invalid URLs, skipped)", group(bad)));
    }
    note(&format!(
        "{} read{skipped}, {}, {} in total; fill {:.3}; fpr now {} (target {})",
        count(counts.lines, "line", "lines"),
        count(f.len().saturating_sub(before), "new item", "new items"),
        group(i.items),
        i.fill_ratio,
        rate(i.current_fpr),
        target(i.target_fpr)
    ));
    super::warn_if_over_info(&i);
    Ok(0)
}

/// Load the filter file with its bytes read by `threads` threads, each a part of the file
/// (the copy from the page cache and the page faults of the buffer are shared). Falls back to
/// the plain load, and its error messages, for a small, special, oversized or unreadable file.
fn load_parallel(path: &Path, threads: usize) -> Result<AnyFilter> {
    let read = || -> std::io::Result<Option<bloomery::FileBuf>> {
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        let len = meta.len();
        if !meta.is_file() || len < (1 << 20) || len > bloomery::max_bytes() {
            return Ok(None);
        }
        let Ok(mut bytes) = bloomery::FileBuf::zeroed(len) else {
            return Ok(None);
        };
        let part = bytes.len().div_ceil(threads).next_multiple_of(4096);
        let complete = std::thread::scope(|s| {
            let parts: Vec<_> = bytes
                .as_mut_slice()
                .chunks_mut(part)
                .enumerate()
                .map(|(i, c)| {
                    let file = &file;
                    s.spawn(move || {
                        input::read_at(file, c, (i * part) as u64).map(|n| n == c.len())
                    })
                })
                .collect();
            parts
                .into_iter()
                .map(|h| h.join().unwrap_or(Ok(false)))
                .collect::<std::io::Result<Vec<bool>>>()
        })?;
        Ok(complete.iter().all(|&c| c).then_some(bytes))
    };
    match read() {
        Ok(Some(bytes)) => AnyFilter::from_bytes(&bytes)
            .with_context(|| format!("cannot load `{}`", path.display())),
        _ => super::load(path),
    }
}

fn sequential(f: &mut AnyFilter, inputs: &[String], spec: &KeySpec) -> Result<Counts> {
    if let AnyFilter::Blocked(b) = f {
        return sequential_blocked(b, inputs, spec);
    }
    let hasher = *f.hasher();
    input::for_each_line(inputs, spec, |_, key| {
        if let Some(k) = key {
            f.try_insert_hashed(hasher.hash_bytes(k))?;
        }
        Ok(())
    })
}

/// An mlbf, which takes each key as a URL (its segments are hashed, not the whole key): the
/// counts and the number of keys that are not URLs, skipped when `skip_invalid`, else the
/// first one is an error.
fn sequential_urls(
    f: &mut AnyFilter,
    inputs: &[String],
    spec: &KeySpec,
    skip_invalid: bool,
) -> Result<(Counts, u64)> {
    let mut n = 0u64;
    let mut invalid = 0u64;
    let counts = input::for_each_line(inputs, spec, |_, key| {
        n += 1;
        if let Some(k) = key {
            match f.try_insert_key(k) {
                Ok(_) => {}
                Err(_) if skip_invalid => invalid += 1,
                Err(e) => bail!("line {n}: {e}"),
            }
        }
        Ok(())
    })?;
    Ok((counts, invalid))
}

/// The blocked filter on one thread: each key's block is prefetched when it is read and the
/// key inserted `BlockedBloomFilter::BATCH_AHEAD` keys later (the library's pipeline), so the cache misses of
/// consecutive keys overlap.
fn sequential_blocked(
    f: &mut BlockedBloomFilter,
    inputs: &[String],
    spec: &KeySpec,
) -> Result<Counts> {
    let hasher = *f.hasher();
    let mut pipe = Pipeline::<bloomery::Hashed, { BlockedBloomFilter::BATCH_AHEAD }>::default();
    let counts = input::for_each_line(inputs, spec, |_, key| {
        if let Some(k) = key {
            let h = hasher.hash_bytes(k);
            f.prefetch_hashed(h);
            if let Some(due) = pipe.push(h) {
                f.insert_hashed(due);
            }
        }
        Ok(())
    })?;
    for due in pipe.drain() {
        f.insert_hashed(due);
    }
    Ok(counts)
}
