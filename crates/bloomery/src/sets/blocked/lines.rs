//! Parallel inserts of line streams into a blocked filter:
//! [`BlockedBloomFilter::insert_lines`]. N workers, each owning one region of the filter's
//! blocks ([`BlockedBloomFilter::fill_regions`]), with no barrier between them.
//!
//! The input is cut into chunks of about [`LINE_CHUNK`] bytes, dealt round-robin: worker `w`
//! reads, splits, keys and hashes chunks `w, w + N, w + 2N, ...`, sorting each chunk's hashes
//! by the region their block lies in. The bucket of its own region it keeps; the others go,
//! through a channel, to the workers owning those regions. Every worker inserts into its region
//! the buckets of chunk 0, 1, 2, ... in that order, its own and the ones it received, through
//! the prefetching [`RegionWriter`] (plain stores: no other thread touches its blocks). A key's
//! bits all lie in its block and each block's keys are inserted in input order, so the filter's
//! bits *and* its item count equal those of a sequential insert.
//!
//! A worker inserts whatever is ready and otherwise hashes its next chunk, up to `LOOKAHEAD`
//! rounds ahead of its inserts; only then does it wait. Channels are unbounded, but the
//! lookahead bounds what they hold to a few chunks per worker. A plain file
//! ([`LineSource::File`]) is read by the workers themselves, each chunk a byte range read with
//! positional reads; any other input ([`LineSource::Blocks`]: stdin, a decompressor) is read
//! by the caller's iterator on one thread, which deals blocks of whole lines to the workers
//! through small bounded channels.
//!
//! Errors: a bad key or a read error in chunk `c` stops all inserting; the workers still hash
//! their chunks before `c`, so the error is reported with its line number in the whole input,
//! and the first error in input order wins. Keys of the chunks before the error are inserted.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};

use super::{BlockedBloomFilter, InsertRegions, RegionWriter};
use crate::filter::Filter;
use crate::hash::{Hashed, KeyHasher};

/// Nominal bytes of input in one chunk of [`BlockedBloomFilter::insert_lines`].
pub const LINE_CHUNK: usize = 1 << 20;

/// How many rounds (of one chunk per worker) a worker hashes ahead of its inserts.
const LOOKAHEAD: u64 = 4;

/// How a line becomes a key, for [`BlockedBloomFilter::insert_lines`]: the caller's rules
/// (a field of the line, hex decoding, ...). Shared by the worker threads.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use bloomery::{BlockedBloomFilter, Filter};
/// use bloomery::lines::{LineKeys, LineSource};
///
/// /// The first comma-separated field of each line; lines starting with `#` are skipped.
/// struct FirstField;
/// impl LineKeys for FirstField {
///     fn key<'a>(&self, line: &'a [u8], _: &'a mut Vec<u8>) -> Result<Option<&'a [u8]>, String> {
///         if line.starts_with(b"#") {
///             return Ok(None);
///         }
///         Ok(line.split(|&b| b == b',').next())
///     }
/// }
/// let mut f = BlockedBloomFilter::try_new(1000, 0.01)?;
/// let text = b"# users\nalice,admin\nbob,guest\n".to_vec();
/// let counts = f.insert_lines(LineSource::Blocks(Box::new(std::iter::once(Ok(text)))), 2, &FirstField, &|_| {})?;
/// assert_eq!((counts.lines, counts.skipped), (3, 1));
/// assert!(f.contains("alice") && f.contains("bob") && !f.contains("admin"));
/// # Ok(()) }
/// ```
pub trait LineKeys: Sync {
    /// The key of `line` (its terminator removed): `Ok(None)` to skip the line, an error
    /// message to stop the insert at this line. `scratch` is a per-thread buffer the key may
    /// be decoded into.
    fn key<'a>(&self, line: &'a [u8], scratch: &'a mut Vec<u8>)
        -> Result<Option<&'a [u8]>, String>;
}

/// Every line is its key, as it is (the terminator, `\n` or `\r\n`, removed).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use bloomery::{BlockedBloomFilter, Filter};
/// use bloomery::lines::{LineSource, WholeLines};
///
/// let mut f = BlockedBloomFilter::try_new(1000, 0.01)?;
/// let text = b"one\r\ntwo\n".to_vec();
/// f.insert_lines(LineSource::Blocks(Box::new(std::iter::once(Ok(text)))), 1, &WholeLines, &|_| {})?;
/// assert!(f.contains("one") && f.contains("two")); // terminators removed
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct WholeLines;

impl LineKeys for WholeLines {
    #[inline]
    fn key<'a>(&self, line: &'a [u8], _: &'a mut Vec<u8>) -> Result<Option<&'a [u8]>, String> {
        Ok(Some(line))
    }
}

/// Where [`BlockedBloomFilter::insert_lines`] reads its lines.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::io::Write;
/// use bloomery::{BlockedBloomFilter, Filter};
/// use bloomery::lines::{LineSource, WholeLines};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("keys.txt");
/// let mut out = std::fs::File::create(&path)?;
/// for i in 0..1000 {
///     writeln!(out, "k{i}")?;
/// }
/// drop(out);
/// let file = std::fs::File::open(&path)?;
/// let len = file.metadata()?.len();
/// let mut f = BlockedBloomFilter::try_new(1000, 0.01)?;
/// let counts = f.insert_lines(LineSource::File { file: &file, len }, 2, &WholeLines, &|_| {})?;
/// assert_eq!(counts.lines, 1000);
/// assert!(f.contains("k999"));
/// # Ok(()) }
/// ```
pub enum LineSource<'a> {
    /// A regular file of `len` bytes: the workers read their own byte ranges with positional
    /// reads (no reader thread, no copy between threads).
    File {
        /// The file.
        file: &'a File,
        /// Its length (bytes past it are ignored).
        len: u64,
    },
    /// Blocks of whole lines, each ending with a line terminator (stdin, a decompressor):
    /// iterated on one thread while the workers split, hash and insert them.
    Blocks(Box<dyn Iterator<Item = io::Result<Vec<u8>>> + Send + 'a>),
}

/// Lines read by [`BlockedBloomFilter::insert_lines`].
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use bloomery::BlockedBloomFilter;
/// use bloomery::lines::{LineCounts, LineSource, WholeLines};
///
/// let mut f = BlockedBloomFilter::try_new(1000, 0.01)?;
/// let src = LineSource::Blocks(Box::new(std::iter::once(Ok(b"a\nb\n".to_vec()))));
/// let counts = f.insert_lines(src, 1, &WholeLines, &|_| {})?;
/// assert_eq!(counts, LineCounts { lines: 2, skipped: 0 });
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineCounts {
    /// Lines read.
    pub lines: u64,
    /// Lines whose key was `None` (skipped).
    pub skipped: u64,
}

/// Why [`BlockedBloomFilter::insert_lines`] stopped.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use bloomery::BlockedBloomFilter;
/// use bloomery::lines::{LineError, LineKeys, LineSource};
///
/// /// Keys must be hex.
/// struct Hex;
/// impl LineKeys for Hex {
///     fn key<'a>(&self, line: &'a [u8], _: &'a mut Vec<u8>) -> Result<Option<&'a [u8]>, String> {
///         match line.iter().all(u8::is_ascii_hexdigit) {
///             true => Ok(Some(line)),
///             false => Err("not hex".into()),
///         }
///     }
/// }
/// let mut f = BlockedBloomFilter::try_new(1000, 0.01)?;
/// let src = LineSource::Blocks(Box::new(std::iter::once(Ok(b"ab\ncd\nxyz\n".to_vec()))));
/// match f.insert_lines(src, 1, &Hex, &|_| {}) {
///     Err(LineError::Key { line, message }) => assert_eq!((line, message.as_str()), (3, "not hex")),
///     other => panic!("expected a key error, got {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub enum LineError {
    /// A line's key was refused: its 1-based number in the whole input, and the reason.
    Key {
        /// 1-based line number in the whole input.
        line: u64,
        /// What [`LineKeys::key`] said.
        message: String,
    },
    /// The input could not be read.
    Io(io::Error),
    /// A worker thread failed.
    Thread,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Key { line, message } => write!(f, "line {line}: {message}"),
            LineError::Io(e) => write!(f, "cannot read: {e}"),
            LineError::Thread => f.write_str("an insert thread failed"),
        }
    }
}

impl std::error::Error for LineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LineError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl BlockedBloomFilter {
    /// Insert the key of every line of `source` with `threads` threads, each owning one region
    /// of the filter's blocks (no locks): the result, bits and item count, is that of inserting the keys
    /// one by one in input order. `keys` turns a line into its key; `progress` is told the
    /// lines of each chunk as they are hashed (from any thread). On an error the keys of the
    /// chunks before the failing one are inserted, the rest are not.
    ///
    /// ```
    /// use bloomery::{BlockedBloomFilter, Filter};
    /// use bloomery::lines::{LineSource, WholeLines};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut f = BlockedBloomFilter::try_new(10_000, 0.01)?;
    /// let text = (0..5000).map(|i| format!("key-{i}\n")).collect::<String>();
    /// let blocks = vec![Ok(text.into_bytes())];
    /// let source = LineSource::Blocks(Box::new(blocks.into_iter()));
    /// let counts = f.insert_lines(source, 2, &WholeLines, &|_| {})?;
    /// assert_eq!(counts.lines, 5000);
    /// assert!(f.contains("key-4999"));
    /// # Ok(()) }
    /// ```
    pub fn insert_lines<K: LineKeys>(
        &mut self,
        source: LineSource<'_>,
        threads: usize,
        keys: &K,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<LineCounts, LineError> {
        let regions = self.insert_regions(threads.max(1));
        let sh = Shared {
            hasher: *self.hasher(),
            keys,
            regions,
            stop: AtomicU64::new(u64::MAX),
            progress,
        };
        self.fill_regions(&regions, |writers| match source {
            LineSource::File { file, len } => ranged(&sh, writers, file, len),
            LineSource::Blocks(blocks) => streamed(&sh, writers, blocks),
        })
    }
}

/// Bytes of the filter's words one step of [`BlockedBloomFilter::insert_sorted`] covers
/// before it reports them done.
pub const SWEEP_STEP: u64 = 8 << 20;

impl BlockedBloomFilter {
    /// Insert pre-hashed keys in the order of their blocks: `hashes` is sorted by block (a
    /// stable sort, so keys sharing a block keep their order — the result, bits and item count,
    /// equals inserting them in input order, as a key touches its block only), then inserted
    /// front to back through the prefetching pipeline. After each [`SWEEP_STEP`] bytes of
    /// words, `behind` is told the byte range of the words the sweep is done with, which a
    /// caller updating a mapped file drops from memory
    /// ([`FileUpdate::release_range`](crate::file::FileUpdate::release_range)): a batch touches the
    /// filter's pages once, in order, and resident memory stays at one step. Returns the keys
    /// that were new.
    ///
    /// ```
    /// use bloomery::{BlockedBloomFilter, Filter};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut a = BlockedBloomFilter::try_new(10_000, 0.01)?;
    /// let mut b = a.clone();
    /// let mut hashes: Vec<_> = (0..5000u32).map(|i| a.hasher().hash(&(i % 3000))).collect();
    /// for &h in &hashes {
    ///     b.insert_hashed(h);
    /// }
    /// let new = a.insert_sorted(&mut hashes, |_| {});
    /// assert_eq!(a, b);
    /// assert_eq!(new, b.len());
    /// # Ok(()) }
    /// ```
    pub fn insert_sorted(
        &mut self,
        hashes: &mut [Hashed],
        behind: impl FnMut(std::ops::Range<u64>),
    ) -> u64 {
        match self.insert_sweep(hashes, |_| Ok::<(), std::convert::Infallible>(()), behind) {
            Ok(new) => new,
            Err(never) => match never {},
        }
    }

    /// [`insert_sorted`](Self::insert_sorted) that also tells `ahead` the byte range of the
    /// words each step is about to touch, before it touches them, and stops at its first error:
    /// what an update whose copy is made as the sweep advances needs
    /// ([`FileUpdate::open_sweep`](crate::file::FileUpdate::open_sweep), whose
    /// [`copy_through`](crate::file::FileUpdate::copy_through) is the `ahead`). The ranges cover
    /// the words from the front, in order; keys before an error are inserted.
    ///
    /// ```
    /// use bloomery::{BlockedBloomFilter, Filter, Stats};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut f = BlockedBloomFilter::try_new(10_000, 0.01)?;
    /// let mut hashes: Vec<_> = (0..5000u32).map(|i| f.hasher().hash(&i)).collect();
    /// let mut reached = 0;
    /// let new = f.insert_sweep(&mut hashes, |r| { reached = r.end; Ok::<_, bloomery::Error>(()) }, |_| {})?;
    /// assert_eq!(new, f.len()); // the keys that set a bit (a few may find theirs all set)
    /// assert!((0..5000u32).all(|i| f.contains(&i)));
    /// assert!(reached > 0 && reached <= f.bit_len() / 8);
    /// # Ok(()) }
    /// ```
    pub fn insert_sweep<E>(
        &mut self,
        hashes: &mut [Hashed],
        mut ahead: impl FnMut(std::ops::Range<u64>) -> Result<(), E>,
        mut behind: impl FnMut(std::ops::Range<u64>),
    ) -> Result<u64, E> {
        let blocks = self.blocks();
        let at = |h: Hashed| super::block_index(h, blocks) as u64 * super::BLOCK_WORDS as u64 * 8;
        hashes.sort_by_key(|&h| at(h));
        let before = self.len();
        let total = blocks * super::BLOCK_WORDS as u64 * 8;
        let (mut start, mut done) = (0, 0u64);
        while start < hashes.len() {
            let step_end = ((at(hashes[start]) / SWEEP_STEP + 1) * SWEEP_STEP).min(total);
            let end = start + hashes[start..].partition_point(|&h| at(h) < step_end);
            ahead(done..step_end)?;
            self.insert_pipelined(hashes[start..end].iter().copied());
            behind(done..step_end);
            done = step_end;
            start = end;
        }
        Ok(self.len() - before)
    }
}

/// The hashes of one region from one chunk, with the chunk's number.
type Bucket = (u64, Vec<Hashed>);

/// What every worker reads.
struct Shared<'a, K> {
    hasher: KeyHasher,
    keys: &'a K,
    regions: InsertRegions,
    /// The first chunk with an error (`u64::MAX`: none so far): nothing is inserted from then on.
    stop: AtomicU64,
    progress: &'a (dyn Fn(u64) + Sync),
}

/// One worker's account of one of its chunks.
struct Report {
    chunk: u64,
    lines: u64,
    skipped: u64,
    /// A bad key (line number within the chunk, message), or a read error (line 0).
    error: Option<(u64, String)>,
    io: Option<io::Error>,
}

/// Where a worker's chunks come from.
enum Feed<'a> {
    /// Byte ranges of a plain file: chunk `c` is the lines beginning in
    /// `c·LINE_CHUNK..(c+1)·LINE_CHUNK`.
    Range {
        file: &'a File,
        len: u64,
        buf: RangeBuf,
    },
    /// Blocks of whole lines dealt by the reader thread, with their chunk numbers.
    Stream(Receiver<(u64, Vec<u8>)>),
}

impl Feed<'_> {
    /// Hash this worker's next chunk, which is `own` for a plain file; `None` when it has no
    /// more chunks.
    fn hash_next<K: LineKeys>(
        &mut self,
        own: u64,
        sh: &Shared<'_, K>,
        out: &mut Chunk,
    ) -> Option<Report> {
        match self {
            Feed::Range { file, len, buf } => {
                let start = own.checked_mul(LINE_CHUNK as u64)?;
                if start >= *len {
                    return None;
                }
                let read =
                    for_each_line_at(file, *len, start, start + LINE_CHUNK as u64, buf, |l| {
                        out.line(l, sh)
                    });
                let mut r = out.report(own);
                if let Err(e) = read {
                    r.error.get_or_insert((0, e.to_string()));
                    r.io = Some(e);
                }
                Some(r)
            }
            Feed::Stream(rx) => {
                let (chunk, block) = rx.recv().ok()?;
                for_each_line_in(&block, |l| out.line(l, sh));
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
    scratch: Vec<u8>,
}

impl Chunk {
    /// Key and hash one line (terminator included) into its region's bucket; false (stop) on a
    /// bad key.
    #[inline]
    fn line<K: LineKeys>(&mut self, line: &[u8], sh: &Shared<'_, K>) -> bool {
        self.lines += 1;
        match sh.keys.key(trim_eol(line), &mut self.scratch) {
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
            io: None,
        };
        self.lines = 0;
        self.skipped = 0;
        r
    }
}

/// A plain file: the workers read their own byte ranges.
fn ranged<K: LineKeys>(
    sh: &Shared<'_, K>,
    writers: &mut [RegionWriter<'_>],
    file: &File,
    len: u64,
) -> Result<LineCounts, LineError> {
    let feeds = (0..writers.len())
        .map(|_| Feed::Range {
            file,
            len,
            buf: RangeBuf::default(),
        })
        .collect();
    tally(work(sh, writers, feeds)?)
}

/// Blocks from the caller's iterator: one reader thread deals them to the workers.
fn streamed<K: LineKeys>(
    sh: &Shared<'_, K>,
    writers: &mut [RegionWriter<'_>],
    blocks: Box<dyn Iterator<Item = io::Result<Vec<u8>>> + Send + '_>,
) -> Result<LineCounts, LineError> {
    let n = writers.len();
    let (txs, feeds): (Vec<_>, Vec<_>) = (0..n)
        .map(|_| {
            let (tx, rx) = mpsc::sync_channel::<(u64, Vec<u8>)>(2);
            (tx, Feed::Stream(rx))
        })
        .unzip();
    std::thread::scope(|s| {
        let reader = s.spawn(move || -> io::Result<()> {
            for (chunk, block) in (0u64..).zip(blocks) {
                let to = &txs[(chunk % n as u64) as usize];
                if to.send((chunk, block?)).is_err() {
                    // the workers stopped (a bad key): what they report wins
                    return Ok(());
                }
            }
            Ok(())
        });
        let reports = work(sh, writers, feeds);
        let read = reader.join().map_err(|_| LineError::Thread)?;
        // a bad key stops the workers, and then the reader: report what was wrong in the input
        let counts = tally(reports?)?;
        read.map_err(LineError::Io)?;
        Ok(counts)
    })
}

/// Run one worker per writer over `feeds`; returns every chunk's report.
fn work<K: LineKeys>(
    sh: &Shared<'_, K>,
    writers: &mut [RegionWriter<'_>],
    feeds: Vec<Feed<'_>>,
) -> Result<Vec<Report>, LineError> {
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
            reports.extend(h.join().map_err(|_| LineError::Thread)?);
        }
        Ok(reports)
    })
}

struct Worker<'s, 'w, 'f, K> {
    w: usize,
    n: usize,
    sh: &'s Shared<'s, K>,
    writer: &'w mut RegionWriter<'f>,
    feed: Feed<'s>,
    /// To worker v: the buckets of region v (None for this worker).
    outbox: Vec<Option<Sender<Bucket>>>,
    /// From worker v: the buckets of this worker's region (None for this worker).
    inbox: Vec<Option<Receiver<Bucket>>>,
}

impl<K: LineKeys> Worker<'_, '_, '_, K> {
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
            scratch: Vec::new(),
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
                (self.sh.progress)(r.lines);
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
fn tally(mut reports: Vec<Report>) -> Result<LineCounts, LineError> {
    reports.sort_unstable_by_key(|r| r.chunk);
    let mut counts = LineCounts::default();
    for r in reports {
        if let Some(e) = r.io {
            return Err(LineError::Io(e));
        }
        if let Some((line, message)) = r.error {
            return Err(LineError::Key {
                line: counts.lines + line,
                message,
            });
        }
        counts.lines += r.lines;
        counts.skipped += r.skipped;
    }
    Ok(counts)
}

/// The line without its terminator (`\n` or `\r\n`).
#[inline]
fn trim_eol(buf: &[u8]) -> &[u8] {
    let mut l = buf;
    if let [rest @ .., b'\n'] = l {
        l = rest;
    }
    if let [rest @ .., b'\r'] = l {
        l = rest;
    }
    l
}

/// Read at `off` until `buf` is full or the file ends; returns the bytes read.
fn read_at(file: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    #[cfg(unix)]
    use std::os::unix::fs::FileExt;
    #[cfg(windows)]
    use std::os::windows::fs::FileExt;
    let mut got = 0;
    while got < buf.len() {
        #[cfg(unix)]
        let r = file.read_at(&mut buf[got..], off + got as u64);
        #[cfg(windows)]
        let r = file.seek_read(&mut buf[got..], off + got as u64);
        match r {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Bytes read at a time by [`for_each_line_at`] (small enough to stay in a core's L2 cache
/// between the copy from the page cache and the line splitting).
const RANGE_CHUNK: usize = 128 << 10;

const PAGE: usize = 4096;

/// One page of a [`RangeBuf`].
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(4096))]
struct Page([u8; PAGE]);

/// The reusable read buffer of [`for_each_line_at`]: whole pages, starting on a page boundary.
#[derive(Default)]
struct RangeBuf(Vec<Page>);

impl RangeBuf {
    fn bytes(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.0)
    }

    /// Grow to at least `bytes` (keeping the contents).
    fn grow_to(&mut self, bytes: usize) {
        if self.0.len() * PAGE < bytes {
            self.0.resize(bytes.div_ceil(PAGE), Page([0; PAGE]));
        }
    }
}

/// Call `f` with each line of `file` (of length `len`; bytes past it are ignored) that *begins*
/// in the byte range `start..end`, in order, the line terminator included (the file's last line
/// may lack one). Lines are read with positional reads into `buf` (reused; grown only for a line
/// longer than it), so several threads can read disjoint ranges of one file at once, and
/// consecutive ranges together yield every line exactly once. Stops early when `f` returns
/// false.
///
/// Every read lands at the same offset within a page of `buf` as its file offset has within a
/// page of the file, so the kernel copies whole pages into whole pages: the buffer's first byte
/// stays at a page-aligned file offset.
fn for_each_line_at(
    file: &File,
    len: u64,
    start: u64,
    end: u64,
    rb: &mut RangeBuf,
    mut f: impl FnMut(&[u8]) -> bool,
) -> io::Result<()> {
    let end = end.min(len);
    if start >= end {
        return Ok(());
    }
    rb.grow_to(RANGE_CHUNK);
    let mut buf = rb.bytes();
    // A line begins at 0 or after a '\n': from `start - 1` on, skip to the first line start.
    let mut owned = start == 0;
    let first = start.saturating_sub(1);
    let mut base = first - first % PAGE as u64; // file offset of buf[0], page-aligned
    let mut pos = base; // file offset of the next read: always base + hi
                        // unprocessed bytes: buf[lo..hi] (lo may start past hi, inside the first read)
    let (mut lo, mut hi) = ((first - base) as usize, 0usize);
    while pos < len {
        if lo >= PAGE && lo <= hi {
            // drop the processed pages, keeping the page offset of what is left
            let drop = lo - lo % PAGE;
            buf.copy_within(drop..hi, 0);
            base += drop as u64;
            lo -= drop;
            hi -= drop;
        }
        if hi == buf.len() {
            // a line longer than the buffer
            let grown = buf.len() * 2;
            rb.grow_to(grown);
            buf = rb.bytes();
        }
        let want = (buf.len() - hi).min(usize::try_from(len - pos).unwrap_or(usize::MAX));
        let n = read_at(file, &mut buf[hi..hi + want], pos)?;
        if n == 0 {
            break; // the file shrank
        }
        pos += n as u64;
        hi += n;
        if lo >= hi {
            continue;
        }
        if !owned {
            match memchr_nl(&buf[lo..hi]) {
                Some(i) => {
                    lo += i + 1;
                    owned = true;
                    if base + lo as u64 >= end {
                        return Ok(());
                    }
                }
                None => {
                    lo = hi;
                    continue;
                }
            }
        }
        while let Some(i) = memchr_nl(&buf[lo..hi]) {
            let stop = lo + i + 1;
            if !f(&buf[lo..stop]) {
                return Ok(());
            }
            lo = stop;
            if base + lo as u64 >= end {
                return Ok(());
            }
        }
    }
    // the file's last line, without a terminator
    if owned && lo < hi {
        f(&buf[lo..hi]);
    }
    Ok(())
}

/// The first `\n` in `b`.
#[inline]
fn memchr_nl(b: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', b)
}

/// Call `f` with each line of `block` in order, the terminator included (the last line may
/// lack one); stops early when `f` returns false.
fn for_each_line_in(block: &[u8], mut f: impl FnMut(&[u8]) -> bool) {
    let mut start = 0;
    while let Some(i) = memchr_nl(&block[start..]) {
        let end = start + i;
        if !f(&block[start..=end]) {
            return;
        }
        start = end + 1;
    }
    if start < block.len() {
        f(&block[start..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Filter;

    /// Every split of a file into consecutive ranges yields each line once, in order.
    #[test]
    fn ranges_yield_every_line_once() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for case in 0..200 {
            // lines of 0..40 bytes, some far longer than the read buffer; with or without a
            // final terminator
            let mut data = Vec::new();
            // some files of thousands of lines: many buffer refills, lines across them
            let lines = if case % 5 == 0 {
                2_000 + next(20_000)
            } else {
                next(60)
            };
            for i in 0..lines {
                let n = if next(20) == 0 && lines < 100 {
                    RANGE_CHUNK as u64 + next(3000)
                } else {
                    next(40)
                };
                data.extend((0..n).map(|j| b'a' + ((i + j) % 26) as u8));
                data.push(b'\n');
            }
            if case % 3 == 0 {
                data.extend_from_slice(b"tail");
            }
            let mut tmp = tempfile::NamedTempFile::new().unwrap();
            std::io::Write::write_all(&mut tmp, &data).unwrap();
            let len = data.len() as u64;
            let mut cuts: Vec<u64> = (0..next(6)).map(|_| next(len + 1)).collect();
            cuts.extend([0, len]);
            cuts.sort_unstable();
            let mut got = Vec::new();
            let mut buf = RangeBuf::default();
            for w in cuts.windows(2) {
                for_each_line_at(tmp.as_file(), len, w[0], w[1], &mut buf, |l| {
                    // one line per call
                    assert!(!l.is_empty() && !l[..l.len() - 1].contains(&b'\n'));
                    got.extend_from_slice(l);
                    true
                })
                .unwrap();
            }
            assert_eq!(got, data, "case {case}, cuts {cuts:?}");
        }
    }

    /// Keys that refuse lines: the first refusal in input order is reported with its line
    /// number in the whole input, whichever thread met it.
    struct RefuseStartingWith(u8);

    impl LineKeys for RefuseStartingWith {
        fn key<'a>(&self, l: &'a [u8], _: &'a mut Vec<u8>) -> Result<Option<&'a [u8]>, String> {
            match l.first() {
                Some(&c) if c == self.0 => Err("refused".into()),
                Some(b'#') => Ok(None),
                _ => Ok(Some(l)),
            }
        }
    }

    /// Threads, a file read by ranges, or blocks from an iterator: the bits and the item count
    /// equal a sequential insert of the same keys; skipped lines and the first bad line are
    /// counted and named as a sequential reader would.
    #[test]
    fn parallel_line_inserts_equal_sequential_inserts() {
        let mut text = Vec::new();
        for i in 0..300_000u32 {
            if i % 1000 == 7 {
                text.extend_from_slice(b"# comment\n");
            } else {
                text.extend_from_slice(format!("key-{}\r\n", i % 250_000).as_bytes());
            }
        }
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut tmp, &text).unwrap();
        let mut seq = BlockedBloomFilter::try_new(400_000, 0.01).unwrap();
        let mut skipped = 0;
        for l in text.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            match RefuseStartingWith(b'!').key(trim_eol(l), &mut Vec::new()) {
                Ok(Some(k)) => {
                    seq.insert(k);
                }
                _ => skipped += 1,
            }
        }
        for threads in [1, 2, 3] {
            for by_file in [true, false] {
                let mut f = BlockedBloomFilter::try_new(400_000, 0.01).unwrap();
                let lines = AtomicU64::new(0);
                let source = if by_file {
                    LineSource::File {
                        file: tmp.as_file(),
                        len: text.len() as u64,
                    }
                } else {
                    let blocks: Vec<io::Result<Vec<u8>>> =
                        text.chunks(1 << 16).map(|c| Ok(c.to_vec())).collect();
                    // chunks of whole lines: re-cut at line ends
                    LineSource::Blocks(Box::new(whole_lines(blocks).into_iter()))
                };
                let counts = f
                    .insert_lines(source, threads, &RefuseStartingWith(b'!'), &|n| {
                        lines.fetch_add(n, Ordering::Relaxed);
                    })
                    .unwrap();
                assert_eq!(counts.lines, 300_000, "{threads} {by_file}");
                assert_eq!(counts.skipped, skipped);
                assert_eq!(lines.load(Ordering::Relaxed), 300_000);
                assert_eq!(f, seq, "{threads} threads, by file {by_file}");
                assert_eq!(f.len(), seq.len());
            }
        }
        // a refused line, deep in the input: named by its number in the whole input
        let mut bad = text.clone();
        let at = bad.len() * 3 / 4;
        let line_start = at + bad[at..].iter().position(|&c| c == b'\n').unwrap() + 1;
        bad[line_start] = b'!';
        let want = bad[..line_start].iter().filter(|&&c| c == b'\n').count() as u64 + 1;
        let mut f = BlockedBloomFilter::try_new(400_000, 0.01).unwrap();
        let e = f
            .insert_lines(
                LineSource::Blocks(Box::new(whole_lines(vec![Ok(bad)]).into_iter())),
                2,
                &RefuseStartingWith(b'!'),
                &|_| {},
            )
            .unwrap_err();
        assert!(
            matches!(e, LineError::Key { line, .. } if line == want),
            "{e}"
        );
    }

    fn whole_lines(blocks: Vec<io::Result<Vec<u8>>>) -> Vec<io::Result<Vec<u8>>> {
        let mut all = Vec::new();
        for b in blocks {
            all.extend(b.unwrap());
        }
        let mut out = Vec::new();
        let mut start = 0;
        while start < all.len() {
            let mut end = (start + 50_000).min(all.len());
            while end < all.len() && all[end - 1] != b'\n' {
                end += 1;
            }
            out.push(Ok(all[start..end].to_vec()));
            start = end;
        }
        out
    }
}
