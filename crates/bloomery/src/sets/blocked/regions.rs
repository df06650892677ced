//! Parallel bulk inserts: the blocks split into disjoint regions, each filled by one thread with
//! plain stores ([`RegionWriter`], [`InsertRegions`]).

use super::*;

impl BlockedBloomFilter {
    /// Insert many pre-hashed keys using every thread of the current rayon pool (feature
    /// `rayon`), with plain
    /// (non-atomic) writes: the blocks are split into disjoint regions, the hashes are bucketed
    /// by region in parallel, then each region is filled by one thread. No atomic
    /// read-modify-write is needed (those serialise memory accesses and would cost more than
    /// they save), so this scales with cores. The result is the same filter as inserting the
    /// keys one by one; returns the number of keys that were new.
    #[cfg(feature = "rayon")]
    pub fn par_insert_hashed(&mut self, hashes: &[Hashed]) -> u64 {
        let threads = rayon::current_num_threads().max(1);
        if threads == 1 || hashes.len() < 4096 {
            let before = self.core.items;
            self.insert_pipelined(hashes.iter().copied());
            return self.core.items - before;
        }
        let regions = self.insert_regions(threads * 4);
        // bucket: each chunk of hashes sorted into per-region lists, in parallel
        let chunk = hashes.len().div_ceil(threads * 4).max(1);
        let buckets: Vec<Vec<Vec<Hashed>>> = hashes
            .par_chunks(chunk)
            .map(|c| {
                let mut out =
                    vec![Vec::with_capacity(c.len() / regions.count() + 16); regions.count()];
                for h in c {
                    out[regions.region_of(*h)].push(*h);
                }
                out
            })
            .collect();
        self.par_insert_bucketed(&regions, &buckets)
    }

    /// A split of this filter's blocks into about `n` (at least 1) contiguous regions, for
    /// callers that bucket their hashes by region as they compute them and then insert them
    /// with `par_insert_bucketed` (feature `rayon`) or [`fill_regions`](Self::fill_regions).
    pub fn insert_regions(&self, n: usize) -> InsertRegions {
        let per_region = self.blocks.div_ceil(n.max(1) as u64).max(1);
        // floor(b / d) = (b · ceil(2^64 / d)) >> 64 exactly when b and d are below 2^32
        // (Lemire, Kaser, Kurz 2019), so region_of needs no division on such filters
        let magic = if self.blocks < 1 << 32 && per_region > 1 {
            u64::MAX / per_region + 1
        } else {
            0
        };
        InsertRegions {
            blocks: self.blocks,
            per_region,
            magic,
            count: self.blocks.div_ceil(per_region) as usize,
        }
    }

    /// Insert pre-bucketed hashes using every thread of the current rayon pool (feature
    /// `rayon`), with plain writes: `buckets` is a list of batches, each holding one list per region of `regions`
    /// (from [`insert_regions`](Self::insert_regions)); region `r` is filled by one task with
    /// `buckets[0][r]`, then `buckets[1][r]`, ..., through [`RegionWriter::insert_batch`]. A
    /// key's bits all lie in its block, so when the batches are in input order the filter and
    /// its item count equal those of inserting the keys one by one. A hash found in the wrong
    /// region's list (or a region split made for another shape) is still inserted, after the
    /// parallel fill. Returns the number of keys that were new.
    #[cfg(feature = "rayon")]
    pub fn par_insert_bucketed<B: AsRef<[Vec<Hashed>]> + Sync>(
        &mut self,
        regions: &InsertRegions,
        buckets: &[B],
    ) -> u64 {
        let before = self.core.items;
        if regions.blocks != self.blocks {
            // a split for another shape: insert in order, one thread
            let all = buckets
                .iter()
                .flat_map(|b| b.as_ref().iter().flatten().copied());
            self.insert_pipelined(all);
            return self.core.items - before;
        }
        self.fill_regions(regions, |writers| {
            writers.par_iter_mut().enumerate().for_each(|(r, w)| {
                for b in buckets {
                    if let Some(hashes) = b.as_ref().get(r) {
                        w.insert_batch(hashes);
                    }
                }
            })
        });
        // lists beyond the region count
        let extra = buckets
            .iter()
            .flat_map(|b| b.as_ref().iter().skip(regions.count).flatten().copied());
        self.insert_pipelined(extra);
        self.core.items - before
    }

    /// Fill the filter from several threads without atomics or locks: `fill` gets one
    /// [`RegionWriter`] per region of `regions` (from [`insert_regions`](Self::insert_regions);
    /// a split made for another shape is remade with the same count), each owning its
    /// region's blocks, so each can be moved to its own thread (scoped threads, rayon). When
    /// `fill` returns, the keys the writers counted as new are added to the item count, and
    /// the hashes a writer was given for blocks outside its region are inserted, writer after
    /// writer, in the order they were given. Keys given to the writer of their region in
    /// input order give the filter *and* the item count of inserting them one by one.
    pub fn fill_regions<R>(
        &mut self,
        regions: &InsertRegions,
        fill: impl FnOnce(&mut [RegionWriter<'_>]) -> R,
    ) -> R {
        let regions = if regions.blocks == self.blocks {
            *regions
        } else {
            self.insert_regions(regions.count)
        };
        let (blocks, k, layout) = (self.blocks, self.k, self.layout);
        let region_words = regions.per_region as usize * BLOCK_WORDS;
        let mut writers: Vec<RegionWriter<'_>> = self
            .core
            .words
            .as_mut_slice()
            .chunks_mut(region_words)
            .enumerate()
            .map(|(r, words)| RegionWriter {
                words,
                base: r * region_words,
                blocks,
                k,
                layout,
                new: 0,
                stray: Vec::new(),
            })
            .collect();
        let out = fill(&mut writers);
        let new: u64 = writers.iter().map(|w| w.new).sum();
        let stray: Vec<Hashed> = writers.into_iter().flat_map(|w| w.stray).collect();
        self.core.items = self.core.items.saturating_add(new);
        self.insert_pipelined(stray);
        out
    }
}

/// One region of a [`BlockedBloomFilter`]'s blocks, written by one thread during
/// [`BlockedBloomFilter::fill_regions`] (plain stores: no other writer touches these blocks).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedBloomFilter, Filter, Hashed};
///
/// let keys: Vec<u64> = (0..10_000).collect();
/// let mut f = BlockedBloomFilter::try_new(10_000, 0.01)?;
/// let hashes: Vec<Hashed> = keys.iter().map(|k| f.hasher().hash(k)).collect();
/// let regions = f.insert_regions(2);
/// // bucket the hashes by region, then fill each region from its own thread
/// let mut buckets = vec![Vec::new(); regions.count()];
/// for h in &hashes {
///     buckets[regions.region_of(*h)].push(*h);
/// }
/// f.fill_regions(&regions, |writers| {
///     std::thread::scope(|s| {
///         for (w, b) in writers.iter_mut().zip(&buckets) {
///             s.spawn(move || w.insert_batch(b));
///         }
///     })
/// });
/// let mut sequential = BlockedBloomFilter::try_new(10_000, 0.01)?;
/// sequential.extend(keys.iter().copied());
/// assert_eq!(f, sequential); // bits and item count
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RegionWriter<'a> {
    words: &'a mut [u64],
    /// The index, in the whole filter, of the region's first word.
    base: usize,
    blocks: u64,
    k: u32,
    layout: BlockLayout,
    /// Keys that set at least one new bit.
    new: u64,
    /// Hashes of blocks outside the region, inserted after the fill.
    stray: Vec<Hashed>,
}

impl RegionWriter<'_> {
    /// Insert pre-hashed keys, in order, through the prefetching pipeline of
    /// [`BlockedBloomFilter::insert_pipelined`]. A hash whose block lies outside this region
    /// is kept and inserted when the fill ends.
    pub fn insert_batch(&mut self, hashes: &[Hashed]) {
        // (first word of the block within the region, hash)
        let mut pipe = Pipeline::<(usize, Hashed), BATCH_AHEAD>::default();
        for &h in hashes {
            let at = block_start(h, self.blocks).wrapping_sub(self.base);
            if at >= self.words.len() {
                self.stray.push(h);
                continue;
            }
            store::prefetch(self.words, at);
            if let Some((at, h)) = pipe.push((at, h)) {
                self.put(at, h);
            }
        }
        for (at, h) in pipe.drain() {
            self.put(at, h);
        }
    }

    /// Insert one hash whose block starts at word `at` of this region.
    #[inline(always)]
    fn put(&mut self, at: usize, h: Hashed) {
        let (_, half) = place(h, self.blocks, self.layout);
        let block = Block::at_mut(self.words, at);
        self.new += u64::from(block.insert(h, self.k, self.layout, half));
    }
}

/// A split of a blocked filter's blocks into contiguous regions (see
/// [`BlockedBloomFilter::insert_regions`]).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedBloomFilter, Filter};
///
/// let f = BlockedBloomFilter::try_new(100_000, 0.01)?;
/// let regions = f.insert_regions(4);
/// assert_eq!(regions.count(), 4);
/// // every key lands in exactly one region
/// let h = f.hasher().hash("key");
/// assert!(regions.region_of(h) < regions.count());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsertRegions {
    pub(super) blocks: u64,
    pub(super) per_region: u64,
    /// `ceil(2^64 / per_region)` when every block index and `per_region` fit 32 bits and
    /// `per_region > 1`; 0 otherwise (then `region_of` divides).
    pub(super) magic: u64,
    pub(super) count: usize,
}

impl InsertRegions {
    /// The number of regions.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The region of a hashed key's block.
    #[inline(always)]
    pub fn region_of(&self, h: Hashed) -> usize {
        let b = block_index(h, self.blocks) as u64;
        if self.magic != 0 {
            ((u128::from(b) * u128::from(self.magic)) >> 64) as usize
        } else {
            (b / self.per_region) as usize
        }
    }
}
