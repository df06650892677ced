//! `bloomery add`: load, insert in memory, save atomically (a failed add leaves the file as
//! it was).

use std::path::Path;
use std::sync::mpsc;

use anyhow::{bail, Context, Result};
use bloomery::blocked::BATCH_AHEAD;
use bloomery::store::Pipeline;
use bloomery::{AnyFilter, BlockedBloomFilter, Filter, InsertRegions};
use rayon::prelude::*;

use crate::cli::AddArgs;
use crate::input::{self, Counts, KeySpec};
use crate::num::{group, rate};
use crate::output::{note, warn, Progress};

pub fn run(a: AddArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let threads = match a.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let pool = if threads > 1 {
        let p = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .context("cannot start the insert threads")?;
        Some(p)
    } else {
        None
    };
    let mut f = match &pool {
        Some(p) => load_parallel(&a.file, p)?,
        None => super::load(&a.file)?,
    };
    let before = f.len();
    let mut invalid = None;
    let counts = match (&mut f, pool) {
        (AnyFilter::Blocked(b), Some(pool)) => parallel(b, &a.inputs, &spec, pool)?,
        (other, _) => {
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
        "{} lines read{skipped}, {} new items, {} in total; fill {:.3}; fpr now {} (target {})",
        group(counts.lines),
        group(f.len().saturating_sub(before)),
        group(i.items),
        i.fill_ratio,
        rate(i.current_fpr),
        rate(i.target_fpr)
    ));
    super::warn_if_over_info(&i);
    Ok(0)
}

/// Load the filter file with its bytes read by all threads of `pool`, each a part of the file
/// (the copy from the page cache and the page faults of the buffer are shared). Falls back to
/// the plain load, and its error messages, for a small, special, oversized or unreadable file.
fn load_parallel(path: &Path, pool: &rayon::ThreadPool) -> Result<AnyFilter> {
    let read = || -> std::io::Result<Option<Vec<u8>>> {
        let file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        let len = meta.len();
        if !meta.is_file() || len < (1 << 20) || len > bloomery::store::max_bytes() {
            return Ok(None);
        }
        let Ok(len) = usize::try_from(len) else {
            return Ok(None);
        };
        let mut bytes = vec![0u8; len];
        let part = len
            .div_ceil(pool.current_num_threads())
            .next_multiple_of(4096);
        let complete = pool.install(|| {
            bytes
                .par_chunks_mut(part)
                .enumerate()
                .map(|(i, c)| Ok(input::read_at(&file, c, (i * part) as u64)? == c.len()))
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
/// key inserted `BATCH_AHEAD` keys later (the library's pipeline), so the cache misses of
/// consecutive keys overlap.
fn sequential_blocked(
    f: &mut BlockedBloomFilter,
    inputs: &[String],
    spec: &KeySpec,
) -> Result<Counts> {
    let hasher = *f.hasher();
    let mut pipe = Pipeline::<bloomery::Hashed, BATCH_AHEAD>::default();
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

/// Nominal bytes of input in one piece of a batch: a batch is a few pieces per thread, and
/// a piece's hashes (16 bytes per line) stay small.
const PIECE: usize = 1 << 20;

/// Pieces per thread in a batch (a few, so a worker that was descheduled is helped).
const PIECES_PER_THREAD: usize = 4;

/// `add --threads N` into a blocked filter. The input goes through in batches of a few pieces
/// per thread; each batch runs in two parallel phases:
///
/// 1. each piece's lines are read, split, keyed and hashed, and the hashes are bucketed by the
///    region of the filter their block lies in. A plain file is read by the workers
///    themselves, each piece a byte range of the file read with positional reads into a reused
///    buffer (so the copying from the page cache is shared too); stdin and compressed files are
///    read and decompressed by one reader thread while the workers work, and its blocks are
///    split into pieces at line boundaries.
/// 2. each region of the filter is filled by one worker with the hashes of its buckets, piece
///    after piece, through the library's prefetching `par_insert_bucketed` (plain writes: no
///    two workers touch one block). For a plain file this runs alongside phase 1 of the next
///    batch.
///
/// A key's bits all lie in its block and each block's keys are inserted in input order, so the
/// filter's bits *and* its item count equal those of a sequential add.
fn parallel(
    f: &mut BlockedBloomFilter,
    inputs: &[String],
    spec: &KeySpec,
    pool: rayon::ThreadPool,
) -> Result<Counts> {
    let threads = pool.current_num_threads();
    let regions = f.insert_regions(threads * 4);
    let mut b = Batches {
        hasher: *f.hasher(),
        f,
        regions,
        pool,
        spec,
        pieces: (0..threads * PIECES_PER_THREAD)
            .map(|_| Piece::default())
            .collect(),
        spare: Vec::new(),
        counts: Counts::default(),
        progress: Progress::new("lines"),
    };
    let mut total = 0u64;
    for name in input::names(inputs) {
        total += match input::open_plain(&name)? {
            Some((file, len)) => b.ranged(&file, len, &name)?,
            None => b.streamed(&name, PIECE * b.pieces.len())?,
        };
    }
    b.progress.finish();
    if total == 0 {
        bail!("the input is empty: no lines to read");
    }
    Ok(b.counts)
}

/// What one piece of a batch produced.
#[derive(Default)]
struct Piece {
    /// The hashes of its keys, one list per region of the filter, in input order.
    buckets: Vec<Vec<bloomery::Hashed>>,
    counts: Counts,
    /// A bad key (line number within the piece and the message) or a read error.
    error: Option<(u64, String)>,
    /// The read buffer (plain files), reused from batch to batch.
    buf: Vec<u8>,
    hexbuf: Vec<u8>,
}

impl AsRef<[Hashes]> for Piece {
    fn as_ref(&self) -> &[Hashes] {
        &self.buckets
    }
}

impl Piece {
    fn reset(&mut self, regions: usize) {
        self.buckets.resize_with(regions, Vec::new);
        self.buckets.iter_mut().for_each(Vec::clear);
        self.counts = Counts::default();
        self.error = None;
    }

    /// Key and hash one line (terminator included) into its region's bucket; false on a bad key.
    #[inline]
    fn line(
        &mut self,
        line: &[u8],
        hasher: &bloomery::KeyHasher,
        spec: &KeySpec,
        regions: &InsertRegions,
    ) -> bool {
        self.counts.lines += 1;
        match input::key_of(input::trim_eol(line), spec, &mut self.hexbuf) {
            Ok(Some(k)) => {
                let h = hasher.hash_bytes(k);
                self.buckets[regions.region_of(h)].push(h);
            }
            Ok(None) => self.counts.skipped += 1,
            Err(e) => {
                self.error = Some((self.counts.lines, e));
                return false;
            }
        }
        true
    }
}

type Hashes = Vec<bloomery::Hashed>;

struct Batches<'a> {
    f: &'a mut BlockedBloomFilter,
    hasher: bloomery::KeyHasher,
    regions: InsertRegions,
    pool: rayon::ThreadPool,
    spec: &'a KeySpec,
    /// One per piece of a batch (reused from batch to batch).
    pieces: Vec<Piece>,
    /// A second set, for the next batch while this one is inserted.
    spare: Vec<Piece>,
    counts: Counts,
    progress: Progress,
}

impl Batches<'_> {
    /// A plain file: batches of byte ranges, each piece read by the worker that hashes it.
    /// Phase 2 of one batch runs alongside phase 1 of the next (a rayon `join`, so a worker
    /// that finishes its share of one helps with the other). Returns the file's length.
    fn ranged(&mut self, file: &std::fs::File, len: u64, name: &str) -> Result<u64> {
        let batch = (PIECE * self.pieces.len()) as u64;
        let mut next = std::mem::take(&mut self.spare);
        next.resize_with(self.pieces.len(), Piece::default);
        // pieces of the batch hashed but not inserted yet (in `self.pieces`)
        let mut ready = 0;
        let mut off = 0u64;
        while off < len {
            self.check(ready, name)?;
            let used = next.len().min((len - off).div_ceil(PIECE as u64) as usize);
            let (hasher, spec, regions) = (&self.hasher, self.spec, &self.regions);
            let (f, hashed) = (&mut *self.f, &self.pieces[..ready]);
            let pieces = &mut next[..used];
            self.pool.install(|| {
                rayon::join(
                    || f.par_insert_bucketed(regions, hashed),
                    || {
                        pieces.par_iter_mut().enumerate().for_each(|(i, p)| {
                            p.reset(regions.count());
                            let start = off + (i * PIECE) as u64;
                            let mut buf = std::mem::take(&mut p.buf);
                            let read = input::for_each_line_at(
                                file,
                                len,
                                start,
                                start + PIECE as u64,
                                &mut buf,
                                |line| p.line(line, hasher, spec, regions),
                            );
                            p.buf = buf;
                            if let Err(e) = read {
                                p.error = Some((0, format!("cannot read: {e}")));
                            }
                        })
                    },
                )
            });
            std::mem::swap(&mut self.pieces, &mut next);
            ready = used;
            off += batch;
        }
        self.spare = next;
        self.insert(ready, name)?;
        Ok(len)
    }

    /// Check the first `used` pieces for errors (in input order) and count their lines.
    fn check(&mut self, used: usize, name: &str) -> Result<()> {
        for p in &self.pieces[..used] {
            if let Some((line, msg)) = &p.error {
                if *line == 0 {
                    bail!("`{name}`: {msg}");
                }
                bail!("{name}: line {}: {msg}", self.counts.lines + line);
            }
            self.counts.lines += p.counts.lines;
            self.counts.skipped += p.counts.skipped;
        }
        self.progress.set(self.counts.lines);
        Ok(())
    }

    /// Check the hashes of the first `used` pieces and insert them (phase 2).
    fn insert(&mut self, used: usize, name: &str) -> Result<()> {
        self.check(used, name)?;
        let (f, regions, pieces) = (&mut *self.f, &self.regions, &self.pieces[..used]);
        self.pool.install(|| f.par_insert_bucketed(regions, pieces));
        Ok(())
    }

    /// Hash one block of whole lines (stdin or a compressed file), split into pieces.
    fn block(&mut self, data: &[u8], name: &str) -> Result<()> {
        let parts = input::split_lines(data, self.pieces.len());
        let (hasher, spec, regions) = (&self.hasher, self.spec, &self.regions);
        let used = parts.len();
        let pieces = &mut self.pieces[..used];
        self.pool.install(|| {
            parts
                .par_iter()
                .zip(pieces.par_iter_mut())
                .for_each(|(part, p)| {
                    p.reset(regions.count());
                    input::for_each_line_in(part, |line| p.line(line, hasher, spec, regions));
                })
        });
        self.insert(used, name)
    }

    /// Stdin or a compressed file: one reader thread reads (and decompresses) blocks while
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
            let inserted = rx.iter().try_for_each(|block| self.block(&block, name));
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
