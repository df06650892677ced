//! The state the bit-array filters share ([`Core`]): their words, hasher and counts, and the
//! operations on them that do not depend on how a filter maps keys to bits (union,
//! intersection, damaged ranges, the common header fields).

use std::ops::Range;

use crate::error::{invalid, Error, Incompatibility, Result};
use crate::hash::KeyHasher;
use crate::io::format::Header;
use crate::store::{self, Words};

/// State shared by the bit-array filters: the words, the hasher and the counters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Core {
    pub words: Words,
    pub hasher: KeyHasher,
    pub items: u64,
    pub capacity: u64,
    pub target_fpr: f64,
}

impl Core {
    pub fn new(words: usize, hasher: KeyHasher, limit: u64) -> Result<Self> {
        Ok(Self {
            words: Words::zeroed(words, limit)?,
            hasher,
            items: 0,
            capacity: 0,
            target_fpr: 0.0,
        })
    }

    /// Fill the common header fields.
    pub fn header(&self, kind: crate::io::format::Kind, params: Vec<u8>) -> Header {
        let mut h = Header::new(kind, self.hasher);
        h.items = self.items;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = params;
        h
    }

    /// Restore from a decoded header.
    pub fn from_header(h: &Header, words: Words) -> Self {
        Self {
            words,
            hasher: h.hasher,
            items: h.items,
            capacity: h.capacity,
            target_fpr: h.target_fpr,
        }
    }

    /// Check that two filters can be merged: same hasher (shape is checked by the caller).
    pub fn check_hasher(&self, other: &Core) -> Result<()> {
        if self.hasher != other.hasher {
            return Err(Error::Incompatible(Incompatibility::Hashing));
        }
        Ok(())
    }

    pub fn union(&mut self, other: &Core) -> Result<()> {
        self.check_hasher(other)?;
        store::or_assign(self.words.as_mut_slice(), other.words.as_slice());
        // Items of a union are unknown; the larger side is a lower bound. Callers that want
        // the true figure use `estimated_len`.
        self.items = self.items.max(other.items);
        Ok(())
    }

    /// AND `other` into this core. The items become the inner-product estimate of
    /// `|A ∩ B|` (Broder & Mitzenmacher §2.4) for a filter of `m` bits and `k` bits per key,
    /// taken before the AND: the smaller side's count would only bound it. When an input is
    /// full the estimate is undefined and the smaller count, an upper bound, is kept.
    pub fn intersect(&mut self, other: &Core, m: u64, k: u32) -> Result<()> {
        self.check_hasher(other)?;
        let (a, b) = (self.words.as_slice(), other.words.as_slice());
        let est = crate::params::estimate_intersection(
            m,
            k,
            m.saturating_sub(store::count_ones(a)),
            m.saturating_sub(store::count_ones(b)),
            m.saturating_sub(store::count_and(a, b)),
        );
        store::and_assign(self.words.as_mut_slice(), other.words.as_slice());
        let bound = self.items.min(other.items);
        self.items = if est.is_finite() {
            (est.round() as u64).min(bound)
        } else {
            bound
        };
        Ok(())
    }

    /// Set every bit of the byte range `range` of the payload to one (Salman §3): a damaged
    /// region then answers "maybe" for every key that maps there, so no inserted key is lost.
    pub fn mark_damaged(&mut self, range: Range<u64>) -> Result<()> {
        let bytes = self.words.len() as u64 * 8;
        if range.start > range.end || range.end > bytes {
            return Err(invalid(
                "range",
                format!("{range:?} is outside the {bytes}-byte bit array"),
            ));
        }
        let words = self.words.as_mut_slice();
        for b in range {
            words[(b / 8) as usize] |= 0xFFu64 << ((b % 8) * 8);
        }
        Ok(())
    }
}
