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

    /// The key's hash as the fused path of this filter's layout needs it: xxh3-128 for the
    /// sectors layout, the xxh3-64 low half alone for the salted ones.
    #[inline(always)]
    fn hash_fused<K: Key + ?Sized>(&self, key: &K) -> Hashed {
        if self.layout.is_salted() {
            Hashed::new(self.core.hasher.hash64_xxh3(key), 0)
        } else {
            self.core.hasher.hash_xxh3(key)
        }
    }

    /// The fused kernel's query of `h` among `words` (exactly `blocks · BLOCK_WORDS` of them).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn check_fused(&self, words: *const u64, h: Hashed) -> bool {
        match self.layout {
            BlockLayout::Salted => {
                // SAFETY: an in-bounds block of the words (`salted_ptr`), borrowed shared.
                let block = unsafe { &*self.salted_ptr::<8>(words, h) };
                x86::check_salted_avx2(block, h)
            }
            BlockLayout::Salted256 => {
                // SAFETY: as above.
                let block = unsafe { &*self.salted_ptr::<4>(words, h) };
                x86::check_salted_avx2(block, h)
            }
            _ => {
                // SAFETY: an in-bounds block of the words (`block_ptr`), borrowed shared.
                let block = unsafe { &*self.block_ptr(words, h) };
                x86::check_sectors_avx2(block, h)
            }
        }
    }

    /// The fused kernel's insert of `h` among the owned `words` (exactly
    /// `blocks · BLOCK_WORDS` of them); true if a bit was new.
    ///
    /// # Safety
    /// `words` are the filter's own words, owned and writable, with no other reference to
    /// them alive (the caller holds `&mut self`).
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn insert_fused(&self, words: *mut u64, h: Hashed) -> bool {
        match self.layout {
            BlockLayout::Salted => {
                // SAFETY: an in-bounds block of the words (`salted_ptr`), which the caller
                // guarantees are writable and not otherwise borrowed.
                let block = unsafe { &mut *self.salted_ptr::<8>(words, h).cast_mut() };
                x86::insert_salted_avx2(block, h)
            }
            BlockLayout::Salted256 => {
                // SAFETY: as above.
                let block = unsafe { &mut *self.salted_ptr::<4>(words, h).cast_mut() };
                x86::insert_salted_avx2(block, h)
            }
            _ => {
                // SAFETY: an in-bounds block of the words (`block_ptr`), as above.
                let block = unsafe { &mut *self.block_ptr(words, h).cast_mut() };
                x86::insert_sectors_avx2(block, h)
            }
        }
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

    /// Insert a pre-hashed key on the fused path (requires a fused `write`); true if a bit was
    /// new.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn insert_hashed_avx2(&mut self, h: Hashed) -> bool {
        debug_assert!(!self.core.words.is_mapped());
        let words = self.core.words.owned_mut_ptr();
        // SAFETY: as in `insert_avx2`.
        let new = unsafe { self.insert_fused(words, h) };
        self.core.items = self.core.items.saturating_add(u64::from(new));
        new
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn insert_pipelined_avx2(&mut self, hashes: impl IntoIterator<Item = Hashed>) {
        // the closure inherits this function's AVX2, which `insert_hashed_avx2` needs
        self.insert_pipelined_with(hashes, |f, h| {
            f.insert_hashed_avx2(h);
        });
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn pipeline_hashed_avx2(&self, hashes: &[Hashed], answer: impl FnMut(usize, bool)) {
        self.pipeline_with(
            hashes,
            answer,
            |h| *h,
            |words, h| self.check_fused(words.as_ptr(), h),
        );
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn pipeline_avx2<K: Key>(&self, keys: &[K], answer: impl FnMut(usize, bool)) {
        self.pipeline_with(
            keys,
            answer,
            |k| self.hash_fused(k),
            |words, h| self.check_fused(words.as_ptr(), h),
        );
    }
}
