//! The count-min sketch with 32-bit counters: [`CountMinSketch32`].

use crate::error::{inconsistent, invalid, Incompatibility, Result};
use crate::filter::{shape_mismatch, Count};
use crate::hash::{reduce, Hashed, Key, KeyHasher};
use crate::io::format::{self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist};
use crate::multisets::count_min::{CountMinBuilder, CountMinSketch, MAX_DEPTH};
use crate::store::{self, Words};

/// An update or a merge that would take a counter past `u32::MAX` (or below 0, for a merge
/// with negative weights); nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterOverflow;

impl std::fmt::Display for CounterOverflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a counter would leave 0..=u32::MAX")
    }
}

impl std::error::Error for CounterOverflow {}

/// The count-min sketch of [`CountMinSketch`] with 32-bit counters: half the memory for the
/// same `width × depth` (4 bytes a counter, the cell size RedisBloom uses by default), the
/// same hashing (a key's column in row r is the same as in the 64-bit form, so a sketch
/// converts with [`from_wide`](Self::from_wide)), and plain (not conservative) updates.
///
/// **Overflow policy: the caller chooses.** Counters cannot pass `u32::MAX`:
/// - [`try_insert_many_hashed`](Self::try_insert_many_hashed) refuses an update that would take
///   one of the key's counters past it ([`CounterOverflow`], nothing changed);
/// - [`insert_many`](Self::insert_many) and [`insert_many_hashed`](Self::insert_many_hashed)
///   saturate there instead (a saturated counter only over-estimates, unless the true count
///   itself passes `u32::MAX`: then the estimate is `u32::MAX`, below the truth), which is what
///   RedisBloom 2.6 does.
/// - [`try_weighted_sum`](Self::try_weighted_sum) computes `Σ wᵢ·sketchᵢ` with signed weights
///   in 64-bit signed arithmetic and refuses ([`CounterOverflow`], nothing built) a result
///   with a counter outside `0..=u32::MAX` or a negative total, as RedisBloom's `CMS.MERGE`
///   does ([`accumulate_weighted`](Self::accumulate_weighted) and
///   [`assign_accumulated`](Self::assign_accumulated) do it one source at a time). A negative weight subtracts a sketch
///   that was added before (removing a stream); estimates stay never below the truth only
///   when what is subtracted was really part of what it is subtracted from.
///
/// The total ([`total`](Self::total)) is the sum of all increments, saturating at `u64::MAX`.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{Count, CountMinSketch, CountMinSketch32};
///
/// let mut s = CountMinSketch::builder().dimensions(1000, 5).try_build_u32()?;
/// assert_eq!(s.as_words().len() * 8, 1000 * 5 * 4); // 4 bytes a counter
/// s.insert_many("a", 3);
/// let h = s.hasher().hash("a");
/// assert_eq!(s.try_insert_many_hashed(h, 2), Ok(5));
/// assert!(s.try_insert_many_hashed(h, u64::from(u32::MAX)).is_err()); // nothing changed
/// assert_eq!(s.count("a"), 5);
/// let t = s.clone();
/// let twice = CountMinSketch32::try_weighted_sum(&[(&s, 3), (&t, -1)])?.unwrap();
/// assert_eq!((twice.count("a"), twice.total()), (10, 10));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CountMinSketch32 {
    /// Two counters a word: counter i in word i/2, the low half when i is even.
    table: Words,
    width: u64,
    depth: u32,
    hasher: KeyHasher,
    total: u64,
}

fn cells_for(width: u64, depth: u32) -> Option<u64> {
    width.checked_mul(u64::from(depth))
}

fn words_for(width: u64, depth: u32) -> Result<usize> {
    cells_for(width, depth)
        .map(|c| c.div_ceil(2))
        .and_then(|w| usize::try_from(w).ok())
        .ok_or(crate::error::Error::TooLarge {
            requested: u64::MAX,
            limit: store::max_bytes(),
        })
}

fn check_shape(width: u64, depth: u32) -> std::result::Result<(), String> {
    if width == 0 {
        return Err("width: must be at least 1".into());
    }
    if depth == 0 || depth > MAX_DEPTH {
        return Err(format!("depth: must be in 1..={MAX_DEPTH}, got {depth}"));
    }
    Ok(())
}

/// Counter `i`: the low half of word `i / 2` for even `i`, the high half for odd `i` (on a
/// little-endian host, simply the `i`-th `u32` of the words).
#[inline(always)]
fn get(t: &[u64], i: usize) -> u32 {
    if cfg!(target_endian = "little") {
        bytemuck::cast_slice::<u64, u32>(t)[i]
    } else {
        (t[i / 2] >> (32 * (i % 2))) as u32
    }
}

#[inline(always)]
fn set(t: &mut [u64], i: usize, v: u32) {
    if cfg!(target_endian = "little") {
        bytemuck::cast_slice_mut::<u64, u32>(t)[i] = v;
    } else {
        let shift = 32 * (i % 2);
        let w = &mut t[i / 2];
        *w = (*w & !(0xFFFF_FFFFu64 << shift)) | (u64::from(v) << shift);
    }
}

impl CountMinBuilder {
    /// Build the sketch with 32-bit counters ([`CountMinSketch32`]); refused when the
    /// conservative update was asked for (the 32-bit form has plain updates only).
    pub fn try_build_u32(self) -> Result<CountMinSketch32> {
        let (width, depth, conservative, hasher, max_bytes) = self.parts()?;
        if conservative {
            return Err(invalid(
                "conservative",
                "the 32-bit count-min sketch has plain updates only",
            ));
        }
        Ok(CountMinSketch32 {
            table: Words::zeroed(words_for(width, depth)?, max_bytes)?,
            width,
            depth,
            hasher,
            total: 0,
        })
    }
}

impl CountMinSketch32 {
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the counters. Arrays in a
    /// map (anonymous or a file's) never move (see `Words::relocate`). `mv` gets an
    /// allocation's address and returns where its bytes are now, or `None` to leave it; it is
    /// called for each allocation once, always in the same order.
    ///
    /// # Safety
    /// A returned address must hold a copy of the allocation's bytes in an allocation of the
    /// global allocator of the same size and at least its alignment (64 bytes for the word
    /// arrays), and the old allocation must have been freed; nothing may reference the
    /// structure during the call.
    #[doc(hidden)]
    pub unsafe fn relocate_arrays(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.table.relocate(mv) };
    }

    /// The hasher keys go through (what [`Count::hasher`](crate::filter::Count::hasher)
    /// answers; inherent, so that a call needs no trait in scope).
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// `depth` rows of `width` 32-bit counters, default hasher.
    pub fn try_with_shape(width: u64, depth: u32) -> Result<Self> {
        CountMinSketch::builder()
            .dimensions(width, depth)
            .try_build_u32()
    }

    /// The 64-bit sketch's counters, each capped at `u32::MAX`, with its shape, hasher and
    /// total (a conservative sketch's counters are kept as they are: they bound the counts
    /// from above, which is all later plain updates need).
    pub fn from_wide(s: &CountMinSketch) -> Result<Self> {
        let mut out = CountMinSketch::builder()
            .dimensions(s.width(), s.depth())
            .hasher(*s.hasher())
            .try_build_u32()?;
        let t = out.table.as_mut_slice();
        for (i, &c) in s.as_words().iter().enumerate() {
            set(t, i, c.min(u64::from(u32::MAX)) as u32);
        }
        out.total = s.total();
        Ok(out)
    }

    /// The same sketch with 64-bit counters: every counter, the shape, the hasher and the
    /// total carry over exactly, so the 64-bit form answers every key as this one does (the
    /// form that readers of the 64-bit kind, such as a Python `CountMinSketch`, open).
    pub fn to_wide(&self) -> Result<CountMinSketch> {
        let t = self.table.as_slice();
        let cells = usize::try_from(self.width * u64::from(self.depth)).unwrap_or(usize::MAX);
        CountMinSketch::with_counters(
            self.width,
            self.depth,
            self.hasher,
            self.total,
            (0..cells).map(|i| u64::from(get(t, i))),
        )
    }

    /// Counters per row.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// Rows.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Sum of all increments (N), saturating at `u64::MAX`.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The counters' words: two counters a word, row after row (counter i in word i/2, the
    /// low 32 bits when i is even); the last word's high half is unused when `width·depth`
    /// is odd.
    pub fn as_words(&self) -> &[u64] {
        self.table.as_slice()
    }

    /// Counter `column` of `row` (both in range, or `None`).
    pub fn counter(&self, row: u32, column: u64) -> Option<u32> {
        (row < self.depth && column < self.width).then(|| {
            get(
                self.table.as_slice(),
                (u64::from(row) * self.width + column) as usize,
            )
        })
    }

    /// Counters at `u32::MAX`.
    pub fn saturated_counters(&self) -> u64 {
        let t = self.table.as_slice();
        let n = (self.width * u64::from(self.depth)) as usize;
        (0..n).filter(|&i| get(t, i) == u32::MAX).count() as u64
    }

    #[inline(always)]
    fn cells(&self, h: Hashed) -> impl Iterator<Item = usize> {
        let w = self.width;
        h.sequence(self.depth)
            .enumerate()
            .map(move |(r, x)| (r as u64 * w + reduce(x, w)) as usize)
    }

    /// Add `count` to a pre-hashed key and return its new estimate, or refuse
    /// ([`CounterOverflow`], nothing changed) when one of its counters would pass `u32::MAX`.
    pub fn try_insert_many_hashed(
        &mut self,
        h: Hashed,
        count: u64,
    ) -> std::result::Result<u64, CounterOverflow> {
        let t = self.table.as_slice();
        if self
            .cells(h)
            .any(|c| u64::from(get(t, c)) + count > u64::from(u32::MAX))
        {
            return Err(CounterOverflow);
        }
        Ok(self.insert_many_hashed(h, count))
    }

    /// Add `count` to a pre-hashed key, each counter saturating at `u32::MAX`; the key's new
    /// estimate (`u32::MAX` when one of its counters saturated).
    pub fn insert_many_hashed(&mut self, h: Hashed, count: u64) -> u64 {
        self.total = self.total.saturating_add(count);
        let add = u32::try_from(count).unwrap_or(u32::MAX);
        let cells = self.cells(h);
        let t = self.table.as_mut_slice();
        let mut min = u32::MAX;
        for c in cells {
            let v = get(t, c).saturating_add(add);
            set(t, c, v);
            min = min.min(v);
        }
        u64::from(min)
    }

    /// Add one to a key.
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_many(key, 1)
    }

    /// Add `count` to a key, counters saturating ([`insert_many_hashed`](Self::insert_many_hashed)).
    pub fn insert_many<K: Key + ?Sized>(&mut self, key: &K, count: u64) {
        let h = self.hasher.hash(key);
        self.insert_many_hashed(h, count);
    }

    /// Refuses sketches of another shape or hasher.
    pub fn check_mergeable(&self, other: &Self) -> Result<()> {
        if self.width != other.width || self.depth != other.depth {
            return Err(shape_mismatch(
                format!("width={} depth={}", self.width, self.depth),
                format!("width={} depth={}", other.width, other.depth),
            ));
        }
        if self.hasher != other.hasher {
            return Err(crate::error::Error::Incompatible(Incompatibility::Hashing));
        }
        Ok(())
    }

    /// Adds `weight ×` this sketch's counters into `acc` (one entry per counter, row after
    /// row; an empty `acc` is first filled with zeros), each product and each partial sum
    /// checked against the `i64` range as RedisBloom computes a merge: [`CounterOverflow`] if
    /// one leaves it (`acc` is then partly updated and should be dropped).
    pub fn accumulate_weighted(
        &self,
        acc: &mut Vec<i64>,
        weight: i64,
    ) -> std::result::Result<(), CounterOverflow> {
        let n = (self.width * u64::from(self.depth)) as usize;
        if acc.is_empty() {
            acc.resize(n, 0);
        }
        if acc.len() != n {
            return Err(CounterOverflow);
        }
        let t = self.table.as_slice();
        for (i, a) in acc.iter_mut().enumerate() {
            *a = i64::from(get(t, i))
                .checked_mul(weight)
                .and_then(|p| a.checked_add(p))
                .ok_or(CounterOverflow)?;
        }
        Ok(())
    }

    /// Sets every counter from `acc` (as [`accumulate_weighted`](Self::accumulate_weighted)
    /// fills it) and the total to `total`, or refuses ([`CounterOverflow`], nothing changed)
    /// when an entry is outside `0..=u32::MAX` or `acc` does not have one entry per counter.
    pub fn assign_accumulated(
        &mut self,
        acc: &[i64],
        total: u64,
    ) -> std::result::Result<(), CounterOverflow> {
        let n = (self.width * u64::from(self.depth)) as usize;
        if acc.len() != n || acc.iter().any(|&v| u32::try_from(v).is_err()) {
            return Err(CounterOverflow);
        }
        let t = self.table.as_mut_slice();
        for (i, &v) in acc.iter().enumerate() {
            set(t, i, v as u32);
        }
        self.total = total;
        Ok(())
    }

    /// `Σ wᵢ·sketchᵢ` over `parts` (at least one; weights may be negative), computed as
    /// RedisBloom merges: `Ok(Err(CounterOverflow))` when a product or partial sum of a
    /// counter leaves the `i64` range, a counter of the result would be outside
    /// `0..=u32::MAX`, or the total (`Σ wᵢ·totalᵢ`, likewise checked) would be negative.
    /// `Err` for parts of different shapes or hashers, none, or a result over the memory
    /// limit.
    pub fn try_weighted_sum(
        parts: &[(&Self, i64)],
    ) -> Result<std::result::Result<Self, CounterOverflow>> {
        let Some(&(first, _)) = parts.first() else {
            return Err(invalid("parts", "at least one sketch is needed"));
        };
        for (p, _) in parts {
            first.check_mergeable(p)?;
        }
        let mut total: i64 = 0;
        let mut acc = Vec::new();
        for &(p, w) in parts {
            let t = i64::try_from(p.total)
                .ok()
                .and_then(|t| t.checked_mul(w))
                .and_then(|t| t.checked_add(total));
            match (t, p.accumulate_weighted(&mut acc, w)) {
                (Some(t), Ok(())) => total = t,
                _ => return Ok(Err(CounterOverflow)),
            }
        }
        let Ok(total) = u64::try_from(total) else {
            return Ok(Err(CounterOverflow));
        };
        let mut out = first.clone();
        Ok(out.assign_accumulated(&acc, total).map(|()| out))
    }

    /// Reset every counter and the total.
    pub fn clear(&mut self) {
        self.table.as_mut_slice().fill(0);
        self.total = 0;
    }
}

impl Count for CountMinSketch32 {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// The minimum of the key's counters.
    fn count_hashed(&self, h: Hashed) -> u64 {
        let t = self.table.as_slice();
        self.cells(h).map(|c| get(t, c)).min().map_or(0, u64::from)
    }
}

/// Counter-wise sums (saturating at `u32::MAX`) and minimums, as for [`CountMinSketch`].
impl crate::filter::Merge for CountMinSketch32 {
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_mergeable(other)?;
        let n = (self.width * u64::from(self.depth)) as usize;
        let o = other.table.as_slice();
        let t = self.table.as_mut_slice();
        for i in 0..n {
            set(t, i, get(t, i).saturating_add(get(o, i)));
        }
        self.total = self.total.saturating_add(other.total);
        Ok(())
    }
    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_mergeable(other)?;
        let n = (self.width * u64::from(self.depth)) as usize;
        let o = other.table.as_slice();
        let t = self.table.as_mut_slice();
        for i in 0..n {
            set(t, i, get(t, i).min(get(o, i)));
        }
        self.total = self.total.min(other.total);
        Ok(())
    }
}

impl Persist for CountMinSketch32 {
    const KIND: Kind = Kind::CountMin32;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::CountMin32, self.hasher);
        h.items = self.total;
        h.params = ParamWriter::new().u64(self.width).u32(self.depth).finish();
        (h, Payload::new(vec![&self.table]))
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let width = r.u64()?;
        let depth = r.u32()?;
        r.finish()?;
        check_shape(width, depth).map_err(inconsistent)?;
        let words = words_for(width, depth).map_err(|_| inconsistent("shape too large"))?;
        format::check_payload(d, words)?;
        let table = src.words(d.payload_offset, words, limit)?;
        if cells_for(width, depth).is_some_and(|c| c % 2 == 1)
            && table.as_slice().last().is_some_and(|&w| w >> 32 != 0)
        {
            return Err(inconsistent("the unused half of the last word is not zero"));
        }
        Ok(Self {
            table,
            width,
            depth,
            hasher: d.header.hasher,
            total: d.header.items,
        })
    }
}

/// The 64-bit sketch's [`Persist`]: here rather than in count_min.rs because it also opens the
/// 32-bit form's files (the Redis module's `CMS.*` values), with the counters widened; the
/// 64-bit form's own codec is in count_min.rs.
impl Persist for CountMinSketch {
    const KIND: Kind = Kind::CountMin;
    const ALSO_OPENS: &'static [Kind] = &[Kind::CountMin32];

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        self.encode_wide()
    }

    fn decode_from(d: &Decoded, src: format::Source<'_>, limit: u64) -> Result<Self> {
        if d.header.kind == Kind::CountMin32 {
            return CountMinSketch32::decode_from(d, src, limit)?.to_wide();
        }
        CountMinSketch::decode_wide(d, src, limit)
    }
}

impl crate::dispatch::OtherKind for CountMinSketch32 {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        insert: true,
        hashed: true,
        count: true,
        merge: true,
        ..crate::kind::Capabilities::NONE
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Merge;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn memory_is_four_bytes_a_counter() {
        let s = CountMinSketch32::try_with_shape(1000, 5).unwrap();
        assert_eq!(s.as_words().len() * 8, 20_000);
        let odd = CountMinSketch32::try_with_shape(3, 3).unwrap();
        assert_eq!(odd.as_words().len(), 5);
        assert!(CountMinSketch32::try_with_shape(0, 3).is_err());
        assert!(CountMinSketch32::try_with_shape(3, 65).is_err());
        assert!(CountMinSketch::builder()
            .dimensions(3, 3)
            .conservative(true)
            .try_build_u32()
            .is_err());
    }

    #[test]
    fn same_columns_as_the_wide_form() {
        let mut wide = CountMinSketch::try_with_shape(97, 4).unwrap();
        let mut narrow = CountMinSketch32::try_with_shape(97, 4).unwrap();
        for i in 0..500u32 {
            wide.insert_many(&(i % 61), u64::from(i % 5));
            narrow.insert_many(&(i % 61), u64::from(i % 5));
        }
        for k in 0..100u32 {
            assert_eq!(wide.count(&k), narrow.count(&k));
        }
        assert_eq!(CountMinSketch32::from_wide(&wide).unwrap(), narrow);
        // and back: the 32-bit file opens as the 64-bit form, every count and the total kept
        let back = narrow.to_wide().unwrap();
        assert_eq!(back, wide);
        let opened = CountMinSketch::from_bytes(&narrow.to_bytes()).unwrap();
        assert_eq!(opened, wide);
        assert_eq!(opened.total(), narrow.total());
        for k in 0..100u32 {
            assert_eq!(opened.count(&k), narrow.count(&k));
        }
    }

    #[test]
    fn checked_insert_refuses_and_saturating_insert_caps() {
        let mut s = CountMinSketch32::try_with_shape(5, 2).unwrap();
        let h = s.hasher().hash("a");
        let big = u64::from(u32::MAX / 2);
        assert_eq!(s.try_insert_many_hashed(h, big), Ok(big));
        assert_eq!(s.try_insert_many_hashed(h, big), Ok(2 * big));
        let before = s.clone();
        assert_eq!(s.try_insert_many_hashed(h, big), Err(CounterOverflow));
        assert_eq!(s, before, "a refused update changes nothing");
        assert_eq!(s.try_insert_many_hashed(h, 1), Ok(u64::from(u32::MAX)));
        assert_eq!(s.try_insert_many_hashed(h, 1), Err(CounterOverflow));
        let mut t = before.clone();
        assert_eq!(t.insert_many_hashed(h, big), u64::from(u32::MAX));
        assert_eq!(t.count("a"), u64::from(u32::MAX));
        assert_eq!(t.total(), 3 * big);
        assert!(t.saturated_counters() >= 1);
        assert_eq!(t.insert_many_hashed(h, u64::MAX), u64::from(u32::MAX));
        assert_eq!(t.total(), u64::MAX);
    }

    #[test]
    fn weighted_sums_subtract_and_refuse_overflow() {
        let mk = |keys: &[&str]| {
            let mut s = CountMinSketch32::try_with_shape(64, 3).unwrap();
            for k in keys {
                s.insert(*k);
            }
            s
        };
        let (a, b) = (mk(&["x", "y"]), mk(&["z"]));
        let ab = CountMinSketch32::try_weighted_sum(&[(&a, 1), (&b, 1)])
            .unwrap()
            .unwrap();
        let back = CountMinSketch32::try_weighted_sum(&[(&ab, 1), (&b, -1)])
            .unwrap()
            .unwrap();
        assert_eq!(back, a);
        assert_eq!(
            CountMinSketch32::try_weighted_sum(&[(&back, 1), (&b, -1)]).unwrap(),
            Err(CounterOverflow),
            "a counter below zero"
        );
        let mut big = mk(&[]);
        big.insert_many("x", u64::from(u32::MAX));
        assert_eq!(
            CountMinSketch32::try_weighted_sum(&[(&big, 1), (&a, 1)]).unwrap(),
            Err(CounterOverflow),
            "a counter above u32::MAX"
        );
        assert_eq!(
            CountMinSketch32::try_weighted_sum(&[(&a, i64::MAX), (&a, i64::MAX)]).unwrap(),
            Err(CounterOverflow)
        );
        let other = CountMinSketch32::try_with_shape(64, 4).unwrap();
        assert!(CountMinSketch32::try_weighted_sum(&[(&a, 1), (&other, 1)]).is_err());
        assert!(CountMinSketch32::try_weighted_sum(&[]).is_err());
        let mut u = a.clone();
        u.union_with(&b).unwrap();
        assert_eq!(u, ab);
    }

    #[test]
    fn roundtrip_and_distrusted_bytes() {
        let mut s = CountMinSketch32::try_with_shape(3, 3).unwrap();
        s.insert_many("k", 7);
        let bytes = s.to_bytes();
        let back = CountMinSketch32::from_bytes(&bytes).unwrap();
        assert_eq!(back, s);
        // the 64-bit form opens it, counters widened; other kinds refuse it
        assert_eq!(CountMinSketch::from_bytes(&bytes).unwrap().count("k"), 7);
        assert!(
            crate::multisets::topk::TopK::from_bytes(&bytes).is_err(),
            "another kind"
        );
        // every single-byte change is refused or still decodes to a usable sketch
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            if let Ok(f) = CountMinSketch32::from_bytes(&b) {
                let _ = f.count("k");
                assert!(f.depth() >= 1 && f.width() >= 1);
            }
        }
        for n in 0..bytes.len() {
            assert!(CountMinSketch32::from_bytes(&bytes[..n]).is_err());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// No undercount: every estimate is at least the key's true count while no counter
        /// saturates, through checked and saturating updates, merges and a save/load.
        #[test]
        fn never_below_truth(
            ups in proptest::collection::vec((0u16..200, 1u64..50), 1..400),
            cut in 0usize..400,
        ) {
            let mk = || CountMinSketch32::try_with_shape(37, 3).unwrap();
            let (mut a, mut b) = (mk(), mk());
            let mut truth: HashMap<u16, u64> = HashMap::new();
            for (i, (k, c)) in ups.iter().enumerate() {
                if i < cut {
                    a.insert_many(k, *c)
                } else {
                    let h = b.hasher().hash(k);
                    prop_assert!(b.try_insert_many_hashed(h, *c).unwrap() >= *c);
                }
                *truth.entry(*k).or_default() += c;
            }
            let sum = CountMinSketch32::try_weighted_sum(&[(&a, 1), (&b, 1)]).unwrap().unwrap();
            a.union_with(&b).unwrap();
            prop_assert_eq!(&sum, &a);
            let a = CountMinSketch32::from_bytes(&a.to_bytes()).unwrap();
            for (k, c) in &truth {
                prop_assert!(a.count(k) >= *c);
            }
            prop_assert_eq!(a.total(), truth.values().sum::<u64>());
        }
    }
}
