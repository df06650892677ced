//! The age-partitioned Bloom filter: [`AgePartitionedBloomFilter`], a filter over a sliding
//! window of the last N insertions (its docs say which paper it follows and when to pick it).

use crate::dispatch::{hashed_set_kind, SetStats};
use crate::error::{inconsistent, invalid, Result};
use crate::filter::{Build, Builder, Filter, Merge, Stats};
use crate::hash::{mix64, reduce, Hashed, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::kind::Capabilities;
use crate::params::{self, APBF_MAX_K, APBF_MAX_L};
use crate::sets::bits::Core;
use crate::store;

pub(crate) mod blocked;
pub use blocked::WindowLayout;

/// A sliding-window filter: it remembers the last `window` insertions and forgets older ones,
/// in fixed memory however long the stream (Shtul, Baquero & Almeida, "Age-Partitioned Bloom
/// Filters", 2020, §3; the rate from §4).
///
/// `k + l` slices of `m` bits form a ring, newest first. An insertion sets one bit in each of
/// the `k` newest slices. Every `g = ⌈window / l⌉` insertions (a generation) the oldest slice
/// is cleared and becomes the newest. A query looks, from the newest slice on, for `k`
/// consecutive slices holding the key's bit: a key inserted `a` generations ago has its bits in
/// the slices of ages `a .. a + k`, so it is found while `a ≤ l`.
///
/// Promises:
/// - **no false negative** for a key among the last `window` insertions (`l · g ≥ window`);
/// - the false-positive rate is at most the target at every point of an unbounded stream
///   ([`worst_fpr`](Self::worst_fpr), the §4 model, just before a shift in the steady state);
/// - a key followed by `window + slack()` further insertions is forgotten: it answers true
///   only as a false positive ([`slack`](Self::slack)); in between, its chance of being found
///   falls one slice at a time.
///
/// `(k, l)` is the pair needing the least memory for the target rate with `l ≤ 2k`, and `m`
/// the smallest slice meeting it ([`params::apbf_shape`]). The rate model is the paper's
/// (§4: a key never inserted is found when `k` consecutive slices hold its bit) with each
/// slice's exact fill, `1 - (1 - 1/m)^i` for its `i` insertions, where the paper takes fills
/// linear in the insertions; the exact fills are higher, so this sizing meets the target where
/// the paper's formula would slightly miss it. The paper's configurations keep `l` near `k`;
/// allowing up to `2k` saves memory (below the paper's configurations at their rates) while a
/// query for a key never inserted still probes at most `k + l ≤ 3k` slices.
///
/// **When to pick it:** deduplicating a stream against its recent past ("seen among the last
/// N items?") in memory fixed by N and the rate, where a plain filter would fill up and two
/// rotated filters would double the rate and forget half the window at once.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{AgePartitionedBloomFilter, Filter};
///
/// let mut f = AgePartitionedBloomFilter::try_new(1000, 0.01)?;
/// f.insert("old");
/// for i in 0..999u64 {
///     f.insert(&i);
/// }
/// assert!(f.contains("old")); // among the last 1000 insertions
/// for i in 999..1000 + f.slack() {
///     f.insert(&i);
/// }
/// // followed by window + slack insertions: found no more often than a key never inserted
/// assert!(f.worst_fpr() <= 0.01);
/// assert!((1..=1000).all(|j| f.contains(&(999 + f.slack() - j)))); // the window
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AgePartitionedBloomFilter {
    /// Words of the `k + l` slices, physical slice `i` at bits `i·m .. (i+1)·m`; `items` counts
    /// every insertion, `capacity` is the window.
    core: Core,
    window: u64,
    k: u32,
    l: u32,
    slice_bits: u64,
    generation: u64,
    /// Physical index of the newest slice.
    head: u32,
    /// Insertions in the current generation, `< generation`.
    count: u64,
    /// Generations ended since the filter was empty.
    shifts: u64,
    /// Sliced, or blocked (the slices' words interleaved; `slice_bits` a multiple of 64).
    layout: WindowLayout,
}

/// The builder of an [`AgePartitionedBloomFilter`]: `capacity` is the window, `fpr` the
/// worst-point rate.
pub type AgePartitionedBuilder = Builder<AgePartitionedBloomFilter>;

/// The options of an [`AgePartitionedBuilder`]: an exact shape in place of the sizing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgePartitionedOptions {
    /// `(k, l, slice_bits)`, when given.
    shape: Option<(u32, u32, u64)>,
    /// The layout (sliced unless set).
    layout: WindowLayout,
}

impl Builder<AgePartitionedBloomFilter> {
    /// An exact shape, `k + l` slices of `slice_bits` bits, in place of the one sized for the
    /// rate (the window is still `capacity`; a rate given is kept as the target, not used).
    ///
    /// ```
    /// # fn main() -> bloomery::Result<()> {
    /// use bloomery::AgePartitionedBloomFilter;
    ///
    /// let f = AgePartitionedBloomFilter::builder()
    ///     .capacity(700)
    ///     .shape(11, 61, 200)
    ///     .seed(7)
    ///     .try_build()?;
    /// assert_eq!((f.hashes(), f.remembering_slices(), f.generation()), (11, 61, 12));
    /// # Ok(()) }
    /// ```
    pub fn shape(mut self, k: u32, l: u32, slice_bits: u64) -> Self {
        self.opts.shape = Some((k, l, slice_bits));
        self
    }

    /// The layout of the slices: [`WindowLayout::Blocked`] keeps a key's bits in one block of
    /// `k + l` words (Shtul et al., the age-partitioned blocked Bloom filter), sized by its own
    /// model; an exact [`shape`](Self::shape) then needs slices of a multiple of 64 bits.
    ///
    /// ```
    /// # fn main() -> bloomery::Result<()> {
    /// use bloomery::builders::WindowLayout;
    /// use bloomery::{AgePartitionedBloomFilter, Filter, Kind};
    ///
    /// let mut f = AgePartitionedBloomFilter::builder()
    ///     .capacity(10_000)
    ///     .fpr(0.01)
    ///     .layout(WindowLayout::Blocked)
    ///     .try_build()?;
    /// f.insert("a");
    /// assert!(f.contains("a"));
    /// assert_eq!(f.layout().kind(), Kind::WindowBlocked);
    /// assert!(f.worst_fpr() <= 0.01);
    /// # Ok(()) }
    /// ```
    pub fn layout(mut self, layout: WindowLayout) -> Self {
        self.opts.layout = layout;
        self
    }
}

impl Build for AgePartitionedBloomFilter {
    type Options = AgePartitionedOptions;
    fn build(b: &Builder<Self>) -> Result<Self> {
        let s = &b.sizing;
        s.refuse(
            &["bits", "hashes"],
            "a window filter (sized by window and rate)",
        )?;
        let layout = b.opts.layout;
        let (n, p, (k, l, m)) = match b.opts.shape {
            Some(shape) => {
                let n = s.capacity.ok_or_else(|| invalid("capacity", "required"))?;
                if let Some(p) = s.fpr {
                    params::check_fpr(p)?;
                }
                (n, s.fpr.unwrap_or(0.0), shape)
            }
            None => {
                let (n, p) = s.sized()?;
                if layout == WindowLayout::Blocked {
                    let (k, l, blocks) = blocked::blocked_shape(n, p)?;
                    (n, p, (k, l, blocks * blocked::WORD_BITS))
                } else {
                    let shape = params::apbf_shape(n, p)?;
                    (n, p, (shape.k, shape.l, shape.slice_bits))
                }
            }
        };
        let mut f = Self::with_shape(n, k, l, m, layout, s.key_hasher(), s.limit())?;
        f.core.target_fpr = p;
        Ok(f)
    }
}

/// `x_i` of the enhanced double-hashing sequence ([`Hashed::sequence`]) in closed form:
/// `h1 + i·h2 + C(i, 3)` (wrapping).
#[inline]
fn sequence_at(h: Hashed, i: u64) -> u64 {
    let c3 = if i < 3 {
        0
    } else {
        // i(i-1)(i-2)/6 exactly for i ≤ 128
        i * (i - 1) * (i - 2) / 6
    };
    h.lo.wrapping_add(i.wrapping_mul(h.hi)).wrapping_add(c3)
}

/// The key's bit in slice `p` of `m` bits: the sequence's `x_p`, mixed, then reduced. The mix
/// makes the slices' positions independent: unmixed, two keys whose `(h1, h2)` nearly agree
/// would meet in every slice at once (double hashing's `n/m²` term), which in a window of small
/// slices is a run of k collisions — measured as a rate above the model at a 10⁴-item window
/// and 0.1%.
#[inline]
fn slice_bit(h: Hashed, p: u64, m: u64) -> u64 {
    reduce(mix64(sequence_at(h, p)), m)
}

/// Clear bits `start .. end`.
fn clear_range(words: &mut [u64], start: u64, end: u64) {
    let mut i = start;
    while i < end {
        let w = (i / 64) as usize;
        let bit = i % 64;
        let n = (64 - bit).min(end - i);
        let mask = if n == 64 {
            !0
        } else {
            ((1u64 << n) - 1) << bit
        };
        words[w] &= !mask;
        i += n;
    }
}

impl AgePartitionedBloomFilter {
    /// A builder (`capacity` = window, `fpr` = target rate).
    pub fn builder() -> Builder<Self> {
        Builder::new()
    }

    /// A window of `window` insertions at worst-point rate `p`.
    pub fn try_new(window: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(window).fpr(p).try_build()
    }

    /// An exact shape: a window of `window` insertions over `k + l` slices of `slice_bits` bits.
    pub fn try_with_shape(window: u64, k: u32, l: u32, slice_bits: u64) -> Result<Self> {
        Self::with_shape(
            window,
            k,
            l,
            slice_bits,
            WindowLayout::Sliced,
            KeyHasher::new(),
            store::max_bytes(),
        )
    }

    fn with_shape(
        window: u64,
        k: u32,
        l: u32,
        slice_bits: u64,
        layout: WindowLayout,
        hasher: KeyHasher,
        limit: u64,
    ) -> Result<Self> {
        params::check_capacity(window)?;
        params::check_hashes(k, APBF_MAX_K)?;
        if l == 0 || l > APBF_MAX_L {
            return Err(invalid(
                "l",
                format!("must be in 1..={APBF_MAX_L}, got {l}"),
            ));
        }
        if slice_bits == 0 {
            return Err(invalid("bits", "each slice needs at least one bit"));
        }
        if layout == WindowLayout::Blocked && !slice_bits.is_multiple_of(blocked::WORD_BITS) {
            return Err(invalid(
                "bits",
                format!("a blocked window's slices are whole 64-bit words, got {slice_bits} bits"),
            ));
        }
        let m = slice_bits
            .checked_mul(u64::from(k + l))
            .ok_or_else(|| invalid("bits", "too large"))?;
        store::check_size(m.div_ceil(8), limit)?;
        let words = usize::try_from(m.div_ceil(64))
            .map_err(|_| invalid("bits", "too large for this platform"))?;
        let mut core = Core::new(words, hasher, limit)?;
        core.capacity = window;
        Ok(Self {
            core,
            window,
            k,
            l,
            slice_bits,
            generation: window.div_ceil(u64::from(l)),
            head: 0,
            count: 0,
            shifts: 0,
            layout,
        })
    }

    /// Move the structure's heap allocation with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the words of every
    /// slice, one array in either layout. Words in a map (anonymous or a file's) never move
    /// (see `Words::relocate`). `mv` gets the allocation's address and returns where its bytes
    /// are now, or `None` to leave it.
    ///
    /// # Safety
    /// A returned address must hold a copy of the allocation's bytes in an allocation of the
    /// global allocator of the same size and at least 64-byte alignment, and the old
    /// allocation must have been freed; nothing may reference the structure during the call.
    #[doc(hidden)]
    pub unsafe fn relocate_arrays(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.core.words.relocate(mv) };
    }

    /// The layout of the slices (the file's kind: `window` or `window-blocked`).
    pub fn layout(&self) -> WindowLayout {
        self.layout
    }

    /// Blocks of the blocked layout (64-bit words per slice); 0 for the sliced layout.
    pub fn blocks(&self) -> u64 {
        match self.layout {
            WindowLayout::Sliced => 0,
            WindowLayout::Blocked => self.slice_bits / blocked::WORD_BITS,
        }
    }

    /// Set bits in the slice of physical index `p`.
    fn ones_in_slice(&self, p: u64) -> u64 {
        let w = self.core.words.as_slice();
        match self.layout {
            WindowLayout::Sliced => {
                store::count_ones_range(w, p * self.slice_bits, (p + 1) * self.slice_bits)
            }
            WindowLayout::Blocked => w
                .iter()
                .skip(p as usize)
                .step_by(self.slices() as usize)
                .map(|x| u64::from(x.count_ones()))
                .sum(),
        }
    }

    /// The window: keys among the last `window()` insertions are always found.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Further insertions beyond the window after which a key is surely forgotten: a key
    /// followed by `window() + slack()` insertions answers true only as a key never inserted
    /// (at most the target rate). It is `(k + l)·g - 1 - window` for generations of `g`
    /// insertions: a key's bits sit in `k` consecutive slices, the last of which is cleared
    /// `k + l` generations after the key's own (Shtul et al. §3). In between the key fades: it
    /// is found for at least `l` whole generations, then with a chance that falls, one
    /// cleared slice per generation, from about a slice's fill to the target rate.
    pub fn slack(&self) -> u64 {
        self.slices() * self.generation - 1 - self.window
    }

    /// Further insertions after which a key is no longer surely found: `l·g` at the least
    /// (`≥ window`), for a key inserted last in its generation.
    pub fn guaranteed_window(&self) -> u64 {
        u64::from(self.l) * self.generation
    }

    /// Slices taking each insertion (k).
    pub fn hashes(&self) -> u32 {
        self.k
    }

    /// Slices that only remember (l).
    pub fn remembering_slices(&self) -> u32 {
        self.l
    }

    /// Bits per slice (m).
    pub fn slice_bits(&self) -> u64 {
        self.slice_bits
    }

    /// Insertions per generation (g).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Insertions so far in the current generation, `0 .. generation()`.
    pub fn position_in_generation(&self) -> u64 {
        self.count
    }

    /// Generations ended (shifts) since the filter was empty.
    pub fn generations_ended(&self) -> u64 {
        self.shifts
    }

    /// Physical index of the newest slice, `0 .. k + l`.
    pub fn ring_position(&self) -> u32 {
        self.head
    }

    /// Every insertion so far.
    pub fn insertions(&self) -> u64 {
        self.core.items
    }

    /// Set bits in each slice, newest first.
    pub fn slice_ones(&self) -> Vec<u64> {
        (0..self.slices())
            .map(|j| self.ones_in_slice(self.physical(j)))
            .collect()
    }

    /// The rate the §4 model gives at the current point of the stream (for the blocked layout,
    /// the model averaged over the blocks' loads: see [`WindowLayout::Blocked`]).
    pub fn model_fpr(&self) -> f64 {
        if self.layout == WindowLayout::Blocked {
            return blocked::blocked_fpr(
                self.k,
                self.l,
                self.blocks(),
                self.generation,
                self.count,
                self.shifts,
            )
            .0;
        }
        params::apbf_fpr(
            self.k,
            self.l,
            self.slice_bits,
            self.generation,
            self.count,
            self.shifts,
        )
    }

    /// The rate the model gives at the worst point of an unbounded stream (at most the target
    /// when sized by a rate).
    ///
    /// For the blocked layout this is the bound its sizing keeps under the target: the model's
    /// average over `MODEL_SAMPLES` (4,096) draws of the blocks' loads plus
    /// three standard errors.
    pub fn worst_fpr(&self) -> f64 {
        match self.layout {
            WindowLayout::Sliced => {
                params::apbf_fpr_worst(self.k, self.l, self.slice_bits, self.generation)
            }
            WindowLayout::Blocked => {
                blocked::blocked_fpr_worst(self.k, self.l, self.blocks(), self.generation)
            }
        }
    }

    /// Forget every item.
    pub fn clear(&mut self) {
        self.core.words.as_mut_slice().fill(0);
        self.core.items = 0;
        self.head = 0;
        self.count = 0;
        self.shifts = 0;
    }

    fn slices(&self) -> u64 {
        u64::from(self.k) + u64::from(self.l)
    }

    /// Physical index of the slice of age `j`.
    #[inline]
    fn physical(&self, j: u64) -> u64 {
        (u64::from(self.head) + j) % self.slices()
    }

    /// End the generation: clear the oldest slice and make it the newest.
    fn shift(&mut self) {
        let s = self.slices();
        let oldest = (u64::from(self.head) + s - 1) % s;
        let m = self.slice_bits;
        let words = self.core.words.as_mut_slice();
        match self.layout {
            WindowLayout::Sliced => clear_range(words, oldest * m, (oldest + 1) * m),
            WindowLayout::Blocked => words
                .iter_mut()
                .skip(oldest as usize)
                .step_by(s as usize)
                .for_each(|w| *w = 0),
        }
        self.head = oldest as u32;
        self.count = 0;
        self.shifts = self.shifts.saturating_add(1);
    }
}

impl Filter for AgePartitionedBloomFilter {
    #[inline]
    fn hasher(&self) -> &KeyHasher {
        &self.core.hasher
    }

    /// Sets the key's bit in each of the `k` newest slices and advances the window (every
    /// insertion counts, repeats too, so a repeated key stays fresh). True when a bit changed.
    #[inline]
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        if self.layout == WindowLayout::Blocked {
            return self.insert_blocked(h);
        }
        let m = self.slice_bits;
        let s = self.slices();
        let head = u64::from(self.head);
        let words = self.core.words.as_mut_slice();
        let mut new = false;
        for j in 0..u64::from(self.k) {
            let p = (head + j) % s;
            new |= store::set_bit(words, p * m + slice_bit(h, p, m));
        }
        self.core.items = self.core.items.saturating_add(1);
        self.count += 1;
        if self.count >= self.generation {
            self.shift();
        }
        new
    }

    /// True when `k` consecutive slices, scanning from the newest, hold the key's bit.
    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        if self.layout == WindowLayout::Blocked {
            return self.contains_blocked(h);
        }
        self.contains_sliced_scan(h)
    }

    /// Every insertion so far (the window holds the last `window()` of them).
    fn len(&self) -> u64 {
        self.core.items
    }
}

/// Window filters do not merge: two windows over different streams have no common age for
/// their keys. Both operations answer [`Error::Unsupported`](crate::Error::Unsupported).
impl Merge for AgePartitionedBloomFilter {
    fn union_with(&mut self, _other: &Self) -> Result<()> {
        Err(crate::dispatch::unsupported(
            Kind::Window,
            crate::kind::Capability::Merge,
        ))
    }

    fn intersect_with(&mut self, _other: &Self) -> Result<()> {
        Err(crate::dispatch::unsupported(
            Kind::Window,
            crate::kind::Capability::Merge,
        ))
    }
}

impl Stats for AgePartitionedBloomFilter {
    fn bit_len(&self) -> u64 {
        self.slice_bits * self.slices()
    }
    fn count_ones(&self) -> u64 {
        store::count_ones(self.core.words.as_slice())
    }
    fn hash_count(&self) -> u32 {
        self.k
    }
    /// The §4 model at the current point ([`model_fpr`](Self::model_fpr)).
    fn current_fpr(&self) -> f64 {
        self.model_fpr()
    }
    /// The window.
    fn capacity(&self) -> u64 {
        self.window
    }
    fn target_fpr(&self) -> f64 {
        self.core.target_fpr
    }
    /// Distinct keys in the window, estimated from the fill of the `k` newest slices' oldest
    /// (which holds `k - 1` full generations and the current one's insertions).
    fn estimated_len(&self) -> f64 {
        let j = u64::from(self.k) - 1;
        let ones = self.ones_in_slice(self.physical(j));
        let seen = params::estimate_items(self.slice_bits, 1, ones);
        let span = (j.min(self.shifts) * self.generation + self.count) as f64;
        if span == 0.0 {
            return 0.0;
        }
        // scale the distinct keys of the last `span` insertions to the window
        let window = (self.window.min(self.core.items)) as f64;
        (seen * window / span).min(window)
    }
}

impl Persist for AgePartitionedBloomFilter {
    const KIND: Kind = Kind::Window;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let params = ParamWriter::new()
            .u64(self.window)
            .u32(self.k)
            .u32(self.l)
            .u64(self.slice_bits)
            .u32(self.head)
            .u64(self.count)
            .u64(self.shifts)
            .finish();
        (
            self.core.header(self.layout.kind(), params),
            Payload::new(vec![&self.core.words]),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let window = r.u64()?;
        let k = r.u32()?;
        let l = r.u32()?;
        let slice_bits = r.u64()?;
        let head = r.u32()?;
        let count = r.u64()?;
        let shifts = r.u64()?;
        r.finish()?;
        let layout = match d.header.kind {
            Kind::WindowBlocked => WindowLayout::Blocked,
            _ => WindowLayout::Sliced,
        };
        if window == 0
            || k == 0
            || k > APBF_MAX_K
            || l == 0
            || l > APBF_MAX_L
            || slice_bits == 0
            || (layout == WindowLayout::Blocked && !slice_bits.is_multiple_of(blocked::WORD_BITS))
        {
            return Err(inconsistent(format!(
                "window shape window={window} k={k} l={l} m={slice_bits} layout={}",
                layout.name()
            )));
        }
        if d.header.capacity != window {
            return Err(inconsistent(format!(
                "window {window} differs from the stored capacity {}",
                d.header.capacity
            )));
        }
        let generation = window.div_ceil(u64::from(l));
        if head >= k + l {
            return Err(inconsistent(format!(
                "ring position {head} is not below k + l = {}",
                k + l
            )));
        }
        if count >= generation {
            return Err(inconsistent(format!(
                "{count} insertions in a generation of {generation}"
            )));
        }
        let m = slice_bits
            .checked_mul(u64::from(k + l))
            .ok_or_else(|| inconsistent("m overflows"))?;
        let words = usize::try_from(m.div_ceil(64)).map_err(|_| inconsistent("m too large"))?;
        format::check_payload(d, words)?;
        let w = src.words(d.payload_offset, words, limit)?;
        if m % 64 != 0 && w.as_slice()[words - 1] >> (m % 64) != 0 {
            return Err(inconsistent("bits set beyond the last slice"));
        }
        Ok(Self {
            core: Core::from_header(&d.header, w),
            window,
            k,
            l,
            slice_bits,
            generation,
            head,
            count,
            shifts,
            layout,
        })
    }
}

crate::filter::impl_extend!(AgePartitionedBloomFilter);

impl crate::dispatch::SetKind for AgePartitionedBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        ..Capabilities::NONE
    };
    hashed_set_kind!();
    fn kind(&self) -> Kind {
        self.layout.kind()
    }
    fn layout_name(&self) -> Option<&'static str> {
        Some(self.layout.name())
    }
    fn stats(&self) -> SetStats {
        SetStats::of(self)
    }
}

impl AgePartitionedBloomFilter {
    /// The blocked layout's insertion: one bit in each of the words of the `k` newest slices
    /// of the key's block.
    #[inline]
    fn insert_blocked(&mut self, h: Hashed) -> bool {
        let s = self.slices();
        let base = blocked::block_of(h, self.blocks()) * s;
        let head = u64::from(self.head);
        let words = self.core.words.as_mut_slice();
        let mut pos = blocked::Positions::new(h);
        let mut new = false;
        let mut p = head;
        for _ in 0..self.k {
            let mask = 1u64 << pos.bit(p);
            let w = &mut words[(base + p) as usize];
            new |= *w & mask == 0;
            *w |= mask;
            p += 1;
            if p == s {
                p = 0;
            }
        }
        self.core.items = self.core.items.saturating_add(1);
        self.count += 1;
        if self.count >= self.generation {
            self.shift();
        }
        new
    }

    /// The sliced layout's query, one slice at a time from the newest, stopping at the first
    /// run of `k` hits or when too few slices are left for one. (Reading every slice at once,
    /// as the blocked layout does, costs a hash per slice for a present key's first `k` hits:
    /// slower at every size measured.)
    fn contains_sliced_scan(&self, h: Hashed) -> bool {
        let m = self.slice_bits;
        let s = self.slices();
        let k = u64::from(self.k);
        let head = u64::from(self.head);
        let words = self.core.words.as_slice();
        let mut run = 0;
        for j in 0..s {
            let p = (head + j) % s;
            if store::get_bit(words, p * m + slice_bit(h, p, m)) {
                run += 1;
                if run == k {
                    return true;
                }
            } else {
                run = 0;
                if s - j - 1 < k {
                    return false;
                }
            }
        }
        false
    }

    /// The blocked layout's query: `k` consecutive words of the key's block, from the newest
    /// slice on, holding the key's bit.
    #[inline]
    fn contains_blocked(&self, h: Hashed) -> bool {
        let s = self.slices();
        let base = blocked::block_of(h, self.blocks()) * s;
        let head = u64::from(self.head);
        let words = self.core.words.as_slice();
        if s > 64 {
            return self.contains_blocked_scan(h);
        }
        // every word of the block read at once, without a branch per slice
        let block = &words[base as usize..(base + s) as usize];
        let hits = blocked::by_age(blocked::hits(h, block), head, s);
        blocked::has_run(hits, self.k)
    }

    /// The blocked layout's query for any number of slices, one slice at a time from the
    /// newest (the reference the tests hold [`Self::contains_blocked`] to).
    fn contains_blocked_scan(&self, h: Hashed) -> bool {
        let s = self.slices();
        let base = blocked::block_of(h, self.blocks()) * s;
        let head = u64::from(self.head);
        let words = self.core.words.as_slice();
        let k = u64::from(self.k);
        let mut pos = blocked::Positions::new(h);
        let mut run = 0;
        let mut p = head;
        for j in 0..s {
            let hit = words[(base + p) as usize] >> pos.bit(p) & 1 == 1;
            p += 1;
            if p == s {
                p = 0;
            }
            if hit {
                run += 1;
                if run == k {
                    return true;
                }
            } else {
                run = 0;
                if s - j - 1 < k {
                    return false;
                }
            }
        }
        false
    }
}

pub(crate) mod time;

#[cfg(test)]
mod blocked_tests;
#[cfg(test)]
mod tests;
