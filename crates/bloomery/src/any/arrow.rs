//! Keys read straight from the buffers of an Arrow variable-size binary array (`string` and
//! `binary` with 32-bit offsets, `large_string` and `large_binary` with 64-bit offsets), for
//! bindings and readers that hold Arrow data (Python's PyArrow through the C data interface,
//! Parquet readers): [`ArrowBinaryKeys`] borrows the array's buffers as Arrow lays them out,
//! and [`AnyFilter::contains_arrow`] / [`AnyFilter::insert_arrow`] hash each key from the
//! values buffer in chunks and run the same prefetching pipeline as the batches over
//! pre-hashed keys (the blocked filter's AVX2 pipeline where it applies): no per-key slice is
//! collected first, and the answers are those of per-key [`AnyFilter::contains`].
//!
//! A key is the bytes `values[offsets[i]..offsets[i + 1]]` of element `i` (UTF-8 for strings),
//! the bytes the CLI and the Redis module hash for the same text. A **null** element is no
//! key: the batch operations refuse an array with a null in the elements they cover
//! ([`Error::InvalidParameter`] naming the first null's index; nothing inserted, no answer
//! written), so that a missing value never silently reads as the empty key. Drop nulls first
//! (PyArrow: `pyarrow.compute.drop_null`).
//!
//! A slice of an array (Arrow's `offset` and `length`) is described by the whole buffers and
//! that offset and length, as the C data interface hands them out; [`ArrowBinaryKeys::slice`]
//! narrows it further, so that callers can split a batch over threads (each part answers into
//! its own slice of the output).

use std::ops::Range;

use crate::any::filter::AnyFilter;
use crate::error::{invalid, Error, Result};
use crate::filter::KeySet;
use crate::hash::{Hashed, KeyHasher};

/// Keys hashed per chunk: the chunk's hashes (16 KiB) stay in the L1 cache between hashing
/// and probing, and the prefetch pipeline (16 keys deep) drains once per 1024 keys.
const HASH_CHUNK: usize = 1 << 10;

/// The offsets buffer of a variable-size binary array.
#[derive(Clone, Copy, Debug)]
enum Offsets<'a> {
    /// `string`, `binary`.
    I32(&'a [i32]),
    /// `large_string`, `large_binary`.
    I64(&'a [i64]),
}

/// An Arrow offset, checked non-negative by [`ArrowBinaryKeys`]' constructors.
trait Offset: Copy {
    fn get(self) -> i64;
}

impl Offset for i32 {
    #[inline(always)]
    fn get(self) -> i64 {
        i64::from(self)
    }
}

impl Offset for i64 {
    #[inline(always)]
    fn get(self) -> i64 {
        self
    }
}

/// The keys of an Arrow `string`/`binary` (32-bit offsets) or `large_string`/`large_binary`
/// (64-bit offsets) array, or of a slice of one, borrowed from its buffers, for
/// [`AnyFilter::contains_arrow`], [`AnyFilter::insert_arrow`] and
/// [`hash_chunks`](Self::hash_chunks), which hash each key straight from the values buffer.
///
/// Element `i` is the key `values[offsets[i]..offsets[i + 1]]` (UTF-8 for strings): the bytes
/// the CLI and the Redis module hash for the same text. A **null** element is no key: the
/// batch operations refuse an array with a null among the elements they cover
/// ([`Error::InvalidParameter`] naming the first null's index; nothing inserted, no answer
/// written), so that a missing value never silently reads as the empty key; drop nulls first
/// (PyArrow: `pyarrow.compute.drop_null`). A slice of an array is described as the C data
/// interface hands it out: the whole buffers, plus Arrow's `offset` and `length`;
/// [`slice`](Self::slice) narrows it further, so that callers can split a batch over threads,
/// each part answering into its own slice of the output.
///
/// The constructors check the buffers once (lengths, offsets non-negative, non-decreasing and
/// within the values), so the batch operations read them without further checks that could
/// fail.
///
/// ```
/// use bloomery::{AnyFilter, Kind};
/// use bloomery::lines::ArrowBinaryKeys;
///
/// # fn main() -> bloomery::Result<()> {
/// // the Arrow array ["ab", null, "", "cde"] sliced from element 1 (offset 1, length 3)
/// let offsets = [0i32, 2, 2, 2, 5];
/// let values = b"abcde";
/// let validity = [0b1101u8];
/// let all = ArrowBinaryKeys::try_from_i32(&offsets, values, Some(&validity), 0, 4)?;
/// assert_eq!(all.first_null(), Some(1));
/// let mut f = AnyFilter::builder(Kind::Blocked).capacity(100).fpr(0.01).try_build()?;
/// // a null is no key: refused, nothing inserted
/// assert!(f.insert_arrow(&all).is_err());
/// let tail = all.slice(2..4).expect("in range"); // ["", "cde"]
/// assert_eq!(f.insert_arrow(&tail).map_err(|(_, e)| e)?, 2);
/// let mut out = [false; 2];
/// f.contains_arrow(&tail, &mut out)?;
/// assert_eq!(out, [true, true]);
/// assert!(f.contains("cde") && !f.contains("ab"));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ArrowBinaryKeys<'a> {
    offsets: Offsets<'a>,
    values: &'a [u8],
    validity: Option<&'a [u8]>,
    /// Index of the first element in the buffers (Arrow's `offset`; also the first bit of
    /// `validity`).
    offset: usize,
    len: usize,
}

impl<'a> ArrowBinaryKeys<'a> {
    /// The keys of a `string` or `binary` array: its offsets buffer (`offset + len + 1`
    /// entries at least; may be empty when `len` is 0), its values buffer, its validity bitmap
    /// (`None` when it has none: no nulls; else at least `offset + len` bits, least
    /// significant bit first), and the array's `offset` and `length`. An
    /// [`Error::InvalidParameter`] when the buffers do not fit that description.
    pub fn try_from_i32(
        offsets: &'a [i32],
        values: &'a [u8],
        validity: Option<&'a [u8]>,
        offset: usize,
        len: usize,
    ) -> Result<Self> {
        check(offsets, values, validity, offset, len)?;
        Ok(Self {
            offsets: Offsets::I32(offsets),
            values,
            validity,
            offset,
            len,
        })
    }

    /// [`try_from_i32`](Self::try_from_i32) for a `large_string` or `large_binary` array
    /// (64-bit offsets).
    pub fn try_from_i64(
        offsets: &'a [i64],
        values: &'a [u8],
        validity: Option<&'a [u8]>,
        offset: usize,
        len: usize,
    ) -> Result<Self> {
        check(offsets, values, validity, offset, len)?;
        Ok(Self {
            offsets: Offsets::I64(offsets),
            values,
            validity,
            offset,
            len,
        })
    }

    /// Number of elements (nulls included).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements with indices in `range` (Arrow's slice: the same buffers, a larger
    /// offset); `None` when `range` is not within `0..len()`.
    pub fn slice(&self, range: Range<usize>) -> Option<Self> {
        if range.start > range.end || range.end > self.len {
            return None;
        }
        Some(Self {
            offset: self.offset + range.start,
            len: range.len(),
            ..*self
        })
    }

    /// False when element `i` is null (or beyond the end).
    pub fn is_valid(&self, i: usize) -> bool {
        i < self.len && self.validity.is_none_or(|v| bit(v, self.offset + i))
    }

    /// The index of the first null element, if any.
    pub fn first_null(&self) -> Option<usize> {
        let v = self.validity?;
        let (start, end) = (self.offset, self.offset + self.len);
        let mut j = start;
        while j < end {
            // whole bytes of valid elements at once
            if j % 8 == 0 && j + 8 <= end && v[j / 8] == 0xff {
                j += 8;
                continue;
            }
            if !bit(v, j) {
                return Some(j - start);
            }
            j += 1;
        }
        None
    }

    /// The bytes of element `i`: `None` when it is null or beyond the end.
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        if !self.is_valid(i) {
            return None;
        }
        let j = self.offset + i;
        Some(match self.offsets {
            Offsets::I32(o) => span(self.values, o[j], o[j + 1]),
            Offsets::I64(o) => span(self.values, o[j], o[j + 1]),
        })
    }

    /// An error naming the first null element, if any.
    fn refuse_nulls(&self) -> Result<()> {
        match self.first_null() {
            None => Ok(()),
            Some(i) => Err(invalid(
                "keys",
                format!(
                    "element {i} of the Arrow array is null: a null is no key (drop nulls \
                     first)"
                ),
            )),
        }
    }

    /// Hash the keys with `hasher`, handing them to `f` in order in chunks of up to 1024
    /// (`f(start, hashes)`, `start` the index of the chunk's first key); stops at the first
    /// error `f` returns. An [`Error::InvalidParameter`] before any call when an element is
    /// null. What the batch operations of other structures (counters, cuckoo filters) build
    /// on; the hashes are [`KeyHasher::hash_bytes`] of each key's bytes.
    pub fn hash_chunks<E: From<Error>>(
        &self,
        hasher: &KeyHasher,
        mut f: impl FnMut(usize, &[Hashed]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        self.refuse_nulls()?;
        let mut buf = [Hashed::default(); HASH_CHUNK];
        let mut start = 0;
        while start < self.len {
            let n = HASH_CHUNK.min(self.len - start);
            let from = self.offset + start;
            match self.offsets {
                Offsets::I32(o) => hash_into(hasher, &o[from..=from + n], self.values, &mut buf),
                Offsets::I64(o) => hash_into(hasher, &o[from..=from + n], self.values, &mut buf),
            }
            f(start, &buf[..n])?;
            start += n;
        }
        Ok(())
    }
}

/// The bit of element `j` in a validity bitmap (1: valid).
#[inline(always)]
fn bit(v: &[u8], j: usize) -> bool {
    v[j / 8] & (1 << (j % 8)) != 0
}

/// The bytes between two checked offsets.
#[inline(always)]
fn span<O: Offset>(values: &[u8], s: O, e: O) -> &[u8] {
    // checked by the constructor: 0 <= s <= e <= values.len()
    &values[s.get() as usize..e.get() as usize]
}

/// Hash the keys between consecutive `offsets` (n + 1 of them) into `out[..n]`.
#[inline(always)]
fn hash_into<O: Offset>(hasher: &KeyHasher, offsets: &[O], values: &[u8], out: &mut [Hashed]) {
    for (w, o) in offsets.windows(2).zip(out.iter_mut()) {
        *o = hasher.hash_bytes(span(values, w[0], w[1]));
    }
}

/// The constructors' checks (see [`ArrowBinaryKeys::try_from_i32`]).
fn check<O: Offset>(
    offsets: &[O],
    values: &[u8],
    validity: Option<&[u8]>,
    offset: usize,
    len: usize,
) -> Result<()> {
    let end = offset
        .checked_add(len)
        .ok_or_else(|| invalid("len", "offset + length overflows"))?;
    if len == 0 {
        return Ok(());
    }
    if offsets.len() <= end {
        return Err(invalid(
            "offsets",
            format!(
                "{} offsets for elements {offset}..{end} (needs {})",
                offsets.len(),
                end + 1
            ),
        ));
    }
    if let Some(v) = validity {
        if v.len() < end.div_ceil(8) {
            return Err(invalid(
                "validity",
                format!("{} bytes for {end} bits", v.len()),
            ));
        }
    }
    let o = &offsets[offset..=end];
    let bad = |i: usize| {
        invalid(
            "offsets",
            format!(
                "offsets of element {i} ({}, {}) are not a range of the {} value bytes",
                o[i].get(),
                o[i + 1].get(),
                values.len()
            ),
        )
    };
    if o[0].get() < 0 {
        return Err(bad(0));
    }
    if let Some(i) = o.windows(2).position(|w| w[1].get() < w[0].get()) {
        return Err(bad(i));
    }
    if o[len].get() as u64 > values.len() as u64 {
        return Err(bad(len - 1));
    }
    Ok(())
}

impl AnyFilter {
    /// Query every key of an Arrow binary array (see [`ArrowBinaryKeys`]): `out` gets one
    /// answer per element, the answer of [`contains`](Self::contains) for its bytes. The keys
    /// are hashed straight from the values buffer in chunks and probed through the same
    /// prefetching pipeline as [`contains_hashed_batch`](Self::contains_hashed_batch) (the
    /// blocked filter's own batch query where it applies); the multi-layer filter, whose keys
    /// are not hashed whole, answers key by key. An [`Error::InvalidParameter`] when `out` has
    /// not one slot per element or an element is null (nothing written then).
    pub fn contains_arrow(&self, keys: &ArrowBinaryKeys<'_>, out: &mut [bool]) -> Result<()> {
        if out.len() != keys.len() {
            return Err(invalid("out", "must have one slot per key"));
        }
        keys.refuse_nulls()?;
        if self.is_structured() {
            for (i, o) in out.iter_mut().enumerate() {
                *o = self.contains_key(keys.get(i).unwrap_or_default());
            }
            return Ok(());
        }
        keys.hash_chunks(self.hasher(), |start, hs| {
            let out = &mut out[start..start + hs.len()];
            match self {
                AnyFilter::Blocked(b) => b.contains_hashed_batch(hs, out),
                f => super::batch::pipelined(
                    &mut &*f,
                    hs,
                    |f, h| f.prefetch_hashed(h),
                    |f, i, h| {
                        out[i] = f.try_contains_hashed(h)?;
                        Ok::<(), Error>(())
                    },
                ),
            }
        })
    }

    /// Insert every key of an Arrow binary array (see [`ArrowBinaryKeys`]) in order, hashed
    /// straight from the values buffer in chunks and inserted through the prefetching pipeline
    /// of [`insert_hashed_batch`](Self::insert_hashed_batch) (the multi-layer filter: key by
    /// key); returns how many were new. The result is that of inserting the keys one by one.
    /// Errors: a null element (index 0 is reported with it: nothing is inserted), or the first
    /// key the filter refuses (a non-scaling filter at capacity, a multi-layer key that is not
    /// a URL), with its index: the keys before it are in.
    pub fn insert_arrow(
        &mut self,
        keys: &ArrowBinaryKeys<'_>,
    ) -> std::result::Result<u64, (usize, Error)> {
        keys.refuse_nulls().map_err(|e| (0, e))?;
        if self.is_structured() {
            let mut new = 0;
            for i in 0..keys.len() {
                let k = keys.get(i).unwrap_or_default();
                new += u64::from(self.try_insert_key(k).map_err(|e| (i, e))?);
            }
            return Ok(new);
        }
        let hasher = *self.hasher();
        let mut new = 0;
        keys.hash_chunks(&hasher, |start, hs| {
            new += self
                .insert_hashed_batch(hs)
                .map_err(|(i, e)| Failed(start + i, e))?;
            Ok::<(), Failed>(())
        })
        .map_err(|Failed(i, e)| (i, e))?;
        Ok(new)
    }
}

/// An insert's error with the index of the key it failed at (the nulls check reports 0).
struct Failed(usize, Error);

impl From<Error> for Failed {
    fn from(e: Error) -> Self {
        Failed(0, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::Kind;

    /// Offsets, values, validity and the elements of a test array.
    type TestArray = (Vec<i64>, Vec<u8>, Vec<u8>, Vec<Option<Vec<u8>>>);

    /// A pseudo-random Arrow array (fixed seed): keys of 0..60 bytes, some empty, some
    /// repeated, every third element null when `nulls`; returns the offsets, values and
    /// validity, and the elements as Rust values.
    fn array(n: usize, nulls: bool) -> TestArray {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut offsets, mut values, mut validity, mut elems) =
            (vec![0i64], Vec::new(), vec![0u8; n.div_ceil(8)], Vec::new());
        for i in 0..n {
            if nulls && i % 3 == 1 {
                offsets.push(values.len() as i64);
                elems.push(None);
                continue;
            }
            validity[i / 8] |= 1 << (i % 8);
            let r = next();
            let k = if r % 7 == 0 {
                format!("key-{}", r % 50).into_bytes() // repeats
            } else {
                (0..(r % 61) as usize)
                    .map(|j| (r >> (j % 56)) as u8)
                    .collect()
            };
            values.extend_from_slice(&k);
            offsets.push(values.len() as i64);
            elems.push(Some(k));
        }
        (offsets, values, validity, elems)
    }

    fn views<'a>(
        o64: &'a [i64],
        o32: &'a [i32],
        values: &'a [u8],
        validity: Option<&'a [u8]>,
        offset: usize,
        len: usize,
    ) -> [ArrowBinaryKeys<'a>; 2] {
        [
            ArrowBinaryKeys::try_from_i32(o32, values, validity, offset, len).unwrap(),
            ArrowBinaryKeys::try_from_i64(o64, values, validity, offset, len).unwrap(),
        ]
    }

    /// Batches over Arrow buffers answer exactly as per-key `contains`, and insert exactly as
    /// per-key inserts, for every set kind (the multi-layer filter included), with 32- and
    /// 64-bit offsets, over whole arrays and slices at odd offsets crossing chunk boundaries.
    #[test]
    fn arrow_batches_equal_per_key_calls() {
        let n = 3 * HASH_CHUNK + 77;
        let (o64, values, _, elems) = array(n, false);
        let o32: Vec<i32> = o64.iter().map(|&o| o as i32).collect();
        let urls: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("https://h{}.example/p/{}", i % 40, i % 300).into_bytes())
            .collect();
        let (mut uo, mut uv) = (vec![0i64], Vec::new());
        for u in &urls {
            uv.extend_from_slice(u);
            uo.push(uv.len() as i64);
        }
        let uo32: Vec<i32> = uo.iter().map(|&o| o as i32).collect();
        for &kind in Kind::SETS {
            type Buffers<'a> = (&'a [i64], &'a [i32], &'a [u8], Vec<&'a [u8]>);
            let (o64, o32, values, elems): Buffers<'_> = if kind == Kind::Mlbf {
                (&uo, &uo32, &uv, urls.iter().map(|u| &u[..]).collect())
            } else {
                (
                    &o64,
                    &o32,
                    &values,
                    elems.iter().map(|e| e.as_deref().unwrap()).collect(),
                )
            };
            for (start, len) in [(0, n), (13, n - 13 - 5), (HASH_CHUNK - 1, 2), (5, 0)] {
                for keys in views(o64, o32, values, None, start, len) {
                    let mut f = AnyFilter::builder(kind)
                        .capacity(n as u64)
                        .fpr(0.01)
                        .try_build()
                        .unwrap();
                    let mut g = f.clone();
                    // half inserted in one batch, half one by one: the queries see both
                    let half = keys.slice(0..len / 2).unwrap();
                    let new = f.insert_arrow(&half).unwrap();
                    let mut new_g = 0;
                    for k in &elems[start..start + len / 2] {
                        new_g += u64::from(g.try_insert_key(k).unwrap());
                    }
                    assert_eq!(new, new_g, "{kind}");
                    assert_eq!(f, g, "{kind}");
                    let mut out = vec![false; len];
                    f.contains_arrow(&keys, &mut out).unwrap();
                    for (i, k) in elems[start..start + len].iter().enumerate() {
                        assert_eq!(out[i], f.contains(k), "{kind} {i}");
                    }
                    assert!(out[..len / 2].iter().all(|&b| b), "{kind}");
                    // a part answers into its own slice, as a thread given that part would
                    let mut parts = vec![false; len];
                    let mid = len / 3;
                    f.contains_arrow(&keys.slice(0..mid).unwrap(), &mut parts[..mid])
                        .unwrap();
                    f.contains_arrow(&keys.slice(mid..len).unwrap(), &mut parts[mid..])
                        .unwrap();
                    assert_eq!(parts, out, "{kind}");
                }
            }
        }
    }

    /// A null is refused (its index in the slice named, nothing inserted or written); a slice
    /// clear of the nulls, at a bit offset inside a validity byte, works; hashes equal the
    /// per-key hashes.
    #[test]
    fn nulls_are_refused_and_slices_between_them_work() {
        let n = 40;
        let (o64, values, validity, elems) = array(n, true);
        let o32: Vec<i32> = o64.iter().map(|&o| o as i32).collect();
        for keys in views(&o64, &o32, &values, Some(&validity), 0, n) {
            assert_eq!(keys.first_null(), Some(1));
            assert_eq!(keys.slice(2..n).unwrap().first_null(), Some(2)); // element 4
            assert_eq!(keys.slice(17..19).unwrap().first_null(), None); // 17, 18 valid
            for (i, e) in elems.iter().enumerate() {
                assert_eq!(keys.get(i), e.as_deref(), "{i}");
                assert_eq!(keys.is_valid(i), e.is_some());
            }
            let mut f = AnyFilter::builder(Kind::Blocked)
                .capacity(100)
                .fpr(0.01)
                .try_build()
                .unwrap();
            let (i, e) = f.insert_arrow(&keys.slice(3..n).unwrap()).unwrap_err();
            assert_eq!(i, 0);
            assert!(e.to_string().contains("element 1 "), "{e}");
            assert_eq!(f.len(), 0, "nothing inserted");
            let mut out = vec![true; n];
            let e = f.contains_arrow(&keys, &mut out).unwrap_err();
            assert!(e.to_string().contains("element 1 ") && out.iter().all(|&b| b));
            let ok = keys.slice(17..19).unwrap(); // starts at bit 1 of byte 2
            assert_eq!(f.insert_arrow(&ok).unwrap(), 2);
            let mut out = [false; 2];
            f.contains_arrow(&ok, &mut out).unwrap();
            assert_eq!(out, [true, true]);
            let h = *f.hasher();
            let mut seen = Vec::new();
            ok.hash_chunks(&h, |s, hs| {
                assert_eq!(s, 0);
                seen.extend_from_slice(hs);
                Ok::<(), Error>(())
            })
            .unwrap();
            let want: Vec<Hashed> = elems[17..19]
                .iter()
                .map(|e| h.hash_bytes(e.as_deref().unwrap()))
                .collect();
            assert_eq!(seen, want);
        }
    }

    /// Malformed buffers are refused by the constructors, never read out of bounds.
    #[test]
    fn malformed_buffers_are_refused() {
        let v = b"abcdef";
        let ok = ArrowBinaryKeys::try_from_i32(&[0, 2, 6], v, None, 0, 2);
        assert!(ok.is_ok());
        let bad: [(&[i32], usize, usize); 5] = [
            (&[0, 2], 0, 2),     // too few offsets
            (&[0, 3, 2], 0, 2),  // decreasing
            (&[-1, 2, 6], 0, 2), // negative
            (&[0, 2, 7], 0, 2),  // past the values
            (&[0, 2, 6], 1, 2),  // slice past the offsets
        ];
        for (o, off, len) in bad {
            let e = ArrowBinaryKeys::try_from_i32(o, v, None, off, len).unwrap_err();
            assert!(matches!(e, Error::InvalidParameter { .. }), "{o:?}: {e}");
        }
        assert!(ArrowBinaryKeys::try_from_i64(&[0, 2, 6], v, Some(&[]), 0, 2).is_err());
        assert!(ArrowBinaryKeys::try_from_i64(&[0, 2, 6], v, None, usize::MAX, 2).is_err());
        // an empty array needs no offsets at all
        let empty = ArrowBinaryKeys::try_from_i32(&[], &[], None, 0, 0).unwrap();
        let f = AnyFilter::builder(Kind::Blocked)
            .capacity(10)
            .fpr(0.01)
            .try_build()
            .unwrap();
        f.contains_arrow(&empty, &mut []).unwrap();
        assert!(ok.unwrap().slice(1..3).is_none());
    }
}
