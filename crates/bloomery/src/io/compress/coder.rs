//! The binary range coder: a carry-less 32-bit-range encoder and its decoder (the LZMA
//! construction) with a 32-bit fixed-point probability per decision.

use crate::error::{inconsistent, Error, FormatError, Result};

/// Probability scale of the coder: 32-bit fixed point.
pub(super) const PROB_BITS: u32 = 32;
/// The range is renormalised (one byte shifted out) when it drops below this.
pub(super) const TOP: u32 = 1 << 24;

/// The probability of a zero bit as a 32-bit fixed-point number, clamped to `[1, 2^32 - 1]`.
pub(super) fn zero_probability(m: u64, ones: u64) -> u64 {
    let zeros = u128::from(m - ones);
    let p = (zeros << PROB_BITS) / u128::from(m);
    (p as u64).clamp(1, (1u64 << PROB_BITS) - 1)
}

/// The split point of the current range: the sub-range `[0, bound)` codes a zero bit.
/// Always in `[1, range - 1]`, so both symbols stay codable.
#[inline]
pub(super) fn split(range: u32, p0: u64) -> u32 {
    let b = ((u64::from(range) * p0) >> PROB_BITS) as u32;
    b.clamp(1, range - 1)
}

/// Carry-less range encoder (LZMA style): 33-bit `low`, 32-bit `range`, pending 0xFF bytes.
pub(super) struct Encoder {
    pub(super) low: u64,
    pub(super) range: u32,
    pub(super) cache: u8,
    pub(super) cache_size: u64,
    pub(super) out: Vec<u8>,
}

impl Encoder {
    pub(super) fn new(out: Vec<u8>) -> Self {
        Self {
            low: 0,
            range: u32::MAX,
            cache: 0,
            cache_size: 1,
            out,
        }
    }

    pub(super) fn shift_low(&mut self) {
        if self.low < 0xFF00_0000 || self.low > 0xFFFF_FFFF {
            let carry = (self.low >> 32) as u8;
            let mut byte = self.cache;
            loop {
                self.out.push(byte.wrapping_add(carry));
                byte = 0xFF;
                self.cache_size -= 1;
                if self.cache_size == 0 {
                    break;
                }
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.cache_size += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    #[inline]
    pub(super) fn encode(&mut self, bit: bool, p0: u64) {
        let bound = split(self.range, p0);
        if bit {
            self.low += u64::from(bound);
            self.range -= bound;
        } else {
            self.range = bound;
        }
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        for _ in 0..5 {
            self.shift_low();
        }
        self.out
    }
}

/// The matching decoder; reading past the end of the payload is an error.
pub(super) struct Decoder<'a> {
    pub(super) data: &'a [u8],
    pub(super) pos: usize,
    pub(super) range: u32,
    pub(super) code: u32,
}

pub(super) fn truncated(needed: usize, have: usize) -> Error {
    Error::Format(FormatError::Truncated {
        needed: needed as u64,
        have: have as u64,
    })
}

impl<'a> Decoder<'a> {
    pub(super) fn new(data: &'a [u8]) -> Result<Self> {
        if data.len() < 5 {
            return Err(truncated(5, data.len()));
        }
        if data[0] != 0 {
            return Err(inconsistent(
                "compressed payload must start with a zero byte",
            ));
        }
        let code = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
        // The encoder's range starts at u32::MAX; a code at or above it is impossible. With
        // code < range the invariant holds for every later step, so nothing can overflow.
        if code == u32::MAX {
            return Err(inconsistent(
                "compressed payload starts outside the coding range",
            ));
        }
        Ok(Self {
            data,
            pos: 5,
            range: u32::MAX,
            code,
        })
    }

    #[inline]
    pub(super) fn decode(&mut self, p0: u64) -> Result<bool> {
        let bound = split(self.range, p0);
        let bit = if self.code < bound {
            self.range = bound;
            false
        } else {
            self.code -= bound;
            self.range -= bound;
            true
        };
        while self.range < TOP {
            let Some(&b) = self.data.get(self.pos) else {
                return Err(truncated(self.pos + 1, self.data.len()));
            };
            self.pos += 1;
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(b);
        }
        Ok(bit)
    }
}
