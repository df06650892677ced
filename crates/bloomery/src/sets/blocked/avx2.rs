//! The fused AVX2 single-key paths of the sectors and salted layouts, 512- and 256-bit (hash,
//! block choice and update per layout), chosen once per filter ([`Fused`]). The block
//! kernels themselves are `block::x86`'s.

use super::*;
use crate::hash::reduce;

/// The fused single-key paths of the sectors and salted layouts (see [`Fused`]):
/// hashing, the block index and the two-vector update in one function compiled for AVX2, with
/// the block addressed without a bounds check. Same bits and answers as the portable path
/// (tested). The salted layout reads only [`Hashed::lo`], so its path computes only the 64-bit
/// hash.
#[cfg(target_arch = "x86_64")]
impl BlockedBloomFilter {
    /// The key's block, from a slice of exactly `blocks · BLOCK_WORDS` words.
    #[inline(always)]
    pub(super) fn block_ptr(&self, words: *const u64, h: Hashed) -> *const Block {
        let start = block_start(h, self.blocks);
        debug_assert!(start + BLOCK_WORDS <= self.core.words.len());
        // SAFETY: `block_index(h, blocks) < blocks` (multiply-shift reduction), and every
        // constructor (`with_layout`, `decode_from`, `from_parts`) makes the words exactly
        // `blocks · BLOCK_WORDS` long, so the block lies inside the allocation `words` points to;
        // `Block` is `#[repr(transparent)]` over `[u64; BLOCK_WORDS]`.
        unsafe { words.add(start).cast() }
    }

    /// The key's salted block of `W` words (8: its line; 4: the 256-bit block
    /// `reduce(h.lo, 2 · blocks)` of the salted-256 layout), from a slice of exactly
    /// `blocks · BLOCK_WORDS` words.
    #[inline(always)]
    fn salted_ptr<const W: usize>(&self, words: *const u64, h: Hashed) -> *const [u64; W] {
        let start = reduce(h.lo, self.blocks * (BLOCK_WORDS / W) as u64) as usize * W;
        debug_assert!(start + W <= self.core.words.len());
        // SAFETY: `reduce(h.lo, b) < b` for the `b = blocks · 8 / W` blocks of `W` words
        // (multiply-shift reduction), and the words are exactly `blocks · BLOCK_WORDS = b · W`
        // long (as in `block_ptr`), so the block lies inside the allocation `words` points to.
        unsafe { words.add(start).cast() }
    }

    /// A single-key insert on this filter's fused path for writes ([`Fused`]), or `None` on
    /// the portable one. The key is hashed here, in the caller's code (scalar work that needs
    /// no AVX2, with no test of the seed, and the key need not be passed by reference), and
    /// the path is one jump on one byte; each path's kernel is a function of its own, compiled
    /// for AVX2, that takes the hash in a register.
    ///
    /// # Safety
    /// `write` names a fused path only on a CPU with AVX2 (and AVX-512F for the `SaltedWide`
    /// paths) and owned words (`Fused::of`, `Fused::for_writes`): the caller does not change
    /// it otherwise.
    #[inline(always)]
    pub(super) unsafe fn insert_avx2<K: Key + ?Sized>(&mut self, key: &K) -> Option<bool> {
        let hasher = self.core.hasher;
        // SAFETY: the caller's contract: the CPU has the features each path's kernel enables
        // (AVX2; AVX-512F too for `SaltedWide*`), and the words are owned.
        let new = unsafe {
            match self.write {
                Fused::No => return None,
                Fused::Salted => self.insert_salted_h::<8>(hasher.hash64_xxh3_as::<false, K>(key)),
                Fused::SaltedSeeded => {
                    self.insert_salted_h::<8>(hasher.hash64_xxh3_as::<true, K>(key))
                }
                Fused::SaltedWide => {
                    self.insert_salted_wide_h(hasher.hash64_xxh3_as::<false, K>(key))
                }
                Fused::SaltedWideSeeded => {
                    self.insert_salted_wide_h(hasher.hash64_xxh3_as::<true, K>(key))
                }
                Fused::Salted256 => {
                    self.insert_salted_h::<4>(hasher.hash64_xxh3_as::<false, K>(key))
                }
                Fused::Salted256Seeded => {
                    self.insert_salted_h::<4>(hasher.hash64_xxh3_as::<true, K>(key))
                }
                Fused::Sectors => self.insert_sectors_h(hasher.hash_xxh3(key)),
            }
        };
        debug_assert!(!self.core.words.is_mapped());
        // saturating: a loaded file may carry any count, u64::MAX included
        self.core.items = self.core.items.saturating_add(u64::from(new));
        Some(new)
    }

    /// A single-key query on this filter's fused path for reads, or `None` on the portable
    /// one (as [`insert_avx2`](Self::insert_avx2)).
    ///
    /// # Safety
    /// `read` names a fused path only on a CPU with the features its kernel enables
    /// (`Fused::of`).
    #[inline(always)]
    pub(super) unsafe fn contains_avx2<K: Key + ?Sized>(&self, key: &K) -> Option<bool> {
        let hasher = &self.core.hasher;
        // SAFETY: the caller's contract: the CPU has the features each kernel enables.
        unsafe {
            Some(match self.read {
                Fused::No => return None,
                Fused::Salted => {
                    self.contains_salted_h::<8>(hasher.hash64_xxh3_as::<false, K>(key))
                }
                Fused::SaltedSeeded => {
                    self.contains_salted_h::<8>(hasher.hash64_xxh3_as::<true, K>(key))
                }
                Fused::SaltedWide => {
                    self.contains_salted_wide_h(hasher.hash64_xxh3_as::<false, K>(key))
                }
                Fused::SaltedWideSeeded => {
                    self.contains_salted_wide_h(hasher.hash64_xxh3_as::<true, K>(key))
                }
                Fused::Salted256 => {
                    self.contains_salted_h::<4>(hasher.hash64_xxh3_as::<false, K>(key))
                }
                Fused::Salted256Seeded => {
                    self.contains_salted_h::<4>(hasher.hash64_xxh3_as::<true, K>(key))
                }
                Fused::Sectors => self.contains_sectors_h(hasher.hash_xxh3(key)),
            })
        }
    }

    /// [`insert_avx2`](Self::insert_avx2) of a key hashed by the caller (with the filter's
    /// hasher: the salted paths read only `h.lo`, the xxh3-64 or keyed hash), or `None` on the
    /// portable path.
    ///
    /// # Safety
    /// As `insert_avx2`'s.
    #[inline(always)]
    pub(super) unsafe fn insert_hashed_fused(&mut self, h: Hashed) -> Option<bool> {
        // SAFETY: the caller's contract: the CPU has the features each path's kernel enables,
        // and the words are owned.
        let new = unsafe {
            match self.write {
                Fused::No => return None,
                Fused::Salted | Fused::SaltedSeeded => self.insert_salted_h::<8>(h.lo),
                Fused::SaltedWide | Fused::SaltedWideSeeded => self.insert_salted_wide_h(h.lo),
                Fused::Salted256 | Fused::Salted256Seeded => self.insert_salted_h::<4>(h.lo),
                Fused::Sectors => self.insert_sectors_h(h),
            }
        };
        self.core.items = self.core.items.saturating_add(u64::from(new));
        Some(new)
    }

    /// [`contains_avx2`](Self::contains_avx2) of a key hashed by the caller, or `None` on the
    /// portable path.
    ///
    /// # Safety
    /// As `contains_avx2`'s.
    #[inline(always)]
    pub(super) unsafe fn contains_hashed_fused(&self, h: Hashed) -> Option<bool> {
        // SAFETY: the caller's contract: the CPU has the features each kernel enables.
        unsafe {
            Some(match self.read {
                Fused::No => return None,
                Fused::Salted | Fused::SaltedSeeded => self.contains_salted_h::<8>(h.lo),
                Fused::SaltedWide | Fused::SaltedWideSeeded => self.contains_salted_wide_h(h.lo),
                Fused::Salted256 | Fused::Salted256Seeded => self.contains_salted_h::<4>(h.lo),
                Fused::Sectors => self.contains_sectors_h(h),
            })
        }
    }

    /// Insert the xxh3-64 hash `h64` into its salted block of `W` words.
    #[target_feature(enable = "avx2")]
    fn insert_salted_h<const W: usize>(&mut self, h64: u64) -> bool {
        let words = self.core.words.owned_mut_ptr();
        let h = Hashed::new(h64, 0);
        // SAFETY: an in-bounds block of the words (`salted_ptr`), which are owned and writable
        // (`write` is `Fused::No` while they are a read-only map: `Fused::for_writes`), and
        // `&mut self` excludes every other reference to them.
        x86::insert_salted_avx2(
            unsafe { &mut *self.salted_ptr::<W>(words, h).cast_mut() },
            h,
        )
    }

    /// Insert the xxh3-64 hash `h64` into its 512-bit salted block with the AVX-512 kernel.
    ///
    /// # Safety
    /// The CPU has AVX-512F (`Fused::SaltedWide*` is chosen only then).
    #[target_feature(enable = "avx2,avx512f")]
    unsafe fn insert_salted_wide_h(&mut self, h64: u64) -> bool {
        let words = self.core.words.owned_mut_ptr();
        let h = Hashed::new(h64, 0);
        // SAFETY: as in `insert_salted_h`.
        x86::insert_salted_avx512(
            unsafe { &mut *self.salted_ptr::<8>(words, h).cast_mut() },
            h,
        )
    }

    /// Query the 512-bit salted block of the xxh3-64 hash `h64` with the AVX-512 kernel.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx2,avx512f")]
    unsafe fn contains_salted_wide_h(&self, h64: u64) -> bool {
        let words = self.core.words.as_slice().as_ptr();
        let h = Hashed::new(h64, 0);
        // SAFETY: an in-bounds block of the words (`salted_ptr`), borrowed shared.
        x86::check_salted_avx512(unsafe { &*self.salted_ptr::<8>(words, h) }, h)
    }

    /// Insert the xxh3-128 hash `h` in the sectors layout.
    #[target_feature(enable = "avx2")]
    fn insert_sectors_h(&mut self, h: Hashed) -> bool {
        let words = self.core.words.owned_mut_ptr();
        // SAFETY: as in `insert_salted_h`.
        x86::insert_sectors_avx2(unsafe { &mut *self.block_ptr(words, h).cast_mut() }, h)
    }

    /// Query the salted block of `W` words for the xxh3-64 hash `h64`.
    #[target_feature(enable = "avx2")]
    fn contains_salted_h<const W: usize>(&self, h64: u64) -> bool {
        let words = self.core.words.as_slice().as_ptr();
        let h = Hashed::new(h64, 0);
        // SAFETY: an in-bounds block of the words (`salted_ptr`), borrowed shared.
        x86::check_salted_avx2(unsafe { &*self.salted_ptr::<W>(words, h) }, h)
    }

    /// Query the sectors layout for the xxh3-128 hash `h`.
    #[target_feature(enable = "avx2")]
    fn contains_sectors_h(&self, h: Hashed) -> bool {
        let words = self.core.words.as_slice().as_ptr();
        // SAFETY: an in-bounds block of the words (`block_ptr`), borrowed shared.
        x86::check_sectors_avx2(unsafe { &*self.block_ptr(words, h) }, h)
    }

    /// The batched queries of `keys` ([`pipeline`](Self::pipeline)) on this filter's path
    /// for reads: one jump on the path byte per batch, then a loop compiled for that path's
    /// hash and kernel (the portable loop for `Fused::No`).
    ///
    /// # Safety
    /// As [`contains_avx2`](Self::contains_avx2)'s.
    #[inline(always)]
    pub(super) unsafe fn pipeline_fused<K: Key>(
        &self,
        keys: &[K],
        answer: impl FnMut(usize, bool),
    ) {
        let hasher = self.core.hasher;
        let keys = keys.iter();
        // SAFETY: the caller's contract: the CPU has the features each path's kernel enables.
        unsafe {
            match self.read {
                Fused::No => {
                    self.pipeline_with(keys.map(|k| hasher.hash(k)), answer, |words, h| {
                        self.probe(words, h)
                    })
                }
                Fused::Salted => self.queries_salted::<8>(
                    keys.map(|k| hasher.hash64_xxh3_as::<false, K>(k)),
                    answer,
                ),
                Fused::SaltedSeeded => self
                    .queries_salted::<8>(keys.map(|k| hasher.hash64_xxh3_as::<true, K>(k)), answer),
                Fused::SaltedWide => self.queries_salted_wide(
                    keys.map(|k| hasher.hash64_xxh3_as::<false, K>(k)),
                    answer,
                ),
                Fused::SaltedWideSeeded => self
                    .queries_salted_wide(keys.map(|k| hasher.hash64_xxh3_as::<true, K>(k)), answer),
                Fused::Salted256 => self.queries_salted::<4>(
                    keys.map(|k| hasher.hash64_xxh3_as::<false, K>(k)),
                    answer,
                ),
                Fused::Salted256Seeded => self
                    .queries_salted::<4>(keys.map(|k| hasher.hash64_xxh3_as::<true, K>(k)), answer),
                Fused::Sectors => self.queries_sectors(keys.map(|k| hasher.hash_xxh3(k)), answer),
            }
        }
    }

    /// [`pipeline_fused`](Self::pipeline_fused) of keys hashed by the caller with the
    /// filter's hasher (the salted paths read only `h.lo`).
    ///
    /// # Safety
    /// As `pipeline_fused`'s.
    #[inline(always)]
    pub(super) unsafe fn pipeline_hashed_fused(
        &self,
        hashes: &[Hashed],
        answer: impl FnMut(usize, bool),
    ) {
        let los = hashes.iter().map(|h| h.lo);
        // SAFETY: the caller's contract: the CPU has the features each path's kernel enables.
        unsafe {
            match self.read {
                Fused::No => self.pipeline_with(hashes.iter().copied(), answer, |words, h| {
                    self.probe(words, h)
                }),
                Fused::Salted | Fused::SaltedSeeded => self.queries_salted::<8>(los, answer),
                Fused::SaltedWide | Fused::SaltedWideSeeded => {
                    self.queries_salted_wide(los, answer)
                }
                Fused::Salted256 | Fused::Salted256Seeded => self.queries_salted::<4>(los, answer),
                Fused::Sectors => self.queries_sectors(hashes.iter().copied(), answer),
            }
        }
    }

    /// The batched inserts of `keys` ([`Extend`]) on this filter's path for writes, as
    /// [`pipeline_fused`](Self::pipeline_fused) does for queries.
    ///
    /// # Safety
    /// As [`insert_avx2`](Self::insert_avx2)'s.
    #[inline(always)]
    pub(super) unsafe fn extend_fused<K: Key>(&mut self, keys: impl Iterator<Item = K>) {
        let hasher = self.core.hasher;
        // SAFETY: the caller's contract: the CPU has the features each path's kernel enables,
        // and the words are owned.
        unsafe {
            match self.write {
                Fused::No => self.insert_pipelined_portable(keys.map(|k| hasher.hash(&k))),
                Fused::Salted => {
                    self.inserts_salted::<8>(keys.map(|k| hasher.hash64_xxh3_as::<false, K>(&k)))
                }
                Fused::SaltedSeeded => {
                    self.inserts_salted::<8>(keys.map(|k| hasher.hash64_xxh3_as::<true, K>(&k)))
                }
                Fused::SaltedWide => {
                    self.inserts_salted_wide(keys.map(|k| hasher.hash64_xxh3_as::<false, K>(&k)))
                }
                Fused::SaltedWideSeeded => {
                    self.inserts_salted_wide(keys.map(|k| hasher.hash64_xxh3_as::<true, K>(&k)))
                }
                Fused::Salted256 => {
                    self.inserts_salted::<4>(keys.map(|k| hasher.hash64_xxh3_as::<false, K>(&k)))
                }
                Fused::Salted256Seeded => {
                    self.inserts_salted::<4>(keys.map(|k| hasher.hash64_xxh3_as::<true, K>(&k)))
                }
                Fused::Sectors => self.inserts_sectors(keys.map(|k| hasher.hash_xxh3(&k))),
            }
        }
    }

    /// [`extend_fused`](Self::extend_fused) of keys hashed by the caller
    /// ([`insert_pipelined`](Self::insert_pipelined)).
    ///
    /// # Safety
    /// As `insert_avx2`'s.
    #[inline(always)]
    pub(super) unsafe fn insert_pipelined_fused(&mut self, hashes: impl Iterator<Item = Hashed>) {
        // SAFETY: the caller's contract: the CPU has the features each path's kernel enables,
        // and the words are owned.
        unsafe {
            match self.write {
                Fused::No => self.insert_pipelined_portable(hashes),
                Fused::Salted | Fused::SaltedSeeded => {
                    self.inserts_salted::<8>(hashes.map(|h| h.lo))
                }
                Fused::SaltedWide | Fused::SaltedWideSeeded => {
                    self.inserts_salted_wide(hashes.map(|h| h.lo))
                }
                Fused::Salted256 | Fused::Salted256Seeded => {
                    self.inserts_salted::<4>(hashes.map(|h| h.lo))
                }
                Fused::Sectors => self.inserts_sectors(hashes),
            }
        }
    }

    /// The batched queries of xxh3-64 hashes in salted blocks of `W` words.
    #[target_feature(enable = "avx2")]
    fn queries_salted<const W: usize>(
        &self,
        hashes: impl Iterator<Item = u64>,
        answer: impl FnMut(usize, bool),
    ) {
        let words = self.core.words.as_slice().as_ptr();
        let blocks = self.blocks * (BLOCK_WORDS / W) as u64;
        queries(
            words,
            hashes,
            answer,
            |h| reduce(h, blocks) as usize * W,
            |start, h| {
                // SAFETY: `start` is the first of the `W` words of a block in bounds
                // (`reduce(h, b) < b` of the `b · W = blocks · BLOCK_WORDS` words), borrowed
                // shared.
                let block = unsafe { &*words.add(start).cast() };
                x86::check_salted_avx2::<W>(block, Hashed::new(h, 0))
            },
        )
    }

    /// The batched queries of xxh3-64 hashes in 512-bit salted blocks, AVX-512 kernel.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx2,avx512f")]
    unsafe fn queries_salted_wide(
        &self,
        hashes: impl Iterator<Item = u64>,
        answer: impl FnMut(usize, bool),
    ) {
        let words = self.core.words.as_slice().as_ptr();
        let blocks = self.blocks;
        queries(
            words,
            hashes,
            answer,
            |h| reduce(h, blocks) as usize * BLOCK_WORDS,
            |start, h| {
                // SAFETY: as in `queries_salted`.
                let block = unsafe { &*words.add(start).cast() };
                x86::check_salted_avx512(block, Hashed::new(h, 0))
            },
        )
    }

    /// The batched queries of xxh3-128 hashes in the sectors layout.
    #[target_feature(enable = "avx2")]
    fn queries_sectors(
        &self,
        hashes: impl Iterator<Item = Hashed>,
        answer: impl FnMut(usize, bool),
    ) {
        let words = self.core.words.as_slice().as_ptr();
        let blocks = self.blocks;
        queries(
            words,
            hashes,
            answer,
            |h| block_start(h, blocks),
            |start, h| {
                // SAFETY: `block_start` is the first word of an in-bounds block (`block_ptr`).
                let block = unsafe { &*words.add(start).cast() };
                x86::check_sectors_avx2(block, h)
            },
        )
    }

    /// The batched inserts of xxh3-64 hashes in salted blocks of `W` words.
    #[target_feature(enable = "avx2")]
    fn inserts_salted<const W: usize>(&mut self, hashes: impl Iterator<Item = u64>) {
        let words = self.core.words.owned_mut_ptr();
        let blocks = self.blocks * (BLOCK_WORDS / W) as u64;
        let new = inserts(
            words,
            hashes,
            |h| reduce(h, blocks) as usize * W,
            |start, h| {
                // SAFETY: an in-bounds block (as in `queries_salted`) of the words, which are
                // owned and writable (`write` is `Fused::No` on a read-only map) and borrowed
                // exclusively (`&mut self`).
                let block = unsafe { &mut *words.add(start).cast() };
                x86::insert_salted_avx2::<W>(block, Hashed::new(h, 0))
            },
        );
        self.core.items = self.core.items.saturating_add(new);
    }

    /// The batched inserts of xxh3-64 hashes in 512-bit salted blocks, AVX-512 kernel.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx2,avx512f")]
    unsafe fn inserts_salted_wide(&mut self, hashes: impl Iterator<Item = u64>) {
        let words = self.core.words.owned_mut_ptr();
        let blocks = self.blocks;
        let new = inserts(
            words,
            hashes,
            |h| reduce(h, blocks) as usize * BLOCK_WORDS,
            |start, h| {
                // SAFETY: as in `inserts_salted`.
                let block = unsafe { &mut *words.add(start).cast() };
                x86::insert_salted_avx512(block, Hashed::new(h, 0))
            },
        );
        self.core.items = self.core.items.saturating_add(new);
    }

    /// The batched inserts of xxh3-128 hashes in the sectors layout.
    #[target_feature(enable = "avx2")]
    fn inserts_sectors(&mut self, hashes: impl Iterator<Item = Hashed>) {
        let words = self.core.words.owned_mut_ptr();
        let blocks = self.blocks;
        let new = inserts(
            words,
            hashes,
            |h| block_start(h, blocks),
            |start, h| {
                // SAFETY: as in `inserts_salted`, for the block `block_start` names.
                let block = unsafe { &mut *words.add(start).cast() };
                x86::insert_sectors_avx2(block, h)
            },
        );
        self.core.items = self.core.items.saturating_add(new);
    }
}

/// Hint the CPU to fetch the cache line at `p` (any address: a prefetch never faults).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch(p: *const u64) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: a prefetch only hints the cache: it neither faults nor changes memory, whatever
    // the address.
    unsafe { _mm_prefetch(p.cast(), _MM_HINT_T0) };
}

/// The software pipeline of the fused batched queries: for hash `i`, its block's first word
/// (`start_of`) is prefetched, then hash `i - BATCH_AHEAD`, whose block has had time to
/// arrive, is checked (`check`) and answered; then the last ones are drained. `start_of`
/// returns the first word of an in-bounds block of `words`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn queries<H: Copy + Default>(
    words: *const u64,
    hashes: impl Iterator<Item = H>,
    mut answer: impl FnMut(usize, bool),
    start_of: impl Fn(H) -> usize,
    check: impl Fn(usize, H) -> bool,
) {
    let mut pipe = Pipeline::<(usize, H), BATCH_AHEAD>::default();
    let mut i = 0;
    for h in hashes {
        let start = start_of(h);
        prefetch(words.wrapping_add(start));
        if let Some((start, h)) = pipe.push((start, h)) {
            answer(i, check(start, h));
            i += 1;
        }
    }
    for (start, h) in pipe.drain() {
        answer(i, check(start, h));
        i += 1;
    }
}

/// The same pipeline for the fused batched inserts; returns how many inserts set a new bit.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn inserts<H: Copy + Default>(
    words: *mut u64,
    hashes: impl Iterator<Item = H>,
    start_of: impl Fn(H) -> usize,
    insert: impl Fn(usize, H) -> bool,
) -> u64 {
    let mut pipe = Pipeline::<(usize, H), BATCH_AHEAD>::default();
    let mut new = 0;
    for h in hashes {
        let start = start_of(h);
        prefetch(words.wrapping_add(start));
        if let Some((start, h)) = pipe.push((start, h)) {
            new += u64::from(insert(start, h));
        }
    }
    for (start, h) in pipe.drain() {
        new += u64::from(insert(start, h));
    }
    new
}
