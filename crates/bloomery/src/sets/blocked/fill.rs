//! The fill figures of a blocked filter — bits set and the rate of the current contents —
//! counted in one pass over the words, a piece at a time, so a pass over a big file (the
//! checksum's, or one that drops the pages behind it) can count them as it goes.

use super::{BlockLayout, BlockedBloomFilter, BLOCK_BITS, BLOCK_WORDS, HALF_WORDS};
use crate::dispatch::SetStats;
use crate::filter::Stats;

/// Running totals of a pass over a blocked filter's blocks, in block order. The figures do
/// not depend on how the pass is cut into pieces: the rate is summed block by block, in order.
#[derive(Debug, Clone)]
pub(crate) struct FillPass {
    /// The next block to count.
    next: u64,
    ones: u64,
    /// Positions layout: the sum over blocks of `(c / 512)^k`, `c` the block's bits set.
    fpr_sum: f64,
    /// Sectors and salted layouts: the sum over blocks of `Π_j c_j`, `c_j` the bits set in
    /// word `j`; each product is below 64^8 = 2^48 and the sum is exact, so the rate is
    /// `sum / 2^48 / blocks` whatever the order of the blocks. Salted-256 layout: the same
    /// over its 256-bit blocks (two per line) with `c_j` the bits set in 32-bit lane `j`, each
    /// product below 32^8 = 2^40: the rate is `sum / 2^40 / (2 · lines)`.
    sector_sum: u128,
    /// Positions layout: `(c / 512)^k` for `c` bits set in a block.
    table: Vec<f64>,
}

impl FillPass {
    pub(crate) fn new(f: &BlockedBloomFilter) -> Self {
        let table = match f.layout {
            BlockLayout::Positions => (0..=BLOCK_BITS)
                .map(|c| (c as f64 / BLOCK_BITS as f64).powi(f.k as i32))
                .collect(),
            BlockLayout::Sectors | BlockLayout::Salted | BlockLayout::Salted256 => Vec::new(),
        };
        Self {
            next: 0,
            ones: 0,
            fpr_sum: 0.0,
            sector_sum: 0,
            table,
        }
    }

    /// Count every block that ends within the first `bytes` bytes of the words.
    pub(crate) fn advance(&mut self, f: &BlockedBloomFilter, bytes: u64) {
        let end = (bytes / (BLOCK_WORDS as u64 * 8)).min(f.blocks);
        if end <= self.next {
            return;
        }
        let words = &f.as_words()[self.next as usize * BLOCK_WORDS..end as usize * BLOCK_WORDS];
        #[cfg(target_arch = "x86_64")]
        if crate::simd::avx2() {
            // SAFETY: `avx2()` is true only on a CPU with AVX2, the only feature `count_avx2`
            // enables.
            unsafe { self.count_avx2(words, f.layout) };
            self.next = end;
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::simd::popcnt() {
            // SAFETY: `popcnt()` is true only on a CPU with the POPCNT instruction, the only
            // feature `count_popcnt` enables.
            unsafe { self.count_popcnt(words, f.layout) };
            self.next = end;
            return;
        }
        self.count(words, f.layout);
        self.next = end;
    }

    /// Count `words`, the next whole blocks of the pass held outside a filter (a piece of a
    /// result streamed into a file, about to be written); [`finish`](Self::finish) then takes
    /// a filter of the result's shape for the figures that need no words.
    pub(crate) fn advance_words(&mut self, layout: BlockLayout, words: &[u64]) {
        let words = &words[..words.len() / BLOCK_WORDS * BLOCK_WORDS];
        #[cfg(target_arch = "x86_64")]
        if crate::simd::avx2() {
            // SAFETY: `avx2()` is true only on a CPU with AVX2, the only feature `count_avx2`
            // enables.
            unsafe { self.count_avx2(words, layout) };
        } else if crate::simd::popcnt() {
            // SAFETY: `popcnt()` is true only on a CPU with the POPCNT instruction, the only
            // feature `count_popcnt` enables.
            unsafe { self.count_popcnt(words, layout) };
        } else {
            self.count(words, layout);
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.count(words, layout);
        self.next += (words.len() / BLOCK_WORDS) as u64;
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    unsafe fn count_popcnt(&mut self, words: &[u64], layout: BlockLayout) {
        self.count(words, layout)
    }

    #[inline(always)]
    fn count(&mut self, words: &[u64], layout: BlockLayout) {
        let mut ones = self.ones;
        match layout {
            BlockLayout::Positions => {
                let t = &self.table[..];
                let mut sum = self.fpr_sum;
                for b in words.chunks_exact(BLOCK_WORDS) {
                    let c: u32 = b.iter().map(|w| w.count_ones()).sum();
                    ones += u64::from(c);
                    sum += t[c as usize];
                }
                self.fpr_sum = sum;
            }
            BlockLayout::Sectors | BlockLayout::Salted => {
                // products summed in u64 a run of blocks at a time (2^15 blocks of at most
                // 2^48 each stay below 2^63), then into the u128 total
                let mut total = self.sector_sum;
                for run in words.chunks(BLOCK_WORDS << 15) {
                    let mut sum = 0u64;
                    for b in run.chunks_exact(BLOCK_WORDS) {
                        let c: [u64; BLOCK_WORDS] =
                            std::array::from_fn(|j| u64::from(b[j].count_ones()));
                        ones += c.iter().sum::<u64>();
                        sum += (c[0] * c[1]) * (c[2] * c[3]) * ((c[4] * c[5]) * (c[6] * c[7]));
                    }
                    total += u128::from(sum);
                }
                self.sector_sum = total;
            }
            BlockLayout::Salted256 => {
                // two products of eight lane counts per line, each below 2^40: 2^15 lines
                // stay below 2^56 in u64
                let mut total = self.sector_sum;
                for run in words.chunks(BLOCK_WORDS << 15) {
                    let mut sum = 0u64;
                    for b in run.chunks_exact(HALF_WORDS) {
                        let c: [u64; 8] = std::array::from_fn(|j| {
                            u64::from(((b[j / 2] >> (32 * (j % 2))) as u32).count_ones())
                        });
                        ones += c.iter().sum::<u64>();
                        sum += (c[0] * c[1]) * (c[2] * c[3]) * ((c[4] * c[5]) * (c[6] * c[7]));
                    }
                    total += u128::from(sum);
                }
                self.sector_sum = total;
            }
        }
        self.ones = ones;
    }

    /// [`count`](Self::count) with AVX2: the bits of each word counted by nibble lookups
    /// (`vpshufb`, `vpsadbw`), a sectors block's product of eight counts by three lane-wise
    /// multiplies. The same totals as the portable code, exactly (integers, and the positions
    /// rate summed in the same order).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn count_avx2(&mut self, words: &[u64], layout: BlockLayout) {
        use std::arch::x86_64::*;
        let lookup = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        );
        let low = _mm256_set1_epi8(0x0f);
        let zero = _mm256_setzero_si256();
        // the bits set in each of the four words of `v`, one per 64-bit lane (a macro, not a
        // closure, so it is compiled with this function's features)
        macro_rules! counts {
            ($v:expr) => {{
                let v = $v;
                let lo = _mm256_and_si256(v, low);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
                let c = _mm256_add_epi8(
                    _mm256_shuffle_epi8(lookup, lo),
                    _mm256_shuffle_epi8(lookup, hi),
                );
                _mm256_sad_epu8(c, zero)
            }};
        }
        let lanes = |v: __m256i| -> [u64; 4] {
            // SAFETY: `__m256i` and `[u64; 4]` are both 32 plain bytes.
            unsafe { std::mem::transmute::<__m256i, [u64; 4]>(v) }
        };
        match layout {
            BlockLayout::Positions => {
                let t = &self.table[..];
                let (mut ones, mut sum) = (self.ones, self.fpr_sum);
                for b in words.chunks_exact(BLOCK_WORDS) {
                    // SAFETY: `b` is 8 words, two unaligned 32-byte loads.
                    let (x, y) = unsafe {
                        (
                            _mm256_loadu_si256(b.as_ptr().cast()),
                            _mm256_loadu_si256(b.as_ptr().add(4).cast()),
                        )
                    };
                    let s4 = _mm256_add_epi64(counts!(x), counts!(y));
                    let s2 = _mm_add_epi64(
                        _mm256_castsi256_si128(s4),
                        _mm256_extracti128_si256::<1>(s4),
                    );
                    let c = (_mm_cvtsi128_si64(s2) + _mm_extract_epi64::<1>(s2)) as u64;
                    ones += c;
                    sum += t[c as usize];
                }
                (self.ones, self.fpr_sum) = (ones, sum);
            }
            BlockLayout::Sectors | BlockLayout::Salted => {
                let mut ones = _mm256_setzero_si256();
                let mut total = self.sector_sum;
                for run in words.chunks(BLOCK_WORDS << 15) {
                    let mut sum = _mm256_setzero_si256();
                    for b in run.chunks_exact(BLOCK_WORDS) {
                        // SAFETY: `b` is 8 words, two unaligned 32-byte loads.
                        let (x, y) = unsafe {
                            (
                                _mm256_loadu_si256(b.as_ptr().cast()),
                                _mm256_loadu_si256(b.as_ptr().add(4).cast()),
                            )
                        };
                        let (a, c) = (counts!(x), counts!(y));
                        ones = _mm256_add_epi64(ones, _mm256_add_epi64(a, c));
                        // lanes: c0c4, c1c5, c2c6, c3c7 (< 2^12)
                        let p = _mm256_mul_epu32(a, c);
                        // lane 0: c0c4c2c6, lane 1: c1c5c3c7 (< 2^24)
                        let q = _mm256_mul_epu32(p, _mm256_permute4x64_epi64::<0b01_00_11_10>(p));
                        // lane 0: the product of the eight (< 2^48)
                        let r = _mm256_mul_epu32(q, _mm256_shuffle_epi32::<0b01_00_11_10>(q));
                        sum = _mm256_add_epi64(sum, r);
                    }
                    total += u128::from(lanes(sum)[0]);
                }
                self.sector_sum = total;
                self.ones += lanes(ones).iter().sum::<u64>();
            }
            // counted by lanes of 32 bits: the portable loop (compiled here with AVX2)
            BlockLayout::Salted256 => self.count(words, layout),
        }
    }

    /// The figures, once every block is counted (any left are counted now).
    pub(crate) fn finish(mut self, f: &BlockedBloomFilter) -> SetStats {
        self.advance(f, u64::MAX);
        SetStats {
            bits: f.bit_len(),
            hashes: f.k,
            ones: self.ones,
            current_fpr: match f.layout {
                BlockLayout::Positions => self.fpr_sum / f.blocks as f64,
                BlockLayout::Sectors | BlockLayout::Salted => {
                    self.sector_sum as f64 / (1u64 << 48) as f64 / f.blocks as f64
                }
                BlockLayout::Salted256 => {
                    self.sector_sum as f64 / (1u64 << 40) as f64 / (2 * f.blocks) as f64
                }
            },
            capacity: f.capacity(),
            target_fpr: f.target_fpr(),
            estimated_items: crate::params::estimate_items(f.bit_len(), f.k, self.ones),
            sub_filters: 1,
            layers: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sets::blocked::BlockLayout;

    /// Words with every count a word can have (0..=64 bits set), in random blocks.
    fn words(blocks: usize, seed: u64) -> Vec<u64> {
        let mut x = seed;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..blocks * BLOCK_WORDS)
            .map(|i| {
                let r = next();
                match i % 5 {
                    0 => r,
                    1 => !0,
                    2 => r & next() & next(),
                    3 => (1u64 << (r % 64)).wrapping_sub(1) | u64::from(r % 3 == 0) << 63,
                    _ => 0,
                }
            })
            .collect()
    }

    /// A pass with the positions table of k = 7 (the sectors layout does not read it).
    fn pass() -> FillPass {
        FillPass {
            next: 0,
            ones: 0,
            fpr_sum: 0.0,
            sector_sum: 0,
            table: (0..=BLOCK_BITS)
                .map(|c| (c as f64 / BLOCK_BITS as f64).powi(7))
                .collect(),
        }
    }

    /// The rate of the sectors layout, the mean of exact integer products, is the mean of the
    /// floating-point products of `c_j / 64` (the definition) to rounding.
    #[test]
    fn sectors_rate_is_the_mean_of_the_products() {
        // no zero word, so no product is 0
        let w: Vec<u64> = words(2000, 11).into_iter().map(|x| x | 1).collect();
        let mut p = pass();
        p.count(&w, BlockLayout::Sectors);
        let blocks = w.len() / BLOCK_WORDS;
        let direct: f64 = w
            .chunks_exact(BLOCK_WORDS)
            .map(|b| {
                b.iter()
                    .map(|x| f64::from(x.count_ones()) / 64.0)
                    .product::<f64>()
            })
            .sum::<f64>()
            / blocks as f64;
        let ours = p.sector_sum as f64 / (1u64 << 48) as f64 / blocks as f64;
        assert!(direct > 0.0);
        assert!(
            (ours - direct).abs() <= direct * 1e-12,
            "{ours} vs {direct}"
        );
    }

    /// The vector and POPCNT paths give exactly the portable totals, for both layouts, over
    /// blocks with every word count from 0 to 64 (a full sectors block: a product of 2^48).
    #[test]
    fn every_path_counts_the_same() {
        for layout in [BlockLayout::Positions, BlockLayout::Sectors] {
            let w = words(3000, 0x9e37_79b9_7f4a_7c15);
            let mut portable = pass();
            portable.count(&w, layout);
            let expected: u64 = w.iter().map(|x| u64::from(x.count_ones())).sum();
            assert_eq!(portable.ones, expected);
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut v = pass();
                    // SAFETY: the CPU has AVX2 (checked above).
                    unsafe { v.count_avx2(&w, layout) };
                    assert_eq!(
                        (v.ones, v.fpr_sum.to_bits(), v.sector_sum),
                        (
                            portable.ones,
                            portable.fpr_sum.to_bits(),
                            portable.sector_sum
                        ),
                        "{layout:?}"
                    );
                }
                if std::arch::is_x86_feature_detected!("popcnt") {
                    let mut v = pass();
                    // SAFETY: the CPU has POPCNT (checked above).
                    unsafe { v.count_popcnt(&w, layout) };
                    assert_eq!(v.ones, portable.ones);
                    assert_eq!(v.sector_sum, portable.sector_sum);
                }
            }
        }
    }

    /// The totals do not depend on where a pass cuts its pieces.
    #[test]
    fn pieces_do_not_change_the_figures() {
        for layout in [BlockLayout::Positions, BlockLayout::Sectors] {
            let w = words(500, 7);
            let mut whole = pass();
            whole.count(&w, layout);
            let mut cut = pass();
            for piece in w.chunks(BLOCK_WORDS * 37) {
                cut.count(piece, layout);
            }
            assert_eq!(
                (cut.ones, cut.fpr_sum.to_bits(), cut.sector_sum),
                (whole.ones, whole.fpr_sum.to_bits(), whole.sector_sum)
            );
        }
    }
}
