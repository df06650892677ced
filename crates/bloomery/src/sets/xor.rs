//! A static set filter on the peeling construction: [`XorFilter`] (its docs say which paper it
//! follows and when to pick it).

use crate::error::{inconsistent, invalid, Result};
use crate::hash::{reduce, Hashed, Key, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::peel::{self, PeelError, MAX_ATTEMPTS};
use crate::store::{self, Words};

/// Largest segment length (cells) of the layout.
pub const MAX_SEGMENT_LENGTH: u32 = 1 << 18;

/// Cells per key and segment shape for n keys (Graf & Lemire 2022, 3-wise).
fn layout(n: u64) -> (u32, u32) {
    let nf = (n.max(2)) as f64;
    let exp = (nf.ln() / 3.33f64.ln() + 2.25).floor().clamp(0.0, 18.0) as u32;
    let seg_len = (1u32 << exp).min(MAX_SEGMENT_LENGTH);
    let factor = (0.875 + 0.25 * 1e6f64.ln() / nf.ln()).max(1.125);
    let capacity = (nf * factor).round() as u64;
    let seg_count = capacity
        .div_ceil(u64::from(seg_len))
        .saturating_sub(2)
        .max(1);
    (seg_len, u32::try_from(seg_count).unwrap_or(u32::MAX))
}

/// Options for an [`XorFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::XorFilter;
///
/// let keys: Vec<u64> = (0..1000).collect();
/// // 16-bit fingerprints: about 0.0015% false positives, 2.25 bytes per key
/// let f = XorFilter::builder().fingerprint_bits(16).try_build(&keys)?;
/// assert!(keys.iter().all(|k| f.contains(k)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct XorBuilder {
    fingerprint_bits: u32,
    hasher: KeyHasher,
    max_bytes: u64,
}

impl XorBuilder {
    crate::filter::hashing_setters!();

    /// Fingerprint width: 8 (ε ≈ 1/256) or 16 (ε ≈ 1/65536). Default 8.
    pub fn fingerprint_bits(mut self, w: u32) -> Self {
        self.fingerprint_bits = w;
        self
    }

    /// Build from keys (repeated keys are kept once).
    pub fn try_build<K: Key>(self, keys: &[K]) -> Result<XorFilter, PeelError> {
        let hasher = self.hasher;
        self.build(
            keys.len(),
            &|f: &mut dyn FnMut(Hashed)| keys.iter().for_each(|k| f(hasher.hash(k))),
            false,
        )
    }

    /// Build from pre-hashed keys (hashed with this builder's hasher).
    pub fn try_build_hashed(self, hs: Vec<Hashed>) -> Result<XorFilter, PeelError> {
        self.build(
            hs.len(),
            &|f: &mut dyn FnMut(Hashed)| hs.iter().for_each(|&h| f(h)),
            false,
        )
    }

    /// The construction over `n` key hashes, which `each` yields (in the same order) as often
    /// as needed, so that the keys' 128-bit hashes need not stay in memory.
    ///
    /// Binary-fuse style: each key becomes one 64-bit record (its three cell offsets and its
    /// fingerprint; [`XorFilter::record`]); records are counting-sorted by first segment, so
    /// the degree counting walks the table almost in order; each cell keeps its degree, the
    /// XOR of its keys' slot numbers and the XOR of their records, so peeling reads a
    /// degree-1 cell's key straight from the cell; the sorted records' memory then holds the
    /// peeling order. Repeated keys make peeling fail, so they are looked for only then: a
    /// failed first attempt sorts and deduplicates the hashes once and, if any were repeated,
    /// starts again on the distinct ones. The result is the same filter, bit for bit, as the
    /// first release's dedup-then-peel ([`peel::peel`] over the sorted hashes): peeling's
    /// order does not depend on how keys are numbered. Shapes whose record does not fit in 64
    /// bits (16-bit fingerprints over more than about 5·10⁷ keys) or whose degrees overflow
    /// take [`build_general`](Self::build_general).
    fn build(self, n: usize, each: &EachHash<'_>, distinct: bool) -> Result<XorFilter, PeelError> {
        let w = self.fingerprint_bits;
        if w != 8 && w != 16 {
            return Err(invalid("fingerprint_bits", format!("must be 8 or 16, got {w}")).into());
        }
        let (seg_len, seg_count) = layout(n as u64);
        let cells = (u64::from(seg_count) + 2) * u64::from(seg_len);
        let words = peel::words_for(cells, w).ok_or_else(|| invalid("keys", "too many"))?;
        let g = seg_len.trailing_zeros();
        if 3 * g + w <= 64 && cells <= 1 << 30 && n < 1 << 32 {
            // records and order (12 bytes per key), cells (9 bytes each), stack (≤ 4 per cell)
            store::check_size(
                words as u64 * 8 + cells * 13 + n as u64 * 12,
                self.max_bytes,
            )?;
            let mut distinct = distinct;
            let mut overflow = false;
            let mut f = XorFilter {
                hasher: self.hasher,
                w,
                items: n as u64,
                seed: 0,
                seg_len,
                seg_count,
                table: Words::zeroed(0, self.max_bytes)?,
            };
            for a in 0..MAX_ATTEMPTS {
                f.seed = peel::attempt_seed(self.hasher.seed(), a);
                match f.build_records(n, each, words, self.max_bytes)? {
                    Records::Built(table) => {
                        f.table = table;
                        return Ok(f);
                    }
                    Records::Unpeelable if !distinct => {
                        let mut hs = Vec::with_capacity(n);
                        each(&mut |h| hs.push(h));
                        hs.sort_unstable_by_key(|h| (h.lo, h.hi));
                        hs.dedup();
                        if hs.len() != n {
                            return self.build(
                                hs.len(),
                                &|f: &mut dyn FnMut(Hashed)| hs.iter().for_each(|&h| f(h)),
                                true,
                            );
                        }
                        distinct = true;
                    }
                    Records::Unpeelable => {}
                    Records::Overflow => {
                        overflow = true;
                        break;
                    }
                }
            }
            if !overflow {
                return Err(PeelError::Unpeelable {
                    attempts: MAX_ATTEMPTS,
                });
            }
        }
        let mut hs = Vec::with_capacity(n);
        each(&mut |h| hs.push(h));
        self.build_general(hs)
    }

    /// The construction with the hashes in memory and the generic peel (any size).
    fn build_general(self, mut hs: Vec<Hashed>) -> Result<XorFilter, PeelError> {
        let w = self.fingerprint_bits;
        let mut deduplicated = false;
        'keys: loop {
            let n = hs.len() as u64;
            let (seg_len, seg_count) = layout(n);
            let cells = (u64::from(seg_count) + 2) * u64::from(seg_len);
            let words = peel::words_for(cells, w).ok_or_else(|| invalid("keys", "too many"))?;
            // the table, the key hashes twice (input and segment order), 8 bytes per cell and
            // per key while peeling, and the stack (at most 4 bytes per cell)
            store::check_size(words as u64 * 8 + cells * 12 + n * 40, self.max_bytes)?;
            let mut f = XorFilter {
                hasher: self.hasher,
                w,
                items: n,
                seed: peel::attempt_seed(self.hasher.seed(), 0),
                seg_len,
                seg_count,
                table: Words::zeroed(0, self.max_bytes)?,
            };
            // consumes `hs`: only the segment-ordered copy stays alive
            let mut keys = f.segment_order(std::mem::take(&mut hs));
            let compact = cells < 1 << 32 && n < 1 << 32;
            for a in 0..MAX_ATTEMPTS {
                f.seed = peel::attempt_seed(self.hasher.seed(), a);
                let order = if compact {
                    peel::peel_compact(keys.len(), cells as usize, |i| f.positions(keys[i]))
                        .map(Order::Compact)
                } else {
                    peel::peel(keys.len(), cells as usize, |i| f.positions(keys[i]))
                        .map(Order::Wide)
                };
                let Some(order) = order else {
                    if !deduplicated {
                        deduplicated = true;
                        let before = keys.len();
                        keys.sort_unstable_by_key(|h| (h.lo, h.hi));
                        keys.dedup();
                        if keys.len() != before {
                            hs = keys;
                            continue 'keys;
                        }
                    }
                    continue;
                };
                let mut table = Words::zeroed(words, self.max_bytes)?;
                let t = table.as_mut_slice();
                match order {
                    Order::Compact(o) => f.assign(
                        t,
                        &keys,
                        o.iter().rev().map(|&(k, c)| (k as usize, c as usize)),
                    ),
                    Order::Wide(o) => f.assign(t, &keys, o.iter().rev().copied()),
                }
                f.table = table;
                return Ok(f);
            }
            return Err(PeelError::Unpeelable {
                attempts: MAX_ATTEMPTS,
            });
        }
    }
}

/// An 8- or 16-bit table cell.
#[cfg(target_endian = "little")]
trait Cell: Copy + Eq + std::ops::BitXor<Output = Self> + bytemuck::Pod {
    fn from_u64(v: u64) -> Self;
}

#[cfg(target_endian = "little")]
impl Cell for u8 {
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u8
    }
}

#[cfg(target_endian = "little")]
impl Cell for u16 {
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u16
    }
}

/// Yields every key's hash, in the same order each time it is called.
type EachHash<'a> = dyn Fn(&mut dyn FnMut(Hashed)) + 'a;

/// Outcome of one attempt of the record construction.
enum Records {
    Built(Words),
    Unpeelable,
    /// A cell's degree passed what its byte counts (only with many repeated keys or keys
    /// chosen against the hash): the general construction takes over.
    Overflow,
}

/// A peeling order: (key, pivot cell) pairs, in 32 bits when the sizes allow.
enum Order {
    Compact(Vec<(u32, u32)>),
    Wide(Vec<(usize, usize)>),
}

/// A static set filter on the peeling construction: xor filters in the binary-fuse segment
/// layout (Graf & Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022;
/// the Bloomier construction of Broder & Mitzenmacher §9 with a fingerprint as the stored value).
///
/// Each key gets three cells in three consecutive segments of a table of w-bit cells (w = 8 or
/// 16) and a w-bit fingerprint; peeling fills the table so that the XOR of a
/// key's three cells is its fingerprint. A query XORs three cells and compares: an inserted key
/// always matches, another key matches with probability 2^-w. With the segmented layout the
/// table needs about 1.125 n cells for large n (the size factor
/// `max(1.125, 0.875 + 0.25·ln 10⁶ / ln n)` of Graf & Lemire), so 8-bit fingerprints cost
/// ≈ 9 bits per key against the lower bound n·log2(1/ε) = 8 (Broder & Mitzenmacher §2.2): ≈ 1.13×, where a
/// Bloom filter needs 1.44×.
///
/// **When to pick it:** the set is known up front and never changes (a release's list of
/// package names, a day's blocklist) and you want the least memory and three memory reads per
/// query. It cannot insert, delete or merge; rebuild instead. For sets that grow use
/// [`crate::BlockedBloomFilter`] or [`crate::ScalableBloomFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::XorFilter;
///
/// let keys: Vec<u64> = (0..10_000).collect();
/// let f = XorFilter::try_from_keys(&keys)?; // static: built once from all keys
/// assert!(keys.iter().all(|k| f.contains(k)));
/// let false_positives = (10_000..110_000u64).filter(|k| f.contains(k)).count();
/// assert!(false_positives < 1000, "{false_positives}"); // 8-bit fingerprints: about 0.4%
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq)]
pub struct XorFilter {
    hasher: KeyHasher,
    w: u32,
    items: u64,
    seed: u64,
    seg_len: u32,
    seg_count: u32,
    table: Words,
}

/// `Debug` without the construction seed of a keyed filter (it is derived from the secret).
impl std::fmt::Debug for XorFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XorFilter")
            .field("hasher", &self.hasher)
            .field("w", &self.w)
            .field("items", &self.items)
            .field(
                "seed",
                &crate::hash::MaybeSecret(self.hasher.is_secret(), self.seed),
            )
            .field("seg_len", &self.seg_len)
            .field("seg_count", &self.seg_count)
            .field("table", &self.table)
            .finish()
    }
}

impl XorFilter {
    /// A builder (8-bit fingerprints, default hasher).
    pub fn builder() -> XorBuilder {
        XorBuilder {
            fingerprint_bits: 8,
            hasher: KeyHasher::new(),
            max_bytes: store::max_bytes(),
        }
    }

    /// Build with 8-bit fingerprints and the default hasher.
    pub fn try_from_keys<K: Key>(keys: &[K]) -> Result<Self, PeelError> {
        Self::builder().try_build(keys)
    }

    #[inline]
    fn positions_raw(&self, h: Hashed) -> [usize; 3] {
        let (a, b, _) = peel::derive(h, self.seed);
        let l = u64::from(self.seg_len);
        let s = reduce(a, u64::from(self.seg_count));
        let m = l - 1;
        [
            (s * l + (b & m)) as usize,
            ((s + 1) * l + ((b >> 21) & m)) as usize,
            ((s + 2) * l + ((b >> 42) & m)) as usize,
        ]
    }

    fn positions(&self, h: Hashed) -> [usize; 3] {
        self.positions_raw(h)
    }

    #[inline]
    fn fingerprint(&self, h: Hashed) -> u64 {
        peel::derive(h, self.seed).2 & peel::mask(self.w)
    }

    /// The keys in the order of their first segment (a counting sort), so that the degree
    /// counting of the peeling walks the cells almost in order.
    fn segment_order(&self, hs: Vec<Hashed>) -> Vec<Hashed> {
        let segs = self.seg_count as usize;
        let seg =
            |h: &Hashed| reduce(peel::derive(*h, self.seed).0, u64::from(self.seg_count)) as usize;
        let mut start = vec![0usize; segs + 1];
        for h in &hs {
            start[seg(h) + 1] += 1;
        }
        for i in 1..=segs {
            start[i] += start[i - 1];
        }
        let mut out = vec![Hashed::default(); hs.len()];
        for h in &hs {
            let s = seg(h);
            out[start[s]] = *h;
            start[s] += 1;
        }
        out
    }

    /// A key's first segment and its record: the three offsets inside their segments (`g`
    /// bits each, `g = log2(seg_len)`) then the fingerprint, from bit `3g`.
    #[inline]
    fn record(&self, h: Hashed) -> (usize, u64) {
        let (a, b, c) = peel::derive(h, self.seed);
        let s = reduce(a, u64::from(self.seg_count)) as usize;
        let g = self.seg_len.trailing_zeros();
        let m = u64::from(self.seg_len) - 1;
        let r = (b & m)
            | ((b >> 21) & m) << g
            | ((b >> 42) & m) << (2 * g)
            | (c & peel::mask(self.w)) << (3 * g);
        (s, r)
    }

    /// Cell `j` (0..3) of the key with record `r` whose first segment is `s`.
    #[inline(always)]
    fn record_cell(&self, s: usize, r: u64, j: u32) -> usize {
        let g = self.seg_len.trailing_zeros();
        let m = u64::from(self.seg_len) - 1;
        (s + j as usize) * self.seg_len as usize + ((r >> (j * g)) & m) as usize
    }

    /// One attempt of the record construction (see [`XorBuilder::build`]) with `self.seed`.
    fn build_records(
        &self,
        n: usize,
        each: &EachHash<'_>,
        words: usize,
        max_bytes: u64,
    ) -> Result<Records, PeelError> {
        let segs = self.seg_count as usize;
        let l = self.seg_len as usize;
        let cells = (segs + 2) * l;
        // counting sort of the records by first segment
        let mut start = vec![0u32; segs + 1];
        each(&mut |h| start[self.record(h).0 + 1] += 1);
        for i in 1..=segs {
            start[i] += start[i - 1];
        }
        let mut recs = vec![0u64; n];
        {
            let mut next = start.clone();
            each(&mut |h| {
                let (s, r) = self.record(h);
                if let Some(slot) = recs.get_mut(next[s] as usize) {
                    *slot = r;
                }
                next[s] += 1;
            });
        }
        // degree << 2 | XOR of slot numbers, and XOR of records, per cell
        let mut deg = vec![0u8; cells];
        let mut xr = vec![0u64; cells];
        for s in 0..segs {
            for &r in &recs[start[s] as usize..start[s + 1] as usize] {
                for j in 0..3 {
                    let p = self.record_cell(s, r, j);
                    if deg[p] >= 0xFC {
                        return Ok(Records::Overflow);
                    }
                    deg[p] = (deg[p] + 4) ^ j as u8;
                    xr[p] ^= r;
                }
            }
        }
        drop(start);
        // peel (as `peel::peel`: degree-1 cells in ascending order, then last in, first out);
        // `recs` is reused for the order's records
        let mut stack: Vec<u32> = Vec::with_capacity(cells / 4 + 16);
        stack.extend((0..cells).filter(|&c| deg[c] >> 2 == 1).map(|c| c as u32));
        let mut pivots: Vec<u32> = Vec::with_capacity(n);
        while let Some(c) = stack.pop() {
            let c = c as usize;
            if deg[c] >> 2 != 1 {
                continue;
            }
            let j = u32::from(deg[c] & 3);
            let r = xr[c];
            let Some(s) = (c / l).checked_sub(j as usize) else {
                return Ok(Records::Unpeelable);
            };
            let Some(slot) = recs.get_mut(pivots.len()) else {
                return Ok(Records::Unpeelable);
            };
            *slot = r;
            pivots.push((c as u32) << 2 | j);
            for jj in 0..3 {
                let p = self.record_cell(s, r, jj);
                deg[p] = deg[p].wrapping_sub(4) ^ jj as u8;
                xr[p] ^= r;
                if deg[p] >> 2 == 1 {
                    stack.push(p as u32);
                }
            }
        }
        if pivots.len() != n {
            return Ok(Records::Unpeelable);
        }
        drop((deg, xr, stack));
        let mut table = Words::zeroed(words, max_bytes)?;
        let t = table.as_mut_slice();
        let order = recs.iter().zip(&pivots).rev().map(|(&r, &pj)| {
            let (c, j) = ((pj >> 2) as usize, pj & 3);
            (r, c, c / l - j as usize)
        });
        #[cfg(target_endian = "little")]
        {
            match self.w {
                8 => {
                    self.assign_records(bytemuck::cast_slice_mut::<u64, u8>(t), order);
                    return Ok(Records::Built(table));
                }
                16 => {
                    self.assign_records(bytemuck::cast_slice_mut::<u64, u16>(t), order);
                    return Ok(Records::Built(table));
                }
                _ => {}
            }
        }
        let (w, fp_at) = (self.w, 3 * self.seg_len.trailing_zeros());
        for (r, c, s) in order {
            let [p0, p1, p2] = [0, 1, 2].map(|j| self.record_cell(s, r, j));
            let v = (r >> fp_at)
                ^ peel::get_cell(t, p0, w)
                ^ peel::get_cell(t, p1, w)
                ^ peel::get_cell(t, p2, w);
            peel::xor_cell(t, c, w, v);
        }
        Ok(Records::Built(table))
    }

    /// Assignment from (record, pivot cell, first segment) in reverse peeling order.
    #[cfg(target_endian = "little")]
    fn assign_records<C: Cell>(
        &self,
        t: &mut [C],
        order: impl Iterator<Item = (u64, usize, usize)>,
    ) {
        let fp_at = 3 * self.seg_len.trailing_zeros();
        for (r, c, s) in order {
            let [p0, p1, p2] = [0, 1, 2].map(|j| self.record_cell(s, r, j));
            let v = C::from_u64(r >> fp_at) ^ t[p0] ^ t[p1] ^ t[p2];
            t[c] = t[c] ^ v;
        }
    }

    /// Fill the table in reverse peeling order: each key sets its pivot cell so that the XOR of
    /// its three cells is its fingerprint (the pivot is still zero then: it is no earlier
    /// key's pivot).
    fn assign(&self, t: &mut [u64], keys: &[Hashed], order: impl Iterator<Item = (usize, usize)>) {
        #[cfg(target_endian = "little")]
        {
            // cells of 8 or 16 bits are the bytes or u16s of the little-endian words
            match self.w {
                8 => return self.assign_cells(bytemuck::cast_slice_mut::<u64, u8>(t), keys, order),
                16 => {
                    return self.assign_cells(bytemuck::cast_slice_mut::<u64, u16>(t), keys, order)
                }
                _ => {}
            }
        }
        let w = self.w;
        for (k, c) in order {
            let h = keys[k];
            let [p0, p1, p2] = self.positions_raw(h);
            let v = self.fingerprint(h)
                ^ peel::get_cell(t, p0, w)
                ^ peel::get_cell(t, p1, w)
                ^ peel::get_cell(t, p2, w);
            peel::xor_cell(t, c, w, v);
        }
    }

    #[cfg(target_endian = "little")]
    #[inline]
    fn assign_cells<C: Cell>(
        &self,
        t: &mut [C],
        keys: &[Hashed],
        order: impl Iterator<Item = (usize, usize)>,
    ) {
        for (k, c) in order {
            let h = keys[k];
            let [p0, p1, p2] = self.positions_raw(h);
            let v = C::from_u64(self.fingerprint(h)) ^ t[p0] ^ t[p1] ^ t[p2];
            t[c] = t[c] ^ v;
        }
    }

    /// Query a pre-hashed key.
    #[inline]
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        if self.items == 0 {
            return false;
        }
        let t = self.table.as_slice();
        #[cfg(target_endian = "little")]
        {
            match self.w {
                8 => return self.contains_cells(bytemuck::cast_slice::<u64, u8>(t), h),
                16 => return self.contains_cells(bytemuck::cast_slice::<u64, u16>(t), h),
                _ => {}
            }
        }
        let [p0, p1, p2] = self.positions_raw(h);
        peel::get_cell(t, p0, self.w)
            ^ peel::get_cell(t, p1, self.w)
            ^ peel::get_cell(t, p2, self.w)
            == self.fingerprint(h)
    }

    #[cfg(target_endian = "little")]
    #[inline(always)]
    fn contains_cells<C: Cell>(&self, t: &[C], h: Hashed) -> bool {
        let [p0, p1, p2] = self.positions_raw(h);
        debug_assert!(p2 < t.len() && p1 < p2 && p0 < p1);
        // SAFETY: p0 < p1 < p2 < (seg_count + 2) · seg_len = cells (s < seg_count, each offset
        // < seg_len), and the table holds at least `cells` cells: built so, and checked on
        // load (`check_payload` with `words_for(cells, w)` words).
        let x = unsafe { *t.get_unchecked(p0) ^ *t.get_unchecked(p1) ^ *t.get_unchecked(p2) };
        x == C::from_u64(self.fingerprint(h))
    }

    /// Query a key: false means certainly not in the set.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hashed(self.hasher.hash(key))
    }

    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
    /// Distinct keys in the set.
    pub fn len(&self) -> u64 {
        self.items
    }
    /// True for the empty set.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }
    /// Fingerprint bits w.
    pub fn fingerprint_bits(&self) -> u32 {
        self.w
    }
    /// Table cells.
    pub fn cells(&self) -> u64 {
        (u64::from(self.seg_count) + 2) * u64::from(self.seg_len)
    }
    /// Bits of the table (`cells · w`).
    pub fn bit_len(&self) -> u64 {
        self.cells() * u64::from(self.w)
    }
    /// Table bits per key.
    pub fn bits_per_key(&self) -> f64 {
        self.bit_len() as f64 / self.items.max(1) as f64
    }
    /// The expected false-positive rate, 2^-w.
    pub fn expected_fpr(&self) -> f64 {
        (-f64::from(self.w)).exp2()
    }
}

impl Persist for XorFilter {
    const KIND: Kind = Kind::Xor;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Xor, self.hasher);
        h.items = self.items;
        h.params = ParamWriter::new()
            .u32(self.w)
            .u64(self.seed)
            .u32(self.seg_len)
            .u32(self.seg_count)
            .finish();
        (h, Payload::new(vec![&self.table]))
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let w = r.u32()?;
        let seed = r.u64()?;
        let seg_len = r.u32()?;
        let seg_count = r.u32()?;
        r.finish()?;
        if (w != 8 && w != 16)
            || !seg_len.is_power_of_two()
            || seg_len > MAX_SEGMENT_LENGTH
            || seg_count == 0
            || d.header.capacity != 0
            || d.header.target_fpr != 0.0
        {
            return Err(inconsistent(format!(
                "xor shape w={w} segment length {seg_len} segments {seg_count}"
            )));
        }
        let cells = (u64::from(seg_count) + 2) * u64::from(seg_len);
        if d.header.items > cells {
            return Err(inconsistent("more keys than cells"));
        }
        let words = peel::words_for(cells, w).ok_or_else(|| inconsistent("table too large"))?;
        format::check_payload(d, words)?;
        let table = src.words(d.payload_offset, words, limit)?;
        if !peel::tail_clean(table.as_slice(), cells, w) {
            return Err(inconsistent("bits set beyond the table"));
        }
        Ok(Self {
            hasher: d.header.hasher,
            w,
            items: d.header.items,
            seed,
            seg_len,
            seg_count,
            table,
        })
    }
}

impl crate::dispatch::OtherKind for XorFilter {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        hashed: true,
        ..crate::kind::Capabilities::NONE
    };
}

/// Keys as bytes. An xor filter is built from all its keys at once, so inserting is an error.
impl crate::filter::KeySet for XorFilter {
    fn try_insert_key(&mut self, _key: &[u8]) -> Result<bool> {
        Err(crate::error::Error::Unsupported(
            "an xor filter is static: build it from all its keys (XorFilter::builder)".into(),
        ))
    }
    fn try_contains_key(&self, key: &[u8]) -> Result<bool> {
        Ok(self.contains_hashed(self.hasher().hash_bytes(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn no_false_negatives(keys in prop::collection::vec(any::<u64>(), 0..2000), wide in any::<bool>()) {
            let f = XorFilter::builder().fingerprint_bits(if wide { 16 } else { 8 }).try_build(&keys).unwrap();
            for k in &keys {
                prop_assert!(f.contains(k));
            }
            let g = XorFilter::from_bytes(&f.to_bytes()).unwrap();
            prop_assert_eq!(&g, &f);
        }
    }

    /// The construction of format v1's first release (dedup, then the generic peel and
    /// bit-level cells): the oracle the fast build must match bit for bit.
    fn reference_build(hasher: KeyHasher, w: u32, mut hs: Vec<Hashed>) -> XorFilter {
        hs.sort_unstable_by_key(|h| (h.lo, h.hi));
        hs.dedup();
        let n = hs.len() as u64;
        let (seg_len, seg_count) = layout(n);
        let cells = (u64::from(seg_count) + 2) * u64::from(seg_len);
        let words = peel::words_for(cells, w).unwrap();
        for a in 0..MAX_ATTEMPTS {
            let mut f = XorFilter {
                hasher,
                w,
                items: n,
                seed: peel::attempt_seed(hasher.seed(), a),
                seg_len,
                seg_count,
                table: Words::zeroed(0, u64::MAX).unwrap(),
            };
            let Some(order) = peel::peel(hs.len(), cells as usize, |i| f.positions(hs[i])) else {
                continue;
            };
            let mut table = Words::zeroed(words, u64::MAX).unwrap();
            let t = table.as_mut_slice();
            for &(k, c) in order.iter().rev() {
                let h = hs[k];
                let [p0, p1, p2] = f.positions_raw(h);
                let v = f.fingerprint(h)
                    ^ peel::get_cell(t, p0, w)
                    ^ peel::get_cell(t, p1, w)
                    ^ peel::get_cell(t, p2, w);
                peel::xor_cell(t, c, w, v);
            }
            f.table = table;
            return f;
        }
        panic!("unpeelable");
    }

    #[test]
    fn fast_build_matches_reference_bit_for_bit() {
        let hasher = KeyHasher::with_seed(0xB17);
        for (n, dups) in [
            (0u64, 0u64),
            (1, 0),
            (2, 1),
            (97, 0),
            (5_000, 0),
            (5_000, 700),
            (120_000, 0),
            (120_000, 3),
        ] {
            // keys 0..n, then `dups` of them again, shuffled in
            let mut keys: Vec<u64> = (0..n)
                .chain((0..dups).map(|i| (i * 7919) % n.max(1)))
                .collect();
            keys.reverse();
            for w in [8, 16] {
                let hs: Vec<Hashed> = keys.iter().map(|k| hasher.hash(k)).collect();
                let fast = XorFilter::builder()
                    .fingerprint_bits(w)
                    .hasher(hasher)
                    .try_build(&keys)
                    .unwrap();
                let slow = reference_build(hasher, w, hs);
                assert_eq!(fast.len(), n, "n={n} dups={dups}");
                assert!(fast == slow, "n={n} dups={dups} w={w}: tables differ");
            }
        }
        // one key 100 times: a cell's degree passes the record construction's byte, the
        // general construction takes over, with the same result
        let keys: Vec<u64> = (0..500).chain(std::iter::repeat_n(7, 100)).collect();
        let hs: Vec<Hashed> = keys.iter().map(|k| hasher.hash(k)).collect();
        let fast = XorFilter::builder()
            .hasher(hasher)
            .try_build_hashed(hs.clone())
            .unwrap();
        assert_eq!(fast.len(), 500);
        assert!(fast == reference_build(hasher, 8, hs));
        // the general construction alone matches too
        let hs: Vec<Hashed> = (0..3000u64).map(|k| hasher.hash(&k)).collect();
        let general = XorFilter::builder()
            .hasher(hasher)
            .build_general(hs.clone())
            .unwrap();
        assert!(general == reference_build(hasher, 8, hs));
    }

    #[test]
    fn bits_per_key_and_fpr() {
        let n = 600_000u64;
        let keys: Vec<u64> = (0..n).collect();
        let f = XorFilter::try_from_keys(&keys).unwrap();
        assert_eq!(f.len(), n);
        let ratio = params::ratio_to_lower_bound(f.bit_len(), n, f.expected_fpr());
        assert!(ratio < 1.15, "ratio {ratio}");
        assert!(ratio > 1.0);
        let q = 250_000u64;
        let hits = (n..n + q).filter(|k| f.contains(k)).count() as f64;
        let p = f.expected_fpr();
        let sigma = (p * (1.0 - p) * q as f64).sqrt();
        assert!(
            (hits - p * q as f64).abs() < 3.0 * sigma,
            "{hits} vs {}",
            p * q as f64
        );
        // 16-bit fingerprints: a few false positives in 250k at most
        let g = XorFilter::builder()
            .fingerprint_bits(16)
            .try_build(&keys[..50_000])
            .unwrap();
        let hits16 = (n..n + q).filter(|k| g.contains(k)).count();
        assert!(hits16 < 20, "{hits16}");
    }

    #[test]
    fn small_and_empty_sets_duplicates_and_errors() {
        let e = XorFilter::try_from_keys::<u64>(&[]).unwrap();
        assert!(e.is_empty() && !e.contains(&1u64));
        assert_eq!(XorFilter::from_bytes(&e.to_bytes()).unwrap(), e);
        let one = XorFilter::try_from_keys(&["a"]).unwrap();
        assert!(one.contains("a"));
        let dup = XorFilter::try_from_keys(&["a", "b", "a"]).unwrap();
        assert_eq!(dup.len(), 2);
        assert!(XorFilter::builder()
            .fingerprint_bits(12)
            .try_build(&[1u8])
            .is_err());
        assert!(XorFilter::builder()
            .max_bytes(100)
            .try_build(&(0..10_000u32).collect::<Vec<_>>())
            .is_err());
        let bytes = one.to_bytes();
        assert!(XorFilter::from_bytes(&bytes[..bytes.len() - 3]).is_err());
        assert!(crate::sets::classic::BloomFilter::from_bytes(&bytes).is_err());
        // keyed hashers work and differ
        let k = XorFilter::builder()
            .hasher(KeyHasher::with_secret(9))
            .try_build(&["x"])
            .unwrap();
        assert!(k.contains("x"));
    }
}
