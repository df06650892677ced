//! A static set filter on the peeling construction: xor filters in the binary-fuse segment
//! layout (Graf & Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022;
//! the Bloomier construction of seed 002 §9 with a fingerprint as the stored value).
//!
//! Each key gets three cells in three consecutive segments of a table of w-bit cells (w = 8 or
//! 16) and a w-bit fingerprint; [peeling](crate::peel) fills the table so that the XOR of a
//! key's three cells is its fingerprint. A query XORs three cells and compares: an inserted key
//! always matches, another key matches with probability 2^-w. With the segmented layout the
//! table needs about 1.125 n cells for large n (the size factor
//! `max(1.125, 0.875 + 0.25·ln 10⁶ / ln n)` of Graf & Lemire), so 8-bit fingerprints cost
//! ≈ 9 bits per key against the lower bound n·log2(1/ε) = 8 (002 §2.2): ≈ 1.13×, where a
//! Bloom filter needs 1.44×.
//!
//! **When to pick it:** the set is known up front and never changes (a release's list of
//! package names, a day's blocklist) and you want the least memory and three memory reads per
//! query. It cannot insert, delete or merge; rebuild instead. For sets that grow use
//! [`crate::BlockedBloomFilter`] or [`crate::ScalableBloomFilter`].

use crate::error::{inconsistent, invalid, Result};
use crate::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::hash::{reduce, Hashed, Key, KeyHasher};
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
#[derive(Debug, Clone)]
pub struct XorBuilder {
    fingerprint_bits: u32,
    hasher: KeyHasher,
    max_bytes: u64,
}

impl XorBuilder {
    /// Fingerprint width: 8 (ε ≈ 1/256) or 16 (ε ≈ 1/65536). Default 8.
    pub fn fingerprint_bits(mut self, w: u32) -> Self {
        self.fingerprint_bits = w;
        self
    }
    /// Hash with this hasher.
    pub fn hasher(mut self, h: KeyHasher) -> Self {
        self.hasher = h;
        self
    }
    /// Refuse to allocate more than this many bytes.
    pub fn max_bytes(mut self, limit: u64) -> Self {
        self.max_bytes = limit;
        self
    }

    /// Build from keys (repeated keys are kept once).
    pub fn try_build<K: Key>(self, keys: &[K]) -> Result<XorFilter, PeelError> {
        let hs: Vec<Hashed> = keys.iter().map(|k| self.hasher.hash(k)).collect();
        self.try_build_hashed(hs)
    }

    /// Build from pre-hashed keys (hashed with this builder's hasher).
    pub fn try_build_hashed(self, mut hs: Vec<Hashed>) -> Result<XorFilter, PeelError> {
        let w = self.fingerprint_bits;
        if w != 8 && w != 16 {
            return Err(invalid("fingerprint_bits", format!("must be 8 or 16, got {w}")).into());
        }
        hs.sort_unstable_by_key(|h| (h.lo, h.hi));
        hs.dedup();
        let n = hs.len() as u64;
        let (seg_len, seg_count) = layout(n);
        let cells = (u64::from(seg_count) + 2) * u64::from(seg_len);
        let words = peel::words_for(cells, w).ok_or_else(|| invalid("keys", "too many"))?;
        store::check_size(words as u64 * 8 + cells * 12 + n * 16, self.max_bytes)?;
        for a in 0..MAX_ATTEMPTS {
            let mut f = XorFilter {
                hasher: self.hasher,
                w,
                items: n,
                seed: peel::attempt_seed(self.hasher.seed(), a),
                seg_len,
                seg_count,
                table: Words::zeroed(0, self.max_bytes)?,
            };
            let Some(order) = peel::peel(hs.len(), cells as usize, |i| f.positions(hs[i])) else {
                continue;
            };
            let mut table = Words::zeroed(words, self.max_bytes)?;
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
            return Ok(f);
        }
        Err(PeelError::Unpeelable {
            attempts: MAX_ATTEMPTS,
        })
    }
}

/// A static xor filter in the binary-fuse layout (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq)]
pub struct XorFilter {
    hasher: KeyHasher,
    w: u32,
    items: u64,
    seed: u64,
    seg_len: u32,
    seg_count: u32,
    table: Words,
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

    /// Query a pre-hashed key.
    #[inline]
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        if self.items == 0 {
            return false;
        }
        let t = self.table.as_slice();
        let [p0, p1, p2] = self.positions_raw(h);
        peel::get_cell(t, p0, self.w)
            ^ peel::get_cell(t, p1, self.w)
            ^ peel::get_cell(t, p2, self.w)
            == self.fingerprint(h)
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
        assert!(crate::BloomFilter::from_bytes(&bytes).is_err());
        // keyed hashers work and differ
        let k = XorFilter::builder()
            .hasher(KeyHasher::with_secret(9))
            .try_build(&["x"])
            .unwrap();
        assert!(k.contains("x"));
    }
}
