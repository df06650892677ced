//! Folds, unions and intersections of filter files streamed from their maps into a new file,
//! a piece at a time: resident memory is a few pieces whatever the files' sizes (see
//! [`AnyFilter::fold_file`]).

use std::path::Path;

use super::filter::{kind_mismatch, AnyFilter, FilterInfo};
use crate::dispatch::SetStats;
use crate::error::{Error, FormatError, Incompatibility, Result};
use crate::filter::Stats;
use crate::io::format::{release_readonly, Encode, Progress, Verify};
use crate::io::header::{StreamHash, PASS_CHUNK};
use crate::io::mapped::MappedFile;
use crate::io::stream::{le_bytes, StreamOut};
use crate::kind::{Capability, Kind};
/// Words of a blocked filter's block (one 64-byte cache line).
const BLOCK_WORDS: usize = 8;

/// Words of an input read per step of a pass: [`PASS_CHUNK`] bytes.
const PIECE_WORDS: usize = PASS_CHUNK / 8;

/// Words combined at a time inside a step (256 KiB of each input): small enough that the
/// counts of an intersection find them in the CPU's cache.
const SUB_WORDS: usize = 1 << 15;

/// One input of a streamed pass: the filter decoded from its map in place, read front to back;
/// its bytes are hashed as the pass reaches them (when verifying) and its pages dropped from
/// the process behind the pass.
struct Input<'a> {
    file: &'a MappedFile,
    filter: AnyFilter,
    /// Byte offset of the filter's words in the map.
    base: usize,
    hash: Option<StreamHash>,
    /// Bytes of the map hashed so far.
    hashed: usize,
    /// Bytes of the map dropped from the process so far.
    released: usize,
}

impl<'a> Input<'a> {
    fn open(file: &'a MappedFile, verify: Verify) -> Result<Self> {
        if !AnyFilter::streams(file) {
            return Err(Error::Unsupported(format!(
                "`{}` is not a plain classic, blocked, partitioned or split-block filter file: \
                 only those stream (load it into memory instead)",
                file.path().display()
            )));
        }
        let filter = AnyFilter::from_mapped(file)?;
        let words = words_of(&filter)
            .ok_or_else(|| Error::Unsupported("this kind does not stream".into()))?;
        let base = (words.as_ptr() as usize).wrapping_sub(file.bytes().as_ptr() as usize);
        if base != file.header_len() as usize {
            // the words are not the file's pages (a copy): nothing to stream from
            return Err(Error::Unsupported(
                "this file's words are not used in place: load it into memory".into(),
            ));
        }
        #[cfg(unix)]
        {
            // read front to back: read-ahead on (the map of a query turns it off)
            let _ = file.map().advise(crate::map::Advice::Sequential);
        }
        Ok(Self {
            file,
            filter,
            base,
            hash: (verify == Verify::Checksum).then(StreamHash::new),
            hashed: 0,
            released: 0,
        })
    }

    fn words(&self) -> &[u64] {
        words_of(&self.filter).unwrap_or(&[])
    }

    /// The pass is about to read words `[start, start + n)`: start reading them in.
    fn ahead(&self, start: usize, n: usize) {
        #[cfg(unix)]
        {
            let map = self.file.map();
            let at = self.base + start * 8;
            let len = (n * 8).min(map.len().saturating_sub(at));
            if len > 0 {
                let _ = map.advise_range(crate::map::Advice::WillNeed, at, len);
            }
        }
        #[cfg(not(unix))]
        let _ = (start, n);
    }

    /// The pass is done with the words before `end`: hash the file's bytes up to them (the
    /// header first) and drop their pages from the process.
    fn done_through(&mut self, end: usize) {
        let map = self.file.map();
        let body = map.len() - 8;
        let to = (self.base + end * 8).min(body);
        if let Some(h) = &mut self.hash {
            if to > self.hashed {
                h.update(&map[self.hashed..to]);
            }
        }
        self.hashed = self.hashed.max(to);
        let page_end = to / 4096 * 4096;
        if page_end > self.released {
            release_readonly(map, self.released, page_end - self.released);
            self.released = page_end;
        }
    }

    /// The end of the pass: hash the rest of the body (the payload's padding) and, when
    /// verifying, check the checksum.
    fn finish(&mut self) -> Result<()> {
        let map = self.file.map();
        let body = map.len() - 8;
        self.done_through(usize::MAX / 16);
        if let Some(h) = &mut self.hash {
            if body > self.hashed {
                h.update(&map[self.hashed..body]);
            }
            let stored = u64::from_le_bytes(map[body..].try_into().expect("8 bytes"));
            let computed = h.digest();
            if computed != stored {
                return Err(FormatError::ChecksumMismatch { stored, computed }.into());
            }
        }
        release_readonly(map, 0, map.len());
        Ok(())
    }
}

fn words_of(f: &AnyFilter) -> Option<&[u64]> {
    match f {
        AnyFilter::Classic(c) => Some(c.as_words()),
        AnyFilter::Blocked(b) => Some(b.as_words()),
        AnyFilter::Partitioned(p) => Some(p.as_words()),
        AnyFilter::SplitBlock(b) => Some(b.as_words()),
        _ => None,
    }
}

/// The fill figures of a result, counted on its pieces as they are written.
enum Fill {
    Classic(u64),
    Blocked(
        crate::sets::blocked::FillPass,
        crate::sets::blocked::BlockLayout,
    ),
    /// Bits set per slice of `slice_bits`; `next` is the bit the next piece starts at.
    Partitioned {
        slice_bits: u64,
        next: u64,
        slice_ones: Vec<u64>,
    },
    /// Bits set and the sum over blocks of each block's rate, in block order.
    SplitBlock {
        ones: u64,
        fpr_sum: f64,
    },
}

impl Fill {
    fn new(f: &AnyFilter) -> Self {
        match f {
            AnyFilter::Blocked(b) => {
                Self::Blocked(crate::sets::blocked::FillPass::new(b), b.layout())
            }
            AnyFilter::Partitioned(p) => Self::Partitioned {
                slice_bits: p.slice_bits(),
                next: 0,
                slice_ones: vec![0; p.hashes() as usize],
            },
            AnyFilter::SplitBlock(_) => Self::SplitBlock {
                ones: 0,
                fpr_sum: 0.0,
            },
            _ => Self::Classic(0),
        }
    }

    fn count(&mut self, words: &[u64]) {
        match self {
            Self::Classic(ones) => *ones += crate::store::count_ones(words),
            Self::Blocked(p, layout) => p.advance_words(*layout, words),
            Self::Partitioned {
                slice_bits,
                next,
                slice_ones,
            } => {
                let (lo, hi) = (*next, *next + words.len() as u64 * 64);
                for (i, ones) in slice_ones.iter_mut().enumerate() {
                    let (a, b) = (i as u64 * *slice_bits, (i as u64 + 1) * *slice_bits);
                    let (a, b) = (a.max(lo), b.min(hi));
                    if a < b {
                        *ones += crate::store::count_ones_range(words, a - lo, b - lo);
                    }
                }
                *next = hi;
            }
            Self::SplitBlock { ones, fpr_sum } => {
                // pieces are whole blocks of 4 words (every piece but the last is a multiple
                // of them, and the payload is whole blocks)
                for b in words.chunks_exact(4) {
                    let mut fpr = 1.0;
                    for w in b.iter().flat_map(|w| [*w as u32, (*w >> 32) as u32]) {
                        *ones += u64::from(w.count_ones());
                        fpr *= f64::from(w.count_ones()) / 32.0;
                    }
                    *fpr_sum += fpr;
                }
            }
        }
    }

    /// The figures, given the result's shell (its shape, items and target).
    fn finish(self, shell: &AnyFilter) -> FilterInfo {
        let stats = match (self, shell) {
            (Self::Blocked(p, _), AnyFilter::Blocked(b)) => p.finish(b),
            (Self::Classic(ones), AnyFilter::Classic(c)) => SetStats::of_ones(c, ones),
            (Self::Partitioned { slice_ones, .. }, AnyFilter::Partitioned(p)) => {
                let s = p.slice_bits() as f64;
                SetStats::of_counted(
                    p,
                    slice_ones.iter().sum(),
                    slice_ones.iter().map(|&o| o as f64 / s).product(),
                )
            }
            (Self::SplitBlock { ones, fpr_sum }, AnyFilter::SplitBlock(b)) => {
                SetStats::of_counted(b, ones, fpr_sum / (b.bit_len() / 256) as f64)
            }
            (_, other) => return other.info(),
        };
        shell.info_from(stats)
    }
}

/// The empty filter of the result's shape (its words zero pages never written), holding
/// `items`: its header is the result's.
fn shell(f: &AnyFilter, times: u32, items: u64) -> Result<AnyFilter> {
    Ok(match f {
        AnyFilter::Classic(c) => AnyFilter::Classic(c.stream_shell(times, items)?),
        AnyFilter::Blocked(b) => AnyFilter::Blocked(b.stream_shell(times, items)?),
        AnyFilter::Partitioned(p) if times == 0 => AnyFilter::Partitioned(p.stream_shell(items)?),
        AnyFilter::SplitBlock(b) if times == 0 => AnyFilter::SplitBlock(b.stream_shell(items)?),
        AnyFilter::Partitioned(_) | AnyFilter::SplitBlock(_) => {
            return Err(Error::Unsupported(
                "partitioned and split-block filters do not fold".into(),
            ))
        }
        _ => {
            return Err(Error::Unsupported(
                "only classic, blocked, partitioned and split-block filters stream".into(),
            ))
        }
    })
}

/// The result's header bytes and its payload's words and bytes.
fn layout_of(shell: &AnyFilter) -> (Vec<u8>, usize, u64) {
    let (header, payload) = shell.encode_parts();
    let words = payload.parts().iter().map(|p| p.len()).sum();
    let len = payload.len();
    (header.encode(len), words, len)
}

/// Where a fold sends input word `j`, and which output words are complete once the words
/// before `end` are read: `times` folds of a classic filter OR aligned groups of 2^times bits
/// (`BloomFilter::fold`, repeated), of a blocked filter aligned groups of 2^times blocks
/// (`BlockedBloomFilter::fold`, repeated; blocks of the given words: a line, or half of one
/// under the salted-256 layout).
#[derive(Clone, Copy)]
enum FoldMap {
    Classic(u32),
    Blocked(u32, usize),
}

impl FoldMap {
    fn out_index(self, j: usize) -> usize {
        match self {
            Self::Classic(t) => shr(j, t),
            Self::Blocked(t, w) => (shr(j / w, t) * w) | (j % w),
        }
    }

    fn complete_below(self, end: usize) -> usize {
        match self {
            Self::Classic(t) => shr(end, t),
            // whole lines only (the fill figures count lines)
            Self::Blocked(t, w) => shr(end / w, t) * w / BLOCK_WORDS * BLOCK_WORDS,
        }
    }

    /// OR the words `src` (input words from `start`) into `out` (output words from `base`).
    fn apply(self, src: &[u64], start: usize, out: &mut [u64], base: usize) {
        match self {
            Self::Classic(t) if t <= 6 => {
                let group = (1usize << t) - 1;
                let shift = 6 - t;
                for (i, &w) in src.iter().enumerate() {
                    let j = start + i;
                    let mut c = w;
                    for _ in 0..t {
                        c = crate::sets::classic::compress_pairs(c);
                    }
                    out[(j >> t) - base] |= c << ((j & group) << shift);
                }
            }
            Self::Classic(t) => {
                for (i, &w) in src.iter().enumerate() {
                    let j = start + i;
                    out[shr(j, t) - base] |= u64::from(w != 0) << (shr(j, t - 6) & 63);
                }
            }
            Self::Blocked(t, w) => {
                debug_assert!(start.is_multiple_of(w));
                for (i, b) in src.chunks_exact(w).enumerate() {
                    let o = shr(start / w + i, t) * w - base;
                    for (d, s) in out[o..o + w].iter_mut().zip(b) {
                        *d |= *s;
                    }
                }
            }
        }
    }
}

fn shr(x: usize, t: u32) -> usize {
    x.checked_shr(t).unwrap_or(0)
}

impl AnyFilter {
    /// True when `file` can be combined or intersected as a stream
    /// ([`union_files`](Self::union_files), [`intersect_files`](Self::intersect_files)): a
    /// plain (not compressed) classic, blocked, partitioned or split-block filter file; the
    /// classic and blocked ones also fold as a stream ([`fold_file`](Self::fold_file), which
    /// refuses the other two: they do not fold). The other kinds, and compressed files, are
    /// folded and combined in memory ([`fold`](Self::fold), [`union_with`](Self::union_with)).
    pub fn streams(file: &MappedFile) -> bool {
        file.is_plain()
            && matches!(
                file.header().kind,
                Kind::Classic
                    | Kind::Blocked
                    | Kind::BlockedSectors
                    | Kind::BlockedSalted
                    | Kind::BlockedSalted256
                    | Kind::Partitioned
                    | Kind::SplitBlock
            )
    }

    /// Fold the filter in `file` `times` times ([`fold`](Self::fold) repeated) straight into a
    /// new file at `out`, without holding either filter: the input is read through its map
    /// front to back, [`PASS_CHUNK`] bytes at a time, each step's pages dropped from the
    /// process behind the pass; each output piece (a classic filter's bits ORed in aligned
    /// groups of 2^times, a blocked filter's blocks) is written, hashed for the checksum and
    /// counted for the returned [`info`](Self::info) as it is made. Resident memory is a few
    /// steps whatever the file's size, and the result needs no memory limit
    /// ([`max_bytes`](crate::tuning::max_bytes)).
    ///
    /// The file written is byte for byte the one [`fold`](Self::fold) then
    /// [`save`](Self::save) write, and as atomically: a temporary file beside `out`, fsync,
    /// rename, fsync of the directory; `out` is never written before the rename, so after an
    /// error or a crash at any point it is as it was. With [`Verify::Checksum`] the input's
    /// checksum is computed in the same pass and checked before the rename (a damaged input
    /// is refused and nothing is written); [`Verify::HeaderOnly`] trusts the payload.
    /// `progress` is told the input's bytes done. Classic and blocked filters in plain files
    /// ([`streams`](Self::streams)); the others are [`Error::Unsupported`], and an odd size
    /// is refused as [`fold`](Self::fold) refuses it.
    ///
    /// ```
    /// use bloomery::{AnyFilter, BlockedBloomFilter, Filter, Persist, Verify};
    /// use bloomery::file::MappedFile;
    ///
    /// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
    /// # #[cfg(feature = "mmap")]
    /// # fn main() -> bloomery::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let (big, half) = (dir.path().join("big.bloom"), dir.path().join("half.bloom"));
    /// let mut f = BlockedBloomFilter::try_new(100_000, 0.01)?;
    /// f.insert("alice");
    /// f.save(&big)?;
    ///
    /// let info = AnyFilter::fold_file(&MappedFile::open(&big)?, 1, &half, Verify::Checksum, &mut |_| {})?;
    /// assert_eq!(std::fs::read(&half)?, f.fold()?.to_bytes());
    /// assert_eq!(info.items, 1);
    /// assert!(BlockedBloomFilter::load(&half)?.contains("alice"));
    /// # Ok(()) }
    /// ```
    pub fn fold_file(
        file: &MappedFile,
        times: u32,
        out: impl AsRef<Path>,
        verify: Verify,
        progress: Progress<'_>,
    ) -> Result<FilterInfo> {
        let mut input = Input::open(file, verify)?;
        let shell = shell(&input.filter, times, input.filter.len())?;
        let (head, out_words, payload_len) = layout_of(&shell);
        let map = match &input.filter {
            AnyFilter::Blocked(b) => FoldMap::Blocked(times, b.layout().block_words()),
            _ => FoldMap::Classic(times),
        };
        let mut fill = Fill::new(&shell);
        let mut w = StreamOut::create(out.as_ref(), None)?;
        w.write(&head)?;
        let n = input.words().len();
        // the output words from `base` on, not yet written
        let mut buf: Vec<u64> = Vec::new();
        let mut base = 0usize;
        let mut start = 0usize;
        while start < n {
            let end = (start + PIECE_WORDS).min(n);
            input.ahead(end, PIECE_WORDS.min(n - end));
            let upto = map.out_index(end - 1) + 1;
            buf.resize(upto - base, 0);
            map.apply(&input.words()[start..end], start, &mut buf, base);
            let flush = if end == n {
                out_words
            } else {
                map.complete_below(end)
            };
            let k = flush.saturating_sub(base).min(buf.len());
            fill.count(&buf[..k]);
            w.write(&le_bytes(&buf[..k]))?;
            buf.drain(..k);
            base += k;
            input.done_through(end);
            progress((input.base + end * 8) as u64);
            start = end;
        }
        // words past the input's (none for a valid file), then the padding
        buf.resize(out_words.saturating_sub(base), 0);
        fill.count(&buf);
        w.write(&le_bytes(&buf))?;
        w.write_zeros(payload_len.saturating_sub(out_words as u64 * 8))?;
        input.finish()?;
        progress(file.len());
        debug_assert_eq!(w.written(), head.len() as u64 + payload_len);
        w.finish()?;
        Ok(fill.finish(&shell))
    }

    /// The union of the filters in `files` ([`union_with`](Self::union_with) of each into
    /// the first) written straight into a new file at `out`, without holding any of them:
    /// the inputs are read through their maps front to back in step, [`PASS_CHUNK`] bytes of
    /// each at a time (their pages dropped behind the pass), and each piece of the result is
    /// ORed, written, hashed for the checksum and counted for the returned
    /// [`info`](Self::info) as it is made, so the file is sealed with no pass of its own.
    /// Resident memory is a few steps whatever the files' sizes.
    ///
    /// The file is byte for byte the one the in-memory union then [`save`](Self::save)
    /// write (the item count the largest input's, as [`union_with`](Self::union_with) keeps
    /// it), and written as atomically (see [`fold_file`](Self::fold_file)): `out` may be one
    /// of the inputs. Kinds, shapes and hashers must match, as for
    /// [`union_with`](Self::union_with); with [`Verify::Checksum`] every input's checksum is
    /// checked in the same pass, before the rename. `progress` is told the bytes of the first
    /// input done. Classic and blocked filters in plain files ([`streams`](Self::streams)).
    ///
    /// ```
    /// use bloomery::{AnyFilter, BloomFilter, Filter, Merge, Persist, Verify};
    /// use bloomery::file::MappedFile;
    ///
    /// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
    /// # #[cfg(feature = "mmap")]
    /// # fn main() -> bloomery::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let (pa, pb, out) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("ab"));
    /// let (mut a, mut b) = (BloomFilter::try_new(1000, 0.01)?, BloomFilter::try_new(1000, 0.01)?);
    /// a.insert("alice");
    /// b.insert("bob");
    /// a.save(&pa)?;
    /// b.save(&pb)?;
    ///
    /// let files = [MappedFile::open(&pa)?, MappedFile::open(&pb)?];
    /// AnyFilter::union_files(&[&files[0], &files[1]], &out, Verify::Checksum, &mut |_| {})?;
    /// a.union_with(&b)?;
    /// assert_eq!(std::fs::read(&out)?, a.to_bytes());
    /// # Ok(()) }
    /// ```
    pub fn union_files(
        files: &[&MappedFile],
        out: impl AsRef<Path>,
        verify: Verify,
        progress: Progress<'_>,
    ) -> Result<FilterInfo> {
        combine(files, false, out.as_ref(), verify, progress)
    }

    /// The intersection of the filters in `files` ([`intersect_with`](Self::intersect_with)
    /// of each into the first, in order) streamed into a new file at `out` as
    /// [`union_files`](Self::union_files) streams a union: byte for byte the in-memory
    /// result, written as atomically, in a few steps of memory. The item count — the
    /// inner-product estimate of each step (Broder & Mitzenmacher §2.4), as
    /// [`intersect_with`](Self::intersect_with) sets it — needs the bits set of every input
    /// and partial result, counted in the combining pass; the header is then written and the
    /// checksum computed in a second pass reading the new file back (from the page cache
    /// while it holds the file).
    pub fn intersect_files(
        files: &[&MappedFile],
        out: impl AsRef<Path>,
        verify: Verify,
        progress: Progress<'_>,
    ) -> Result<FilterInfo> {
        combine(files, true, out.as_ref(), verify, progress)
    }
}

/// Two filters' figures and the estimated size of their intersection and union, counted in
/// one streamed pass over both files ([`AnyFilter::estimate_files`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OverlapInfo {
    /// The first filter's [`info`](AnyFilter::info).
    pub first: FilterInfo,
    /// The second filter's [`info`](AnyFilter::info).
    pub second: FilterInfo,
    /// Estimated `|A ∩ B|` (Broder & Mitzenmacher §2.4), as
    /// [`estimate_overlap`](AnyFilter::estimate_overlap) gives it.
    pub intersection: f64,
    /// Estimated `|A ∪ B|`: the item estimate of the filters' OR.
    pub union: f64,
}

impl AnyFilter {
    /// [`info`](Self::info) of the filters in `a` and `b` and their
    /// [`estimate_overlap`](Self::estimate_overlap), without holding either: the files are read
    /// through their maps front to back in step, [`PASS_CHUNK`] bytes of each at a time (their
    /// pages dropped behind the pass), and each piece's bits set, and those set in both, are
    /// counted as it passes; with [`Verify::Checksum`] both checksums are checked in the same
    /// pass. Resident memory is a few steps whatever the files' sizes. The figures are those
    /// of the in-memory calls, exactly. Plain classic, blocked and partitioned filter files
    /// ([`streams`](Self::streams) and [`Capability::Estimate`]) of the same shape and hasher;
    /// `progress` is told the bytes of `a` done.
    ///
    /// ```
    /// use bloomery::{AnyFilter, BloomFilter, Filter, Persist, Verify};
    /// use bloomery::file::MappedFile;
    ///
    /// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
    /// # #[cfg(feature = "mmap")]
    /// # fn main() -> bloomery::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let (pa, pb) = (dir.path().join("a"), dir.path().join("b"));
    /// let (mut a, mut b) = (BloomFilter::try_new(1000, 0.01)?, BloomFilter::try_new(1000, 0.01)?);
    /// for i in 0..300u32 {
    ///     a.insert(&i);
    ///     b.insert(&(i + 100));
    /// }
    /// a.save(&pa)?;
    /// b.save(&pb)?;
    ///
    /// let o = AnyFilter::estimate_files(&MappedFile::open(&pa)?, &MappedFile::open(&pb)?,
    ///     Verify::Checksum, &mut |_| {})?;
    /// let (inter, union) = AnyFilter::from(a).estimate_overlap(&AnyFilter::from(b))?;
    /// assert_eq!((o.intersection, o.union), (inter, union));
    /// assert!((o.intersection - 200.0).abs() < 20.0);
    /// # Ok(()) }
    /// ```
    pub fn estimate_files(
        a: &MappedFile,
        b: &MappedFile,
        verify: Verify,
        progress: Progress<'_>,
    ) -> Result<OverlapInfo> {
        let mut inputs = [Input::open(a, verify)?, Input::open(b, verify)?];
        inputs[0].filter.require(Capability::Estimate)?;
        check_pair(&inputs[0].filter, &inputs[1].filter)?;
        let mut fills = [Fill::new(&inputs[0].filter), Fill::new(&inputs[1].filter)];
        let (mut ones, mut both) = ([0u64; 2], 0u64);
        let n = inputs[0].words().len();
        let mut start = 0usize;
        while start < n {
            let end = (start + PIECE_WORDS).min(n);
            for i in &inputs {
                i.ahead(end, PIECE_WORDS.min(n - end));
            }
            let mut from = start;
            while from < end {
                let to = (from + SUB_WORDS).min(end);
                let (x, y) = (&inputs[0].words()[from..to], &inputs[1].words()[from..to]);
                for (i, w) in [x, y].into_iter().enumerate() {
                    ones[i] += crate::store::count_ones(w);
                    fills[i].count(w);
                }
                both += crate::store::count_and(x, y);
                from = to;
            }
            for i in &mut inputs {
                i.done_through(end);
            }
            progress((inputs[0].base + end * 8) as u64);
            start = end;
        }
        for i in &mut inputs {
            i.finish()?;
        }
        progress(a.len());
        let (m, k) = bits_and_k(&inputs[0].filter);
        let [fa, fb] = fills;
        Ok(OverlapInfo {
            first: fa.finish(&inputs[0].filter),
            second: fb.finish(&inputs[1].filter),
            intersection: crate::params::estimate_intersection(
                m,
                k,
                m.saturating_sub(ones[0]),
                m.saturating_sub(ones[1]),
                m.saturating_sub(both),
            ),
            union: crate::params::estimate_items(m, k, ones[0] + ones[1] - both),
        })
    }
}

/// Check that `b` can be combined with `a` (kind, shape, hasher), as the in-memory merge does.
fn check_pair(a: &AnyFilter, b: &AnyFilter) -> Result<()> {
    match (a, b) {
        (AnyFilter::Classic(x), AnyFilter::Classic(y)) => x.check_compatible(y)?,
        (AnyFilter::Blocked(x), AnyFilter::Blocked(y)) => x.check_compatible(y)?,
        (AnyFilter::Partitioned(x), AnyFilter::Partitioned(y)) => x.check_compatible(y)?,
        (AnyFilter::SplitBlock(x), AnyFilter::SplitBlock(y)) => x.check_compatible(y)?,
        _ => return Err(kind_mismatch(a, b)),
    }
    if a.hasher() != b.hasher() {
        return Err(Error::Incompatible(Incompatibility::Hashing));
    }
    Ok(())
}

fn bits_and_k(f: &AnyFilter) -> (u64, u32) {
    match f {
        AnyFilter::Classic(c) => (c.bit_len(), c.hash_count()),
        AnyFilter::Blocked(b) => (b.bit_len(), b.hash_count()),
        AnyFilter::Partitioned(p) => (p.bit_len(), p.hash_count()),
        AnyFilter::SplitBlock(b) => (b.bit_len(), b.hash_count()),
        _ => (0, 0),
    }
}

fn combine(
    files: &[&MappedFile],
    and: bool,
    out: &Path,
    verify: Verify,
    progress: Progress<'_>,
) -> Result<FilterInfo> {
    let mut inputs = files
        .iter()
        .map(|f| Input::open(f, verify))
        .collect::<Result<Vec<_>>>()?;
    let Some((first, rest)) = inputs.split_first() else {
        return Err(Error::Unsupported("nothing to combine".into()));
    };
    for other in rest {
        check_pair(&first.filter, &other.filter)?;
    }
    let union_items = inputs.iter().map(|i| i.filter.len()).max().unwrap_or(0);
    let shell0 = shell(&inputs[0].filter, 0, union_items)?;
    let (head, out_words, payload_len) = layout_of(&shell0);
    let mut fill = Fill::new(&shell0);
    let mut w = StreamOut::create(out, and.then_some(head.len()))?;
    w.write(&head)?;
    // intersection: the bits set of each input and of each partial AND
    let mut in_ones = vec![0u64; inputs.len()];
    let mut acc_ones = vec![0u64; inputs.len()];
    let n = inputs[0].words().len();
    let mut buf = vec![0u64; PIECE_WORDS.min(n)];
    let mut start = 0usize;
    while start < n {
        let end = (start + PIECE_WORDS).min(n);
        for i in &inputs {
            i.ahead(end, PIECE_WORDS.min(n - end));
        }
        let piece = &mut buf[..end - start];
        for (s, sub) in piece.chunks_mut(SUB_WORDS).enumerate() {
            let from = start + s * SUB_WORDS;
            let to = from + sub.len();
            sub.copy_from_slice(&inputs[0].words()[from..to]);
            if and {
                let ones = crate::store::count_ones(sub);
                in_ones[0] += ones;
                acc_ones[0] += ones;
            }
            for (i, input) in inputs.iter().enumerate().skip(1) {
                let src = &input.words()[from..to];
                if and {
                    in_ones[i] += crate::store::count_ones(src);
                    crate::store::and_assign(sub, src);
                    acc_ones[i] += crate::store::count_ones(sub);
                } else {
                    crate::store::or_assign(sub, src);
                }
            }
        }
        fill.count(piece);
        w.write(&le_bytes(piece))?;
        for i in &mut inputs {
            i.done_through(end);
        }
        progress((inputs[0].base + end * 8) as u64);
        start = end;
    }
    w.write_zeros(payload_len.saturating_sub(out_words as u64 * 8))?;
    for i in &mut inputs {
        i.finish()?;
    }
    progress(files[0].len());
    if !and {
        w.finish()?;
        return Ok(fill.finish(&shell0));
    }
    // the items of each step, as `Core::intersect` sets them
    let (m, k) = bits_and_k(&inputs[0].filter);
    let mut items = inputs[0].filter.len();
    for i in 1..inputs.len() {
        let est = crate::params::estimate_intersection(
            m,
            k,
            m.saturating_sub(acc_ones[i - 1]),
            m.saturating_sub(in_ones[i]),
            m.saturating_sub(acc_ones[i]),
        );
        let bound = items.min(inputs[i].filter.len());
        items = if est.is_finite() {
            (est.round() as u64).min(bound)
        } else {
            bound
        };
    }
    let shell = shell(&inputs[0].filter, 0, items)?;
    let (head, _, _) = layout_of(&shell);
    w.finish_with_head(&head)?;
    Ok(fill.finish(&shell))
}
