//! The portable kernels: the reference every instruction-set kernel is tested against.

use super::{for_each_pos, salted_pos, sector_shift, Block};
use crate::hash::Hashed;

/// True if all of the key's k positions are set.
///
/// Written as an AND of `word >> p` (bit 0 of the result is the answer) rather than a mask
/// test: with BMI2 each position is then a shift, a load-and-shift (`shrx` with a memory
/// operand) and an AND, which keeps a single query short enough for the CPU to overlap the
/// cache misses of several consecutive queries.
#[inline(always)]
pub(super) fn check_positions(block: &Block, h: Hashed, k: u32) -> bool {
    let mut all = u64::MAX;
    for_each_pos(h, k, |p| all &= block.0[p >> 6] >> (p & 63));
    all & 1 == 1
}

/// Set the key's k positions; true if any of them was zero.
#[inline(always)]
pub(super) fn insert_positions(block: &mut Block, h: Hashed, k: u32) -> bool {
    let mut all = u64::MAX;
    for_each_pos(h, k, |p| {
        let w = &mut block.0[p >> 6];
        all &= *w >> (p & 63);
        *w |= 1u64 << (p & 63);
    });
    all & 1 == 0
}

/// True if all eight sector bits of the key are set.
#[inline(always)]
pub(super) fn check_sectors(block: &Block, h: Hashed) -> bool {
    let mut all = u64::MAX;
    for (j, w) in block.0.iter().enumerate() {
        all &= w >> sector_shift(h, j);
    }
    all & 1 == 1
}

/// Set the key's eight sector bits; true if any was zero.
#[inline(always)]
pub(super) fn insert_sectors(block: &mut Block, h: Hashed) -> bool {
    let mut all = u64::MAX;
    for (j, w) in block.0.iter_mut().enumerate() {
        let s = sector_shift(h, j);
        all &= *w >> s;
        *w |= 1u64 << s;
    }
    all & 1 == 0
}

/// True if all eight salted bits of the key are set in a salted block of `W` words (8: the
/// 512-bit block, 4: the 256-bit one).
#[inline(always)]
pub(super) fn check_salted<const W: usize>(block: &[u64; W], h: Hashed) -> bool {
    let mut all = u64::MAX;
    for j in 0..8 {
        let p = salted_pos::<W>(h, j);
        all &= block[p >> 6] >> (p & 63);
    }
    all & 1 == 1
}

/// Set the key's eight salted bits in a salted block of `W` words; true if any was zero.
#[inline(always)]
pub(super) fn insert_salted<const W: usize>(block: &mut [u64; W], h: Hashed) -> bool {
    let mut all = u64::MAX;
    for j in 0..8 {
        let p = salted_pos::<W>(h, j);
        let w = &mut block[p >> 6];
        all &= *w >> (p & 63);
        *w |= 1u64 << (p & 63);
    }
    all & 1 == 0
}
