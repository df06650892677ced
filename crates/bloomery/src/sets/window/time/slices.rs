//! The time window's ring: one slice, and how the ring grows, ages and retires slices.

use super::{TimeWindowFilter, MAX_SCALE, MAX_SLICES};
use crate::error::Result;
use crate::hash::Hashed;
use crate::store::{self, Words};

/// One slice: `bits` bits, the time of its last insertion, and what it took.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Slice {
    pub words: Words,
    pub bits: u64,
    /// `bits = base_bits << scale`; its generation takes `base_generation << scale`.
    pub scale: u8,
    /// Its number among the slices ever made: picks its hash index.
    pub serial: u64,
    /// Insertions it took (those of up to `k` generations).
    pub load: u64,
    /// Insertions of the generation it began (while newest).
    pub generation_count: u64,
    /// Time of its last insertion (meaningless while `load` is 0).
    pub last: u64,
    /// When its generation began.
    pub start: u64,
}

impl Slice {
    /// The hash index of a slice: consecutive slices differ for any 128 of them in a row.
    #[inline]
    fn index(&self) -> u64 {
        self.serial % 128
    }

    /// True when it holds keys and all of them are more than `window` ticks older than `now`.
    #[inline]
    pub fn expired(&self, now: u64, window: u64) -> bool {
        self.load > 0 && now.saturating_sub(self.last) > window
    }

    #[inline]
    pub fn insert(&mut self, h: Hashed, now: u64) -> bool {
        let bit = super::super::slice_bit(h, self.index(), self.bits);
        let new = store::set_bit(self.words.as_mut_slice(), bit);
        self.load = self.load.saturating_add(1);
        self.last = self.last.max(now);
        new
    }

    #[inline]
    pub fn contains(&self, h: Hashed) -> bool {
        store::get_bit(
            self.words.as_slice(),
            super::super::slice_bit(h, self.index(), self.bits),
        )
    }

    /// Its expected fill from its insertions, `1 - (1 - 1/m)^load`.
    pub fn model_fill(&self) -> f64 {
        let m = self.bits as f64;
        1.0 - (self.load as f64 * (-1.0 / m).ln_1p()).exp()
    }

    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    fn empty(&mut self) {
        self.words.as_mut_slice().fill(0);
        self.load = 0;
        self.generation_count = 0;
    }
}

/// Words of a slice of `bits` bits.
pub(crate) fn words_for(bits: u64) -> Option<usize> {
    usize::try_from(bits.div_ceil(64)).ok()
}

impl TimeWindowFilter {
    /// Bytes of a slice of scale `scale`.
    pub(super) fn slice_bytes(&self, scale: u8) -> u64 {
        (self.base_bits << scale).div_ceil(64) * 8
    }

    /// A new, empty slice of `scale`, numbered next, its generation beginning at `start`.
    pub(super) fn new_slice(&mut self, scale: u8, start: u64) -> Result<Slice> {
        let bits = self.base_bits << scale;
        let words = Words::zeroed(
            words_for(bits).ok_or_else(|| crate::error::invalid("bits", "too large"))?,
            self.limit,
        )?;
        let s = Slice {
            words,
            bits,
            scale,
            serial: self.serial,
            load: 0,
            generation_count: 0,
            last: 0,
            start,
        };
        self.serial = self.serial.wrapping_add(1);
        Ok(s)
    }

    /// The scale of the next generation: the smallest whose `l + 2` generations hold the
    /// insertions of the generations begun in the last window at `at` (the rate).
    fn next_scale(&self, at: u64) -> u8 {
        let recent = self.recent_insertions(at);
        let per_window = self
            .capacity
            .saturating_add(self.base_generation.saturating_mul(2));
        let mut s = 0u8;
        while s < MAX_SCALE && per_window.saturating_mul(1 << s) < recent {
            s += 1;
        }
        s
    }

    /// End the generation at time `at`: a new newest slice, sized for the rate of the last
    /// window, within the memory limit (a smaller slice first; the oldest slices retired
    /// early only when even a slice of scale 0 does not fit).
    pub(super) fn shift(&mut self, at: u64) {
        let want = self.next_scale(at);
        let used = self.bytes();
        let fits = |f: &Self, s: u8, used: u64| used.saturating_add(f.slice_bytes(s)) <= f.limit;
        let scale = (0..=want).rev().find(|&s| fits(self, s, used));
        let scale = match scale {
            Some(s) => s,
            None => {
                while self.ring.len() >= self.k as usize && !fits(self, 0, self.bytes()) {
                    if let Some(old) = self.ring.pop_back() {
                        if !old.expired(at, self.window) && old.load > 0 {
                            self.forgotten_early += 1;
                        }
                    }
                }
                0
            }
        };
        let s = match self.new_slice(scale, at) {
            Ok(s) => s,
            // the limit was checked above; an allocation refused all the same reuses the
            // oldest slice (its keys forgotten early)
            Err(_) => {
                let Some(mut old) = self.ring.pop_back() else {
                    // nothing to reuse: the generation goes on
                    return;
                };
                if !old.expired(at, self.window) && old.load > 0 {
                    self.forgotten_early += 1;
                }
                old.empty();
                old.start = at;
                old.serial = self.serial;
                self.serial = self.serial.wrapping_add(1);
                old
            }
        };
        // a ring never holds more slices than a file may declare
        while self.ring.len() >= MAX_SLICES {
            if let Some(old) = self.ring.pop_back() {
                if !old.expired(at, self.window) && old.load > 0 {
                    self.forgotten_early += 1;
                }
            }
        }
        self.ring.push_front(s);
        self.generation_start = at;
        self.expire(at);
    }

    /// Retire the slices that left the window at `now`: from the old end while more than `k`
    /// remain (O(1) each), and empty those of the `k` newest (which take insertions) whose keys
    /// all left it, after an idle gap.
    pub(super) fn expire(&mut self, now: u64) {
        let k = self.k as usize;
        while self.ring.len() > k {
            let back = self.ring.back().expect("more than k slices");
            if back.load == 0 || back.expired(now, self.window) {
                self.ring.pop_back();
            } else {
                break;
            }
        }
        for j in (0..k.min(self.ring.len())).rev() {
            if self.ring[j].expired(now, self.window) {
                self.ring[j].empty();
            } else {
                break;
            }
        }
    }

    /// Every slice retired: `k` empty slices of scale 0, a generation starting at `now`.
    pub(super) fn reset(&mut self, now: u64) {
        for s in self.ring.iter_mut() {
            if s.scale == 0 {
                s.empty();
                s.start = now;
            }
        }
        self.ring.retain(|s| s.scale == 0);
        self.ring.truncate(self.k as usize);
        while self.ring.len() < self.k as usize {
            match self.new_slice(0, now) {
                Ok(s) => self.ring.push_back(s),
                Err(_) => break,
            }
        }
        self.generation_start = now;
    }
}
