//! `bloomery add`: load, insert in memory, save atomically (a failed add leaves the file as
//! it was).

use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use bloomery::{AnyFilter, BlockedBloomFilter, Filter};
use rayon::prelude::*;

use crate::cli::AddArgs;
use crate::input::{self, Counts, KeySpec};
use crate::num::{group, rate};
use crate::output::{note, warn, Progress};

pub fn run(a: AddArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let mut f = super::load(&a.file)?;
    let before = f.len();
    let threads = match a.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let counts = match &mut f {
        AnyFilter::Blocked(b) if threads > 1 => parallel(b, &a.inputs, &spec, threads)?,
        other => {
            if threads > 1 {
                warn(&format!(
                    "--threads applies to blocked filters; inserting into this {} filter with one thread",
                    other.kind().name()
                ));
            }
            sequential(other, &a.inputs, &spec)?
        }
    };
    super::save(&f, &a.file)?;
    let i = f.info();
    let skipped = if counts.skipped > 0 {
        format!(" ({} without field, skipped)", group(counts.skipped))
    } else {
        String::new()
    };
    note(&format!(
        "{} lines read{skipped}, {} new items, {} in total; fill {:.3}; fpr now {} (target {})",
        group(counts.lines),
        group(f.len().saturating_sub(before)),
        group(i.items),
        i.fill_ratio,
        rate(i.current_fpr),
        rate(i.target_fpr)
    ));
    super::warn_if_over(&f);
    Ok(0)
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

/// The blocked filter on one thread: each key's block is prefetched when it is read and the
/// key inserted `AHEAD` keys later, so the cache misses of consecutive keys overlap.
fn sequential_blocked(
    f: &mut BlockedBloomFilter,
    inputs: &[String],
    spec: &KeySpec,
) -> Result<Counts> {
    const AHEAD: usize = 16;
    let hasher = *f.hasher();
    let mut ring = [bloomery::Hashed::default(); AHEAD];
    let mut n = 0usize;
    let counts = input::for_each_line(inputs, spec, |_, key| {
        if let Some(k) = key {
            let h = hasher.hash_bytes(k);
            f.prefetch_hashed(h);
            let slot = &mut ring[n % AHEAD];
            if n >= AHEAD {
                f.insert_hashed(*slot);
            }
            *slot = h;
            n += 1;
        }
        Ok(())
    })?;
    for i in n.saturating_sub(AHEAD)..n {
        f.insert_hashed(ring[i % AHEAD]);
    }
    Ok(counts)
}

/// Bytes per block handed from the reader to the insert threads.
const BLOCK: usize = 4 << 20;

/// One reader thread reads raw blocks of whole lines (no per-line work); for each block the
/// insert pool (`threads` rayon workers) splits it into pieces at line boundaries, splits,
/// keys and hashes the lines of each piece in parallel, then inserts the hashes with the
/// library's `par_insert_hashed` (each worker owns a disjoint region of the filter: plain
/// writes, no atomics), while the reader fills the next block. The result is the same filter
/// as a sequential add.
fn parallel(
    f: &mut BlockedBloomFilter,
    inputs: &[String],
    spec: &KeySpec,
    threads: usize,
) -> Result<Counts> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("cannot start the insert threads")?;
    let hasher = *f.hasher();
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(2);
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            input::for_each_block(inputs, BLOCK, |block| {
                tx.send(block)
                    .map_err(|_| anyhow::anyhow!("the insert threads stopped"))
            })
        });
        let mut counts = Counts::default();
        let mut progress = Progress::new("lines");
        let mut hashes = Vec::new();
        let inserted = (|| -> Result<()> {
            for block in rx.iter() {
                let pieces = input::split_lines(&block, threads * 4);
                let results: Vec<_> = pool.install(|| {
                    pieces
                        .par_iter()
                        .map(|piece| hash_piece(&hasher, piece, spec))
                        .collect()
                });
                hashes.clear();
                for r in results {
                    match r {
                        Ok((c, hs)) => {
                            counts.lines += c.lines;
                            counts.skipped += c.skipped;
                            hashes.extend_from_slice(&hs);
                        }
                        Err((line, msg)) => bail!("line {}: {msg}", counts.lines + line),
                    }
                }
                pool.install(|| f.par_insert_hashed(&hashes));
                progress.set(counts.lines);
            }
            Ok(())
        })();
        // On an insert error the receiver is gone, so the reader stops with its own error:
        // report the insert error, which says what was wrong with the input.
        drop(rx);
        let read = reader
            .join()
            .map_err(|_| anyhow::anyhow!("the reader thread failed"))?;
        inserted?;
        read?;
        progress.finish();
        Ok(counts)
    })
}

/// Split, key and hash the lines of one piece; on a bad key, the line number within the piece
/// and the message.
fn hash_piece(
    hasher: &bloomery::KeyHasher,
    piece: &[u8],
    spec: &KeySpec,
) -> std::result::Result<(Counts, Vec<bloomery::Hashed>), (u64, String)> {
    let mut c = Counts::default();
    let mut out = Vec::with_capacity(piece.len() / 16);
    let mut hexbuf = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', piece) {
        let line = input::trim_eol(&piece[start..=end]);
        start = end + 1;
        c.lines += 1;
        match input::key_of(line, spec, &mut hexbuf) {
            Ok(Some(k)) => out.push(hasher.hash_bytes(k)),
            Ok(None) => c.skipped += 1,
            Err(e) => return Err((c.lines, e)),
        }
    }
    Ok((c, out))
}
