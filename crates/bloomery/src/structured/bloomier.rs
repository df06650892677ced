//! The Bloomier filter: [`BloomierFilter`] (its docs say which paper it follows and when to pick
//! it).

use crate::error::{inconsistent, invalid, Result};
use crate::hash::{reduce, Hashed, Key, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::peel::{self, PeelError, MAX_ATTEMPTS};
use crate::store::{self, Words};

/// Cells per key of the 3-block layout.
pub const CELLS_PER_KEY: f64 = 1.23;

/// Options for a [`BloomierFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::BloomierFilter;
///
/// // values of up to 4 bits, 16-bit fingerprints to tell keys outside the map
/// let pairs = [("red", 1u64), ("green", 12)];
/// let f = BloomierFilter::builder().value_bits(4).fingerprint_bits(16).try_build(&pairs)?;
/// assert_eq!(f.get("green"), Some(12));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BloomierBuilder {
    value_bits: u32,
    fingerprint_bits: u32,
    hasher: KeyHasher,
    max_bytes: u64,
}

impl BloomierBuilder {
    crate::filter::hashing_setters!();

    /// Value width b in 1..=64 (default 8).
    pub fn value_bits(mut self, b: u32) -> Self {
        self.value_bits = b;
        self
    }
    /// Fingerprint width f (default 0: no outsider detection); b + f ≤ 64.
    pub fn fingerprint_bits(mut self, f: u32) -> Self {
        self.fingerprint_bits = f;
        self
    }

    /// Build from (key, value) pairs. Each key must appear once; each value must fit in b bits.
    pub fn try_build<K: Key>(self, pairs: &[(K, u64)]) -> Result<BloomierFilter, PeelError> {
        let hs: Vec<(Hashed, u64)> = pairs
            .iter()
            .map(|(k, v)| (self.hasher.hash(k), *v))
            .collect();
        self.try_build_hashed(&hs)
    }

    /// Build from pre-hashed pairs (hashed with this builder's hasher).
    pub fn try_build_hashed(self, pairs: &[(Hashed, u64)]) -> Result<BloomierFilter, PeelError> {
        let (b, f) = (self.value_bits, self.fingerprint_bits);
        if b == 0 || b > 64 || b + f > 64 {
            return Err(invalid(
                "value_bits",
                format!("need 1 ≤ b ≤ 64 and b + fingerprint ≤ 64, got b={b} f={f}"),
            )
            .into());
        }
        for (i, &(_, v)) in pairs.iter().enumerate() {
            if v & !peel::mask(b) != 0 {
                return Err(PeelError::ValueTooWide {
                    index: i,
                    value: v,
                    bits: b,
                });
            }
        }
        let hs: Vec<Hashed> = pairs.iter().map(|p| p.0).collect();
        if let Some((first, second)) = peel::find_duplicate(&hs) {
            return Err(PeelError::DuplicateKey { first, second });
        }
        let n = pairs.len() as u64;
        let block = ((n as f64 * CELLS_PER_KEY / 3.0).ceil() as u64).max(1) + 8;
        let cells = block * 3;
        let w = b + f;
        let words = peel::words_for(cells, w).ok_or_else(|| invalid("keys", "too many"))?;
        store::check_size(words as u64 * 8 + cells * 12 + n * 24, self.max_bytes)?;
        for a in 0..MAX_ATTEMPTS {
            let mut m = BloomierFilter {
                hasher: self.hasher,
                b,
                f,
                items: n,
                seed: peel::attempt_seed(self.hasher.seed(), a),
                block,
                table: Words::zeroed(0, self.max_bytes)?,
            };
            let Some(order) = peel::peel(hs.len(), cells as usize, |i| m.positions(hs[i])) else {
                continue;
            };
            let mut table = Words::zeroed(words, self.max_bytes)?;
            let t = table.as_mut_slice();
            for &(k, c) in order.iter().rev() {
                let (h, v) = pairs[k];
                let [p0, p1, p2] = m.positions(h);
                let x = m.target(h, v)
                    ^ peel::get_cell(t, p0, w)
                    ^ peel::get_cell(t, p1, w)
                    ^ peel::get_cell(t, p2, w);
                peel::xor_cell(t, c, w, x);
            }
            m.table = table;
            return Ok(m);
        }
        Err(PeelError::Unpeelable {
            attempts: MAX_ATTEMPTS,
        })
    }
}

/// The Bloomier filter: a static map from keys to b-bit values (Broder & Mitzenmacher §9; Chazelle, Kilian,
/// Rubinfeld & Tal, "The Bloomier filter", SODA 2004).
///
/// Each key is an edge of a random 3-uniform hypergraph on a table of about 1.23 n cells (three
/// equal blocks, one cell per block); peeling orders the keys so that each owns a
/// cell nobody later in the order touches, and the cells are filled so that for every key
/// `T[h₀] ⊕ T[h₁] ⊕ T[h₂] ⊕ M(x) = value(x)`, where M(x) is a pseudo-random mask. A lookup is
/// three reads and two XORs. For a key in the set it returns its value, always; for a key
/// outside it returns an arbitrary value — "with small probability a wrong value", as Broder & Mitzenmacher §9
/// puts it, becomes "almost always a meaningless value" unless you add a **fingerprint**: with
/// `fingerprint_bits = f` each cell also stores f check bits and an outsider is detected
/// (`None`) except with probability 2^-f. Cells are `b + f ≤ 64` bits, bit-packed.
///
/// Build failure (the hypergraph has a 2-core) is retried with a new seed derived
/// deterministically from the hasher, at most `MAX_ATTEMPTS` times, then a typed
/// `Unpeelable`; duplicate keys are a typed `DuplicateKey`.
///
/// **When to pick it:** a fixed key → small-value table (route ids, shard numbers, class
/// labels) that must be tiny and fast and may answer garbage for unknown keys (or, with a
/// fingerprint, answer "unknown" for nearly all of them). It is static: rebuild to change it.
/// For a plain static set use [`crate::XorFilter`]; for counts use the counting family.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::BloomierFilter;
///
/// let pairs = [("red", 1u64), ("green", 2), ("blue", 3)];
/// let f = BloomierFilter::builder().value_bits(2).try_build(&pairs)?;
/// assert_eq!(f.get("green"), Some(2));
/// assert_eq!(f.len(), 3);
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq)]
pub struct BloomierFilter {
    hasher: KeyHasher,
    b: u32,
    f: u32,
    items: u64,
    seed: u64,
    block: u64,
    table: Words,
}

/// `Debug` without the construction seed of a keyed filter (it is derived from the secret).
impl std::fmt::Debug for BloomierFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomierFilter")
            .field("hasher", &self.hasher)
            .field("b", &self.b)
            .field("f", &self.f)
            .field("items", &self.items)
            .field(
                "seed",
                &crate::hash::MaybeSecret(self.hasher.is_secret(), self.seed),
            )
            .field("block", &self.block)
            .field("table", &self.table)
            .finish()
    }
}

impl BloomierFilter {
    /// A builder (8-bit values, no fingerprint, default hasher).
    pub fn builder() -> BloomierBuilder {
        BloomierBuilder {
            value_bits: 8,
            fingerprint_bits: 0,
            hasher: KeyHasher::new(),
            max_bytes: store::max_bytes(),
        }
    }

    #[inline]
    fn positions(&self, h: Hashed) -> [usize; 3] {
        let (a, c, _) = peel::derive(h, self.seed);
        let bl = self.block;
        [
            reduce(a, bl) as usize,
            (bl + reduce(c, bl)) as usize,
            (2 * bl + reduce(a.rotate_left(32) ^ c, bl)) as usize,
        ]
    }

    /// What the three cells of `h` XOR to: `value ⊕ M(x)` in the low b bits, the fingerprint
    /// above them.
    #[inline]
    fn target(&self, h: Hashed, v: u64) -> u64 {
        let m = peel::derive(h, self.seed).2;
        let vm = (v ^ m) & peel::mask(self.b);
        if self.f == 0 {
            vm
        } else {
            vm | (((m >> 32) ^ m.rotate_left(7)) & peel::mask(self.f)) << self.b
        }
    }

    /// The value stored for a pre-hashed key; `None` only when a fingerprint is configured and
    /// does not match (the key is certainly not in the map).
    #[inline]
    pub fn get_hashed(&self, h: Hashed) -> Option<u64> {
        if self.items == 0 {
            return None;
        }
        let w = self.b + self.f;
        let t = self.table.as_slice();
        let [p0, p1, p2] = self.positions(h);
        let x = peel::get_cell(t, p0, w) ^ peel::get_cell(t, p1, w) ^ peel::get_cell(t, p2, w);
        let want = self.target(h, 0);
        if self.f > 0 && (x ^ want) >> self.b != 0 {
            return None;
        }
        Some((x ^ want) & peel::mask(self.b))
    }

    /// The value stored for `key` (see [`get_hashed`](Self::get_hashed)).
    #[inline]
    pub fn get<K: Key + ?Sized>(&self, key: &K) -> Option<u64> {
        self.get_hashed(self.hasher.hash(key))
    }

    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
    /// Keys in the map.
    pub fn len(&self) -> u64 {
        self.items
    }
    /// True for the empty map.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }
    /// Value width b.
    pub fn value_bits(&self) -> u32 {
        self.b
    }
    /// Fingerprint width f.
    pub fn fingerprint_bits(&self) -> u32 {
        self.f
    }
    /// Table cells.
    pub fn cells(&self) -> u64 {
        self.block * 3
    }
    /// Table bits.
    pub fn bit_len(&self) -> u64 {
        self.cells() * u64::from(self.b + self.f)
    }
}

impl Persist for BloomierFilter {
    const KIND: Kind = Kind::Bloomier;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Bloomier, self.hasher);
        h.items = self.items;
        h.params = ParamWriter::new()
            .u32(self.b)
            .u32(self.f)
            .u64(self.seed)
            .u64(self.block)
            .finish();
        (h, Payload::new(vec![&self.table]))
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let b = r.u32()?;
        let f = r.u32()?;
        let seed = r.u64()?;
        let block = r.u64()?;
        r.finish()?;
        if b == 0
            || b > 64
            || f > 64 - b
            || block == 0
            || block > u64::MAX / 3
            || d.header.capacity != 0
            || d.header.target_fpr != 0.0
        {
            return Err(inconsistent(format!(
                "bloomier shape b={b} f={f} block={block}"
            )));
        }
        let cells = block * 3;
        if d.header.items > cells {
            return Err(inconsistent("more keys than cells"));
        }
        let words = peel::words_for(cells, b + f).ok_or_else(|| inconsistent("table too large"))?;
        format::check_payload(d, words)?;
        let table = src.words(d.payload_offset, words, limit)?;
        if !peel::tail_clean(table.as_slice(), cells, b + f) {
            return Err(inconsistent("bits set beyond the table"));
        }
        Ok(Self {
            hasher: d.header.hasher,
            b,
            f,
            items: d.header.items,
            seed,
            block,
            table,
        })
    }
}

impl crate::dispatch::OtherKind for BloomierFilter {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        ..crate::kind::Capabilities::NONE
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn returns_stored_values(map in prop::collection::hash_map(any::<u64>(), any::<u64>(), 0..1500),
                                 b in 1u32..=64, f in 0u32..=16) {
            let f = f.min(64 - b);
            let pairs: Vec<(u64, u64)> = map.iter().map(|(k, v)| (*k, v & peel::mask(b))).collect();
            let m = BloomierFilter::builder().value_bits(b).fingerprint_bits(f).try_build(&pairs).unwrap();
            for (k, v) in &pairs {
                prop_assert_eq!(m.get(k), Some(*v));
            }
            let g = BloomierFilter::from_bytes(&m.to_bytes()).unwrap();
            prop_assert_eq!(&g, &m);
        }
    }

    #[test]
    fn outsiders_and_fingerprints() {
        let pairs: Vec<(String, u64)> = (0..20_000u64).map(|i| (format!("k{i}"), i % 7)).collect();
        let plain = BloomierFilter::builder()
            .value_bits(3)
            .try_build(&pairs)
            .unwrap();
        assert!(plain.cells() as f64 <= 20_000.0 * 1.24 + 30.0);
        let fp = BloomierFilter::builder()
            .value_bits(3)
            .fingerprint_bits(8)
            .try_build(&pairs)
            .unwrap();
        let want: HashMap<_, _> = pairs.iter().cloned().collect();
        for (k, v) in &want {
            assert_eq!(plain.get(k.as_str()), Some(*v));
            assert_eq!(fp.get(k.as_str()), Some(*v));
        }
        let q = 50_000u64;
        let mut wrong_plain = 0u64;
        let mut passed_fp = 0u64;
        for i in 0..q {
            let k = format!("outsider{i}");
            wrong_plain += u64::from(plain.get(k.as_str()).is_some());
            passed_fp += u64::from(fp.get(k.as_str()).is_some());
        }
        // without a fingerprint every outsider gets some value
        assert_eq!(wrong_plain, q);
        // with 8 bits, about 1/256 get through: mean 195, 3σ ≈ 42
        let mean = q as f64 / 256.0;
        assert!(
            (passed_fp as f64 - mean).abs() < 3.0 * mean.sqrt() + 5.0,
            "{passed_fp}"
        );
    }

    #[test]
    fn errors_are_typed() {
        let dup = BloomierFilter::builder().try_build(&[("a", 1), ("b", 2), ("a", 3)]);
        assert!(matches!(
            dup,
            Err(PeelError::DuplicateKey {
                first: 0,
                second: 2
            })
        ));
        let wide = BloomierFilter::builder()
            .value_bits(4)
            .try_build(&[("a", 16)]);
        assert!(matches!(
            wide,
            Err(PeelError::ValueTooWide { index: 0, .. })
        ));
        assert!(BloomierFilter::builder()
            .value_bits(0)
            .try_build(&[("a", 0)])
            .is_err());
        assert!(BloomierFilter::builder()
            .value_bits(60)
            .fingerprint_bits(5)
            .try_build(&[("a", 0)])
            .is_err());
        let e: crate::error::Error = PeelError::Unpeelable { attempts: 3 }.into();
        assert!(matches!(e, crate::error::Error::Unsupported(_)));
        assert!(BloomierFilter::builder()
            .max_bytes(64)
            .try_build(&(0..10_000u64).map(|i| (i, 0)).collect::<Vec<_>>())
            .is_err());
        let empty = BloomierFilter::builder().try_build::<u64>(&[]).unwrap();
        assert_eq!(empty.get(&5u64), None);
        assert_eq!(
            BloomierFilter::from_bytes(&empty.to_bytes()).unwrap(),
            empty
        );
        let m = BloomierFilter::builder()
            .value_bits(64)
            .try_build(&[("x", u64::MAX)])
            .unwrap();
        assert_eq!(m.get("x"), Some(u64::MAX));
        let bytes = m.to_bytes();
        assert!(BloomierFilter::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(crate::sets::xor::XorFilter::from_bytes(&bytes).is_err());
    }
}
