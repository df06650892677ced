//! [`RedisBloomFilter`]: RedisBloom's scalable Bloom filter (`MBbloom--`), bit for bit.

use crate::dispatch::{hashed_set_kind, SetKind, SetStats};
use crate::error::{inconsistent, invalid, Error, Result};
use crate::filter::{Filter, Merge, Stats};
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::store::{self, Words};

use super::{bytes_of, check_tail, copy_into, RedisBloomChunkError, MAX_CHUNK};

/// Option: link sizes are not rounded to a power of two (every RedisBloom 2.x command sets it).
pub(crate) const OPT_NOROUND: u32 = 1;
/// Option: the capacity given at creation is the log2 of the bit count.
pub(crate) const OPT_ENTS_IS_BITS: u32 = 2;
/// Option: hash with MurmurHash64A (every RedisBloom 2.x command sets it); without it the
/// 32-bit MurmurHash2 of RedisBloom 1.x.
pub(crate) const OPT_FORCE64: u32 = 4;
/// Option: the chain never grows (`NONSCALING`); adds fail once the only link is full.
pub(crate) const OPT_NO_SCALING: u32 = 8;
const KNOWN_OPTIONS: u32 = OPT_NOROUND | OPT_ENTS_IS_BITS | OPT_FORCE64 | OPT_NO_SCALING;

/// Most links a chain may have. Each new link halves the error rate, so a chain that
/// RedisBloom grew runs out of representable error rates (below 2⁻¹⁰⁷⁴) before 1 076 links.
pub(crate) const MAX_LINKS: usize = 1100;
/// Most hash functions per link: ⌈ln2 · bpe⌉ at the smallest positive error rate is 1 075.
pub(crate) const MAX_HASHES: u32 = 1100;

/// RedisBloom's seed of the first MurmurHash64A.
pub(crate) const SEED_64: u64 = 0xc6a4_a793_5bd1_e995;
/// RedisBloom 1.x's seed of the first MurmurHash2.
pub(crate) const SEED_32: u32 = 0x9747_b28c;

/// ln 2 as RedisBloom writes it (15 digits): kept, since hash counts derive from it.
#[allow(clippy::approx_constant)]
const LN2: f64 = 0.693147180559945;
/// ln² 2 as RedisBloom writes it.
const LN2_SQUARED: f64 = 0.480453013918201;
/// Error-rate ratio of each new link.
const TIGHTENING: f64 = 0.5;
const HEADER_FIXED: usize = 20;
const HEADER_LINK: usize = 53;

/// A link's parameters, as RedisBloom stores them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LinkParams {
    entries: u64,
    error: f64,
    bpe: f64,
    bits: u64,
    bytes: u64,
    size: u64,
    hashes: u32,
    n2: u8,
}

/// One link of a [`RedisBloomFilter`]: a Bloom filter with RedisBloom's parameters.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::redisbloom::RedisBloomFilter;
///
/// let mut bf = RedisBloomFilter::reserve(100, 0.01, 2, true)?;
/// for i in 0..250u32 {
///     bf.try_insert(&i.to_le_bytes())?;
/// }
/// let links = bf.links(); // grown: 100, then 200 more
/// assert_eq!(links.len(), 2);
/// assert_eq!(links[0].entries(), 100);
/// assert!(links[1].error_rate() < links[0].error_rate()); // tightened per link
/// assert_eq!(links.iter().map(|l| l.len()).sum::<u64>(), 250);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RedisBloomLink {
    words: Words,
    p: LinkParams,
}

/// `ln(error)` converted to bits per entry, as RedisBloom computes it.
fn bits_per_entry(error: f64) -> f64 {
    let bpe = -(error.ln() / LN2_SQUARED);
    if bpe < 0.0 {
        -bpe
    } else {
        bpe
    }
}

/// C's `logb` for the positive finite values it is used on: the binary exponent.
fn logb(x: f64) -> f64 {
    if !x.is_finite() {
        return f64::INFINITY;
    }
    let exp = ((x.to_bits() >> 52) & 0x7ff) as i64;
    if exp == 0 {
        // subnormal
        x.log2().floor()
    } else {
        (exp - 1023) as f64
    }
}

impl LinkParams {
    /// Check RedisBloom's integrity rules (`bloom_validate_integrity`) and bloomery's limits.
    fn validate(&self, limit: u64) -> std::result::Result<(), String> {
        if !(self.error > 0.0 && self.error < 1.0) {
            return Err(format!("error rate {} outside (0, 1)", self.error));
        }
        if self.n2 > 63 {
            return Err(format!("n2 {} above 63", self.n2));
        }
        if self.n2 != 0 && self.bits < (1u64 << self.n2) {
            return Err(format!("{} bits for n2 {}", self.bits, self.n2));
        }
        if self.bits == 0 || self.bytes.checked_mul(8) != Some(self.bits) {
            return Err(format!("{} bits in {} bytes", self.bits, self.bytes));
        }
        let k = (LN2 * self.bpe).ceil();
        if !(self.bpe > 0.0 && self.bpe.is_finite()) || k != f64::from(self.hashes) {
            return Err(format!(
                "{} hashes for {} bits per entry",
                self.hashes, self.bpe
            ));
        }
        if self.hashes > MAX_HASHES {
            return Err(format!("{} hashes (at most {MAX_HASHES})", self.hashes));
        }
        if self.bytes > limit {
            return Err(format!(
                "a link of {} bytes exceeds the limit of {limit}",
                self.bytes
            ));
        }
        Ok(())
    }
}

impl RedisBloomLink {
    /// A new empty link sized as RedisBloom's `bloom_init` sizes it.
    fn init(entries: u64, error: f64, options: u32, limit: u64) -> Result<Self> {
        if entries < 1 {
            return Err(invalid("entries", "must be at least 1"));
        }
        if !(error > 0.0 && error < 1.0) {
            return Err(invalid("error_rate", "must be in (0, 1)"));
        }
        let bpe = bits_per_entry(error);
        let (n2, bits, entries) = if options & OPT_ENTS_IS_BITS != 0 {
            if entries > 63 {
                return Err(invalid("entries", "a bit exponent must be at most 63"));
            }
            let bits = 1u64 << entries;
            (entries as u8, bits, (bits as f64 / bpe) as u64)
        } else if options & OPT_NOROUND != 0 {
            let bits = ((entries as f64) * bpe) as u64;
            (0, bits.max(1), entries)
        } else {
            let want = (entries as f64) * bpe;
            let bn2 = logb(want);
            if !(-1.0..=63.0).contains(&bn2) {
                return Err(Error::TooLarge {
                    requested: u64::MAX,
                    limit,
                });
            }
            let n2 = (bn2 + 1.0) as u8;
            let bits = 1u64 << n2;
            let bit_diff = (bits as f64 - want) as u64;
            let item_diff = (bit_diff as f64 / bpe) as u64;
            (n2, bits, entries.wrapping_add(item_diff))
        };
        let bytes = if bits % 64 != 0 {
            (bits / 64 + 1) * 8
        } else {
            bits / 8
        };
        let bits = bytes.checked_mul(8).ok_or(Error::TooLarge {
            requested: bytes,
            limit,
        })?;
        let hashes = (LN2 * bpe).ceil();
        if !(1.0..=f64::from(MAX_HASHES)).contains(&hashes) {
            return Err(invalid(
                "error_rate",
                "too small for RedisBloom's hash count",
            ));
        }
        store::check_size(held(bytes), limit)?;
        let words = Words::zeroed(words_for(bytes)?, limit)?;
        Ok(Self {
            words,
            p: LinkParams {
                entries,
                error,
                bpe,
                bits,
                bytes,
                size: 0,
                hashes: hashes as u32,
                n2,
            },
        })
    }

    #[inline]
    fn index(&self, h: Hashed, i: u64) -> u64 {
        let x = h.lo.wrapping_add(i.wrapping_mul(h.hi));
        if self.p.n2 > 0 {
            x & ((1u64 << self.p.n2) - 1)
        } else {
            x % self.p.bits
        }
    }

    /// Whether every probe bit of `h` is set.
    #[inline]
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        let w = self.words.as_slice();
        (0..u64::from(self.p.hashes)).all(|i| store::get_bit(w, self.index(h, i)))
    }

    /// Set the probe bits of `h`; true when one of them was zero.
    fn set(&mut self, h: Hashed) -> bool {
        let mut fresh = false;
        for i in 0..u64::from(self.p.hashes) {
            let x = self.index(h, i);
            fresh |= store::set_bit(self.words.as_mut_slice(), x);
        }
        fresh
    }

    /// Keys this link was sized for.
    pub fn entries(&self) -> u64 {
        self.p.entries
    }
    /// Its error rate.
    pub fn error_rate(&self) -> f64 {
        self.p.error
    }
    /// Bits per entry.
    pub fn bits_per_entry(&self) -> f64 {
        self.p.bpe
    }
    /// Hash functions.
    pub fn hashes(&self) -> u32 {
        self.p.hashes
    }
    /// log2 of the probed range when it is a power of two, else 0.
    pub fn n2(&self) -> u8 {
        self.p.n2
    }
    /// Bits in the array (bytes · 8).
    pub fn bits(&self) -> u64 {
        self.p.bits
    }
    /// Bytes in the array.
    pub fn bytes(&self) -> u64 {
        self.p.bytes
    }
    /// Keys added to this link.
    pub fn len(&self) -> u64 {
        self.p.size
    }
    /// True when no key was added to this link.
    pub fn is_empty(&self) -> bool {
        self.p.size == 0
    }
    /// Bits the probes can reach: 2^n2, or all of them.
    fn probed_bits(&self) -> u64 {
        if self.p.n2 > 0 {
            1u64 << self.p.n2
        } else {
            self.p.bits
        }
    }
    fn ones(&self) -> u64 {
        store::count_ones_range(self.words.as_slice(), 0, self.probed_bits())
    }
}

/// Bytes a link of `bytes` bytes holds in memory: whole 64-byte lines.
fn held(bytes: u64) -> u64 {
    bytes.div_ceil(64).saturating_mul(64)
}

fn words_for(bytes: u64) -> Result<usize> {
    usize::try_from(bytes.div_ceil(8)).map_err(|_| Error::TooLarge {
        requested: bytes,
        limit: store::max_bytes(),
    })
}

/// RedisBloom's scalable Bloom filter, with its hash, bit layout and growth. Made by
/// importing RedisBloom's SCANDUMP chunks
/// ([`RedisBloomFilter::from_header_chunk`], [`crate::redisbloom::RedisBloomValue::from_chunks`]) or, for
/// tests, [`RedisBloomFilter::reserve`] (what `BF.RESERVE` makes). Equality compares the
/// contents, not the memory limit the filter was made or loaded under.
///
/// ## The mapping kept
/// A chain of links; each link is a plain Bloom filter over a byte array (bit `x` is bit
/// `x mod 8` of byte `x / 8`). A key is hashed once for the whole chain:
/// `a = MurmurHash64A(key, 0xc6a4a7935bd1e995)`, `b = MurmurHash64A(key, a)` — or, for chains
/// without the `FORCE64` option (filters made before RedisBloom 2.0),
/// `a = MurmurHash2(key, 0x9747b28c)`, `b = MurmurHash2(key, a)`. Probe `i` of a link
/// (`0 ≤ i < hashes`) is bit `(a + i·b) mod 2^n2` when the link's size is a power of two
/// (`n2 > 0`), else `(a + i·b) mod bits` (64-bit wrapping arithmetic).
///
/// A link is sized from (entries, error) exactly as RedisBloom 2.x sizes it: bits per entry
/// `bpe = −ln(error) / ln²2` (with its 15-digit constants), `hashes = ⌈ln2 · bpe⌉`, `bits =
/// entries · bpe` rounded up to a multiple of 64 (option `NOROUND`, what every 2.x command
/// uses) or to a power of two (without it). An add checks every link, newest first; a new key
/// goes into the newest link, and when that holds `entries` keys the chain grows a link with
/// `entries · growth` entries and half the error rate (or refuses, with `NO_SCALING`).
///
/// ## The SCANDUMP layout
/// The header chunk (iterator 1) is, packed little-endian: chain size `u64`, links `u32`,
/// options `u32`, growth `u32`, then per link bytes `u64`, bits `u64`, size `u64`, error
/// `f64`, bits per entry `f64`, hashes `u32`, entries `u64`, `n2` `u8` (20 + 53 bytes per
/// link). Data chunk `(it, data)` holds the link bytes at offset `it − len(data) − 1` of the
/// links' byte arrays laid end to end; SCANDUMP cuts them at link ends and every 16 MiB.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::redisbloom::{RedisBloomFilter, RedisBloomType, RedisBloomValue};
///
/// // BF.RESERVE k 0.01 1000 EXPANSION 2, scaling
/// let mut bf = RedisBloomFilter::reserve(1000, 0.01, 2, true)?;
/// assert!(bf.try_insert(b"a")?);
/// assert!(bf.contains(b"a"));
///
/// // a SCANDUMP as RedisBloom returns it: (1, header), then data chunks until `None`
/// let mut chunks = vec![(1i64, bf.header_chunk())];
/// let mut it = 1;
/// while let Some((next, data)) = bf.chunk(it) {
///     chunks.push((next, data));
///     it = next;
/// }
///
/// let back = RedisBloomValue::from_chunks(
///     RedisBloomType::Bloom,
///     chunks.iter().map(|(i, c)| (*i, &c[..])),
///     1 << 30,
/// )?;
/// assert!(matches!(back, RedisBloomValue::Bloom(b) if b == bf));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisBloomFilter {
    links: Vec<RedisBloomLink>,
    size: u64,
    options: u32,
    growth: u32,
    hasher: KeyHasher,
    max_bytes: u64,
}

impl PartialEq for RedisBloomFilter {
    fn eq(&self, o: &Self) -> bool {
        (
            &self.links,
            self.size,
            self.options,
            self.growth,
            self.hasher,
        ) == (&o.links, o.size, o.options, o.growth, o.hasher)
    }
}

impl RedisBloomFilter {
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the list of links, then each link's bit array. Arrays in a
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
        unsafe { store::relocate_vec(&mut self.links, mv) };
        for l in &mut self.links {
            // SAFETY: as above.
            unsafe { l.words.relocate(mv) };
        }
    }

    /// Option: link sizes are not rounded to a power of two (every RedisBloom 2.x command
    /// sets it).
    pub const OPT_NOROUND: u32 = OPT_NOROUND;
    /// Option: the capacity given at creation is the log2 of the bit count.
    pub const OPT_ENTS_IS_BITS: u32 = OPT_ENTS_IS_BITS;
    /// Option: hash with MurmurHash64A (every RedisBloom 2.x command sets it); without it the
    /// 32-bit MurmurHash2 of RedisBloom 1.x.
    pub const OPT_FORCE64: u32 = OPT_FORCE64;
    /// Option: the chain never grows (`NONSCALING`).
    pub const OPT_NO_SCALING: u32 = OPT_NO_SCALING;
    /// Most links a chain may have (RedisBloom runs out of representable error rates first).
    pub const MAX_LINKS: usize = MAX_LINKS;
    /// Most hash functions per link.
    pub const MAX_HASHES: u32 = MAX_HASHES;

    /// What `BF.RESERVE key error_rate capacity [EXPANSION growth] [NONSCALING]` makes in
    /// RedisBloom 2.x: options `FORCE64 | NOROUND` (and `NO_SCALING`), the first link at half
    /// the error rate when scaling. Refused beyond [`store::max_bytes`].
    pub fn reserve(capacity: u64, error_rate: f64, growth: u32, scaling: bool) -> Result<Self> {
        let options = OPT_FORCE64 | OPT_NOROUND | if scaling { 0 } else { OPT_NO_SCALING };
        Self::with_options(capacity, error_rate, options, growth, store::max_bytes())
    }

    /// A chain with explicit RedisBloom options (`OPT_*`), as RedisBloom's `SB_NewChain`
    /// makes it, refused beyond `max_bytes`.
    pub fn with_options(
        capacity: u64,
        error_rate: f64,
        options: u32,
        growth: u32,
        max_bytes: u64,
    ) -> Result<Self> {
        if options & !KNOWN_OPTIONS != 0 {
            return Err(invalid("options", format!("unknown bits in {options:#x}")));
        }
        if !(error_rate > 0.0 && error_rate < 1.0) {
            return Err(invalid("error_rate", "must be in (0, 1)"));
        }
        let tightening = if options & OPT_NO_SCALING != 0 {
            1.0
        } else {
            TIGHTENING
        };
        let link = RedisBloomLink::init(capacity, error_rate * tightening, options, max_bytes)?;
        Ok(Self {
            links: vec![link],
            size: 0,
            options,
            growth,
            hasher: hasher_for(options),
            max_bytes,
        })
    }

    /// Add a key as `BF.ADD` does: `Ok(true)` when it was new, `Ok(false)` when every probe
    /// bit was already set in some link; [`Error::Full`] for a full non-scaling chain, and
    /// the sizing error when a new link cannot be made. The chain is unchanged on error.
    pub fn try_insert(&mut self, key: &[u8]) -> Result<bool> {
        self.try_insert_hashed(self.hasher.hash_bytes(key))
    }

    /// [`try_insert`](Self::try_insert) for a key hashed with [`Filter::hasher`].
    pub fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        self.add(h)
    }

    /// `SBChain_Add`: RedisBloom's add.
    fn add(&mut self, h: Hashed) -> Result<bool> {
        if self.contains_hashed(h) {
            return Ok(false);
        }
        let last = self.links.len() - 1;
        let cur = &self.links[last];
        if cur.p.size >= cur.p.entries {
            if self.options & OPT_NO_SCALING != 0 {
                return Err(Error::Full {
                    capacity: self.links[0].p.entries,
                });
            }
            if self.links.len() >= MAX_LINKS {
                return Err(invalid("links", format!("at most {MAX_LINKS}")));
            }
            let entries = cur.p.entries.wrapping_mul(u64::from(self.growth));
            let error = cur.p.error * TIGHTENING;
            let held = self.held_bytes();
            let room = self.max_bytes.saturating_sub(held);
            let link = RedisBloomLink::init(entries, error, self.options, room)
                .map_err(|e| store::whole_after_growth(e, held, self.max_bytes))?;
            self.links.push(link);
        }
        Ok(self.add_to_newest(h))
    }

    fn add_to_newest(&mut self, h: Hashed) -> bool {
        let Some(cur) = self.links.last_mut() else {
            return false;
        };
        if !cur.set(h) {
            return false;
        }
        // counts saturate, as every kind's do: a chain at u64::MAX keys stays loadable
        cur.p.size = cur.p.size.saturating_add(1);
        self.size = self.size.saturating_add(1);
        true
    }

    /// Whether the key may have been added (`BF.EXISTS`).
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hashed(self.hasher.hash_bytes(key))
    }

    /// The links, oldest first.
    pub fn links(&self) -> &[RedisBloomLink] {
        &self.links
    }

    /// Keys added (`BF.CARD`).
    pub fn len(&self) -> u64 {
        self.size
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// RedisBloom's option bits (`OPT_*`).
    pub fn options(&self) -> u32 {
        self.options
    }

    /// Entries multiplier of each new link.
    pub fn growth(&self) -> u32 {
        self.growth
    }

    /// Whether the chain grows when full.
    pub fn is_scaling(&self) -> bool {
        self.options & OPT_NO_SCALING == 0
    }

    /// Keys the links hold before the chain must grow: the sum of their entries
    /// (`BF.INFO CAPACITY`).
    pub fn total_entries(&self) -> u64 {
        self.links
            .iter()
            .fold(0u64, |a, l| a.wrapping_add(l.p.entries))
    }

    /// Bytes of bit arrays (RedisBloom's sizes; what the data chunks cover).
    pub fn allocated_bytes(&self) -> u64 {
        self.links.iter().map(|l| l.p.bytes).sum()
    }

    /// Bytes the bit arrays take in memory (each link in whole 64-byte lines); what the memory
    /// limit bounds.
    pub fn held_bytes(&self) -> u64 {
        self.links.iter().map(|l| held(l.p.bytes)).sum()
    }

    /// The rate the chain was created for: the first link's error rate, doubled for a
    /// scaling chain (its links' rates halve, so their sum stays below it); 0 when that is
    /// not below 1.
    fn created_rate(&self) -> f64 {
        let e = self.links[0].p.error
            * if self.is_scaling() {
                1.0 / TIGHTENING
            } else {
                1.0
            };
        if e < 1.0 {
            e
        } else {
            0.0
        }
    }

    /// The SCANDUMP header chunk (what `BF.SCANDUMP key 0` returns after the iterator 1).
    pub fn header_chunk(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_FIXED + HEADER_LINK * self.links.len());
        b.extend_from_slice(&self.size.to_le_bytes());
        b.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.options.to_le_bytes());
        b.extend_from_slice(&self.growth.to_le_bytes());
        for l in &self.links {
            b.extend_from_slice(&l.p.bytes.to_le_bytes());
            b.extend_from_slice(&l.p.bits.to_le_bytes());
            b.extend_from_slice(&l.p.size.to_le_bytes());
            b.extend_from_slice(&l.p.error.to_le_bytes());
            b.extend_from_slice(&l.p.bpe.to_le_bytes());
            b.extend_from_slice(&l.p.hashes.to_le_bytes());
            b.extend_from_slice(&l.p.entries.to_le_bytes());
            b.push(l.p.n2);
        }
        b
    }

    /// A chain from a SCANDUMP header chunk, every field validated as RedisBloom validates it
    /// and against `limit` bytes; the links are zero until their data chunks are loaded.
    pub fn from_header_chunk(
        data: &[u8],
        limit: u64,
    ) -> std::result::Result<Self, RedisBloomChunkError> {
        let bad = |why: String| RedisBloomChunkError::BadHeader(why);
        if data.len() < HEADER_FIXED {
            return Err(bad(format!(
                "{} bytes, a chain header has at least {HEADER_FIXED}",
                data.len()
            )));
        }
        let mut r = Reader(data);
        let size = r.u64();
        let nfilters = r.u32();
        let options = r.u32();
        let growth = r.u32();
        if nfilters == 0 {
            return Err(bad("no links".into()));
        }
        let want = HEADER_FIXED as u64 + HEADER_LINK as u64 * u64::from(nfilters);
        if data.len() as u64 != want {
            return Err(bad(format!(
                "{} bytes for {nfilters} links (expected {want})",
                data.len()
            )));
        }
        if nfilters as usize > MAX_LINKS {
            return Err(bad(format!("{nfilters} links (at most {MAX_LINKS})")));
        }
        if options & !KNOWN_OPTIONS != 0 {
            return Err(bad(format!("unknown options {options:#x}")));
        }
        let mut metas = Vec::with_capacity(nfilters as usize);
        let mut total = 0u64;
        for i in 0..nfilters {
            let bytes = r.u64();
            let bits = r.u64();
            let lsize = r.u64();
            let error = r.f64();
            let bpe = r.f64();
            let hashes = r.u32();
            let entries = r.u64();
            let n2 = r.u8();
            let meta = LinkParams {
                entries,
                error,
                bpe,
                bits,
                bytes,
                size: lsize,
                hashes,
                n2,
            };
            meta.validate(limit)
                .map_err(|e| bad(format!("link {i}: {e}")))?;
            total = total.saturating_add(held(bytes));
            metas.push(meta);
        }
        if total > limit {
            return Err(RedisBloomChunkError::TooLarge {
                requested: total,
                limit,
            });
        }
        check_sizes(size, metas.iter().map(|m| m.size)).map_err(bad)?;
        let mut links = Vec::with_capacity(metas.len());
        for m in metas {
            let words = Words::zeroed(words_for(m.bytes)?, limit)?;
            links.push(RedisBloomLink { words, p: m });
        }
        Ok(Self {
            links,
            size,
            options,
            growth,
            hasher: hasher_for(options),
            max_bytes: limit,
        })
    }

    /// The link holding chunk position `it` (1-based, RedisBloom's `getLinkPos`) and the
    /// offset in it.
    fn link_at(&self, it: i64) -> Option<(usize, u64)> {
        if it < 1 {
            return None;
        }
        let mut at = it as u64 - 1;
        for (i, l) in self.links.iter().enumerate() {
            if at < l.p.bytes {
                return Some((i, at));
            }
            at -= l.p.bytes;
        }
        None
    }

    /// The data chunk at iterator `it` ≥ 1, as `BF.SCANDUMP key it` returns it: the next
    /// iterator and up to 16 MiB of one link's bytes; `None` (RedisBloom answers iterator 0
    /// and an empty string) past the last byte.
    pub fn chunk(&self, it: i64) -> Option<(i64, Vec<u8>)> {
        let (i, offset) = self.link_at(it)?;
        let l = &self.links[i];
        let len = (l.p.bytes - offset).min(MAX_CHUNK);
        Some((it + len as i64, bytes_of(&l.words, offset, len as usize)))
    }

    /// Load a data chunk `(it, data)` as `BF.LOADCHUNK` does: the bytes go to position
    /// `it − len(data)` of the links laid end to end and must not cross a link's end.
    pub fn load_chunk(
        &mut self,
        it: i64,
        data: &[u8],
    ) -> std::result::Result<(), RedisBloomChunkError> {
        if it <= 0 || (it as u64) < data.len() as u64 {
            return Err(RedisBloomChunkError::BadIterator {
                iterator: it,
                len: data.len() as u64,
            });
        }
        let start = it - data.len() as i64;
        let (i, offset) = self
            .link_at(start)
            .ok_or(RedisBloomChunkError::NoSubFilter {
                offset: (start - 1).max(0) as u64,
            })?;
        let l = &mut self.links[i];
        if data.len() as u64 > l.p.bytes - offset {
            return Err(RedisBloomChunkError::CrossesEnd {
                offset,
                len: data.len() as u64,
                room: l.p.bytes - offset,
            });
        }
        copy_into(&mut l.words, offset, data);
        Ok(())
    }

    /// RedisBloom's `BF.INFO SIZE`: the bytes its C structures take for this chain (a 32-byte
    /// chain, 64 bytes per link, and the arrays).
    pub fn redisbloom_memory(&self) -> u64 {
        32 + 64 * self.links.len() as u64 + self.allocated_bytes()
    }
}

/// RedisBloom's chain rule: the links' sizes add up to the chain's. The counts saturate at
/// `u64::MAX` (as every kind's item count does), so the sum does too: a chain whose count
/// reached it still loads.
fn check_sizes(size: u64, links: impl Iterator<Item = u64>) -> std::result::Result<(), String> {
    let total = links.fold(0u64, u64::saturating_add);
    if total != size {
        return Err(format!("chain size {size}, links hold {total}"));
    }
    Ok(())
}

fn hasher_for(options: u32) -> KeyHasher {
    if options & OPT_FORCE64 != 0 {
        KeyHasher::murmur(false, SEED_64)
    } else {
        KeyHasher::murmur(true, u64::from(SEED_32))
    }
}

/// Little-endian field reader over a slice whose length was checked.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&self.0[..N]);
        self.0 = &self.0[N..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
}

impl Filter for RedisBloomFilter {
    fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }

    /// [`try_insert_hashed`](RedisBloomFilter::try_insert_hashed); when that fails (a full
    /// non-scaling chain, or a link that cannot be made) the key still goes into the newest
    /// link, past its capacity, so it is never a false negative — RedisBloom would refuse it.
    fn insert_hashed(&mut self, h: Hashed) -> bool {
        match self.add(h) {
            Ok(new) => new,
            Err(_) => self.add_to_newest(h),
        }
    }

    /// RedisBloom's add: [`Error::Full`] for a full non-scaling chain, the sizing error when
    /// a new link cannot be made; the chain is unchanged then.
    fn try_insert_hashed(&mut self, h: Hashed) -> Result<bool> {
        self.add(h)
    }

    #[inline]
    fn contains_hashed(&self, h: Hashed) -> bool {
        self.links.iter().rev().any(|l| l.contains_hashed(h))
    }

    fn len(&self) -> u64 {
        self.size
    }
}

impl Stats for RedisBloomFilter {
    fn bit_len(&self) -> u64 {
        self.links.iter().map(|l| l.p.bits).sum()
    }
    fn count_ones(&self) -> u64 {
        self.links.iter().map(|l| l.ones()).sum()
    }
    /// The links' hash count when they all have the same, else 0.
    fn hash_count(&self) -> u32 {
        let k = self.links[0].p.hashes;
        if self.links.iter().all(|l| l.p.hashes == k) {
            k
        } else {
            0
        }
    }
    /// One minus the chance that no link answers yes: each link answers yes with its fill
    /// (over the bits its probes reach) to the power of its hash count.
    fn current_fpr(&self) -> f64 {
        let miss: f64 = self
            .links
            .iter()
            .map(|l| {
                let fill = l.ones() as f64 / l.probed_bits() as f64;
                1.0 - fill.powi(l.p.hashes as i32)
            })
            .product();
        1.0 - miss
    }
    fn capacity(&self) -> u64 {
        self.total_entries()
    }
    fn target_fpr(&self) -> f64 {
        self.created_rate()
    }
    /// The sum of the links' estimates (Broder & Mitzenmacher §2.1 per link).
    fn estimated_len(&self) -> f64 {
        self.links
            .iter()
            .map(|l| crate::params::estimate_items(l.probed_bits(), l.p.hashes, l.ones()))
            .sum()
    }
}

/// RedisBloom has no union or intersection of filters, and neither have its values here.
impl Merge for RedisBloomFilter {
    fn union_with(&mut self, _other: &Self) -> Result<()> {
        Err(Error::Unsupported(
            "redisbloom-bf filters have no union (RedisBloom has none)".into(),
        ))
    }
    fn intersect_with(&mut self, _other: &Self) -> Result<()> {
        Err(Error::Unsupported(
            "redisbloom-bf filters have no intersection (RedisBloom has none)".into(),
        ))
    }
}

impl SetKind for RedisBloomFilter {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        insert: true,
        hashed: true,
        ..crate::kind::Capabilities::NONE
    };
    hashed_set_kind!();
    fn stats(&self) -> SetStats {
        SetStats {
            bits: self.bit_len(),
            hashes: self.hash_count(),
            ones: self.count_ones(),
            current_fpr: self.current_fpr(),
            capacity: self.capacity(),
            target_fpr: self.target_fpr(),
            estimated_items: self.estimated_len(),
            sub_filters: self.links.len(),
            layers: 0,
        }
    }
}

/// Bytes of a link's parameters in the file format.
const FILE_LINK: usize = 56;

impl Persist for RedisBloomFilter {
    const KIND: Kind = Kind::RedisBloomChain;

    /// Parameters: options, growth, link count (`u32` each) and a zero `u32`, then per link
    /// entries `u64`, error `f64`, bits per entry `f64`, bits, bytes and size `u64`, hashes
    /// `u32`, n2 `u8` and three zero bytes. The payload is each link's bytes (little-endian
    /// words, so byte `j` of the link is RedisBloom's byte `j`), padded to 64 bytes. The
    /// header's hash is MurmurHash64A or MurmurHash2 as the `FORCE64` option says; its item
    /// count is the chain's size, its capacity the links' entries, its target the created
    /// rate ([`Stats::target_fpr`]).
    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut w = ParamWriter::new()
            .u32(self.options)
            .u32(self.growth)
            .u32(self.links.len() as u32)
            .u32(0);
        for l in &self.links {
            w = w
                .u64(l.p.entries)
                .f64(l.p.error)
                .f64(l.p.bpe)
                .u64(l.p.bits)
                .u64(l.p.bytes)
                .u64(l.p.size)
                .u32(l.p.hashes)
                .u8(l.p.n2)
                .u8(0)
                .u8(0)
                .u8(0);
        }
        let mut h = Header::new(Kind::RedisBloomChain, self.hasher);
        h.items = self.size;
        h.capacity = self.total_entries();
        h.target_fpr = self.created_rate();
        h.params = w.finish();
        (
            h,
            Payload::new(self.links.iter().map(|l| &l.words).collect()),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let options = r.u32()?;
        let growth = r.u32()?;
        let n = r.u32()? as usize;
        let zero = r.u32()?;
        if options & !KNOWN_OPTIONS != 0 || zero != 0 {
            return Err(inconsistent("redisbloom chain: unknown options"));
        }
        if n == 0 || n > MAX_LINKS {
            return Err(inconsistent(format!(
                "redisbloom chain: {n} links (1..={MAX_LINKS})"
            )));
        }
        if d.header.params.len() != 16 + n * FILE_LINK {
            return Err(inconsistent("redisbloom chain: parameter length"));
        }
        if d.header.hasher != hasher_for(options) {
            return Err(inconsistent(
                "redisbloom chain: the hash does not match the FORCE64 option",
            ));
        }
        let mut metas = Vec::with_capacity(n);
        let mut total = 0u64;
        for i in 0..n {
            let m = LinkParams {
                entries: r.u64()?,
                error: r.f64()?,
                bpe: r.f64()?,
                bits: r.u64()?,
                bytes: r.u64()?,
                size: r.u64()?,
                hashes: r.u32()?,
                n2: r.u8()?,
            };
            if (r.u8()?, r.u8()?, r.u8()?) != (0, 0, 0) {
                return Err(inconsistent("redisbloom chain: non-zero padding"));
            }
            m.validate(limit)
                .map_err(|e| inconsistent(format!("redisbloom chain: link {i}: {e}")))?;
            total = total.saturating_add(format::padded_len(words_for(m.bytes)?));
            metas.push(m);
        }
        r.finish()?;
        store::check_size(metas.iter().map(|m| held(m.bytes)).sum(), limit)?;
        if total != d.payload_len as u64 {
            return Err(inconsistent(format!(
                "redisbloom chain: payload is {} bytes, links need {total}",
                d.payload_len
            )));
        }
        let size = d.header.items;
        check_sizes(size, metas.iter().map(|m| m.size))
            .map_err(|e| inconsistent(format!("redisbloom chain: {e}")))?;
        let mut links = Vec::with_capacity(n);
        let mut offset = d.payload_offset;
        for m in metas {
            let words = src.words(offset, words_for(m.bytes)?, limit)?;
            offset += format::padded_len(words.len()) as usize;
            if !check_tail(&words, m.bytes) {
                return Err(inconsistent("redisbloom chain: bits set past a link's end"));
            }
            links.push(RedisBloomLink { words, p: m });
        }
        let f = Self {
            links,
            size,
            options,
            growth,
            hasher: d.header.hasher,
            max_bytes: limit,
        };
        if d.header.capacity != f.total_entries() || d.header.target_fpr != f.created_rate() {
            return Err(inconsistent(
                "redisbloom chain: header capacity or rate contradicts the links",
            ));
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_matches_redisbloom() {
        // BF.RESERVE k 0.01 100 in RedisBloom 2.6 (BF.DEBUG): bytes:144 bits:1152 hashes:8
        // capacity:100 ratio:0.005
        let f = RedisBloomFilter::reserve(100, 0.01, 2, true).unwrap();
        let l = &f.links()[0];
        assert_eq!(
            (l.bytes(), l.bits(), l.hashes(), l.entries()),
            (144, 1152, 8, 100)
        );
        assert_eq!(l.error_rate(), 0.005);
        assert_eq!(f.redisbloom_memory(), 240);
        // without NOROUND the size is a power of two and the spare bits add entries
        let g = RedisBloomFilter::with_options(100, 0.01, OPT_FORCE64, 2, 1 << 20).unwrap();
        let l = &g.links()[0];
        assert_eq!((l.n2(), l.bits(), l.bytes()), (11, 2048, 256));
        assert!(l.entries() > 100);
    }

    #[test]
    fn grows_and_tightens() {
        let mut f = RedisBloomFilter::reserve(10, 0.1, 3, true).unwrap();
        for i in 0..200u32 {
            f.try_insert(&i.to_le_bytes()).unwrap();
        }
        let l = f.links();
        assert!(l.len() >= 3);
        for w in l.windows(2) {
            assert_eq!(w[1].entries(), w[0].entries() * 3);
            assert_eq!(w[1].error_rate(), w[0].error_rate() * 0.5);
        }
        assert!((0..200u32).all(|i| f.contains(&i.to_le_bytes())));
        let mut n = RedisBloomFilter::reserve(10, 0.1, 2, false).unwrap();
        let added = (0..100u32)
            .map(|i| n.try_insert(&i.to_le_bytes()))
            .take_while(|r| r.is_ok())
            .count();
        assert!(added >= 10);
        assert!(matches!(n.try_insert(b"one more"), Err(Error::Full { .. })));
    }

    #[test]
    fn header_chunk_round_trips() {
        let mut f = RedisBloomFilter::reserve(50, 0.01, 2, true).unwrap();
        for i in 0..300u32 {
            f.try_insert(&i.to_le_bytes()).unwrap();
        }
        let mut g = RedisBloomFilter::from_header_chunk(&f.header_chunk(), 1 << 20).unwrap();
        assert!(g.links().iter().all(|l| l.ones() == 0));
        let mut it = 1;
        while let Some((next, data)) = f.chunk(it) {
            g.load_chunk(next, &data).unwrap();
            it = next;
        }
        assert_eq!(g, f);
    }
}
