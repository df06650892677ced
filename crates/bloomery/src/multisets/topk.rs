//! HeavyKeeper top-k: [`TopK`] (its docs say which paper it follows and when to pick it).

use std::sync::OnceLock;

use crate::error::{inconsistent, invalid, Result};
use crate::filter::Count;
use crate::hash::{mix64, reduce, Hashed, Key, KeyHasher};
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist};
use crate::store::{self, Words};

/// Most rows accepted.
pub const MAX_DEPTH: u32 = 64;
/// Largest k accepted.
pub const MAX_K: u32 = 1 << 20;
/// Longest item the top-k list holds (longer items are counted in the buckets but never
/// listed; the saved format stores lengths in 32 bits).
pub const MAX_ITEM_LEN: usize = u32::MAX as usize;
/// Default buckets per row (RedisBloom's `TOPK.RESERVE` default).
pub const DEFAULT_WIDTH: u64 = 8;
/// Default rows (RedisBloom's default).
pub const DEFAULT_DEPTH: u32 = 7;
/// Default decay base b (the paper's and RedisBloom's).
pub const DEFAULT_DECAY: f64 = 0.9;

/// An item of the top-k heap, or (`item` `None`, count 0) an empty slot of a
/// [RedisBloom-style list](TopKBuilder::redisbloom_list).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    item: Option<Vec<u8>>,
    fp: u32,
    count: u32,
}

impl Entry {
    const EMPTY: Entry = Entry {
        item: None,
        fp: 0,
        count: 0,
    };

    fn bytes(&self) -> &[u8] {
        self.item.as_deref().unwrap_or(&[])
    }

    /// Bytes allocated for the item.
    fn capacity(&self) -> u64 {
        self.item.as_ref().map_or(0, |i| i.capacity() as u64)
    }
}

/// The saved form of an empty slot of a RedisBloom-style list: a length no item has
/// (slot lists hold items shorter than [`MAX_ITEM_LEN`]) and count 0.
const EMPTY_SLOT: u64 = (u32::MAX as u64) << 32;

/// HeavyKeeper top-k (Gong, Yang, Wu, Uhlig, Li, Zhong: "HeavyKeeper: An Accurate Algorithm for
/// Finding Top-k Elephant Flows", USENIX ATC 2018, §3), the structure behind the Redis module's
/// `TOPK.*` commands.
///
/// `depth` rows of `width` buckets; a bucket holds a 32-bit fingerprint of the item that owns it
/// and a 32-bit count. An arrival of item x looks at one bucket per row (row r, column h_r(x),
/// the r-th value of the key's enhanced double-hashing sequence reduced to `[0, width)` — the one
/// hash path of [`hash`](crate::KeyHasher)):
/// - an empty bucket (count 0) becomes x's with count 1;
/// - x's own bucket (same fingerprint) counts one more;
/// - another item's bucket with count c is **decayed** (decremented) with probability `b^c`
///   (b the decay base, 0.9 by default, §3.2 "count-with-exponential-decay"); when it reaches 0
///   x takes it over with count 1.
///
/// Heavy items quickly own buckets that light items almost never decay (`b^c` vanishes as c
/// grows), while light items keep evicting each other. The estimate of x is the largest count
/// among the buckets x owns. A min-heap of the k items with the largest estimates (items stored
/// with their bytes, so they can be listed) is updated after each arrival (§3.3): an item
/// already in the heap gets `max(heap count, estimate)`; otherwise it enters when the heap has
/// room or its estimate exceeds the heap's minimum, which it then expels. The expelled item is
/// what `TOPK.ADD` returns.
///
/// # The RedisBloom-style list
/// [`TopKBuilder::redisbloom_list`] keeps the list as RedisBloom 2.6 keeps it instead, so that
/// ties are decided as there (the Redis module's `TOPK.*` use it): an array of k slots, empty
/// at first (count 0), ordered as a min-heap on the count; after an arrival whose estimate is
/// *at least* the count of the first slot, an item already in the array takes the estimate as
/// its count (even when lower: a bucket may have decayed) and sinks, and another item replaces
/// the first slot's (which is expelled; an empty slot expels nothing) and sinks. Sinking swaps
/// with the smaller child (the left one on equal counts) while the child's count is at most the
/// item's at the first step and below it afterwards, as RedisBloom's heap does; ties therefore
/// expel the older item and rotate the array. [`TopK::list`] is the array sorted by count, largest
/// first, ties in array order, without the slots of count 0. An increment of 0 applies the heap
/// step alone. An item whose estimate is 0 can enter an empty slot: it is then in the list for
/// [`TopK::contains`] but not listed (count 0), as in RedisBloom. The heap order can break when
/// a count decreases (RedisBloom's too); nothing depends on it beyond which slot comes first.
/// Such a list is saved as the `topk-slots` kind.
///
/// # What the counts mean
/// A bucket count only grows by its owner's arrivals and only shrinks by decays, and its owner
/// took it with one of its own arrivals, so **a count is never above its owner's true count**
/// (a lower bound) — unless two items share a 32-bit fingerprint in the same bucket (probability
/// about 2⁻³² per pair of items meeting in a bucket), whose arrivals then add up. Heap counts are
/// maxima of such lower bounds over time, and true counts never decrease, so they are lower
/// bounds too. Counts of items that are not heavy are meaningless (usually 0); only the top of
/// the distribution is tracked. This is why RedisBloom deprecated `TOPK.COUNT`.
///
/// # Randomness: reproducible
/// The decay decisions use a counter-based generator, not the operating system: draw number i
/// for a key with hash (lo, hi) is `mix64(hi ^ mix64(i))` ([`crate::hash::mix64`], SplitMix64's
/// finaliser), and i (the number of draws so far) is saved with the structure. The same stream
/// of updates therefore always gives the same structure — on every machine, in the CLI and the
/// Redis module, and across a save and load — which makes tests, replicas and AOF replays agree.
/// An adversary who knows the seed can predict the decays, as with every unkeyed hash here; use
/// a [keyed hasher](crate::KeyHasher::keyed) for hostile inputs.
///
/// An increment of n ([`TopK::incr_by`]) is n arrivals: the number of arrivals until the next
/// decay is drawn from its geometric distribution (one draw per decay, not per arrival), so the
/// cost is `O(depth · min(n, c))` draws at worst and usually a handful.
///
/// # When to pick it
/// To *list* the heaviest items of a stream (top talkers, hot keys, popular URLs) in fixed
/// memory: HeavyKeeper keeps the items themselves, and its counts never over-estimate. A
/// [`crate::CountMinSketch`] estimates the count of *any* item with a guaranteed over-estimate
/// bound and merges across machines, but stores no items:
/// [`CountMinSketch::heavy_hitters`](crate::CountMinSketch::heavy_hitters) can only check
/// candidates the caller supplies. Pick HeavyKeeper for "which are the top k?", a count-min
/// sketch for "how often did x occur?" (or both side by side). HeavyKeeper does not merge, and
/// its result depends on the order of arrivals.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::TopK;
///
/// // the 2 heaviest keys, a 64 × 4 HeavyKeeper table, decay 0.9
/// let mut t = TopK::try_with_shape(2, 64, 4, 0.9)?;
/// for i in 0..300u32 {
///     t.insert("heavy");
///     if i % 2 == 0 {
///         t.insert("medium");
///     }
///     t.insert(&i); // 300 keys seen once
/// }
/// let top: Vec<&[u8]> = t.list().into_iter().map(|(k, _)| k).collect();
/// assert_eq!(top, [&b"heavy"[..], &b"medium"[..]]);
/// assert!(t.contains("heavy"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TopK {
    k: u32,
    width: u64,
    depth: u32,
    decay: f64,
    hasher: KeyHasher,
    /// `depth × width` buckets, row after row: fingerprint in the high 32 bits, count in the low.
    buckets: Words,
    /// Binary min-heap on `count`; its capacity never exceeds k.
    heap: Vec<Entry>,
    /// Sum of the heap's item capacities.
    item_bytes: u64,
    /// The memory limit the structure obeys: the builder's, or on load the loading process's.
    /// Items that would take the buckets, the k entries and the items past it do not enter the
    /// list (as items longer than [`MAX_ITEM_LEN`]).
    max_bytes: u64,
    /// The list is RedisBloom's array of k slots (see [the type docs](TopK)).
    slots: bool,
    /// Random draws made so far (the generator's position).
    draws: u64,
    /// Sum of all increments (saturating).
    total: u64,
    /// The heap in its payload form, built on first save after a change.
    encoded: OnceLock<Words>,
}

impl PartialEq for TopK {
    fn eq(&self, o: &Self) -> bool {
        self.k == o.k
            && self.width == o.width
            && self.depth == o.depth
            && self.decay.to_bits() == o.decay.to_bits()
            && self.hasher == o.hasher
            && self.buckets == o.buckets
            && self.heap == o.heap
            && self.slots == o.slots
            && self.draws == o.draws
            && self.total == o.total
    }
}

/// Builder for [`TopK`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::TopK;
///
/// // the 3 heaviest keys, 4 rows of 64 buckets
/// let mut t = TopK::builder(3).width(64).depth(4).decay(0.9).try_build()?;
/// for (key, times) in [("a", 50), ("b", 20), ("c", 10), ("d", 1)] {
///     t.insert_many(key, times);
/// }
/// assert!(t.contains("a") && t.list().len() <= 3);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TopKBuilder {
    k: u32,
    width: u64,
    depth: u32,
    decay: f64,
    hasher: KeyHasher,
    max_bytes: u64,
    slots: bool,
}

impl TopKBuilder {
    crate::filter::hashing_setters!();

    /// Buckets per row (default 8).
    pub fn width(mut self, w: u64) -> Self {
        self.width = w;
        self
    }
    /// Rows (default 7, at most [`MAX_DEPTH`](TopK::MAX_DEPTH)).
    pub fn depth(mut self, d: u32) -> Self {
        self.depth = d;
        self
    }
    /// Decay base b in (0, 1] (default 0.9).
    pub fn decay(mut self, b: f64) -> Self {
        self.decay = b;
        self
    }

    /// Keep the list as RedisBloom 2.6 does, k slots deciding ties as there (see
    /// [the type docs](TopK#the-redisbloom-style-list)); default false. The k slots are
    /// allocated at once.
    ///
    /// ```
    /// # fn main() -> bloomery::Result<()> {
    /// use bloomery::TopK;
    ///
    /// let mut t = TopK::builder(2).width(50).depth(5).redisbloom_list(true).try_build()?;
    /// assert_eq!(t.insert("a"), None);
    /// assert_eq!(t.insert("b"), None);
    /// // a tie expels the item in the first slot
    /// assert_eq!(t.insert("c").as_deref(), Some(&b"a"[..]));
    /// # Ok(()) }
    /// ```
    pub fn redisbloom_list(mut self, yes: bool) -> Self {
        self.slots = yes;
        self
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<TopK> {
        check_shape(self.k, self.width, self.depth, self.decay).map_err(|(n, r)| invalid(n, r))?;
        let words = words_for(self.width, self.depth).ok_or(crate::error::Error::TooLarge {
            requested: u64::MAX,
            limit: self.max_bytes,
        })?;
        // the buckets and the list's k entries must fit before any item arrives
        store::check_size(
            (words as u64)
                .saturating_mul(8)
                .saturating_add(u64::from(self.k).saturating_mul(ENTRY_BYTES)),
            self.max_bytes,
        )?;
        Ok(TopK {
            k: self.k,
            width: self.width,
            depth: self.depth,
            decay: self.decay,
            hasher: self.hasher,
            buckets: Words::zeroed(words, self.max_bytes)?,
            heap: if self.slots {
                vec![Entry::EMPTY; self.k as usize]
            } else {
                Vec::new()
            },
            item_bytes: 0,
            max_bytes: self.max_bytes,
            slots: self.slots,
            draws: 0,
            total: 0,
            encoded: OnceLock::new(),
        })
    }
}

fn check_shape(
    k: u32,
    width: u64,
    depth: u32,
    decay: f64,
) -> std::result::Result<(), (&'static str, String)> {
    if k == 0 || k > MAX_K {
        return Err(("k", format!("must be in 1..={MAX_K}, got {k}")));
    }
    if width == 0 {
        return Err(("width", "must be at least 1".into()));
    }
    if depth == 0 || depth > MAX_DEPTH {
        return Err(("depth", format!("must be in 1..={MAX_DEPTH}, got {depth}")));
    }
    if !(decay > 0.0 && decay <= 1.0) {
        return Err(("decay", format!("must be in (0, 1], got {decay}")));
    }
    Ok(())
}

/// Bytes of one entry of the list (the item's bytes aside).
const ENTRY_BYTES: u64 = std::mem::size_of::<Entry>() as u64;

fn words_for(width: u64, depth: u32) -> Option<usize> {
    width
        .checked_mul(u64::from(depth))
        .and_then(|w| usize::try_from(w).ok())
}

#[inline]
fn fingerprint(h: Hashed) -> u32 {
    (mix64(h.hi ^ h.lo.rotate_left(17)) >> 32) as u32
}

#[inline]
fn bucket(fp: u32, count: u32) -> u64 {
    (u64::from(fp) << 32) | u64::from(count)
}

#[inline]
fn unpack(b: u64) -> (u32, u32) {
    ((b >> 32) as u32, b as u32)
}

impl TopK {
    /// The hasher keys go through (what [`Count::hasher`](crate::filter::Count::hasher)
    /// answers; inherent, so that a call needs no trait in scope).
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// Largest number of rows (`depth`).
    pub const MAX_DEPTH: u32 = MAX_DEPTH;
    /// Largest `k` (items listed).
    pub const MAX_K: u32 = MAX_K;

    /// A builder for the top `k` items (width 8, depth 7, decay 0.9, default hasher).
    pub fn builder(k: u32) -> TopKBuilder {
        TopKBuilder {
            k,
            width: DEFAULT_WIDTH,
            depth: DEFAULT_DEPTH,
            decay: DEFAULT_DECAY,
            hasher: KeyHasher::new(),
            max_bytes: store::max_bytes(),
            slots: false,
        }
    }

    /// Top `k` with an explicit shape (`depth` rows of `width` buckets) and decay base (the
    /// name every structure's explicit-shape constructor has).
    ///
    /// ```
    /// use bloomery::TopK;
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let t = TopK::try_with_shape(10, 64, 4, 0.9)?;
    /// assert_eq!((t.k(), t.width(), t.depth()), (10, 64, 4));
    /// # Ok(()) }
    /// ```
    pub fn try_with_shape(k: u32, width: u64, depth: u32, decay: f64) -> Result<Self> {
        Self::builder(k)
            .width(width)
            .depth(depth)
            .decay(decay)
            .try_build()
    }

    /// Items kept (k).
    pub fn k(&self) -> u32 {
        self.k
    }
    /// Buckets per row.
    pub fn width(&self) -> u64 {
        self.width
    }
    /// Rows.
    pub fn depth(&self) -> u32 {
        self.depth
    }
    /// Decay base b.
    pub fn decay(&self) -> f64 {
        self.decay
    }
    /// Sum of all increments (saturating at `u64::MAX`).
    pub fn total(&self) -> u64 {
        self.total
    }
    /// Random draws made so far (the decay generator's position, saved with the structure).
    pub fn draws(&self) -> u64 {
        self.draws
    }
    /// Items currently listed (at most k; in a [RedisBloom-style list](TopKBuilder::redisbloom_list),
    /// the slots with a count above 0).
    pub fn len(&self) -> usize {
        if self.slots {
            self.heap.iter().filter(|e| e.count > 0).count()
        } else {
            self.heap.len()
        }
    }
    /// True while no item is listed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether the list is RedisBloom's array of k slots ([`TopKBuilder::redisbloom_list`]).
    pub fn is_redisbloom_list(&self) -> bool {
        self.slots
    }
    /// Bytes of bucket storage.
    pub fn bucket_bytes(&self) -> u64 {
        self.buckets.len() as u64 * 8
    }
    /// Bytes held by the top-k list: its entries (as allocated, at most k) and its items'
    /// bytes, plus the saved form of the list while it is kept (see [`list_allocations`]).
    ///
    /// [`list_allocations`]: Self::list_allocations
    pub fn heap_bytes(&self) -> u64 {
        self.list_allocations().sum()
    }

    /// The size of every heap allocation behind the top-k list: the entries' array, each
    /// item's bytes, and the list's saved form (kept from a save until the next change).
    /// Counted against the memory limit as they are made; a caller that knows its allocator's
    /// rounding sums them rounded.
    pub fn list_allocations(&self) -> impl Iterator<Item = u64> + '_ {
        let entries = self.heap.capacity() as u64 * ENTRY_BYTES;
        // arrays are kept in whole 64-byte lines
        let saved = self
            .encoded
            .get()
            .map_or(0, |w| (w.len() as u64).div_ceil(8) * 64);
        std::iter::once(entries)
            .chain(self.heap.iter().map(Entry::capacity))
            .chain(std::iter::once(saved))
            .filter(|&b| b > 0)
    }

    /// The memory limit this list obeys (see [`TopKBuilder::max_bytes`]).
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// True when a new item of `len` bytes, replacing an item of `freed` bytes, keeps the
    /// buckets, the k entries and the items within the limit.
    fn item_fits(&self, len: usize, freed: u64) -> bool {
        self.bucket_bytes()
            .saturating_add(u64::from(self.k).saturating_mul(ENTRY_BYTES))
            .saturating_add(self.item_bytes - freed)
            .saturating_add(len as u64)
            <= self.max_bytes
    }

    /// One draw of the decay generator for a key, uniform in (0, 1].
    #[inline]
    fn draw(&mut self, h: Hashed) -> f64 {
        let r = mix64(h.hi ^ mix64(self.draws));
        self.draws = self.draws.wrapping_add(1);
        ((r >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Apply `n ≥ 1` arrivals of the key (fingerprint `fp`) to bucket `idx`.
    fn update_bucket(&mut self, idx: usize, h: Hashed, fp: u32, n: u32) {
        let (bfp, mut c) = unpack(self.buckets.as_slice()[idx]);
        let new = if c == 0 {
            bucket(fp, n)
        } else if bfp == fp {
            bucket(fp, c.saturating_add(n))
        } else {
            // Another item's bucket: each arrival decays it with probability b^c.
            let mut left = n;
            let mut out = bucket(bfp, c);
            while left > 0 {
                let p = self.decay.powf(f64::from(c));
                if p >= 1.0 {
                    // b = 1: every arrival decays; no draw needed.
                    let d = c.min(left);
                    left -= d;
                    c -= d;
                    out = if c == 0 {
                        bucket(fp, 1u32.saturating_add(left))
                    } else {
                        bucket(bfp, c)
                    };
                    break;
                }
                if p <= 0.0 {
                    break;
                }
                // Arrivals up to and including the next decay: geometric with parameter p.
                let u = self.draw(h);
                let t = (u.ln() / (-p).ln_1p()).floor() + 1.0;
                if !(t >= 1.0 && t <= f64::from(left)) {
                    break;
                }
                left -= t as u32;
                c -= 1;
                if c == 0 {
                    // The decaying arrival takes the bucket over; the rest count for it too.
                    out = bucket(fp, 1u32.saturating_add(left));
                    break;
                }
                out = bucket(bfp, c);
            }
            out
        };
        self.buckets.as_mut_slice()[idx] = new;
    }

    #[inline]
    fn cells(&self, h: Hashed) -> impl Iterator<Item = usize> + '_ {
        let w = self.width;
        h.sequence(self.depth)
            .enumerate()
            .map(move |(r, x)| (r as u64 * w + reduce(x, w)) as usize)
    }

    /// The estimate of a pre-hashed key: the largest count among the buckets it owns.
    fn estimate(&self, h: Hashed, fp: u32) -> u32 {
        let b = self.buckets.as_slice();
        self.cells(h)
            .map(|i| unpack(b[i]))
            .filter(|&(f, c)| f == fp && c > 0)
            .map(|(_, c)| c)
            .max()
            .unwrap_or(0)
    }

    fn find(&self, fp: u32, item: &[u8]) -> Option<usize> {
        self.heap
            .iter()
            .position(|e| e.fp == fp && e.item.as_deref() == Some(item))
    }

    /// Sink slot `start` of a RedisBloom-style list as RedisBloom's heap does: past a child
    /// of equal count at the first step, only past smaller ones afterwards.
    fn sink_slot(&mut self, start: usize) {
        let len = self.heap.len();
        let is_leaf = |i: usize| len < 2 || (len - 2) / 2 < i;
        let smaller_child = |h: &[Entry], i: usize| {
            let c = 2 * i + 1;
            if c + 1 < len && h[c].count > h[c + 1].count {
                c + 1
            } else {
                c
            }
        };
        if is_leaf(start) {
            return;
        }
        let top = self.heap[start].count;
        let mut child = smaller_child(&self.heap, start);
        if self.heap[child].count > top {
            return;
        }
        let mut at = start;
        loop {
            self.heap.swap(at, child);
            at = child;
            if is_leaf(at) {
                return;
            }
            child = smaller_child(&self.heap, at);
            if self.heap[child].count >= top {
                return;
            }
        }
    }

    /// The list step of a RedisBloom-style list after the buckets took an arrival (see
    /// [the type docs](TopK#the-redisbloom-style-list)).
    fn update_slots(&mut self, item: &[u8], fp: u32, est: u32) -> Option<Vec<u8>> {
        if est < self.heap[0].count {
            return None;
        }
        self.encoded = OnceLock::new();
        if let Some(at) = self.find(fp, item) {
            self.heap[at].count = est;
            self.sink_slot(at);
            return None;
        }
        let freed = self.heap[0].capacity();
        if item.len() >= MAX_ITEM_LEN || !self.item_fits(item.len(), freed) {
            return None;
        }
        let e = Entry {
            item: Some(item.to_vec()),
            fp,
            count: est,
        };
        self.item_bytes = self.item_bytes - freed + e.capacity();
        let out = std::mem::replace(&mut self.heap[0], e);
        self.sink_slot(0);
        out.item
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut m = i;
            if l < n && self.heap[l].count < self.heap[m].count {
                m = l;
            }
            if r < n && self.heap[r].count < self.heap[m].count {
                m = r;
            }
            if m == i {
                return;
            }
            self.heap.swap(i, m);
            i = m;
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if self.heap[p].count <= self.heap[i].count {
                return;
            }
            self.heap.swap(i, p);
            i = p;
        }
    }

    /// Add `n` arrivals of a key given as bytes; returns the item expelled from the top-k list,
    /// if any (`TOPK.INCRBY`). `n = 0` changes nothing. Cost: `O(depth · min(n, c))` random
    /// draws at worst (c the counts met), plus `O(k)` to find the item in the heap when its
    /// estimate reaches the heap's minimum.
    ///
    /// In a [RedisBloom-style list](TopKBuilder::redisbloom_list), `n = 0` leaves the buckets
    /// and applies the list step with the item's estimate, as RedisBloom does.
    pub fn incr_by(&mut self, item: &[u8], n: u32) -> Option<Vec<u8>> {
        if n == 0 && !self.slots {
            return None;
        }
        let h = self.hasher.hash_bytes(item);
        let fp = fingerprint(h);
        self.total = self.total.saturating_add(u64::from(n));
        if n > 0 {
            let mut idx = [0usize; MAX_DEPTH as usize];
            let d = self.depth as usize;
            for (slot, c) in idx.iter_mut().zip(self.cells(h)) {
                *slot = c;
            }
            for &i in &idx[..d] {
                self.update_bucket(i, h, fp, n);
            }
        }
        let est = self.estimate(h, fp);
        if self.slots {
            return self.update_slots(item, fp, est);
        }
        if est == 0 {
            return None;
        }
        self.encoded = OnceLock::new();
        let full = self.heap.len() >= self.k as usize;
        // A full heap whose minimum is at least the estimate cannot change: if the item is in
        // it, its heap count is already ≥ the minimum ≥ the estimate.
        if full && self.heap[0].count >= est {
            return None;
        }
        if let Some(at) = self.find(fp, item) {
            if est > self.heap[at].count {
                self.heap[at].count = est;
                self.sift_down(at);
            }
            return None;
        }
        // a list at the memory limit is full: a heavier item takes the minimum's place
        let full = full
            || (!self.item_fits(item.len(), 0) && self.heap.first().is_some_and(|m| m.count < est));
        let freed = if full { self.heap[0].capacity() } else { 0 };
        if item.len() > MAX_ITEM_LEN || !self.item_fits(item.len(), freed) {
            return None;
        }
        let e = Entry {
            item: Some(item.to_vec()),
            fp,
            count: est,
        };
        self.item_bytes = self.item_bytes - freed + e.capacity();
        if !full {
            if self.heap.len() == self.heap.capacity() {
                // grow by doubling, but never past k entries (the limit counts k)
                let want = (self.heap.capacity() * 2).max(4).min(self.k as usize);
                self.heap.reserve_exact(want - self.heap.len());
            }
            self.heap.push(e);
            let last = self.heap.len() - 1;
            self.sift_up(last);
            return None;
        }
        let out = std::mem::replace(&mut self.heap[0], e);
        self.sift_down(0);
        out.item
    }

    /// One arrival of a key (`TOPK.ADD`): the `insert` of every structure; returns the item
    /// expelled from the top-k list, if any.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> Option<Vec<u8>> {
        self.insert_many(key, 1)
    }

    /// `n` arrivals of a key at once (`TOPK.INCRBY`; the `insert_many` of the counting
    /// structures); returns the item expelled from the top-k list, if any.
    pub fn insert_many<K: Key + ?Sized>(&mut self, key: &K, n: u32) -> Option<Vec<u8>> {
        key.with_bytes(|b| self.incr_by(b, n))
    }

    /// Whether a key is in the top-k list (`TOPK.QUERY`).
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        key.with_bytes(|b| {
            let fp = fingerprint(self.hasher.hash_bytes(b));
            self.find(fp, b).is_some()
        })
    }

    /// The top-k list with the heap's counts, largest first (ties by item bytes; in a
    /// [RedisBloom-style list](TopKBuilder::redisbloom_list) ties in slot order, and slots of
    /// count 0 left out), as `TOPK.LIST WITHCOUNT` returns it.
    pub fn list(&self) -> Vec<(&[u8], u64)> {
        let mut v: Vec<(&[u8], u64)> = self
            .heap
            .iter()
            .filter(|e| e.count > 0)
            .map(|e| (e.bytes(), u64::from(e.count)))
            .collect();
        if self.slots {
            // stable: equal counts keep the slots' order
            v.sort_by_key(|e| std::cmp::Reverse(e.1));
        } else {
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        }
        v
    }

    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the buckets (unless
    /// mapped), the list's entries, each item's bytes and the list's saved form. `mv` gets an
    /// allocation's address and returns where its bytes are now, or `None` to leave it.
    ///
    /// # Safety
    /// A returned address must hold a copy of the allocation's bytes in an allocation of the
    /// global allocator of the same size and at least its alignment (64 bytes for the
    /// buckets), and the old allocation must have been freed; nothing may reference the
    /// structure during the call.
    pub unsafe fn relocate_arrays(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.buckets.relocate(mv) };
        if let Some(w) = self.encoded.get_mut() {
            // SAFETY: as above.
            unsafe { w.relocate(mv) };
        }
        // SAFETY: as above.
        unsafe { store::relocate_vec(&mut self.heap, mv) };
        for e in &mut self.heap {
            if let Some(item) = &mut e.item {
                // SAFETY: as above.
                unsafe { store::relocate_vec(item, mv) };
            }
        }
    }

    fn heap_words(&self) -> &Words {
        self.encoded.get_or_init(|| {
            let bytes: usize = self.heap.iter().map(|e| e.bytes().len()).sum();
            let n = self.heap.len() + bytes.div_ceil(8);
            // The heap already lives in memory, so its copy is not held to the size limit.
            let mut w = Words::zeroed(n, u64::MAX).unwrap_or_else(|_| {
                Words::zeroed(0, u64::MAX).expect("an empty array always allocates")
            });
            if w.len() == n {
                let s = w.as_mut_slice();
                let mut raw = Vec::with_capacity(bytes.div_ceil(8) * 8);
                for (slot, e) in s.iter_mut().zip(&self.heap) {
                    *slot = match &e.item {
                        Some(i) => ((i.len() as u64) << 32) | u64::from(e.count),
                        None => EMPTY_SLOT,
                    };
                    raw.extend_from_slice(e.bytes());
                }
                raw.resize(bytes.div_ceil(8) * 8, 0);
                for (slot, c) in s[self.heap.len()..].iter_mut().zip(raw.chunks_exact(8)) {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(c);
                    *slot = u64::from_le_bytes(a);
                }
            }
            w
        })
    }
}

impl Count for TopK {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// The largest count among the buckets the key owns (0 if none): never above the key's
    /// true count, barring a 32-bit fingerprint collision (see the [`TopK`] docs).
    fn count_hashed(&self, h: Hashed) -> u64 {
        u64::from(self.estimate(h, fingerprint(h)))
    }
}

impl Persist for TopK {
    const KIND: Kind = Kind::TopK;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let kind = if self.slots {
            Kind::TopKSlots
        } else {
            Kind::TopK
        };
        let mut h = Header::new(kind, self.hasher);
        h.items = self.total;
        let bytes: u64 = self.heap.iter().map(|e| e.bytes().len() as u64).sum();
        h.params = ParamWriter::new()
            .u32(self.k)
            .u64(self.width)
            .u32(self.depth)
            .f64(self.decay)
            .u64(self.draws)
            .u32(self.heap.len() as u32)
            .u64(bytes)
            .finish();
        (h, Payload::new(vec![&self.buckets, self.heap_words()]))
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let k = r.u32()?;
        let width = r.u64()?;
        let depth = r.u32()?;
        let decay = r.f64()?;
        let draws = r.u64()?;
        let heap_len = r.u32()?;
        let heap_bytes = r.u64()?;
        r.finish()?;
        if d.header.capacity != 0 || d.header.target_fpr != 0.0 {
            return Err(inconsistent("a top-k has no capacity or target rate"));
        }
        check_shape(k, width, depth, decay)
            .map_err(|(n, why)| inconsistent(format!("{n}: {why}")))?;
        let slots = d.header.kind == Kind::TopKSlots;
        if heap_len > k || (slots && heap_len != k) {
            return Err(inconsistent(format!("{heap_len} heap items for k = {k}")));
        }
        let words = words_for(width, depth).ok_or_else(|| inconsistent("shape too large"))?;
        let bucket_part = format::padded_len(words);
        let heap_words = u64::from(heap_len)
            .checked_add(heap_bytes.div_ceil(8))
            .ok_or_else(|| inconsistent("heap too large"))?;
        let heap_part = format::padded_len(heap_words as usize);
        if bucket_part.checked_add(heap_part) != Some(d.payload_len as u64) {
            return Err(inconsistent(format!(
                "payload is {} bytes, parameters need {}",
                d.payload_len,
                bucket_part.saturating_add(heap_part)
            )));
        }
        store::check_size(bucket_part.saturating_add(heap_part), limit)?;
        // in memory: the buckets, the list's k entries and its items, as a new list counts them
        store::check_size(
            (words as u64)
                .saturating_mul(8)
                .saturating_add(u64::from(k).saturating_mul(ENTRY_BYTES))
                .saturating_add(heap_bytes),
            limit,
        )?;
        let buckets = src.words(d.payload_offset, words, limit)?;
        for &b in buckets.as_slice() {
            let (fp, c) = unpack(b);
            if c == 0 && fp != 0 {
                return Err(inconsistent("empty bucket with a fingerprint"));
            }
        }
        let hw = src.words(
            d.payload_offset + bucket_part as usize,
            heap_words as usize,
            limit,
        )?;
        let hw = hw.as_slice();
        let (meta, data) = hw.split_at(heap_len as usize);
        let mut raw: Vec<u8> = Vec::with_capacity(data.len() * 8);
        for w in data {
            raw.extend_from_slice(&w.to_le_bytes());
        }
        let hasher = d.header.hasher;
        let mut heap: Vec<Entry> = Vec::with_capacity(heap_len as usize);
        let mut item_bytes = 0u64;
        let mut at: u64 = 0;
        let mut seen = std::collections::HashSet::with_capacity(heap_len as usize);
        for &m in meta {
            if slots && m == EMPTY_SLOT {
                heap.push(Entry::EMPTY);
                continue;
            }
            let (len, count) = unpack(m);
            if slots && len == u32::MAX {
                return Err(inconsistent("slot item too long"));
            }
            let end = at
                .checked_add(u64::from(len))
                .filter(|&e| e <= heap_bytes)
                .ok_or_else(|| inconsistent("heap item lengths exceed the heap bytes"))?;
            // a slot list holds items of count 0 (entered with estimate 0), never listed
            if count == 0 && !slots {
                return Err(inconsistent("heap item with count 0"));
            }
            let item = raw[at as usize..end as usize].to_vec();
            item_bytes += item.capacity() as u64;
            if !seen.insert(item.clone()) {
                return Err(inconsistent("heap item listed twice"));
            }
            heap.push(Entry {
                fp: fingerprint(hasher.hash_bytes(&item)),
                item: Some(item),
                count,
            });
            at = end;
        }
        if at != heap_bytes {
            return Err(inconsistent("heap bytes beyond the items"));
        }
        if raw[at as usize..].iter().any(|&b| b != 0) {
            return Err(inconsistent("non-zero heap padding"));
        }
        // (a slot list's order may break as RedisBloom's does: see the type docs)
        if !slots && (1..heap.len()).any(|i| heap[(i - 1) / 2].count > heap[i].count) {
            return Err(inconsistent("heap order violated"));
        }
        Ok(Self {
            k,
            width,
            depth,
            decay,
            hasher,
            buckets,
            heap,
            item_bytes,
            max_bytes: limit,
            slots,
            draws,
            total: d.header.items,
            encoded: OnceLock::new(),
        })
    }
}

/// Each key is one arrival.
impl<K: Key> Extend<K> for TopK {
    fn extend<I: IntoIterator<Item = K>>(&mut self, iter: I) {
        for k in iter {
            self.insert(&k);
        }
    }
}

impl crate::dispatch::OtherKind for TopK {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        insert: true,
        hashed: true,
        count: true,
        ..crate::kind::Capabilities::NONE
    };
}

#[cfg(test)]
mod slots_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    /// The list's entries and items count against the memory limit: a k whose entries alone
    /// exceed it is refused at build (and on load), and items that would take the list past it
    /// stay out, while `heap_bytes` counts every allocation of the list.
    #[test]
    fn list_memory_obeys_the_limit() {
        let limit = 256 * 1024;
        let e = TopK::builder(1 << 20)
            .max_bytes(limit)
            .try_build()
            .unwrap_err();
        assert!(matches!(e, crate::error::Error::TooLarge { .. }), "{e}");
        // 100 entries fit, 10,000 do not
        assert!(TopK::builder(10_000).max_bytes(limit).try_build().is_err());
        let mut t = TopK::builder(100)
            .width(512)
            .depth(4)
            .max_bytes(limit)
            .try_build()
            .unwrap();
        let fixed = t.bucket_bytes() + 100 * ENTRY_BYTES;
        assert!(fixed < limit / 4);
        // 100 items of 4 KiB would be 400 KiB: only those that fit enter
        for i in 0..100u32 {
            let item = [vec![(i % 251) as u8; 4092], i.to_le_bytes().to_vec()].concat();
            t.incr_by(&item, 1000 + i);
        }
        let items: u64 = t.heap.iter().map(Entry::capacity).sum();
        assert_eq!(items, t.item_bytes);
        assert!(t.len() > 10 && t.len() < 100, "{} items listed", t.len());
        assert!(t.heap.capacity() <= 100);
        assert!(fixed + items <= limit, "{} + {items} > {limit}", fixed);
        assert_eq!(
            t.heap_bytes(),
            t.heap.capacity() as u64 * ENTRY_BYTES + items,
            "entries and items, nothing saved yet"
        );
        // a later, heavier item still replaces the minimum when it fits in the freed room
        let heavy = vec![7u8; 4096];
        t.incr_by(&heavy, 100_000);
        assert!(t.contains(&heavy[..]));
        // the saved form is held (and counted) once built, until the next change
        let before = t.heap_bytes();
        let bytes = t.to_bytes();
        assert!(t.heap_bytes() > before);
        // loading under a limit too small for k entries is refused
        let load = |limit: u64| {
            let d = crate::io::header::decode(&bytes, crate::io::header::Verify::Checksum).unwrap();
            TopK::decode_from(&d, format::Source::Bytes(&bytes), limit)
        };
        assert!(load(fixed).is_err());
        let back = load(limit).unwrap();
        assert_eq!(back.item_bytes, t.item_bytes);
        assert_eq!(back.max_bytes(), limit);
    }

    /// A Zipf(s = 1) stream over `n` items, fixed seed, by inverse transform on the CDF.
    fn zipf_stream(n: usize, len: usize, seed: u64) -> Vec<u32> {
        let w: Vec<f64> = (1..=n).map(|i| 1.0 / i as f64).collect();
        let sum: f64 = w.iter().sum();
        let mut cdf = Vec::with_capacity(n);
        let mut acc = 0.0;
        for x in &w {
            acc += x / sum;
            cdf.push(acc);
        }
        let mut rng = StdRng::seed_from_u64(seed);
        (0..len)
            .map(|_| {
                let u: f64 = rng.gen();
                cdf.partition_point(|&c| c < u).min(n - 1) as u32
            })
            .collect()
    }

    fn exact(stream: &[u32]) -> HashMap<u32, u64> {
        let mut m = HashMap::new();
        for &x in stream {
            *m.entry(x).or_insert(0u64) += 1;
        }
        m
    }

    /// Recall on a skewed stream, and the lower-bound property of every count: with a
    /// permuted item order (so item ids carry no rank), at least 9 of the true top 10 are
    /// listed, and no count (heap or buckets) exceeds the true count of any item seen.
    #[test]
    fn zipf_recall_and_counts_are_lower_bounds() {
        let raw = zipf_stream(20_000, 200_000, 7);
        // Scramble ids so that rank is not the id.
        let stream: Vec<u32> = raw.iter().map(|&x| x.wrapping_mul(2_654_435_761)).collect();
        let truth = exact(&stream);
        let mut ranked: Vec<(u32, u64)> = truth.iter().map(|(&k, &v)| (k, v)).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut t = TopK::builder(10).width(200).depth(5).try_build().unwrap();
        for x in &stream {
            t.insert(x);
        }
        let listed: Vec<u32> = t
            .list()
            .iter()
            .map(|(b, _)| u32::from_le_bytes((*b).try_into().unwrap()))
            .collect();
        assert_eq!(listed.len(), 10);
        let found = ranked[..10]
            .iter()
            .filter(|(k, _)| listed.contains(k))
            .count();
        assert!(found >= 9, "recall {found}/10");
        for (b, c) in t.list() {
            let id = u32::from_le_bytes(b.try_into().unwrap());
            assert!(c <= truth[&id], "heap count of {id}: {c} > {}", truth[&id]);
        }
        for (&id, &n) in &truth {
            assert!(t.count(&id) <= n, "bucket count of {id} over {n}");
        }
        assert_eq!(t.total(), 200_000);
        // The heaviest item's count is close to its true count (it owns its buckets early).
        let (top, n) = ranked[0];
        assert!(t.count(&top) * 10 >= n * 9, "{} vs {n}", t.count(&top));
    }

    #[test]
    fn without_collisions_counts_are_exact_and_expulsions_reported() {
        // Enough buckets that the few keys below never share one (checked: counts exact).
        let mut t = TopK::builder(2)
            .width(4096)
            .depth(3)
            .seed(1)
            .try_build()
            .unwrap();
        for _ in 0..3 {
            assert_eq!(t.insert("a"), None);
        }
        for _ in 0..2 {
            assert_eq!(t.insert("b"), None);
        }
        // c (count 1) does not beat the minimum (b, 2).
        assert_eq!(t.insert("c"), None);
        assert!(!t.contains("c"));
        assert_eq!(t.count("c"), 1);
        assert_eq!(t.incr_by(b"c", 1), None, "ties do not expel");
        assert_eq!(t.incr_by(b"c", 5), Some(b"b".to_vec()));
        assert!(t.contains("c") && t.contains("a") && !t.contains("b"));
        assert_eq!(t.list(), vec![(&b"c"[..], 7), (&b"a"[..], 3)]);
        assert_eq!((t.count("a"), t.count("b"), t.count("zz")), (3, 2, 0));
        assert_eq!(t.incr_by(b"a", 0), None);
        assert_eq!(t.total(), 12);
        assert_eq!(t.draws(), 0, "no bucket was shared, so no decay was drawn");
    }

    #[test]
    fn decay_takes_a_bucket_over() {
        // One bucket: a light owner is decayed away by a heavier newcomer.
        let mut t = TopK::try_with_shape(1, 1, 1, 0.9).unwrap();
        t.incr_by(b"a", 5);
        assert_eq!(t.count("a"), 5);
        // Each arrival of b decays a with probability 0.9^c ≥ 0.59: 200 arrivals suffice.
        assert_eq!(t.incr_by(b"b", 200), Some(b"a".to_vec()));
        assert_eq!(t.count("a"), 0);
        let cb = t.count("b");
        assert!(cb > 150 && cb < 200, "{cb}");
        assert!(t.draws() >= 5, "one draw per decay at least");
        // A heavy owner is essentially never decayed: 0.9^1000 ≈ 2e-46.
        let mut u = TopK::try_with_shape(1, 1, 1, 0.9).unwrap();
        u.incr_by(b"a", 1000);
        for _ in 0..1000 {
            u.insert("b");
        }
        assert_eq!(u.count("a"), 1000);
        assert!(u.contains("a") && !u.contains("b"));
        // decay = 1: every foreign arrival decays.
        let mut v = TopK::try_with_shape(1, 1, 1, 1.0).unwrap();
        v.incr_by(b"a", 3);
        v.incr_by(b"b", 2);
        assert_eq!(v.count("a"), 1);
        v.incr_by(b"b", 4);
        assert_eq!(
            (v.count("a"), v.count("b")),
            (0, 4),
            "the decaying arrival takes over"
        );
    }

    #[test]
    fn unit_arrivals_and_increments_agree_in_distribution_of_outcome() {
        // Same takeover either way (the paths consume the generator differently).
        for n in [50u32, 500] {
            let mut a = TopK::try_with_shape(1, 1, 1, 0.9).unwrap();
            let mut b = a.clone();
            a.incr_by(b"x", 3);
            b.incr_by(b"x", 3);
            a.incr_by(b"y", n);
            for _ in 0..n {
                b.insert("y");
            }
            assert_eq!(a.count("x"), 0);
            assert_eq!(b.count("x"), 0);
            assert!(a.contains("y") && b.contains("y"));
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(TopK::try_with_shape(0, 8, 7, 0.9).is_err());
        assert!(TopK::try_with_shape(MAX_K + 1, 8, 7, 0.9).is_err());
        assert!(TopK::try_with_shape(1, 0, 7, 0.9).is_err());
        assert!(TopK::try_with_shape(1, 8, 0, 0.9).is_err());
        assert!(TopK::try_with_shape(1, 8, MAX_DEPTH + 1, 0.9).is_err());
        for d in [0.0, -0.5, 1.0000001, f64::NAN, f64::INFINITY] {
            assert!(TopK::try_with_shape(1, 8, 7, d).is_err(), "{d}");
        }
        assert!(matches!(
            TopK::try_with_shape(1, u64::MAX / 2, 4, 0.9),
            Err(crate::error::Error::TooLarge { .. })
        ));
        assert!(matches!(
            TopK::builder(1)
                .width(1 << 20)
                .max_bytes(1 << 20)
                .try_build(),
            Err(crate::error::Error::TooLarge { .. })
        ));
        let t = TopK::builder(5).try_build().unwrap();
        assert_eq!(
            (t.k(), t.width(), t.depth(), t.decay()),
            (5, DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_DECAY)
        );
    }

    fn sample() -> TopK {
        let mut t = TopK::builder(4)
            .width(16)
            .depth(3)
            .seed(9)
            .try_build()
            .unwrap();
        for x in zipf_stream(50, 2000, 3) {
            t.insert(&x);
        }
        t.incr_by(b"", 5000);
        t
    }

    /// `insert` and `insert_many` are `incr_by` (`TOPK.ADD`, `TOPK.INCRBY`) under the shared
    /// names.
    #[test]
    fn insert_names_match_the_redis_operations() {
        let mut a = TopK::try_with_shape(3, 16, 3, 0.9).unwrap();
        let mut b = a.clone();
        for x in zipf_stream(40, 500, 2) {
            assert_eq!(a.insert(&x), x.with_bytes(|k| b.incr_by(k, 1)));
            assert_eq!(a.insert_many(&x, 3), x.with_bytes(|k| b.incr_by(k, 3)));
        }
        assert_eq!(a, b);
    }

    #[test]
    fn roundtrip_is_exact_and_reproducible() {
        let mut a = sample();
        assert!(a.draws() > 0);
        let bytes = a.to_bytes();
        let mut b = TopK::from_bytes(&bytes).unwrap();
        assert_eq!(a, b);
        assert_eq!(b.to_bytes(), bytes);
        assert!(a.contains(b"".as_slice()), "the empty item is an item");
        // The same updates after a load give the same structure (the generator is saved).
        for x in zipf_stream(80, 1000, 4) {
            assert_eq!(a.insert(&x), b.insert(&x));
        }
        assert_eq!(a, b);
        assert_eq!(a.to_bytes(), b.to_bytes());
        // And a fresh structure fed the same stream is identical.
        assert_eq!(sample(), TopK::from_bytes(&bytes).unwrap());
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serde_goes_through_the_file_format() {
        let t = sample();
        let json = serde_json::to_string(&t).unwrap();
        let back: TopK = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        assert!(serde_json::from_str::<TopK>("[1,2,3]").is_err());
    }

    pub(super) fn reseal(b: &mut [u8]) {
        let body = b.len() - 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..body]);
        b[body..].copy_from_slice(&sum.to_le_bytes());
    }

    #[test]
    fn malformed_heaps_are_refused() {
        let t = sample();
        let good = t.to_bytes();
        let h = u32::from_le_bytes(good[12..16].try_into().unwrap()) as usize;
        let heap_at = h + format::padded_len((t.width() * 3) as usize) as usize;
        let word = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        // Swap the first two heap entries' counts so the heap order breaks.
        let mut b = good.clone();
        let (w0, w1) = (word(&b, heap_at), word(&b, heap_at + 8));
        let (c0, c1) = (w0 as u32, w1 as u32);
        assert!(c0 < c1, "sample's heap has distinct counts at the top");
        b[heap_at..heap_at + 8]
            .copy_from_slice(&((w0 & !0xFFFF_FFFF) | u64::from(c1)).to_le_bytes());
        b[heap_at + 8..heap_at + 16]
            .copy_from_slice(&((w1 & !0xFFFF_FFFF) | u64::from(c0)).to_le_bytes());
        reseal(&mut b);
        assert!(TopK::from_bytes(&b).is_err());
        // A zero count in the heap.
        let mut b = good.clone();
        b[heap_at..heap_at + 4].copy_from_slice(&[0; 4]);
        reseal(&mut b);
        assert!(TopK::from_bytes(&b).is_err());
        // An empty bucket with a fingerprint.
        let mut b = good.clone();
        let empty = (0..(t.width() * 3) as usize)
            .map(|i| h + 8 * i)
            .find(|&i| word(&b, i) == 0)
            .expect("an empty bucket");
        b[empty + 4..empty + 8].copy_from_slice(&1u32.to_le_bytes());
        reseal(&mut b);
        assert!(TopK::from_bytes(&b).is_err());
        // Decay outside (0, 1], k below the heap length.
        let p = 72; // parameters start after the fixed header
        for (at, v) in [(p + 16, 1.5f64.to_bits()), (p + 16, f64::NAN.to_bits())] {
            let mut b = good.clone();
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
            reseal(&mut b);
            assert!(TopK::from_bytes(&b).is_err());
        }
        let mut b = good.clone();
        b[p..p + 4].copy_from_slice(&1u32.to_le_bytes());
        reseal(&mut b);
        assert!(TopK::from_bytes(&b).is_err());
        // Heap byte count beyond the payload.
        let mut b = good.clone();
        b[p + 36..p + 44].copy_from_slice(&u64::MAX.to_le_bytes());
        reseal(&mut b);
        assert!(TopK::from_bytes(&b).is_err());
        // A duplicated item: copy one 4-byte item over another.
        let lens: Vec<usize> = (0..t.len())
            .map(|i| (word(&good, heap_at + 8 * i) >> 32) as usize)
            .collect();
        let data = heap_at + 8 * t.len();
        let offs: Vec<usize> = lens
            .iter()
            .scan(0, |a, &l| {
                let o = *a;
                *a += l;
                Some(o)
            })
            .collect();
        let four: Vec<usize> = (0..t.len()).filter(|&i| lens[i] == 4).collect();
        assert!(four.len() >= 2);
        let (i, j) = (offs[four[0]], offs[four[1]]);
        let mut b = good;
        let src: Vec<u8> = b[data + i..data + i + 4].to_vec();
        b[data + j..data + j + 4].copy_from_slice(&src);
        reseal(&mut b);
        let e = TopK::from_bytes(&b).unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = TopK::from_bytes(&bytes);
        }

        /// Valid bytes with some bytes changed and the checksum fixed: decoded or refused,
        /// never a panic, and what decodes survives its own round trip.
        #[test]
        fn mutated_valid_bytes_never_panic(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6)
        ) {
            static SAMPLE: OnceLock<Vec<u8>> = OnceLock::new();
            let mut b = SAMPLE.get_or_init(|| sample().to_bytes()).clone();
            let n = b.len() - 8;
            for (at, v) in edits {
                b[at % n] = v;
            }
            reseal(&mut b);
            if let Ok(t) = TopK::from_bytes(&b) {
                let again = TopK::from_bytes(&t.to_bytes()).unwrap();
                prop_assert_eq!(again, t);
            }
        }
    }
}
