//! `bloomery add`, for every kind: a set kind inserts each line's key, a counting kind adds one
//! occurrence. The file is updated in place of a copy and renamed over the original when every
//! line is in (the library's `bloomery::file::Update`): a failed add leaves the file as it was, and the
//! resident memory is the pages the keys touch (on a big blocked file, swept in file order
//! and dropped behind the sweep). A blocked file longer than half the page cache the process
//! can use (the file and its copy do not both fit) is instead updated in one pass that copies
//! it, inserts the keys and seals it (`bloomery::file::UpdatePath`; `BLOOMERY_UPDATE=one-pass|sweep|auto`
//! forces the choice).

use anyhow::{bail, Result};
use bloomery::kinds::FilterInfo;
use bloomery::lines::{LineError, LineSource, LINE_CHUNK};
use bloomery::{AnyCounter, AnyFilter, KeySet};

use bloomery::file::{MappedFile, Sealer};

use super::open::{self, open_update, open_update_sweep, Structure};
use crate::cli::AddArgs;
use crate::input::{self, Counts, KeySpec};
use crate::num::{count, group, rate, target};
use crate::output::{note, warn, Progress};

/// `add` into the mapped file (see the [module docs](self)).
pub fn run(a: AddArgs, file: MappedFile) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let threads = match a.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    // one thread on a big blocked file: a sweep in file order, the file copied as it
    // advances, or the one pass when the file is larger than the page cache can hold
    let mut up = if threads == 1 {
        open_update_sweep(file, a.verify.verify(), open::update_path_from_env()?)?
    } else {
        open_update(file, a.verify.verify())?
    };
    match &mut up.structure {
        Structure::Counter(c) => {
            if threads > 1 {
                warn("--threads applies to blocked filters; inserting with one thread");
            }
            let before = c.len();
            let counts = add_counts(c, &a.inputs, &spec)?;
            let after = c.len();
            let (c_rates, kind) = (c.rates(), c.kind());
            open::commit(up)?;
            report_counts(&counts, kind, before, after, c_rates);
        }
        Structure::Set(f) => {
            let before = f.len();
            let mut invalid = None;
            // the last batch of a one-pass update, inserted by the pass that seals the file
            let mut pending = None;
            let counts = match &mut *f {
                AnyFilter::Blocked(b) if threads > 1 => parallel(b, &a.inputs, &spec, threads)?,
                other => {
                    if threads > 1 {
                        warn(&format!(
                            "--threads applies to blocked filters; inserting into this {} filter with one thread",
                            other.kind().name()
                        ));
                    }
                    if !other.capabilities().hashed {
                        let (counts, bad) = add_urls(other, &a.inputs, &spec, a.skip_invalid)?;
                        invalid = a.skip_invalid.then_some(bad);
                        counts
                    } else {
                        let (counts, last) = add_hashed(other, &a.inputs, &spec, &up.sealer)?;
                        pending = last;
                        counts
                    }
                }
            };
            let (i, new) = match pending {
                Some(mut hashes) => {
                    let i = open::commit_with_keys(up, &mut hashes)?;
                    let new = i.items.saturating_sub(before);
                    (i, new)
                }
                None => {
                    let new = f.len().saturating_sub(before);
                    // the summary's fill is counted inside the seal's checksum pass (skipped
                    // with -q)
                    if crate::output::is_quiet() {
                        open::commit(up)?;
                        return Ok(0);
                    }
                    (open::commit_with_info(up)?, new)
                }
            };
            if crate::output::is_quiet() {
                return Ok(0);
            }
            report_set(&counts, invalid, new, &i);
            super::warn_if_over_info(&i);
        }
    }
    Ok(0)
}

/// The summary of an add to a counting kind, and a warning when it is past its target rate.
fn report_counts(
    counts: &Counts,
    kind: bloomery::Kind,
    before: u64,
    after: u64,
    (capacity, target_fpr, current_fpr): (u64, Option<f64>, Option<f64>),
) {
    let rates = match (current_fpr, target_fpr) {
        (Some(now), Some(t)) => format!("; fpr now {} (target {})", rate(now), rate(t)),
        (Some(now), None) => format!("; fpr now {} (target none)", rate(now)),
        _ => String::new(),
    };
    note(&format!(
        "{} read, {}, {} in total{rates}",
        count(counts.lines, "line", "lines"),
        count(after.saturating_sub(before), "increment", "increments"),
        group(after)
    ));
    if let (Some(now), Some(t)) = (current_fpr, target_fpr) {
        if super::past_target(after, capacity, now, t) {
            warn(&format!(
                "the {} structure is past its target false-positive rate: {} now \
                 (target {}); it was sized for {} {}; create a larger one",
                kind.name(),
                rate(now),
                rate(t),
                group(capacity),
                match kind {
                    bloomery::Kind::Iterative | bloomery::Kind::SpaceCode => {
                        "adds (--occurrences, repeats included)"
                    }
                    _ => "distinct keys (-n)",
                }
            ));
        }
    }
}

/// The summary of an add to a set kind.
fn report_set(counts: &Counts, invalid: Option<u64>, new: u64, i: &FilterInfo) {
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
        count(new, "new item", "new items"),
        group(i.items),
        i.fill_ratio,
        rate(i.current_fpr),
        target(i.target_fpr)
    ));
}

/// Keys a blocked filter's sweep collects before it inserts them (64 MiB of hashes).
const SWEEP_KEYS: usize = 4 << 20;

/// Every set kind with the pre-hashed path, a batch of keys at a time through the library's
/// prefetching batch insert. A blocked filter in a big file is swept instead: its keys are
/// collected, sorted by block and inserted front to back, the pages dropped behind the sweep
/// ([`bloomery::BlockedBloomFilter::insert_sorted`]; same bits and count as input order).
/// On a one-pass update ([`Sealer::one_pass`]) the first full batch goes into the pass that
/// copies the file and later ones are swept into the copy; the last batch is returned, for
/// the pass that seals the file ([`bloomery::file::Update::commit_with_keys`]): with up to
/// 4 Mi keys, the whole update is that one pass.
fn add_hashed(
    f: &mut AnyFilter,
    inputs: &[String],
    spec: &KeySpec,
    sealer: &Sealer,
) -> Result<(Counts, Option<Vec<bloomery::Hashed>>)> {
    let hasher = *f.hasher();
    if let (AnyFilter::Blocked(b), true) = (&mut *f, sealer.sweeps()) {
        let one_pass = sealer.one_pass();
        let mut hashes = Vec::new();
        let counts = input::for_each_hash_batch(inputs, spec, &hasher, |batch| {
            hashes.extend_from_slice(&batch.hashes);
            if hashes.len() >= SWEEP_KEYS {
                sealer.insert_batch(b, &mut hashes, &mut open::bars())?;
                hashes.clear();
            }
            Ok(())
        })?;
        if one_pass {
            return Ok((counts, Some(hashes)));
        }
        sealer.insert_batch(b, &mut hashes, &mut open::bars())?;
        sealer.copy_rest()?;
        return Ok((counts, None));
    }
    let counts = input::for_each_hash_batch(inputs, spec, &hasher, |batch| {
        if let Err((i, e)) = f.insert_hashed_batch(&batch.hashes) {
            let (n, _) = batch.keyed_lines().nth(i).unwrap_or((batch.first, &[]));
            // the library's error stays in the chain (a size over the limit names the flag)
            return Err(anyhow::Error::new(e).context(format!("line {n}")));
        }
        Ok(())
    })?;
    Ok((counts, None))
}

/// A counting kind: one occurrence per key, a batch at a time.
fn add_counts(c: &mut AnyCounter, inputs: &[String], spec: &KeySpec) -> Result<Counts> {
    let hasher = *c.hasher();
    input::for_each_hash_batch(inputs, spec, &hasher, |batch| {
        if let Err((i, e)) = c.insert_hashed_batch(&batch.hashes) {
            let (n, _) = batch.keyed_lines().nth(i).unwrap_or((batch.first, &[]));
            if let bloomery::Error::Full { .. } = e {
                bail!(
                    "line {n}: the d-left filter is full (every bucket this key maps to is \
                     full); nothing was saved: create it with a larger -n"
                );
            }
            return Err(e.into());
        }
        Ok(())
    })
}

/// An mlbf, which takes each key as a URL (its segments are hashed, not the whole key): the
/// counts and the number of keys that are not URLs, skipped when `skip_invalid`, else the
/// first one is an error.
fn add_urls(
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

/// `--threads N` into a blocked filter: the library's parallel line insert
/// ([`bloomery::BlockedBloomFilter::insert_lines`]), each input a plain file read by byte
/// ranges or a stream of blocks (stdin, compressed files).
fn parallel(
    f: &mut bloomery::BlockedBloomFilter,
    inputs: &[String],
    spec: &KeySpec,
    threads: usize,
) -> Result<Counts> {
    let progress = Progress::new("lines");
    let report = |n| progress.inc(n);
    let mut counts = Counts::default();
    for name in input::names(inputs) {
        let plain = input::open_plain(&name)?;
        let source = match &plain {
            Some((file, len)) => LineSource::File { file, len: *len },
            None => LineSource::Blocks(Box::new(input::blocks(&name, LINE_CHUNK)?)),
        };
        let c = f
            .insert_lines(source, threads, spec, &report)
            .map_err(|e| match e {
                LineError::Key { line, message } => {
                    anyhow::anyhow!("{name}: line {}: {message}", counts.lines + line)
                }
                LineError::Io(e) if plain.is_none() => anyhow::anyhow!("cannot read {e}"),
                other => anyhow::anyhow!("`{name}`: {other}"),
            })?;
        counts.lines += c.lines;
        counts.skipped += c.skipped;
    }
    drop(progress);
    if counts.lines == 0 {
        bail!("the input is empty: no lines to read");
    }
    Ok(counts)
}
