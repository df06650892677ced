//! A **prototype**, for measurement only, of the fastest multi-layer URL filter (Cen, Xu & Sun) that
//! keeps the paper's structure: the protocol dropped, split on `/`, layer i holding segment
//! `a_i`, layer L+1 holding the XOR of the per-layer positions (Fig. 3 and 4). It is not a file
//! format and not part of the library; docs/BENCHMARKS.md ("Structured keys") uses
//! it to show what a "within 1.5× of the classic filter" target would take.
//!
//! Differences from `bloomery::MultiLayerBloomFilter` (kind `mlbf`):
//! - each layer is **blocked**: a segment's k bits lie in one 512-bit block (one cache line)
//!   of its layer: block `⌊lo·B/2⁶⁴⌋`, positions the 9-bit slices of `hi` (the blocked
//!   filter's positions mapping), so a URL touches L+1 lines instead of k·(L+1);
//! - the XOR layer holds the key `(⊕ lo_i, ⊕ hi_i)` with the same mapping: its block is the
//!   XOR of the layers' block hash values reduced into `[0, B)`, its in-block positions are
//!   exactly the XOR of the layers' in-block positions (a 9-bit slice of a XOR is the XOR of
//!   the slices); per layer the rate is the blocked filter's, so eq. 4 becomes `f_b^L`;
//! - the L+1 arrays are one contiguous, 64-byte-aligned allocation.
//!
//! Normalising and hashing are the library's ([`MultiLayerBloomFilter::hash_url_into`]: the
//! same layer values and the same xxh3-128 hashes as kind `mlbf`).

use bloomery::hashing::reduce;
use bloomery::{Hashed, MultiLayerBloomFilter};

/// One 512-bit block, aligned to a cache line.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Block([u64; 8]);

/// Largest L the prototype takes (its hashes live in a fixed stack array).
pub const MAX_L: usize = 8;

/// Set the k bits of `hi` in `b` (k = `K` ≤ 7); true if one was new.
#[inline(always)]
fn set<const K: u32>(b: &mut Block, hi: u64) -> bool {
    let mut all = u64::MAX;
    let mut x = hi;
    for _ in 0..K {
        let p = (x & 511) as usize;
        let w = &mut b.0[p >> 6];
        all &= *w >> (p & 63);
        *w |= 1 << (p & 63);
        x >>= 9;
    }
    all & 1 == 0
}

/// True if the k bits of `hi` are all set in `b`.
#[inline(always)]
fn test<const K: u32>(b: &Block, hi: u64) -> bool {
    let mut all = u64::MAX;
    let mut x = hi;
    for _ in 0..K {
        let p = (x & 511) as usize;
        all &= b.0[p >> 6] >> (p & 63);
        x >>= 9;
    }
    all & 1 == 1
}

#[inline(always)]
fn prefetch(b: &Block) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the pointer is to a live block; a prefetch never faults or changes memory, it
    // only hints the cache.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(b.0.as_ptr() as *const i8, _MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}

/// The prototype (see the module docs); `K` bits per segment.
pub struct BlockedMlbf<const K: u32> {
    /// Normalises and hashes URLs (an `mlbf` of the same L and hasher; its bits are unused).
    hashing: MultiLayerBloomFilter,
    layers: usize,
    blocks: u64,
    /// Layer j's block b is `arrays[j·blocks + b]`; layer L is the XOR layer.
    arrays: Vec<Block>,
}

impl<const K: u32> BlockedMlbf<K> {
    /// L layers of `blocks` blocks each (plus the XOR layer).
    pub fn new(layers: u32, blocks: u64) -> Self {
        assert!((1..=MAX_L as u32).contains(&layers) && (1..=7).contains(&K));
        Self {
            hashing: MultiLayerBloomFilter::try_with_shape(layers, 64, 1).expect("hashing"),
            layers: layers as usize,
            blocks,
            arrays: vec![Block::default(); (layers as usize + 1) * blocks as usize],
        }
    }

    /// Bytes of the L+1 arrays.
    pub fn bytes(&self) -> usize {
        self.arrays.len() * 64
    }

    /// Normalise and hash `url` into `hs` (the library's path); L, or `None` if invalid.
    #[inline(always)]
    pub fn hash(&self, url: &str, hs: &mut [Hashed; MAX_L]) -> Option<usize> {
        self.hashing.hash_url_into(url, hs).ok()
    }

    /// The L+1 (array index, in-block key) pairs of a URL's hashes: the layers', then the
    /// XOR layer's.
    #[inline(always)]
    pub fn slots(&self, hs: &[Hashed], out: &mut [(usize, u64); MAX_L + 1]) {
        let b = self.blocks;
        let (mut lo, mut hi) = (0u64, 0u64);
        for (j, h) in hs.iter().enumerate() {
            out[j] = (j * b as usize + reduce(h.lo, b) as usize, h.hi);
            lo ^= h.lo;
            hi ^= h.hi;
        }
        out[hs.len()] = (hs.len() * b as usize + reduce(lo, b) as usize, hi);
    }

    /// Set a URL's bits from its [`slots`](Self::slots); true if one was new.
    #[inline(always)]
    pub fn insert_slots(&mut self, slots: &[(usize, u64)]) -> bool {
        for &(i, _) in slots {
            prefetch(&self.arrays[i]);
        }
        let mut new = false;
        for &(i, hi) in slots {
            new |= set::<K>(&mut self.arrays[i], hi);
        }
        new
    }

    /// Fig. 4 on a URL's [`slots`](Self::slots): the XOR layer (last slot) first, then the
    /// layers last to first, their lines prefetched only once the XOR layer has passed.
    #[inline(always)]
    pub fn contains_slots(&self, slots: &[(usize, u64)]) -> bool {
        let Some((&(xi, xhi), layers)) = slots.split_last() else {
            return false;
        };
        if !test::<K>(&self.arrays[xi], xhi) {
            return false;
        }
        for &(i, _) in layers {
            prefetch(&self.arrays[i]);
        }
        layers
            .iter()
            .rev()
            .all(|&(i, hi)| test::<K>(&self.arrays[i], hi))
    }

    /// Insert a URL (Fig. 3); `None` if it is not a valid URL.
    #[inline]
    pub fn insert(&mut self, url: &str) -> Option<bool> {
        let mut hs = [Hashed::default(); MAX_L];
        let l = self.hash(url, &mut hs)?;
        let mut slots = [(0, 0); MAX_L + 1];
        self.slots(&hs[..l], &mut slots);
        Some(self.insert_slots(&slots[..=self.layers]))
    }

    /// Query a URL (Fig. 4); `None` if it is not a valid URL.
    #[inline]
    pub fn contains(&self, url: &str) -> Option<bool> {
        let mut hs = [Hashed::default(); MAX_L];
        let l = self.hash(url, &mut hs)?;
        let mut slots = [(0, 0); MAX_L + 1];
        self.slots(&hs[..l], &mut slots);
        Some(self.contains_slots(&slots[..=self.layers]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_xor_layer_rejects_recombined_segments() {
        let mut f = BlockedMlbf::<3>::new(3, 1 << 10);
        let urls: Vec<String> = (0..2000)
            .map(|i| format!("https://h{}.org/u{}/r{i}", i % 7, i % 13))
            .collect();
        for u in &urls {
            f.insert(u).expect("valid");
        }
        assert!(urls.iter().all(|u| f.contains(u) == Some(true)));
        let mut g = BlockedMlbf::<3>::new(3, 1 << 12);
        g.insert("a.com/x/1");
        g.insert("b.com/y/2");
        assert_eq!(g.contains("a.com/y/1"), Some(false));
        assert_eq!(g.contains("HTTPS://A.COM/x/1/"), Some(true));
    }
}
