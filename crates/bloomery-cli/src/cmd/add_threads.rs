//! `bloomery add --threads N` into a blocked filter: N workers, each owning one region of the
//! filter's blocks, with no barrier between them.
//!
//! The input is cut into chunks of about [`CHUNK`] bytes, dealt round-robin: worker `w` reads,
//! splits, keys and hashes chunks `w, w + N, w + 2N, ...`, sorting each chunk's hashes by the
//! region their block lies in. The bucket of its own region it keeps; the others go, through a
//! channel, to the workers owning those regions. Every worker inserts into its region the
//! buckets of chunk 0, 1, 2, ... in that order, its own and the ones it received, through the
//! library's prefetching [`RegionWriter`] (plain stores: no other
//! thread touches its blocks). A key's bits all lie in its block and each block's keys are
//! inserted in input order, so the filter's bits *and* its item count equal those of a
//! sequential add.
//!
//! A worker inserts whatever is ready and otherwise hashes its next chunk, up to
//! [`LOOKAHEAD`] rounds ahead of its inserts; only then does it wait. Channels are unbounded,
//! but the lookahead bounds what they hold to a few chunks per worker. A plain file is read by
//! the workers themselves, each chunk a byte range read with positional reads; stdin and
//! compressed files are read (and decompressed) by one reader thread that deals blocks of whole
//! lines to the workers through small bounded channels.
//!
//! Errors: a bad key or a read error in chunk `c` stops all inserting; the workers still hash
//! their chunks before `c`, so the error is reported with its line number in the whole input,
//! and the first error in input order wins. The filter is then not saved.

use std::collections::VecDeque;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};

use anyhow::{anyhow, bail, Result};
use bloomery::{BlockedBloomFilter, Filter, Hashed, InsertRegions, KeyHasher, RegionWriter};

use crate::input::{self, Counts, KeySpec};
use crate::output::Progress;

/// Nominal bytes of input in one chunk.
pub const CHUNK: usize = 1 << 20;

/// How many rounds (of one chunk per worker) a worker hashes ahead of its inserts.
const LOOKAHEAD: u64 = 4;

/// `add --threads N` into a blocked filter (see the [module docs](self)).
pub fn run(
    f: &mut BlockedBloomFilter,
    inputs: &[String],
    spec: &KeySpec,
    threads: usize,
) -> Result<Counts> {
    let regions = f.insert_regions(threads);
    let progress = Progress::new("lines");
    let sh = Shared {
        hasher: *f.hasher(),
        spec,
        regions,
        stop: AtomicU64::new(u64::MAX),
        progress: &progress,
    };
    let mut counts = Counts::default();
    let mut total = 0u64;
    f.fill_regions(&regions, |writers| -> Result<()> {
        for name in input::names(inputs) {
            sh.stop.store(u64::MAX, Ordering::Relaxed);
            let (bytes, c) = match input::open_plain(&name)? {
                Some((file, len)) => (len, ranged(&sh, writers, &file, len, &name)?),
                None => streamed(&sh, writers, &name)?,
            };
            total += bytes;
            counts.lines += c.lines;
            counts.skipped += c.skipped;
        }
        Ok(())
    })?;
    drop(progress);
    if total == 0 {
        bail!("the input is empty: no lines to read");
    }
    Ok(counts)
}

/// The hashes of one region from one chunk, with the chunk's number.
type Bucket = (u64, Vec<Hashed>);

/// What every worker reads.
struct Shared<'a> {
    hasher: KeyHasher,
    spec: &'a KeySpec,
    regions: InsertRegions,
    /// The first chunk with an error (`u64::MAX`: none so far): nothing is inserted from then on.
    stop: AtomicU64,
    progress: &'a Progress,
}

/// One worker's account of one of its chunks.
struct Report {
    chunk: u64,
    lines: u64,
    skipped: u64,
    /// A bad key (line number within the chunk, message), or a read error (line 0).
    error: Option<(u64, String)>,
}

/// Where a worker's chunks come from.
enum Feed<'a> {
    /// Byte ranges of a plain file: chunk `c` is the lines beginning in `c·CHUNK..(c+1)·CHUNK`.
    Range {
        file: &'a File,
        len: u64,
        buf: input::RangeBuf,
    },
    /// Blocks of whole lines dealt by the reader thread, with their chunk numbers.
    Stream(Receiver<(u64, Vec<u8>)>),
}

impl Feed<'_> {
    /// Hash this worker's next chunk, which is `own` for a plain file; `None` when it has no
    /// more chunks.
    fn hash_next(&mut self, own: u64, sh: &Shared, out: &mut Chunk) -> Option<Report> {
        match self {
            Feed::Range { file, len, buf } => {
                let start = own.checked_mul(CHUNK as u64)?;
                if start >= *len {
                    return None;
                }
                let read =
                    input::for_each_line_at(file, *len, start, start + CHUNK as u64, buf, |l| {
                        out.line(l, sh)
                    });
                let mut r = out.report(own);
                if let Err(e) = read {
                    r.error.get_or_insert((0, format!("cannot read: {e}")));
                }
                Some(r)
            }
            Feed::Stream(rx) => {
                let (chunk, block) = rx.recv().ok()?;
                input::for_each_line_in(&block, |l| out.line(l, sh));
                Some(out.report(chunk))
            }
        }
    }
}

/// The hashes of one chunk, one bucket per region, being filled.
struct Chunk {
    buckets: Vec<Vec<Hashed>>,
    lines: u64,
    skipped: u64,
    error: Option<(u64, String)>,
    hexbuf: Vec<u8>,
}

impl Chunk {
    /// Key and hash one line (terminator included) into its region's bucket; false (stop) on a
    /// bad key.
    #[inline]
    fn line(&mut self, line: &[u8], sh: &Shared) -> bool {
        self.lines += 1;
        match input::key_of(input::trim_eol(line), sh.spec, &mut self.hexbuf) {
            Ok(Some(k)) => {
                let h = sh.hasher.hash_bytes(k);
                self.buckets[sh.regions.region_of(h)].push(h);
            }
            Ok(None) => self.skipped += 1,
            Err(e) => {
                self.error = Some((self.lines, e));
                return false;
            }
        }
        true
    }

    /// The chunk's account; resets the counters (the buckets are taken separately).
    fn report(&mut self, chunk: u64) -> Report {
        let r = Report {
            chunk,
            lines: self.lines,
            skipped: self.skipped,
            error: self.error.take(),
        };
        self.lines = 0;
        self.skipped = 0;
        r
    }
}

/// A plain file: the workers read their own byte ranges.
fn ranged(
    sh: &Shared,
    writers: &mut [RegionWriter<'_>],
    file: &File,
    len: u64,
    name: &str,
) -> Result<Counts> {
    let feeds = (0..writers.len())
        .map(|_| Feed::Range {
            file,
            len,
            buf: input::RangeBuf::default(),
        })
        .collect();
    let reports = work(sh, writers, feeds)?;
    tally(reports, name)
}

/// Stdin or a compressed file: one reader thread deals blocks of whole lines to the workers.
fn streamed(sh: &Shared, writers: &mut [RegionWriter<'_>], name: &str) -> Result<(u64, Counts)> {
    let n = writers.len();
    let (txs, feeds): (Vec<_>, Vec<_>) = (0..n)
        .map(|_| {
            let (tx, rx) = mpsc::sync_channel::<(u64, Vec<u8>)>(2);
            (tx, Feed::Stream(rx))
        })
        .unzip();
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut chunk = 0u64;
            input::for_each_block(name, CHUNK, |block| {
                let to = &txs[(chunk % n as u64) as usize];
                to.send((chunk, block))
                    .map_err(|_| anyhow!("the insert threads stopped"))?;
                chunk += 1;
                Ok(())
            })
        });
        let reports = work(sh, writers, feeds);
        let read = reader
            .join()
            .map_err(|_| anyhow!("the reader thread failed"))?;
        // a bad key stops the workers, and then the reader: report what was wrong in the input
        let counts = tally(reports?, name)?;
        Ok((read?, counts))
    })
}

/// Run one worker per writer over `feeds`; returns every chunk's report.
fn work(
    sh: &Shared,
    writers: &mut [RegionWriter<'_>],
    feeds: Vec<Feed<'_>>,
) -> Result<Vec<Report>> {
    let n = writers.len();
    // channel w -> v carries the buckets of region v from worker w's chunks
    let mut txs: Vec<Vec<Option<Sender<Bucket>>>> = (0..n).map(|_| vec![None; n]).collect();
    let mut rxs: Vec<Vec<Option<Receiver<Bucket>>>> =
        (0..n).map(|_| (0..n).map(|_| None).collect()).collect();
    for (w, out) in txs.iter_mut().enumerate() {
        for (v, slot) in out.iter_mut().enumerate() {
            if v != w {
                let (tx, rx) = mpsc::channel();
                *slot = Some(tx);
                rxs[v][w] = Some(rx);
            }
        }
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = writers
            .iter_mut()
            .zip(feeds)
            .zip(txs.into_iter().zip(rxs))
            .enumerate()
            .map(|(w, ((writer, feed), (outbox, inbox)))| {
                s.spawn(move || {
                    Worker {
                        w,
                        n,
                        sh,
                        writer,
                        feed,
                        outbox,
                        inbox,
                    }
                    .run()
                })
            })
            .collect();
        let mut reports = Vec::new();
        for h in handles {
            reports.extend(h.join().map_err(|_| anyhow!("an insert thread failed"))?);
        }
        Ok(reports)
    })
}

struct Worker<'s, 'w, 'f> {
    w: usize,
    n: usize,
    sh: &'s Shared<'s>,
    writer: &'w mut RegionWriter<'f>,
    feed: Feed<'s>,
    /// To worker v: the buckets of region v (None for this worker).
    outbox: Vec<Option<Sender<Bucket>>>,
    /// From worker v: the buckets of this worker's region (None for this worker).
    inbox: Vec<Option<Receiver<Bucket>>>,
}

impl Worker<'_, '_, '_> {
    fn run(mut self) -> Vec<Report> {
        let (w, n) = (self.w as u64, self.n as u64);
        let mut reports = Vec::new();
        // the next chunk whose bucket of this region is due, and this worker's next chunk
        let (mut next, mut own) = (0u64, w);
        let mut fed = true; // this worker may have more chunks
        let mut mine: VecDeque<Bucket> = VecDeque::new();
        let mut spare: Vec<Vec<Hashed>> = Vec::new();
        let mut chunk = Chunk {
            buckets: Vec::new(),
            lines: 0,
            skipped: 0,
            error: None,
            hexbuf: Vec::new(),
        };
        loop {
            let stop = self.sh.stop.load(Ordering::Relaxed);
            // insert every bucket that is ready, in chunk order
            while next < stop {
                let owner = (next % n) as usize;
                let bucket = if owner == self.w {
                    match mine.front() {
                        Some(&(c, _)) if c == next => mine.pop_front().map(|(_, b)| b),
                        _ => None,
                    }
                } else {
                    match self.inbox[owner].as_ref().map(Receiver::try_recv) {
                        Some(Ok((_, b))) => Some(b),
                        _ => None,
                    }
                };
                let Some(mut b) = bucket else { break };
                self.writer.insert_batch(&b);
                b.clear();
                spare.push(b);
                next += 1;
            }
            let stopped = stop != u64::MAX;
            if fed && own < stop && (stopped || own <= next + LOOKAHEAD * n) {
                // hash this worker's next chunk
                chunk
                    .buckets
                    .resize_with(self.n, || spare.pop().unwrap_or_default());
                let Some(r) = self.feed.hash_next(own, self.sh, &mut chunk) else {
                    fed = false;
                    continue;
                };
                self.sh.progress.inc(r.lines);
                if r.error.is_some() {
                    self.sh.stop.fetch_min(r.chunk, Ordering::Relaxed);
                }
                own = r.chunk + n;
                let c = r.chunk;
                reports.push(r);
                for (v, b) in chunk.buckets.drain(..).enumerate() {
                    if v == self.w {
                        mine.push_back((c, b));
                    } else if let Some(tx) = &self.outbox[v] {
                        // a worker that stopped early no longer needs it
                        let _ = tx.send((c, b));
                    }
                }
                continue;
            }
            if stopped || next >= stop {
                return reports;
            }
            // wait for the bucket that is due: from its owner, or there is no such chunk
            let owner = (next % n) as usize;
            let Some(rx) = self.inbox[owner].as_ref() else {
                // due from this worker, which has no more chunks: every chunk is in
                return reports;
            };
            match rx.recv() {
                Ok((_, mut b)) => {
                    self.writer.insert_batch(&b);
                    b.clear();
                    spare.push(b);
                    next += 1;
                }
                // the owner finished: there is no chunk `next`
                Err(_) => return reports,
            }
        }
    }
}

/// Add up the chunks' reports in input order; the first error (in input order) with its line
/// number in the whole input.
fn tally(mut reports: Vec<Report>, name: &str) -> Result<Counts> {
    reports.sort_unstable_by_key(|r| r.chunk);
    let mut counts = Counts::default();
    for r in reports {
        if let Some((line, msg)) = r.error {
            if line == 0 {
                bail!("`{name}`: {msg}");
            }
            bail!("{name}: line {}: {msg}", counts.lines + line);
        }
        counts.lines += r.lines;
        counts.skipped += r.skipped;
    }
    Ok(counts)
}
