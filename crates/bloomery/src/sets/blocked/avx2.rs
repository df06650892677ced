//! The fused AVX2 single-key paths of the sectors and salted layouts (hash, block choice and
//! update in one function), chosen once per filter. The block kernels themselves are
//! `block::x86`'s.

use super::*;

/// The fused single-key paths of the sectors and salted layouts (see [`sectors_simd`]):
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

    /// The key's hash as the fused path of this filter's layout needs it: xxh3-128 for the
    /// sectors layout, the xxh3-64 low half alone for the salted one.
    #[inline(always)]
    fn hash_fused<K: Key + ?Sized>(&self, key: &K) -> Hashed {
        if self.layout == BlockLayout::Salted {
            Hashed::new(self.core.hasher.hash64_xxh3(key), 0)
        } else {
            self.core.hasher.hash_xxh3(key)
        }
    }

    /// The fused kernel's query of `h` in `block`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn check_fused(&self, block: &Block, h: Hashed) -> bool {
        if self.layout == BlockLayout::Salted {
            x86::check_salted_avx2(block, h)
        } else {
            x86::check_sectors_avx2(block, h)
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn insert_avx2<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        debug_assert!(!self.core.words.is_mapped());
        let words = self.core.words.owned_mut_ptr();
        let new = if self.layout == BlockLayout::Salted {
            let h = Hashed::new(self.core.hasher.hash64_xxh3(key), 0);
            // SAFETY: an in-bounds block of the words (`block_ptr`), which are owned and
            // writable (`simd_write` is false while they are a read-only map: `decode_from`),
            // and `&mut self` excludes every other reference to them.
            x86::insert_salted_avx2(unsafe { &mut *self.block_ptr(words, h).cast_mut() }, h)
        } else {
            let h = self.core.hasher.hash_xxh3(key);
            // SAFETY: as above.
            x86::insert_sectors_avx2(unsafe { &mut *self.block_ptr(words, h).cast_mut() }, h)
        };
        self.core.items = self.core.items.saturating_add(u64::from(new));
        new
    }

    /// One test of the layout, then the whole query of that layout (hash, block, kernel).
    #[target_feature(enable = "avx2")]
    pub(super) fn contains_avx2<K: Key + ?Sized>(&self, key: &K) -> bool {
        let words = self.core.words.as_slice().as_ptr();
        if self.layout == BlockLayout::Salted {
            let h = Hashed::new(self.core.hasher.hash64_xxh3(key), 0);
            // SAFETY: an in-bounds block of the words (`block_ptr`), borrowed shared.
            x86::check_salted_avx2(unsafe { &*self.block_ptr(words, h) }, h)
        } else {
            let h = self.core.hasher.hash_xxh3(key);
            // SAFETY: as above.
            x86::check_sectors_avx2(unsafe { &*self.block_ptr(words, h) }, h)
        }
    }

    /// Insert a pre-hashed key on the fused path (requires `simd_write`); true if a bit was new.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn insert_hashed_avx2(&mut self, h: Hashed) -> bool {
        debug_assert!(!self.core.words.is_mapped());
        let words = self.core.words.owned_mut_ptr();
        let p = self.block_ptr(words, h).cast_mut();
        // SAFETY: `p` is an in-bounds block of the words (`block_ptr`), which are owned and
        // writable (`simd_write` is false while they are a read-only map: `decode_from`), and
        // `&mut self` excludes every other reference to them.
        let block = unsafe { &mut *p };
        let new = if self.layout == BlockLayout::Salted {
            x86::insert_salted_avx2(block, h)
        } else {
            x86::insert_sectors_avx2(block, h)
        };
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
            |words, h| {
                let p = self.block_ptr(words.as_ptr(), h);
                // SAFETY: an in-bounds block of the words (`block_ptr`), borrowed shared; the
                // CPU has AVX2 (this function's requirement).
                self.check_fused(unsafe { &*p }, h)
            },
        );
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn pipeline_avx2<K: Key>(&self, keys: &[K], answer: impl FnMut(usize, bool)) {
        self.pipeline_with(
            keys,
            answer,
            |k| self.hash_fused(k),
            |words, h| {
                let p = self.block_ptr(words.as_ptr(), h);
                // SAFETY: an in-bounds block of the words (`block_ptr`), borrowed shared; the
                // CPU has AVX2 (this function's requirement).
                self.check_fused(unsafe { &*p }, h)
            },
        );
    }
}
