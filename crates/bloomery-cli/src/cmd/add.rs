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
    // A compressed file is written back compressed (it keeps the form its owner chose).
    super::compress::save_in_place(&f.to_bytes(), &a.file)?;
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
    if f.is_structured() {
        // an mlbf takes each key as a URL: its segments are hashed, not the whole key
        let mut n = 0u64;
        return input::for_each_line(inputs, spec, |_, key| {
            n += 1;
            if let Some(k) = key {
                f.try_insert_key(k)
                    .map_err(|e| anyhow::anyhow!("line {n}: {e}"))?;
            }
            Ok(())
        });
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

/// Bytes of input per thread in one batch: large enough that the synchronisations of a batch
/// cost nothing, small enough that its hashes (16 bytes per line) stay small.
const BATCH_PER_THREAD: usize = 4 << 20;

/// `add --threads N` into a blocked filter. The input goes through in batches of whole lines:
/// plain files are mapped into memory a window at a time (no copy, no reader thread); stdin
/// and compressed files are read and decompressed by one reader thread while the workers work.
/// Splitting, keying and hashing the lines is most of the work and is shared by all `threads`
/// workers; while they hash batch n + 1, one of them inserts the hashes of batch n through the
/// library's software-pipelined insert (each key's block prefetched 16 keys ahead), then joins
/// the hashing. The keys are inserted one by one in input order, so the filter's bits and its
/// item count equal those of a sequential add.
///
/// (The library's region-parallel `par_insert_hashed` would spread the inserts too, but its
/// fill loop does not prefetch: each insert waits for its cache miss, and on 2 cores it costs
/// more than the one pipelined inserter. With a prefetching fill it would be the better choice
/// beyond a few cores.)
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
    let mut b = Batches {
        hasher: *f.hasher(),
        f,
        pool,
        spec,
        pieces: threads * 2,
        counts: Counts::default(),
        progress: Progress::new("lines"),
        bufs: Vec::new(),
        pending: Vec::new(),
    };
    let window = BATCH_PER_THREAD * threads;
    let mut total = 0u64;
    for name in input::names(inputs) {
        total += match input::for_each_mapped(&name, window, |chunk| b.batch(chunk, &name))? {
            Some(n) => n,
            None => b.streamed(&name, window)?,
        };
    }
    let (f, pending) = (&mut *b.f, &b.pending);
    f.insert_pipelined(pending.iter().copied());
    b.progress.finish();
    if total == 0 {
        bail!("the input is empty: no lines to read");
    }
    Ok(b.counts)
}

type Hashes = Vec<bloomery::Hashed>;

struct Batches<'a> {
    f: &'a mut BlockedBloomFilter,
    hasher: bloomery::KeyHasher,
    pool: rayon::ThreadPool,
    spec: &'a KeySpec,
    /// Pieces per batch (a few per thread, so a worker that was descheduled is helped).
    pieces: usize,
    counts: Counts,
    progress: Progress,
    /// One hash buffer per piece (reused from batch to batch).
    bufs: Vec<Hashes>,
    /// The previous batch's hashes in input order, not inserted yet.
    pending: Hashes,
}

impl Batches<'_> {
    /// Hash one batch of whole lines (the last may lack its terminator) while the previous
    /// batch is inserted; this batch's hashes become the pending ones.
    fn batch(&mut self, data: &[u8], name: &str) -> Result<()> {
        let pieces = input::split_lines(data, self.pieces);
        self.bufs
            .resize_with(pieces.len().max(self.bufs.len()), Vec::new);
        let (hasher, spec) = (&self.hasher, self.spec);
        let (f, pending, bufs) = (&mut *self.f, &self.pending, &mut self.bufs);
        let ((), results) = self.pool.install(|| {
            rayon::join(
                || f.insert_pipelined(pending.iter().copied()),
                || {
                    pieces
                        .par_iter()
                        .zip(bufs.par_iter_mut())
                        .map(|(piece, out)| hash_piece(hasher, spec, piece, out))
                        .collect::<Vec<_>>()
                },
            )
        });
        self.pending.clear();
        for (r, buf) in results.into_iter().zip(&self.bufs) {
            match r {
                Ok(c) => {
                    self.counts.lines += c.lines;
                    self.counts.skipped += c.skipped;
                    self.pending.extend_from_slice(buf);
                }
                Err((line, msg)) => bail!("{name}: line {}: {msg}", self.counts.lines + line),
            }
        }
        self.progress.set(self.counts.lines);
        Ok(())
    }

    /// Stdin or a compressed file: one reader thread reads (and decompresses) batches while
    /// the workers hash and insert the previous one. Returns the bytes read.
    fn streamed(&mut self, name: &str, window: usize) -> Result<u64> {
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(1);
        std::thread::scope(|s| {
            let reader = s.spawn(move || {
                input::for_each_block(name, window, |block| {
                    tx.send(block)
                        .map_err(|_| anyhow::anyhow!("the insert threads stopped"))
                })
            });
            let inserted = rx.iter().try_for_each(|block| self.batch(&block, name));
            // On an insert error the receiver is gone, so the reader stops with its own error:
            // report the insert error, which says what was wrong with the input.
            drop(rx);
            let read = reader
                .join()
                .map_err(|_| anyhow::anyhow!("the reader thread failed"))?;
            inserted?;
            read
        })
    }
}

/// Split, key and hash the lines of one piece into `out` (cleared first); a final line without
/// a terminator counts. On a bad key, the line number within the piece and the message.
fn hash_piece(
    hasher: &bloomery::KeyHasher,
    spec: &KeySpec,
    piece: &[u8],
    out: &mut Hashes,
) -> std::result::Result<Counts, (u64, String)> {
    let mut c = Counts::default();
    out.clear();
    let mut hexbuf = Vec::new();
    let mut one = |line: &[u8], c: &mut Counts| {
        c.lines += 1;
        match input::key_of(input::trim_eol(line), spec, &mut hexbuf) {
            Ok(Some(k)) => out.push(hasher.hash_bytes(k)),
            Ok(None) => c.skipped += 1,
            Err(e) => return Err((c.lines, e)),
        }
        Ok(())
    };
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', piece) {
        one(&piece[start..=end], &mut c)?;
        start = end + 1;
    }
    if start < piece.len() {
        one(&piece[start..], &mut c)?;
    }
    Ok(c)
}
