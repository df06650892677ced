//! The time window: [`TimeWindowFilter`], a filter over the items of the last T ticks of the
//! caller's clock (its docs say which paper it follows and when to pick it). `slices.rs` holds
//! the ring of slices and their ageing, `persist.rs` the file form.

use std::collections::VecDeque;

use crate::error::{invalid, Result};
use crate::filter::{Build, Builder};
use crate::hash::{Hashed, Key, KeyHasher};
use crate::params::{self, APBF_MAX_K, APBF_MAX_L};
use crate::store;

mod persist;
mod slices;

use slices::Slice;

/// A time window: it remembers the keys inserted in the last `window` ticks of a clock the
/// caller supplies, and forgets older ones, keeping the false-positive rate under a target
/// while the insert rate varies (Rodrigues, Shtul, Baquero & Almeida, "Time-limited Bloom
/// Filter", 2023: the age-partitioned slices of Shtul et al. with a time stamp each, retired
/// when they fall out of the window).
///
/// Time is an input: every insertion and query takes `now` in the caller's unit (seconds,
/// milliseconds, a record's time stamp); the filter never reads a clock, so the same calls give
/// the same filter, bit for bit (what a replica or a replayed log needs). A `now` earlier than
/// one already seen is taken as the latest one seen.
///
/// Like the count window ([`AgePartitionedBloomFilter`](crate::AgePartitionedBloomFilter)),
/// an insertion sets one bit in each of the `k` newest slices and a query looks for `k`
/// consecutive slices holding the key's bit. A generation ends when it has taken its
/// insertions or when `⌈window / l⌉` ticks have passed (the *period*), whichever comes first;
/// each slice keeps the time of the last insertion it took, and a slice whose last insertion is
/// more than `window` ticks old is retired from the old end of the ring (O(1) per shift; the
/// only other work is zeroing the new slice). The ring has as many slices as the window needs:
/// when a generation fills before its period ends (the rate rose), the next slice is sized for
/// the rate seen over the window, doubling or halving in steps, so memory follows the rate
/// while each slice's fill stays at the design point.
///
/// Promises:
/// - **no false negative** for a key inserted at most `window` ticks before `now` (unless the
///   memory limit, or the most slices a ring holds, 65 536, forced slices out early:
///   [`forgotten_early`](Self::forgotten_early));
/// - a key inserted more than `window + slack()` ticks before `now` answers true only as a
///   key never inserted ([`slack`](Self::slack) is `k` periods);
/// - the rate is at most the target while the ring holds at most
///   [`design_slices`](Self::design_slices) live slices, which a steady rate of any size
///   keeps; [`current_fpr`](Self::current_fpr) is the model at the current point, from each
///   live slice's fill.
///
/// **When to pick it:** "seen in the last 10 minutes?" — fraud and rate-limit checks, stream
/// deduplication by time, crawlers' "seen in the last 7 days" — where the insert rate is not
/// known in advance. For "seen among the last N items" in memory fixed forever, pick the count
/// window.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::TimeWindowFilter;
///
/// // ten minutes, in seconds; sized for 10 000 insertions per window at 1%
/// let mut f = TimeWindowFilter::try_new(600, 10_000, 0.01)?;
/// f.insert_at("card-1234", 1_000);
/// assert!(f.contains_at("card-1234", 1_600)); // 600 s later: still inside the window
/// let gone = 1_000 + 600 + f.slack() + 1;
/// f.advance(gone);
/// assert!(!f.contains_at("card-1234", gone)); // forgotten
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TimeWindowFilter {
    hasher: KeyHasher,
    /// The window, in ticks.
    window: u64,
    /// Insertions per window the base slices are sized for.
    capacity: u64,
    target_fpr: f64,
    k: u32,
    l: u32,
    /// Bits of a slice of scale 0 (scale s: `base_bits << s`).
    base_bits: u64,
    /// Insertions of a generation of scale 0 (scale s: `base_generation << s`).
    base_generation: u64,
    /// Ticks after which a generation ends, `⌈window / l⌉`.
    period: u64,
    /// Refuse to hold more than this many bytes of slices.
    limit: u64,
    /// The latest time seen.
    clock: u64,
    /// When the current generation began.
    generation_start: u64,
    /// Every insertion so far.
    items: u64,
    /// Slices created so far: the next slice's serial number (its hash index).
    serial: u64,
    /// Slices retired before their items left the window, to stay under the memory limit.
    forgotten_early: u64,
    /// Newest first; never fewer than `k`.
    ring: VecDeque<Slice>,
}

/// The builder of a [`TimeWindowFilter`]: `capacity` is the insertions per window the base
/// slices are sized for, `fpr` the worst-point rate, [`window`](Builder::window) the window in
/// ticks.
pub type TimeWindowBuilder = Builder<TimeWindowFilter>;

/// The options of a [`TimeWindowBuilder`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeWindowOptions {
    /// The window in ticks (required).
    window: Option<u64>,
}

impl Builder<TimeWindowFilter> {
    /// The window, in the ticks of the clock the caller will pass (required).
    pub fn window(mut self, ticks: u64) -> Self {
        self.opts.window = Some(ticks);
        self
    }
}

impl Build for TimeWindowFilter {
    type Options = TimeWindowOptions;
    fn build(b: &Builder<Self>) -> Result<Self> {
        let s = &b.sizing;
        s.refuse(
            &["bits", "hashes"],
            "a time window (sized by window, insertions per window and rate)",
        )?;
        let (n, p) = s.sized()?;
        let window = b
            .opts
            .window
            .ok_or_else(|| invalid("window", "required (in the caller's ticks)"))?;
        let shape = params::apbf_time_shape(n, p)?;
        Self::with_shape(
            window,
            n,
            p,
            (shape.k, shape.l, shape.slice_bits),
            s.key_hasher(),
            s.limit(),
        )
    }
}

/// Largest scale of a slice: `base << MAX_SCALE` bits.
pub(crate) const MAX_SCALE: u8 = 40;
/// Most slices a ring holds (a file declaring more is refused).
pub(crate) const MAX_SLICES: usize = 1 << 16;

impl TimeWindowFilter {
    /// A builder (`capacity` = insertions per window, `fpr` = target rate, `window` = ticks).
    pub fn builder() -> Builder<Self> {
        Builder::new()
    }

    /// A window of `window` ticks, sized for `capacity` insertions per window at worst-point
    /// rate `p`.
    pub fn try_new(window: u64, capacity: u64, p: f64) -> Result<Self> {
        Self::builder()
            .window(window)
            .capacity(capacity)
            .fpr(p)
            .try_build()
    }

    fn with_shape(
        window: u64,
        capacity: u64,
        target_fpr: f64,
        (k, l, base_bits): (u32, u32, u64),
        hasher: KeyHasher,
        limit: u64,
    ) -> Result<Self> {
        if window == 0 {
            return Err(invalid("window", "must be at least one tick"));
        }
        params::check_capacity(capacity)?;
        params::check_hashes(k, APBF_MAX_K)?;
        if l == 0 || l > APBF_MAX_L {
            return Err(invalid(
                "l",
                format!("must be in 1..={APBF_MAX_L}, got {l}"),
            ));
        }
        if base_bits == 0 {
            return Err(invalid("bits", "each slice needs at least one bit"));
        }
        let mut f = Self {
            hasher,
            window,
            capacity,
            target_fpr,
            k,
            l,
            base_bits,
            base_generation: capacity.div_ceil(u64::from(l)),
            period: window.div_ceil(u64::from(l)),
            limit,
            clock: 0,
            generation_start: 0,
            items: 0,
            serial: 0,
            forgotten_early: 0,
            ring: VecDeque::new(),
        };
        store::check_size(f.slice_bytes(0).saturating_mul(u64::from(k)), limit)?;
        for _ in 0..k {
            let s = f.new_slice(0, 0)?;
            f.ring.push_back(s);
        }
        // serials count from the newest: the ring's first slice is the latest made
        f.ring.make_contiguous().reverse();
        Ok(f)
    }

    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the ring of slice
    /// records, then each slice's words, newest first. Words in a map (anonymous or a file's)
    /// never move (see `Words::relocate`). `mv` gets an allocation's address and returns where
    /// its bytes are now, or `None` to leave it; it is called for each allocation once, always
    /// in the same order.
    ///
    /// # Safety
    /// A returned address must hold a copy of the allocation's bytes in an allocation of the
    /// global allocator of the same size and at least its alignment (64 bytes for the words),
    /// and the old allocation must have been freed; nothing may reference the structure
    /// during the call.
    #[doc(hidden)]
    pub unsafe fn relocate_arrays(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) {
        // The ring as a vector over the same buffer (its records moved to the buffer's start
        // where they wrapped; no allocation either way), moved, and a ring again.
        let mut records = Vec::from(std::mem::take(&mut self.ring));
        // SAFETY: the caller's contract, passed on.
        unsafe { store::relocate_vec(&mut records, mv) };
        self.ring = VecDeque::from(records);
        for s in &mut self.ring {
            // SAFETY: as above.
            unsafe { s.words.relocate(mv) };
        }
    }

    /// The window, in ticks.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Ticks beyond the window after which a key is surely forgotten: `k` periods. A key's
    /// bits sit in the `k` slices newest when it was inserted; the last of them stops taking
    /// insertions at most `k` periods later and is retired `window` ticks after that.
    pub fn slack(&self) -> u64 {
        u64::from(self.k).saturating_mul(self.period)
    }

    /// Ticks after which a generation ends even if it has not taken its insertions:
    /// `⌈window / l⌉`.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// Insertions per window the base slices are sized for.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The target false-positive rate.
    pub fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// Slices taking each insertion (k).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// Generations per window at the design rate (l).
    pub fn generations_per_window(&self) -> u32 {
        self.l
    }

    /// Bits of a slice of scale 0.
    pub fn base_slice_bits(&self) -> u64 {
        self.base_bits
    }

    /// Insertions of a generation of scale 0, `⌈capacity / l⌉`.
    pub fn base_generation(&self) -> u64 {
        self.base_generation
    }

    /// Live slices the sizing allows for: `k + 2l + 1` (see
    /// [`params::apbf_time_shape`]).
    pub fn design_slices(&self) -> u32 {
        self.k + params::apbf_time_design_l(self.l)
    }

    /// The rate the model gives when [`design_slices`](Self::design_slices) slices of scale 0
    /// are live, every older one holding `k` full generations: at most the target.
    pub fn worst_fpr(&self) -> f64 {
        params::apbf_fpr_worst(
            self.k,
            params::apbf_time_design_l(self.l),
            self.base_bits,
            self.base_generation,
        )
    }

    /// Every insertion so far.
    pub fn insertions(&self) -> u64 {
        self.items
    }

    /// The latest time seen (by an insertion, [`advance`](Self::advance) or a query's
    /// `now` — queries do not store it).
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// Slices retired while their items were still inside the window, because a new slice
    /// would have exceeded the memory limit or the ring's 65 536 slices (0 unless the rate
    /// outgrew them).
    pub fn forgotten_early(&self) -> u64 {
        self.forgotten_early
    }

    /// Slices in the ring (live or not yet retired).
    pub fn slices(&self) -> usize {
        self.ring.len()
    }

    /// Slices at `now` holding keys of the window: the newest up to the first whose last
    /// insertion is more than `window` ticks old.
    pub fn live_slices(&self, now: u64) -> usize {
        let now = now.max(self.clock);
        self.ring
            .iter()
            .take_while(|s| !s.expired(now, self.window))
            .count()
    }

    /// Ticks since the oldest live slice's last insertion at `now` (`None` when no live slice
    /// holds a key): the age of the oldest keys the filter may still report.
    pub fn oldest_age(&self, now: u64) -> Option<u64> {
        let now = now.max(self.clock);
        self.ring
            .iter()
            .take_while(|s| !s.expired(now, self.window))
            .filter(|s| s.load > 0)
            .last()
            .map(|s| now - s.last)
    }

    /// Insertions of the generations begun in the last `window` ticks at `now` (the current
    /// one included): the insert rate, per window.
    pub fn recent_insertions(&self, now: u64) -> u64 {
        let now = now.max(self.clock);
        self.ring
            .iter()
            .take_while(|s| now.saturating_sub(s.start) <= self.window)
            .map(|s| s.generation_count)
            .fold(0u64, u64::saturating_add)
    }

    /// Set bits and bits of each slice, newest first.
    pub fn slice_fill(&self) -> Vec<(u64, u64)> {
        self.ring
            .iter()
            .map(|s| (store::count_ones(s.words.as_slice()), s.bits))
            .collect()
    }

    /// Bytes of the slices.
    pub fn bytes(&self) -> u64 {
        self.ring.iter().map(|s| s.bytes()).sum()
    }

    /// The rate the model gives at `now`: a key never inserted is found when `k` consecutive
    /// live slices hold its bit, each slice full as its insertions make it.
    pub fn current_fpr(&self, now: u64) -> f64 {
        let now = now.max(self.clock);
        let fills: Vec<f64> = self
            .ring
            .iter()
            .take_while(|s| !s.expired(now, self.window))
            .map(Slice::model_fill)
            .collect();
        params::apbf_run_probability(&fills, self.k)
    }

    /// The hasher (the one hash path: the same key hashes alike in every structure).
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Insert `key` at time `now`. True when a bit changed.
    pub fn insert_at<K: Key + ?Sized>(&mut self, key: &K, now: u64) -> bool {
        let h = self.hasher.hash(key);
        self.insert_hashed_at(h, now)
    }

    /// Is `key` among the keys of the window ending at `now`? No false negative for a key
    /// inserted at most `window` ticks before `now`. Does not change the filter.
    pub fn contains_at<K: Key + ?Sized>(&self, key: &K, now: u64) -> bool {
        self.contains_hashed_at(self.hasher.hash(key), now)
    }

    /// [`insert_at`](Self::insert_at) with a pre-computed hash.
    pub fn insert_hashed_at(&mut self, h: Hashed, now: u64) -> bool {
        let now = self.advance(now);
        let mut new = false;
        for s in self.ring.iter_mut().take(self.k as usize) {
            new |= s.insert(h, now);
        }
        self.items = self.items.saturating_add(1);
        let full = {
            let newest = &mut self.ring[0];
            newest.generation_count += 1;
            newest.generation_count >= self.base_generation << newest.scale
        };
        if full {
            self.shift(now);
        }
        new
    }

    /// [`contains_at`](Self::contains_at) with a pre-computed hash.
    pub fn contains_hashed_at(&self, h: Hashed, now: u64) -> bool {
        let now = now.max(self.clock);
        let k = self.k as usize;
        let mut run = 0;
        let n = self.ring.len();
        for (j, s) in self.ring.iter().enumerate() {
            if s.expired(now, self.window) {
                return false;
            }
            if s.load > 0 && s.contains(h) {
                run += 1;
                if run == k {
                    return true;
                }
            } else {
                run = 0;
                if n - j - 1 < k {
                    return false;
                }
            }
        }
        false
    }

    /// Insert many keys, each at its time (`times[i]` for `keys[i]`); times out of order are
    /// taken as the latest seen. True for each key that changed a bit.
    pub fn insert_many_at<K: Key>(&mut self, keys: &[K], times: &[u64]) -> Result<Vec<bool>> {
        if keys.len() != times.len() {
            return Err(invalid(
                "times",
                format!("{} times for {} keys", times.len(), keys.len()),
            ));
        }
        Ok(keys
            .iter()
            .zip(times)
            .map(|(k, &t)| self.insert_at(k, t))
            .collect())
    }

    /// Move the clock to `now` (a `now` earlier than the clock is taken as the clock): end
    /// the generations whose period has passed, retire the slices whose last insertion is more
    /// than `window` ticks old. Returns the clock. Insertions call it; call it to free the
    /// memory of a window that has gone quiet.
    pub fn advance(&mut self, now: u64) -> u64 {
        let now = now.max(self.clock);
        self.clock = now;
        if now.saturating_sub(self.generation_start) >= self.period {
            let due = (now - self.generation_start) / self.period;
            if due > u64::from(self.l) + 1 {
                // the last insertion came before the current generation's period ended, so
                // it is more than (due - 1)·period ≥ window + period ticks old: every slice
                // has left the window
                self.reset(now);
            } else {
                for _ in 0..due {
                    let at = self.generation_start + self.period;
                    self.shift(at);
                }
            }
        }
        self.expire(now);
        now
    }

    /// Forget every item (the clock stays).
    pub fn clear(&mut self) {
        let now = self.clock;
        self.reset(now);
        self.items = 0;
    }
}

#[cfg(test)]
mod tests;
