//! The d-left counting Bloom filter: [`DLeftCountingBloomFilter`] (its docs say which paper it
//! follows and when to pick it).

use crate::counters::{self, Counters};
use crate::error::{inconsistent, invalid, Error, Result};
use crate::filter::{Build, Builder, Count, Remove, RemoveError, Sizing};
use crate::hash::{mix64, Hashed, Key, KeyHasher};
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist};
use crate::kind::Capabilities;
use crate::params::{self, DLeftShape};
use crate::store;

/// Most subtables.
pub const MAX_TABLES: u32 = 8;
/// Most cells per bucket.
pub const MAX_CELLS: u32 = 64;

/// The d-left counting Bloom filter (dlCBF; Bonomi, Mitzenmacher, Panigrahy, Singh &
/// Varghese, "An Improved Construction for Counting Bloom Filters", ESA 2006 — the deletable
/// filter Matsumoto, Hazeyama & Kadobayashi compares against).
///
/// **Layout.** d subtables of B buckets (B a power of two), each bucket `c` cells, each cell a
/// `(remainder, counter)` pair of `r + w` bits packed with `counters`; an empty cell
/// is all zero (counter 0).
///
/// **Hashing.** A key's hash ([`hash`](crate::KeyHasher), the one path) gives a *true fingerprint* T of
/// `log2 B + r` bits. Subtable i applies a fixed permutation `P_i` of those bits and splits
/// `P_i(T)` into a bucket (the high `log2 B` bits) and a remainder (the low r bits). Because
/// each `P_i` is a bijection, two keys that agree on (bucket, remainder) in one subtable have
/// the same T and so agree in every subtable: a fingerprint is stored at most once, and
/// removing a key can never decrement a cell belonging to a key with a different T — the
/// property that makes deletion safe.
///
/// **Operations.** Insert: if a cell of one of the key's d buckets holds its remainder, that
/// cell's counter is incremented (saturating); otherwise the remainder goes into an empty cell
/// of the least loaded of the d buckets, the leftmost on ties (d-left choice keeps buckets
/// balanced, so small buckets rarely overflow; a full set of buckets is reported as
/// [`crate::Error::Full`]). Remove: decrement the cell holding the remainder (refused with
/// [`RemoveError::NotPresent`] when there is none; a saturated counter is never decremented,
/// for the reason given in [`counting`](crate::CountingBloomFilter)); a cell whose counter reaches zero is emptied.
/// Count: the matching cell's counter, 0 if none — never below the true count while the
/// counter has not saturated.
///
/// **False-positive rate** ([`params::dleft_fpr`]): a query probes d buckets holding `n/B`
/// cells on average, each matching its remainder with probability `2^-r`:
/// `f = 1 - (1 - 2^-r)^{n/B} ≈ n / (B·2^r)`. The default shape ([`params::dleft_shape`]):
/// d = 4, c = 8 cells loaded to 6 on average, 2-bit counters (the paper's choice), r chosen
/// for the target rate.
///
/// **When to pick it:** a deletable set in about half the memory of a 4-bit counting filter
/// at the same false-positive rate (compare [`DLeftCountingBloomFilter::bits_per_item`] with
/// a [`crate::CountingBloomFilter`]'s `4·m/n`). Counts are small (2-bit counters by default);
/// for large multiplicities use wider counters or [`crate::CountMinSketch`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, DLeftCountingBloomFilter, Remove};
///
/// let mut f = DLeftCountingBloomFilter::try_new(1000, 0.01)?;
/// assert!(f.insert("k")?); // new
/// f.insert("k")?;
/// assert_eq!(f.count("k"), 2);
/// f.remove("k")?;
/// f.remove("k")?;
/// assert!(!f.contains("k"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DLeftCountingBloomFilter {
    cells: Counters,
    shape: DLeftShape,
    bucket_bits: u32,
    hasher: KeyHasher,
    items: u64,
    occupied: u64,
    capacity: u64,
    target_fpr: f64,
}

/// Builder for [`DLeftCountingBloomFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, DLeftCountingBloomFilter};
///
/// // four tables of 8-cell buckets, sized for 1,000 keys at 1%
/// let mut f = DLeftCountingBloomFilter::builder().capacity(1000).fpr(0.01).tables(4).cells(8).try_build()?;
/// f.insert("k")?;
/// assert_eq!(f.count("k"), 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DLeftBuilder {
    sizing: Sizing,
    shape: Option<DLeftShape>,
    tables: u32,
    cells: u32,
    counter_bits: u32,
}

impl DLeftBuilder {
    crate::filter::sizing_setters!();

    /// An exact shape, overriding the sizing.
    pub fn shape(mut self, s: DLeftShape) -> Self {
        self.shape = Some(s);
        self
    }
    /// Subtables (d, default 4).
    pub fn tables(mut self, d: u32) -> Self {
        self.tables = d;
        self
    }
    /// Cells per bucket (default 8).
    pub fn cells(mut self, c: u32) -> Self {
        self.cells = c;
        self
    }
    /// Bits per cell counter (default 2).
    pub fn counter_bits(mut self, w: u32) -> Self {
        self.counter_bits = w;
        self
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<DLeftCountingBloomFilter> {
        if self.sizing.bits.is_some() || self.sizing.hashes.is_some() {
            return Err(invalid(
                "bits",
                "a d-left counting filter is shaped by capacity and fpr (or an explicit DLeftShape)",
            ));
        }
        let (shape, n, p) = match self.shape {
            Some(s) => (
                s,
                self.sizing.capacity.unwrap_or(0),
                self.sizing.fpr.unwrap_or(0.0),
            ),
            None => {
                let n = self
                    .sizing
                    .capacity
                    .ok_or_else(|| invalid("capacity", "required"))?;
                let p = self.sizing.fpr.ok_or_else(|| invalid("fpr", "required"))?;
                if self.counter_bits == 0 || self.counter_bits > 31 {
                    return Err(invalid(
                        "counter_bits",
                        format!("must be in 1..=31, got {}", self.counter_bits),
                    ));
                }
                let s = params::dleft_shape(n, p, self.tables, self.cells, self.counter_bits)?;
                (s, n, p)
            }
        };
        let bucket_bits = check_shape(&shape).map_err(|(name, why)| invalid(name, why))?;
        store::check_size(shape.bits() / 8, self.sizing.limit())?;
        let width = shape.remainder_bits + shape.counter_bits;
        Ok(DLeftCountingBloomFilter {
            cells: Counters::zeroed(cell_count(&shape), width, self.sizing.limit())?,
            shape,
            bucket_bits,
            hasher: self.sizing.key_hasher(),
            items: 0,
            occupied: 0,
            capacity: n,
            target_fpr: if p > 0.0 && p < 1.0 { p } else { 0.0 },
        })
    }
}

fn cell_count(s: &DLeftShape) -> u64 {
    u64::from(s.tables) * s.buckets * u64::from(s.cells)
}

/// Validate a shape; returns log2 of the bucket count.
fn check_shape(s: &DLeftShape) -> std::result::Result<u32, (&'static str, String)> {
    if s.tables == 0 || s.tables > MAX_TABLES {
        return Err((
            "tables",
            format!("must be in 1..={MAX_TABLES}, got {}", s.tables),
        ));
    }
    if s.cells == 0 || s.cells > MAX_CELLS {
        return Err((
            "cells",
            format!("must be in 1..={MAX_CELLS}, got {}", s.cells),
        ));
    }
    if s.buckets == 0 || !s.buckets.is_power_of_two() || s.buckets > 1 << 40 {
        return Err((
            "buckets",
            format!("must be a power of two in 1..=2^40, got {}", s.buckets),
        ));
    }
    if s.remainder_bits == 0 || s.counter_bits == 0 {
        return Err((
            "remainder_bits",
            "remainders and counters need at least 1 bit".into(),
        ));
    }
    if s.remainder_bits.saturating_add(s.counter_bits) > counters::MAX_WIDTH {
        return Err((
            "remainder_bits",
            format!(
                "a cell of {} + {} bits exceeds {} bits",
                s.remainder_bits,
                s.counter_bits,
                counters::MAX_WIDTH
            ),
        ));
    }
    let bucket_bits = s.buckets.trailing_zeros();
    if bucket_bits.saturating_add(s.remainder_bits) > 64 {
        return Err(("remainder_bits", "fingerprint wider than 64 bits".into()));
    }
    Ok(bucket_bits)
}

/// The permutation `P_i` of t-bit values: add, multiply by an odd constant, xor-shift,
/// multiply, xor-shift — each step a bijection modulo `2^t`.
#[inline]
fn permute(x: u64, i: u32, t: u32) -> u64 {
    let mask = if t == 64 { u64::MAX } else { (1u64 << t) - 1 };
    let s = t.div_ceil(2).max(1);
    let c = mix64(u64::from(i) + 1);
    let o1 = mix64(u64::from(i) + 101) | 1;
    let o2 = mix64(u64::from(i) + 201) | 1;
    let mut x = x.wrapping_add(c) & mask;
    x = x.wrapping_mul(o1) & mask;
    x ^= x >> s;
    x = x.wrapping_mul(o2) & mask;
    x ^= x >> s;
    x
}

/// Where a key's remainder sits: the index of its cell, if any.
enum Found {
    At(u64),
    Missing,
}

impl DLeftCountingBloomFilter {
    /// A builder (d = 4, 8 cells per bucket, 2-bit counters).
    pub fn builder() -> DLeftBuilder {
        DLeftBuilder {
            sizing: Sizing::default(),
            shape: None,
            tables: 4,
            cells: 8,
            counter_bits: 2,
        }
    }

    /// Sized for `n` items at false-positive rate `p` with the default layout.
    pub fn try_new(n: u64, p: f64) -> Result<Self> {
        Self::builder().capacity(n).fpr(p).try_build()
    }

    /// The shape.
    pub fn shape(&self) -> DLeftShape {
        self.shape
    }

    /// Total bits of the cell arrays.
    pub fn bit_len(&self) -> u64 {
        self.shape.bits()
    }

    /// Bits per stored item: total bits over the capacity it was sized for, or over the
    /// occupied cells when built from an explicit shape (infinite when empty).
    pub fn bits_per_item(&self) -> f64 {
        let n = if self.capacity > 0 {
            self.capacity
        } else {
            self.occupied
        };
        self.shape.bits() as f64 / n as f64
    }

    /// Cells in use (distinct fingerprints stored).
    pub fn occupied_cells(&self) -> u64 {
        self.occupied
    }

    /// Inserts minus removes.
    pub fn len(&self) -> u64 {
        self.items
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// The modelled false-positive rate at the current number of stored fingerprints.
    pub fn current_fpr(&self) -> f64 {
        params::dleft_fpr(self.occupied, self.shape.buckets, self.shape.remainder_bits)
    }

    /// The distinct keys it was sized for (0 for an explicit shape).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The rate asked for at capacity (0 for an explicit shape).
    pub fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// Cells whose counter is saturated.
    pub fn saturated_counters(&self) -> u64 {
        let max = self.counter_max();
        (0..self.cells.len())
            .filter(|&i| self.cells.get(i) & max == max)
            .count() as u64
    }

    #[inline]
    fn counter_max(&self) -> u32 {
        (1u32 << self.shape.counter_bits) - 1
    }

    /// (first cell index of the bucket, remainder) in subtable i.
    #[inline]
    fn slot(&self, h: Hashed, i: u32) -> (u64, u32) {
        let r = self.shape.remainder_bits;
        let t = self.bucket_bits + r;
        let fp = if t == 64 {
            h.lo
        } else {
            h.lo & ((1u64 << t) - 1)
        };
        let p = permute(fp, i, t);
        let bucket = if self.bucket_bits == 0 { 0 } else { p >> r };
        let rem = (p & ((1u64 << r) - 1)) as u32;
        let c = u64::from(self.shape.cells);
        ((u64::from(i) * self.shape.buckets + bucket) * c, rem)
    }

    fn find(&self, h: Hashed) -> Found {
        let cb = self.shape.counter_bits;
        for i in 0..self.shape.tables {
            let (base, rem) = self.slot(h, i);
            for j in base..base + u64::from(self.shape.cells) {
                let v = self.cells.get(j);
                if v != 0 && v >> cb == rem {
                    return Found::At(j);
                }
            }
        }
        Found::Missing
    }

    /// Hint the CPU to fetch the key's d buckets ahead of an insert, a count or a remove (for
    /// streaming callers that hash a key a few keys before they use it, such as the CLI).
    #[inline]
    pub fn prefetch_hashed(&self, h: Hashed) {
        let (w, width) = (self.cells.words().as_slice(), u64::from(self.cells.width()));
        for i in 0..self.shape.tables {
            let (base, _) = self.slot(h, i);
            store::prefetch(w, (base * width / 64) as usize);
        }
    }

    /// Insert a pre-hashed key: true when its fingerprint was new. [`Error::Full`] when all d
    /// of its buckets are full (nothing is changed then).
    pub fn insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        let max = self.counter_max();
        if let Found::At(j) = self.find(h) {
            let v = self.cells.get(j);
            if v & max != max {
                self.cells.set(j, v + 1);
            }
            self.items = self.items.saturating_add(1);
            return Ok(false);
        }
        let cells = u64::from(self.shape.cells);
        let mut best: Option<(u64, u32, u64)> = None; // (load, rem, base)
        for i in 0..self.shape.tables {
            let (base, rem) = self.slot(h, i);
            let load = (base..base + cells)
                .filter(|&j| self.cells.get(j) != 0)
                .count() as u64;
            if load < cells && !matches!(best, Some((l, _, _)) if l <= load) {
                best = Some((load, rem, base));
            }
        }
        let (_, rem, base) = best.ok_or(Error::Full {
            capacity: self.capacity,
        })?;
        let j = (base..base + cells)
            .find(|&j| self.cells.get(j) == 0)
            .ok_or_else(|| inconsistent("bucket load miscounted"))?;
        self.cells.set(j, (rem << self.shape.counter_bits) | 1);
        self.items = self.items.saturating_add(1);
        self.occupied += 1;
        Ok(true)
    }

    /// Insert a key (see [`insert_hashed`](Self::insert_hashed)).
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) -> Result<bool> {
        let h = self.hasher.hash(key);
        self.insert_hashed(h)
    }

    /// Query a pre-hashed key.
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        matches!(self.find(h), Found::At(_))
    }

    /// Query a key: `false` means certainly absent.
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hashed(self.hasher.hash(key))
    }

    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
}

/// The shared [`Builder`] sizing goes to this structure's own builder (bits and hashes do not
/// apply and are refused).
impl Build for DLeftCountingBloomFilter {
    type Options = ();
    fn build(b: &Builder<Self>) -> Result<Self> {
        DLeftCountingBloomFilter::builder()
            .sizing(b.sizing)
            .try_build()
    }
}

impl Count for DLeftCountingBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    fn count_hashed(&self, h: Hashed) -> u64 {
        match self.find(h) {
            Found::At(j) => u64::from(self.cells.get(j) & self.counter_max()),
            Found::Missing => 0,
        }
    }
}

impl Remove for DLeftCountingBloomFilter {
    fn remove_hashed(&mut self, h: Hashed) -> Result<(), RemoveError> {
        let Found::At(j) = self.find(h) else {
            return Err(RemoveError::NotPresent);
        };
        let max = self.counter_max();
        let v = self.cells.get(j);
        let c = v & max;
        if c != max {
            if c == 1 {
                self.cells.set(j, 0);
                self.occupied -= 1;
            } else {
                self.cells.set(j, v - 1);
            }
        }
        self.items = self.items.saturating_sub(1);
        Ok(())
    }
}

impl Persist for DLeftCountingBloomFilter {
    const KIND: Kind = Kind::DLeftCounting;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::DLeftCounting, self.hasher);
        h.items = self.items;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = ParamWriter::new()
            .u32(self.shape.tables)
            .u64(self.shape.buckets)
            .u32(self.shape.cells)
            .u32(self.shape.remainder_bits)
            .u32(self.shape.counter_bits)
            .finish();
        (h, Payload::new(vec![self.cells.words()]))
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let shape = DLeftShape {
            tables: r.u32()?,
            buckets: r.u64()?,
            cells: r.u32()?,
            remainder_bits: r.u32()?,
            counter_bits: r.u32()?,
        };
        r.finish()?;
        let bucket_bits =
            check_shape(&shape).map_err(|(n, why)| inconsistent(format!("{n}: {why}")))?;
        let width = shape.remainder_bits + shape.counter_bits;
        let n = cell_count(&shape);
        let words = counters::words_needed(n, width).ok_or_else(|| inconsistent("too large"))?;
        format::check_payload(d, words)?;
        let cells = Counters::from_words(src.words(d.payload_offset, words, limit)?, n, width)?;
        // Every non-empty cell has a non-zero counter; count them.
        let cmask = (1u32 << shape.counter_bits) - 1;
        let mut occupied = 0u64;
        for j in 0..n {
            let v = cells.get(j);
            if v != 0 {
                if v & cmask == 0 {
                    return Err(inconsistent("a cell holds a remainder with a zero counter"));
                }
                occupied += 1;
            }
        }
        if d.header.items < occupied {
            return Err(inconsistent(format!(
                "{} items but {occupied} occupied cells",
                d.header.items
            )));
        }
        Ok(Self {
            cells,
            shape,
            bucket_bits,
            hasher: d.header.hasher,
            items: d.header.items,
            occupied,
            capacity: d.header.capacity,
            target_fpr: d.header.target_fpr,
        })
    }
}

impl crate::multisets::counter_kind::CounterKind for DLeftCountingBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        hashed: true,
        count: true,
        remove: true,
        ..Capabilities::NONE
    };
    fn hasher(&self) -> &KeyHasher {
        Count::hasher(self)
    }
    fn len(&self) -> u64 {
        DLeftCountingBloomFilter::len(self)
    }
    /// A full table refuses ([`crate::Error::Full`]), nothing changed.
    fn insert_hashed(&mut self, h: Hashed) -> Result<()> {
        DLeftCountingBloomFilter::insert_hashed(self, h).map(|_| ())
    }
    fn count_hashed(&self, h: Hashed) -> u64 {
        Count::count_hashed(self, h)
    }
    fn prefetch_hashed(&self, h: Hashed) {
        DLeftCountingBloomFilter::prefetch_hashed(self, h)
    }
    fn remove_hashed(&mut self, h: Hashed) -> std::result::Result<(), RemoveError> {
        Remove::remove_hashed(self, h)
    }
    fn rates(&self) -> (u64, Option<f64>, Option<f64>) {
        crate::multisets::counter_kind::counter_rates(
            self.capacity(),
            self.target_fpr(),
            self.current_fpr(),
        )
    }
    fn describe(&self, i: &mut crate::multisets::counter_kind::CounterInfo) {
        i.capacity = self.capacity();
        i.target_fpr = (self.target_fpr() > 0.0).then_some(self.target_fpr());
        i.current_fpr = Some(self.current_fpr());
        i.saturated_counters = Some(self.saturated_counters());
        i.counter_bits = Some(self.shape().counter_bits);
        i.size = Some(self.bit_len());
        i.occupied_cells = Some(self.occupied_cells());
    }
}

/// Keys as bytes, as a set: an insert counts one more occurrence and answers whether the key's
/// fingerprint was new.
impl crate::filter::KeySet for DLeftCountingBloomFilter {
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool> {
        let h = self.hasher().hash_bytes(key);
        self.insert_hashed(h)
    }
    fn try_contains_key(&self, key: &[u8]) -> Result<bool> {
        Ok(self.contains_hashed(self.hasher().hash_bytes(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn permutations_are_bijections() {
        for t in [1u32, 3, 8] {
            for i in 0..4 {
                let mut seen: Vec<u64> = (0..1u64 << t).map(|x| permute(x, i, t)).collect();
                seen.sort_unstable();
                seen.dedup();
                assert_eq!(seen.len(), 1 << t);
            }
        }
    }

    #[test]
    fn insert_count_remove_and_rate() {
        let mut f = DLeftCountingBloomFilter::try_new(2000, 0.01).unwrap();
        for i in 0..2000u32 {
            f.insert(&i).unwrap();
        }
        // exact counts except where two keys share a true fingerprint (rate ≈ the FPR)
        let exact = (0..2000u32).filter(|i| f.count(i) == 1).count();
        assert!(exact > 1950, "{exact}");
        f.insert("dup").unwrap();
        f.insert("dup").unwrap();
        let c = f.count("dup");
        assert!(c >= 2);
        assert!((0..2000u32).all(|i| f.contains(&i)));
        let fp = (10_000..30_000u32).filter(|i| f.contains(i)).count() as f64 / 20_000.0;
        assert!(fp < 0.02, "fp rate {fp}");
        f.remove("dup").unwrap();
        f.remove("dup").unwrap();
        assert_eq!(f.count("dup"), c - 2);
        assert!((0..2000u32).all(|i| f.contains(&i)));
        assert_eq!(f.remove(&"never"), Err(RemoveError::NotPresent));
        // about half the memory of a 4-bit counting filter at the same rate
        let cbf = params::classic_shape(2000, 0.01).unwrap();
        assert!(f.bits_per_item() < 4.0 * cbf.m as f64 / 2000.0);
        let g = DLeftCountingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(f, g);
    }

    #[test]
    fn full_buckets_and_saturation() {
        let shape = DLeftShape {
            tables: 1,
            buckets: 1,
            cells: 2,
            remainder_bits: 16,
            counter_bits: 2,
        };
        let mut f = DLeftCountingBloomFilter::builder()
            .shape(shape)
            .try_build()
            .unwrap();
        f.insert("a").unwrap();
        f.insert("b").unwrap();
        assert!(matches!(f.insert("c"), Err(Error::Full { .. })));
        for _ in 0..5 {
            f.insert("a").unwrap();
        }
        assert_eq!(f.count("a"), 3);
        assert_eq!(f.saturated_counters(), 1);
        for _ in 0..5 {
            f.remove("a").unwrap();
        }
        assert!(f.contains("a"));
    }

    #[test]
    fn bad_parameters() {
        assert!(DLeftCountingBloomFilter::try_new(0, 0.01).is_err());
        assert!(DLeftCountingBloomFilter::try_new(10, 0.0).is_err());
        assert!(DLeftCountingBloomFilter::builder()
            .capacity(10)
            .fpr(0.1)
            .tables(0)
            .try_build()
            .is_err());
        assert!(DLeftCountingBloomFilter::builder()
            .capacity(10)
            .fpr(0.1)
            .counter_bits(0)
            .try_build()
            .is_err());
        let bad = DLeftShape {
            tables: 2,
            buckets: 3,
            cells: 4,
            remainder_bits: 8,
            counter_bits: 2,
        };
        assert!(DLeftCountingBloomFilter::builder()
            .shape(bad)
            .try_build()
            .is_err());
        let bad = DLeftShape {
            tables: 2,
            buckets: 4,
            cells: 4,
            remainder_bits: 31,
            counter_bits: 2,
        };
        assert!(DLeftCountingBloomFilter::builder()
            .shape(bad)
            .try_build()
            .is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn no_false_negatives_under_removes(ops in proptest::collection::vec((0u16..60, any::<bool>()), 1..300)) {
            let shape = DLeftShape { tables: 4, buckets: 8, cells: 4, remainder_bits: 6, counter_bits: 6 };
            let mut f = DLeftCountingBloomFilter::builder().shape(shape).try_build().unwrap();
            let mut truth: HashMap<u16, u64> = HashMap::new();
            for (k, ins) in &ops {
                let t = truth.entry(*k).or_default();
                if *ins {
                    f.insert(k).unwrap();
                    *t += 1;
                } else if *t > 0 {
                    f.remove(k).unwrap();
                    *t -= 1;
                }
            }
            let f = DLeftCountingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            for (k, c) in &truth {
                prop_assert!(f.count(k) >= *c);
                if *c > 0 { prop_assert!(f.contains(k)); }
            }
        }
    }
}
