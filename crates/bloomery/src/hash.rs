//! The one hash path: [`KeyHasher`] turns key bytes into [`Hashed`] values (its docs say
//! which algorithms, how keys become bytes, and when to use keyed mode).

use crate::error::{invalid, Result};

/// Identifies a hash algorithm in saved files. The numeric values are part of the file format
/// and never change.
///
/// ```
/// use bloomery::KeyHasher;
/// use bloomery::hashing::HashAlgorithm;
///
/// assert_eq!(KeyHasher::new().algorithm(), HashAlgorithm::Xxh3_128);
/// assert_eq!(KeyHasher::parquet().algorithm(), HashAlgorithm::Xxh64);
/// assert_eq!(HashAlgorithm::from_id(HashAlgorithm::Xxh3_128.id()), Some(HashAlgorithm::Xxh3_128));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum HashAlgorithm {
    /// xxh3-128 with a 64-bit seed (the default).
    Xxh3_128 = 1,
    /// SipHash-1-3 with a 128-bit key, 128-bit output (keyed mode).
    SipHash13_128 = 2,
    /// xxHash64 with seed 0, as the Parquet bloom-filter specification requires. The second
    /// half of [`Hashed`] is derived from the first by a fixed mixer.
    Xxh64 = 3,
    /// MurmurHash64A, as RedisBloom's filters use it ([`crate::redisbloom::RedisBloomFilter`]): the low half of
    /// [`Hashed`] is the hash under the seed, the high half the hash under the low half.
    MurmurHash64A = 4,
    /// MurmurHash2 (32-bit), as RedisBloom's oldest Bloom filters use it: the low half is the
    /// hash under the (32-bit) seed, the high half the hash under the low half.
    MurmurHash2 = 5,
    /// xxh3-64 with a 64-bit seed: the blocked filter's salted layout
    /// ([`BlockLayout::Salted`](crate::builders::BlockLayout::Salted)), which needs one 64-bit
    /// value per key. The low half of [`Hashed`] is the hash; the high half is derived from it
    /// by a fixed mixer (for any other structure given this hasher).
    Xxh3_64 = 6,
}

impl HashAlgorithm {
    /// The id stored in files.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// Decode a stored id.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            1 => Some(Self::Xxh3_128),
            2 => Some(Self::SipHash13_128),
            3 => Some(Self::Xxh64),
            4 => Some(Self::MurmurHash64A),
            5 => Some(Self::MurmurHash2),
            6 => Some(Self::Xxh3_64),
            _ => None,
        }
    }

    /// A short stable name (`xxh3-128`, `siphash13-128`, `xxh64`, `murmurhash64a`,
    /// `murmurhash2`, `xxh3-64`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Xxh3_128 => "xxh3-128",
            Self::SipHash13_128 => "siphash13-128",
            Self::Xxh64 => "xxh64",
            Self::MurmurHash64A => "murmurhash64a",
            Self::MurmurHash2 => "murmurhash2",
            Self::Xxh3_64 => "xxh3-64",
        }
    }
}

/// Where a hasher's seed came from; stored in files so `info` can say it.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::KeyHasher;
/// use bloomery::hashing::SeedKind;
///
/// assert_eq!(KeyHasher::new().seed_kind(), SeedKind::Default);
/// assert_eq!(KeyHasher::with_seed(7).seed_kind(), SeedKind::User);
/// let keyed = KeyHasher::keyed()?; // a random secret, not written to files in the clear
/// assert_eq!(keyed.seed_kind(), SeedKind::Keyed);
/// assert!(keyed.is_secret() && keyed.public_seed().is_none());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum SeedKind {
    /// The library default seed (0).
    Default = 0,
    /// A seed the user chose.
    User = 1,
    /// A random secret chosen at creation (keyed mode).
    Keyed = 2,
}

impl SeedKind {
    /// Decode a stored id.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::Default),
            1 => Some(Self::User),
            2 => Some(Self::Keyed),
            _ => None,
        }
    }

    /// A short stable name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::User => "user",
            Self::Keyed => "keyed",
        }
    }
}

/// A key's 128-bit hash: the only thing structures see of a key.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedBloomFilter, Filter, KeyHasher};
///
/// // hash once, use the value for several filters of the same hasher
/// let h = KeyHasher::new().hash("key");
/// let mut a = BlockedBloomFilter::try_new(100, 0.01)?;
/// let mut b = BlockedBloomFilter::try_new(1000, 0.001)?;
/// a.insert_hashed(h);
/// b.insert_hashed(h);
/// assert!(a.contains("key") && b.contains("key"));
/// assert_eq!(h, KeyHasher::new().hash("key")); // stable: same bytes, same value
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Hashed {
    /// Low 64 bits (h1).
    pub lo: u64,
    /// High 64 bits (h2).
    pub hi: u64,
}

impl Hashed {
    /// Build from two halves (for callers with their own 128-bit hashes).
    pub const fn new(lo: u64, hi: u64) -> Self {
        Self { lo, hi }
    }

    /// The k 64-bit values of the enhanced double-hashing sequence:
    /// `x₀ = h1, y₀ = h2; xᵢ₊₁ = xᵢ + yᵢ, yᵢ₊₁ = yᵢ + i` (wrapping).
    #[inline]
    pub fn sequence(self, k: u32) -> Sequence {
        Sequence {
            x: self.lo,
            y: self.hi,
            i: 0,
            k,
        }
    }

    /// The k indices in `[0, m)`: the [`sequence`](Self::sequence) mapped by multiply-shift,
    /// `index = (xᵢ · m) >> 64`.
    #[inline]
    pub fn indices(self, k: u32, m: u64) -> Indices {
        Indices {
            seq: self.sequence(k),
            m,
        }
    }
}

/// Iterator over a key's enhanced double-hashing values (see [`Hashed::sequence`]).
#[derive(Debug, Clone)]
pub struct Sequence {
    x: u64,
    y: u64,
    i: u32,
    k: u32,
}

impl Iterator for Sequence {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.i >= self.k {
            return None;
        }
        let out = self.x;
        self.x = self.x.wrapping_add(self.y);
        self.y = self.y.wrapping_add(u64::from(self.i));
        self.i += 1;
        Some(out)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.k - self.i) as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Sequence {}

/// `f(k)`, with `k` a compile-time constant for 1 ≤ k ≤ min(`MAX`, 16), so that a probe loop
/// over k inside `f` is fully unrolled (no loop counter, compare and branch per probe, and
/// constant shifts: about 15% fewer instructions per operation at k = 7 for the classic
/// filter, 20–30% for the blocked counting filter's 4-bit line); other k run `f(k)` as is.
/// `MAX` bounds the copies made to the k the caller can see. Same result as `f(k)`.
#[inline(always)]
pub(crate) fn with_k<const MAX: u32, R>(k: u32, f: impl FnOnce(u32) -> R) -> R {
    match k {
        1 => f(1),
        2 if MAX >= 2 => f(2),
        3 if MAX >= 3 => f(3),
        4 if MAX >= 4 => f(4),
        5 if MAX >= 5 => f(5),
        6 if MAX >= 6 => f(6),
        7 if MAX >= 7 => f(7),
        8 if MAX >= 8 => f(8),
        9 if MAX >= 9 => f(9),
        10 if MAX >= 10 => f(10),
        11 if MAX >= 11 => f(11),
        12 if MAX >= 12 => f(12),
        13 if MAX >= 13 => f(13),
        14 if MAX >= 14 => f(14),
        15 if MAX >= 15 => f(15),
        16 if MAX >= 16 => f(16),
        k => f(k),
    }
}

/// Iterator over a key's k indices (see [`Hashed::indices`]).
#[derive(Debug, Clone)]
pub struct Indices {
    seq: Sequence,
    m: u64,
}

impl Iterator for Indices {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        self.seq.next().map(|x| reduce(x, self.m))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.seq.size_hint()
    }
}

impl ExactSizeIterator for Indices {}

/// Map a 64-bit value to `[0, n)` by multiply-shift (Lemire's fast range reduction).
#[inline(always)]
pub fn reduce(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// A fixed 64-bit mixer (the SplitMix64 finaliser). Used to derive more hash bits from a
/// hash without hashing the key again.
#[inline(always)]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Something that can be hashed: exposes its bytes. The bytes are part of the file format's
/// promise: a key maps to the same bits in every version, on every platform.
///
/// | key type | bytes hashed |
/// |---|---|
/// | `[u8]`, `[u8; N]`, `Vec<u8>` | the bytes themselves |
/// | `str`, `String` | the UTF-8 bytes (what the CLI and the Redis module hash for the same text) |
/// | `char` | its UTF-8 bytes, so `'é'` and `"é"` are the same key |
/// | `u8` … `u128`, `i8` … `i128` | little-endian bytes, so `42u64` and `42u64.to_le_bytes()` are the same key |
/// | `usize`, `isize` | as `u64` / `i64` (8 little-endian bytes on every platform) |
/// | `bool` | one byte, 0 or 1 |
/// | `[T; N]` of an integer type | the elements' little-endian bytes, concatenated |
/// | `(A, B)`, `(A, B, C)`, `(A, B, C, D)` | each element's bytes preceded by their length (u32, little-endian), so `("ab", "c")` and `("a", "bc")` differ |
/// | `&K` | the bytes of `K` |
/// | your type | implement [`Key`] (the stable choice), or wrap it in [`StableHash`] to use its [`Hash`](std::hash::Hash) |
///
/// Floats have no `Key`: `0.0 == -0.0` and `NaN != NaN`, so equal values could map to
/// different bits; pick a canonical form and hash its bits (`x.to_bits()`) explicitly.
///
/// **Integer literals.** A literal without a suffix is an `i32`: after `insert(&42u64)`,
/// `contains(&42)` looks up the four bytes of `42i32` and answers false. Write the suffix, or
/// use one integer type for a filter's keys.
///
/// ```
/// use bloomery::prelude::*;
/// use bloomery::hashing::StableHash;
///
/// # fn main() -> bloomery::Result<()> {
/// let mut f = BloomFilter::try_new(1000, 0.01)?;
/// f.insert(&7usize);
/// f.insert(&'c');
/// f.insert(&(1u32, 2u32));
/// f.insert(&[10u16, 20, 30]);
/// assert!(f.contains(&7usize) && f.contains("c") && f.contains(&(1u32, 2u32)));
/// assert!(!f.contains(&(2u32, 1u32)));
///
/// // the literal pitfall: 42 is an i32, a different key from 42u64
/// f.insert(&42u64);
/// assert!(f.contains(&42u64));
/// assert!(!f.contains(&42)); // the four bytes of 42i32: not the key inserted
///
/// // a user type through its derived Hash
/// #[derive(Hash)]
/// struct Flow { src: u32, dst: u32, port: u16 }
/// f.insert(&StableHash(&Flow { src: 1, dst: 2, port: 80 }));
/// assert!(f.contains(&StableHash(&Flow { src: 1, dst: 2, port: 80 })));
/// # Ok(()) }
/// ```
pub trait Key {
    /// Call `f` with the key's bytes.
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R;
}

impl Key for [u8] {
    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self)
    }
}

impl<const N: usize> Key for [u8; N] {
    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self)
    }
}

impl Key for Vec<u8> {
    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self)
    }
}

impl Key for str {
    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self.as_bytes())
    }
}

impl Key for String {
    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self.as_bytes())
    }
}

impl Key for char {
    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self.encode_utf8(&mut [0u8; 4]).as_bytes())
    }
}

impl Key for bool {
    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(&[u8::from(*self)])
    }
}

impl Key for usize {
    #[inline(always)]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(&(*self as u64).to_le_bytes())
    }
}

impl Key for isize {
    #[inline(always)]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(&(*self as i64).to_le_bytes())
    }
}

impl<T: Key + ?Sized> Key for &T {
    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        (**self).with_bytes(f)
    }
}

macro_rules! int_key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            #[inline(always)]
            fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
                f(&self.to_le_bytes())
            }
        }

        impl<const N: usize> Key for [$t; N] {
            fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
                let mut buf = KeyBuf::default();
                for x in self {
                    buf.push(&x.to_le_bytes());
                }
                f(buf.as_slice())
            }
        }
    )*};
}
int_key!(u16, u32, u64, u128, i8, i16, i32, i64, i128);

impl Key for u8 {
    #[inline(always)]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(&[*self])
    }
}

/// The bytes of a composite key, on the stack when they fit.
struct KeyBuf {
    small: [u8; 64],
    len: usize,
    large: Vec<u8>,
}

impl Default for KeyBuf {
    fn default() -> Self {
        Self {
            small: [0; 64],
            len: 0,
            large: Vec::new(),
        }
    }
}

impl KeyBuf {
    fn push(&mut self, b: &[u8]) {
        if self.large.is_empty() && self.len + b.len() <= self.small.len() {
            self.small[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
        } else {
            if self.large.is_empty() {
                self.large.extend_from_slice(&self.small[..self.len]);
            }
            self.large.extend_from_slice(b);
        }
    }

    /// An element of a tuple: its length (u32, little-endian), then its bytes.
    fn push_element<K: Key + ?Sized>(&mut self, k: &K) {
        k.with_bytes(|b| {
            // Keys longer than 4 GiB cannot be elements of a composite key in memory anyway;
            // saturating keeps the encoding total.
            self.push(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_le_bytes());
            self.push(b);
        });
    }

    fn as_slice(&self) -> &[u8] {
        if self.large.is_empty() {
            &self.small[..self.len]
        } else {
            &self.large
        }
    }
}

macro_rules! tuple_key {
    ($($name:ident)+) => {
        impl<$($name: Key),+> Key for ($($name,)+) {
            fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                let mut buf = KeyBuf::default();
                $(buf.push_element($name);)+
                f(buf.as_slice())
            }
        }
    };
}
tuple_key!(A B);
tuple_key!(A B C);
tuple_key!(A B C D);

/// A key made from a value's [`Hash`](std::hash::Hash) implementation: the values it feeds to
/// the hasher, written as little-endian bytes (integers as in [`Key`], `usize` as 8 bytes), are
/// the key's bytes. Use it for your own types with `#[derive(Hash)]`.
///
/// The bytes are stable for as long as the type's `Hash` implementation feeds the same values:
/// `#[derive(Hash)]` feeds the fields in order, and the standard library's implementations for
/// integers, strings and slices have always fed the same values, but Rust does not promise them
/// across releases. For filters saved to files that must outlive toolchain upgrades, implement
/// [`Key`] for the type yourself.
///
/// ```
/// use bloomery::prelude::*;
/// use bloomery::hashing::StableHash;
///
/// #[derive(Hash)]
/// struct Flow {
///     src: [u8; 4],
///     dst: [u8; 4],
///     port: u16,
/// }
///
/// # fn main() -> bloomery::Result<()> {
/// let mut seen = BlockedBloomFilter::try_new(10_000, 0.001)?;
/// let f = Flow { src: [10, 0, 0, 1], dst: [10, 0, 0, 2], port: 443 };
/// assert!(seen.insert(&StableHash(&f)));
/// assert!(seen.contains(&StableHash(&f)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct StableHash<T>(pub T);

impl<T: std::hash::Hash> Key for StableHash<T> {
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        let mut w = ByteHasher(KeyBuf::default());
        self.0.hash(&mut w);
        f(w.0.as_slice())
    }
}

/// Collects what a [`Hash`](std::hash::Hash) implementation feeds, as little-endian bytes.
struct ByteHasher(KeyBuf);

impl std::hash::Hasher for ByteHasher {
    fn finish(&self) -> u64 {
        // Never used for a key's bytes; a plain digest keeps the trait's contract.
        xxhash_rust::xxh3::xxh3_64(self.0.as_slice())
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.push(bytes);
    }
    fn write_u8(&mut self, i: u8) {
        self.0.push(&[i]);
    }
    fn write_u16(&mut self, i: u16) {
        self.0.push(&i.to_le_bytes());
    }
    fn write_u32(&mut self, i: u32) {
        self.0.push(&i.to_le_bytes());
    }
    fn write_u64(&mut self, i: u64) {
        self.0.push(&i.to_le_bytes());
    }
    fn write_u128(&mut self, i: u128) {
        self.0.push(&i.to_le_bytes());
    }
    fn write_usize(&mut self, i: usize) {
        self.0.push(&(i as u64).to_le_bytes());
    }
    fn write_i8(&mut self, i: i8) {
        self.0.push(&i.to_le_bytes());
    }
    fn write_i16(&mut self, i: i16) {
        self.0.push(&i.to_le_bytes());
    }
    fn write_i32(&mut self, i: i32) {
        self.0.push(&i.to_le_bytes());
    }
    fn write_i64(&mut self, i: i64) {
        self.0.push(&i.to_le_bytes());
    }
    fn write_i128(&mut self, i: i128) {
        self.0.push(&i.to_le_bytes());
    }
    fn write_isize(&mut self, i: isize) {
        self.0.push(&(i as i64).to_le_bytes());
    }
}

/// The one hash path: how a key becomes bits.
///
/// Every structure in bloomery (and the CLI and the Redis module, which call into it) hashes a
/// key exactly one way:
///
/// 1. The key's bytes ([`Key`]: byte slices, strings, integers as little-endian bytes) go through
///    one 128-bit hash chosen by a [`KeyHasher`]: seeded **xxh3-128** by default, keyed
///    **SipHash-1-3-128** in [keyed mode](KeyHasher::keyed), Parquet's **xxHash64** for the
///    split-block filter, or seeded **xxh3-64** for the blocked filter's salted layout (the
///    blocked filter's default at 1% and 0.1%), which reads only the low half. The result is
///    a [`Hashed`] key: two 64-bit halves.
/// 2. A structure derives its k indices from the two halves by *enhanced double hashing*
///    (Dillinger & Manolios 2004; Kirsch & Mitzenmacher 2006 show two hashes lose nothing
///    asymptotically), and maps each 64-bit value to `[0, m)` by multiply-shift
///    (`(x · m) >> 64`), which needs no division and has no modulo bias towards low indices.
///
/// The algorithm id and the seed are stored in every saved filter, and for a given format
/// version the mapping from key bytes to indices never changes: golden tests in
/// `tests/golden.rs` pin the index sequences of fixed keys.
///
/// **Tiny filters.** Double hashing draws the k indices from two values, so two keys whose
/// halves agree in their top bits share all k indices: this adds roughly `n/m²` to the
/// false-positive rate (Kirsch & Mitzenmacher's analysis is asymptotic in m). For ordinary
/// filters (m ≥ 10⁴ bits) that is far below any useful target, but in filters of a few hundred
/// bits with large k it is visible — the lab's `icarus-loops` experiment measures 1.2× the
/// formula at m = 128, k = 6 and 4.5× at m = 256, k = 11. For such tiny filters use a small k.
///
/// # Hash once, probe many
/// [`KeyHasher::hash`] returns a [`Hashed`] value that every structure accepts through its
/// `*_hashed` methods, so layered structures (scalable filters, multi-layer filters, a caller
/// probing many filters built with the same hasher) hash a key once.
///
/// # Keyed mode: when to use it
/// With the default hasher anyone who knows the (public) seed can compute which bits a key sets,
/// and so can search for keys that all hit the same few bits, or flood the filter with keys that
/// set many fresh bits, driving the false-positive rate up. If the keys come from people who may
/// be adversaries (URLs submitted by users, values in network packets, request headers), create
/// the filter with [`KeyHasher::keyed`]: a 128-bit secret drawn from the operating system's
/// random source keys SipHash-1-3, a pseudo-random function, so bit positions cannot be predicted
/// without the secret. The secret is stored in the saved file (a filter is useless without it),
/// so protect the file like the secret it holds. Keyed filters cost a little speed (SipHash is
/// slower than xxh3) and only merge with filters sharing the same secret.
///
/// Chooses the hash algorithm and seed; every structure holds one.
///
/// Two structures can be merged only if their hashers are equal.
///
/// `Debug` never shows a secret: a keyed hasher prints `seed: <redacted>` (so `{:?}` of any
/// structure, builder or header holding one is safe to log); [`KeyHasher::public_seed`] is
/// the seed to display, `None` for a secret.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Filter, KeyHasher};
///
/// let h = KeyHasher::new();
/// assert_eq!(h.hash("abc"), h.hash_bytes(b"abc")); // a str hashes as its bytes
/// assert_ne!(h.hash("abc"), KeyHasher::with_seed(1).hash("abc")); // a seed changes every bit
/// let f = BloomFilter::try_new(100, 0.01)?;
/// assert_eq!(f.hasher(), &h); // the default: xxh3-128, seed 0, written in every file
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHasher {
    algorithm: HashAlgorithm,
    seed_kind: SeedKind,
    seed: u128,
}

impl Default for KeyHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for KeyHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("KeyHasher");
        d.field("algorithm", &self.algorithm)
            .field("seed_kind", &self.seed_kind);
        match self.public_seed() {
            Some(seed) => d.field("seed", &seed),
            None => d.field("seed", &format_args!("<redacted>")),
        };
        d.finish()
    }
}

impl KeyHasher {
    /// The default: xxh3-128 with seed 0.
    pub const fn new() -> Self {
        Self {
            algorithm: HashAlgorithm::Xxh3_128,
            seed_kind: SeedKind::Default,
            seed: 0,
        }
    }

    /// xxh3-128 with a chosen 64-bit seed.
    pub const fn with_seed(seed: u64) -> Self {
        Self {
            algorithm: HashAlgorithm::Xxh3_128,
            seed_kind: SeedKind::User,
            seed: seed as u128,
        }
    }

    /// Keyed mode: SipHash-1-3-128 under a random 128-bit secret from the operating system.
    /// See the [`KeyHasher`] docs for when to use it.
    pub fn keyed() -> Result<Self> {
        let mut key = [0u8; 16];
        getrandom::getrandom(&mut key)
            .map_err(|e| invalid("keyed", format!("no random source: {e}")))?;
        Ok(Self::with_secret(u128::from_le_bytes(key)))
    }

    /// Keyed mode with a given secret (to rebuild a keyed filter elsewhere).
    pub const fn with_secret(secret: u128) -> Self {
        Self {
            algorithm: HashAlgorithm::SipHash13_128,
            seed_kind: SeedKind::Keyed,
            seed: secret,
        }
    }

    /// Parquet's hash: xxHash64 with seed 0 (used by the split-block filter).
    pub const fn parquet() -> Self {
        Self {
            algorithm: HashAlgorithm::Xxh64,
            seed_kind: SeedKind::Default,
            seed: 0,
        }
    }

    /// RedisBloom's hashing ([`HashAlgorithm::MurmurHash64A`] or, with `legacy`,
    /// [`HashAlgorithm::MurmurHash2`]) under `seed`.
    pub(crate) const fn murmur(legacy: bool, seed: u64) -> Self {
        Self {
            algorithm: if legacy {
                HashAlgorithm::MurmurHash2
            } else {
                HashAlgorithm::MurmurHash64A
            },
            seed_kind: SeedKind::Default,
            seed: seed as u128,
        }
    }

    /// Rebuild a hasher from stored fields, validating them.
    pub fn from_parts(algorithm: HashAlgorithm, seed_kind: SeedKind, seed: u128) -> Result<Self> {
        match algorithm {
            HashAlgorithm::Xxh3_128 if seed > u128::from(u64::MAX) => {
                Err(invalid("seed", "xxh3-128 takes a 64-bit seed"))
            }
            HashAlgorithm::Xxh3_64 if seed > u128::from(u64::MAX) => {
                Err(invalid("seed", "xxh3-64 takes a 64-bit seed"))
            }
            HashAlgorithm::Xxh64 if seed != 0 => {
                Err(invalid("seed", "the Parquet xxh64 hash has seed 0"))
            }
            HashAlgorithm::MurmurHash64A if seed > u128::from(u64::MAX) => {
                Err(invalid("seed", "MurmurHash64A takes a 64-bit seed"))
            }
            HashAlgorithm::MurmurHash2 if seed > u128::from(u32::MAX) => {
                Err(invalid("seed", "MurmurHash2 takes a 32-bit seed"))
            }
            _ => Ok(Self {
                algorithm,
                seed_kind,
                seed,
            }),
        }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.algorithm
    }

    /// Where the seed came from.
    pub fn seed_kind(&self) -> SeedKind {
        self.seed_kind
    }

    /// The seed (or, in keyed mode, the secret).
    pub fn seed(&self) -> u128 {
        self.seed
    }

    /// True when the seed is a secret: keyed mode (SipHash, whatever seed kind a file
    /// claims). A secret must not be printed, logged or put in an error message.
    pub fn is_secret(&self) -> bool {
        self.algorithm == HashAlgorithm::SipHash13_128 || self.seed_kind == SeedKind::Keyed
    }

    /// The seed to show users: `None` when it is a secret ([`Self::is_secret`]).
    pub fn public_seed(&self) -> Option<u128> {
        (!self.is_secret()).then_some(self.seed)
    }

    /// Hash a key.
    #[inline(always)]
    pub fn hash<K: Key + ?Sized>(&self, key: &K) -> Hashed {
        key.with_bytes(|b| self.hash_bytes(b))
    }

    /// Hash raw bytes.
    ///
    /// Always inlined, so a key of known length (an integer) takes xxh3's short-input path
    /// with no length dispatch; the keyed SipHash path stays out of line.
    #[inline(always)]
    pub fn hash_bytes(&self, bytes: &[u8]) -> Hashed {
        // the default first, with one compare; the others out of line
        match self.algorithm {
            HashAlgorithm::Xxh3_128 => xxh3_128(bytes, self.seed as u64),
            HashAlgorithm::Xxh3_64 => xxh3_64(bytes, self.seed as u64),
            _ => self.hash_other(bytes),
        }
    }

    /// The non-default algorithms (out of line, so the inlined default path stays short).
    #[inline(never)]
    fn hash_other(&self, bytes: &[u8]) -> Hashed {
        match self.algorithm {
            HashAlgorithm::Xxh3_128 => xxh3_128(bytes, self.seed as u64),
            HashAlgorithm::Xxh3_64 => xxh3_64(bytes, self.seed as u64),
            HashAlgorithm::SipHash13_128 => sip13_128(self.seed, bytes),
            HashAlgorithm::Xxh64 => {
                let h = xxhash_rust::xxh64::xxh64(bytes, 0);
                Hashed::new(h, mix64(h))
            }
            HashAlgorithm::MurmurHash64A => {
                let a = crate::murmur::murmur64a(bytes, self.seed as u64);
                Hashed::new(a, crate::murmur::murmur64a(bytes, a))
            }
            HashAlgorithm::MurmurHash2 => {
                let a = crate::murmur::murmur2(bytes, self.seed as u32);
                Hashed::new(u64::from(a), u64::from(crate::murmur::murmur2(bytes, a)))
            }
        }
    }

    /// True when this hasher is seeded xxh3-128 (the default), so [`Self::hash_xxh3`] gives
    /// the same value as [`Self::hash`].
    #[inline]
    pub(crate) fn is_xxh3(&self) -> bool {
        self.algorithm == HashAlgorithm::Xxh3_128
    }

    /// [`Self::hash`] for a hasher known to be xxh3-128 ([`Self::is_xxh3`]), without the
    /// per-key algorithm dispatch: for hot paths that check the algorithm once, when a
    /// structure is made. On any other hasher the value is wrong (never unsafe).
    #[inline(always)]
    pub(crate) fn hash_xxh3<K: Key + ?Sized>(&self, key: &K) -> Hashed {
        debug_assert!(self.is_xxh3());
        key.with_bytes(|b| xxh3_128(b, self.seed as u64))
    }

    /// The xxh3-64 hasher of the same seed and seed kind as this xxh3-128 one (what the salted
    /// block layout hashes with); any other hasher unchanged.
    pub(crate) const fn to_xxh3_64(self) -> Self {
        match self.algorithm {
            HashAlgorithm::Xxh3_128 => Self {
                algorithm: HashAlgorithm::Xxh3_64,
                ..self
            },
            _ => self,
        }
    }

    /// True when this hasher is seeded xxh3-64, so [`Self::hash64_xxh3_as`] gives the low half of
    /// [`Self::hash`].
    #[inline]
    pub(crate) fn is_xxh3_64(&self) -> bool {
        self.algorithm == HashAlgorithm::Xxh3_64
    }

    /// True when the seed is 0.
    #[inline]
    pub(crate) fn seed_is_zero(&self) -> bool {
        self.seed == 0
    }

    /// The low half of [`Self::hash`] for a hasher known to be xxh3-64 ([`Self::is_xxh3_64`])
    /// whose seed is known to be nonzero (`SEEDED`) or 0 (xxh3's unseeded function, the same
    /// values, whose constants fold): one xxh3-64 of the key's bytes, nothing derived, and no
    /// test of the seed per key, for callers that decided it once ([`Self::seed_is_zero`]).
    /// On any other hasher the value is wrong (never unsafe).
    #[inline]
    pub(crate) fn hash64_xxh3_as<const SEEDED: bool, K: Key + ?Sized>(&self, key: &K) -> u64 {
        debug_assert!(self.is_xxh3_64() && self.seed_is_zero() != SEEDED);
        if SEEDED {
            key.with_bytes(|b| xxhash_rust::xxh3::xxh3_64_with_seed(b, self.seed as u64))
        } else {
            key.with_bytes(xxhash_rust::xxh3::xxh3_64)
        }
    }
}

/// A value derived from a hasher's seed, for `Debug` output: shown as is, or as `<redacted>`
/// when the seed is a secret (a value computed from the secret tells something about it).
pub(crate) struct MaybeSecret<T>(pub bool, pub T);

impl<T: std::fmt::Debug> std::fmt::Debug for MaybeSecret<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 {
            f.write_str("<redacted>")
        } else {
            self.1.fmt(f)
        }
    }
}

/// Seeded xxh3-128 of `bytes` as a [`Hashed`] (low half, high half): the default hash.
#[inline(always)]
fn xxh3_128(bytes: &[u8], seed: u64) -> Hashed {
    let h = xxhash_rust::xxh3::xxh3_128_with_seed(bytes, seed);
    Hashed::new(h as u64, (h >> 64) as u64)
}

/// Seeded xxh3-64 of `bytes` as a [`Hashed`]: the hash as the low half, a fixed mix of it as
/// the high half.
#[inline(always)]
fn xxh3_64(bytes: &[u8], seed: u64) -> Hashed {
    let h = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, seed);
    Hashed::new(h, mix64(h))
}

/// Keyed mode's hash: SipHash-1-3-128 under `secret` (little-endian key bytes).
#[inline(never)]
fn sip13_128(secret: u128, bytes: &[u8]) -> Hashed {
    use siphasher::sip128::Hasher128;
    use std::hash::Hasher;
    let mut s = siphasher::sip128::SipHasher13::new_with_key(&secret.to_le_bytes());
    s.write(bytes);
    let h = s.finish128();
    Hashed::new(h.h1, h.h2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of<K: Key + ?Sized>(k: &K) -> Vec<u8> {
        k.with_bytes(|b| b.to_vec())
    }

    /// The byte encodings of the std key types are part of the format: pinned here.
    #[test]
    fn key_bytes_are_pinned() {
        assert_eq!(bytes_of(&7usize), 7u64.to_le_bytes());
        assert_eq!(bytes_of(&-7isize), (-7i64).to_le_bytes());
        assert_eq!(bytes_of(&'é'), "é".as_bytes());
        assert_eq!(bytes_of(&true), [1]);
        assert_eq!(bytes_of(&false), [0]);
        assert_eq!(bytes_of(&[1u16, 2]), [1, 0, 2, 0]);
        assert_eq!(bytes_of(&[7u8, 8]), [7, 8]);
        assert_eq!(
            bytes_of(&(1u32, "ab")),
            [4, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, b'a', b'b']
        );
        // tuple elements are delimited: no two splits of the same bytes collide
        assert_ne!(bytes_of(&("ab", "c")), bytes_of(&("a", "bc")));
        assert_eq!(
            bytes_of(&(1u8, 2u8, 3u8)),
            [1, 0, 0, 0, 1, 1, 0, 0, 0, 2, 1, 0, 0, 0, 3]
        );
        // a long composite key spills to the heap with the same bytes
        let long = ("x".repeat(100), 5u64);
        let mut want = 100u32.to_le_bytes().to_vec();
        want.extend_from_slice("x".repeat(100).as_bytes());
        want.extend_from_slice(&8u32.to_le_bytes());
        want.extend_from_slice(&5u64.to_le_bytes());
        assert_eq!(bytes_of(&long), want);
        // StableHash: the values Hash feeds, little-endian (u32 fields in order here)
        #[derive(Hash)]
        struct P {
            a: u32,
            b: u32,
        }
        assert_eq!(
            bytes_of(&StableHash(&P { a: 1, b: 2 })),
            [1, 0, 0, 0, 2, 0, 0, 0]
        );
    }

    #[test]
    fn integers_hash_as_le_bytes() {
        let h = KeyHasher::new();
        assert_eq!(h.hash(&42u64), h.hash(&42u64.to_le_bytes()));
        assert_eq!(h.hash("abc"), h.hash(&b"abc"[..]));
        assert_eq!(h.hash(&String::from("abc")), h.hash("abc"));
    }

    #[test]
    fn seeds_change_the_hash() {
        let a = KeyHasher::with_seed(1).hash("x");
        let b = KeyHasher::with_seed(2).hash("x");
        assert_ne!(a, b);
        let k1 = KeyHasher::with_secret(1).hash("x");
        let k2 = KeyHasher::with_secret(2).hash("x");
        assert_ne!(k1, k2);
    }

    #[test]
    fn keyed_hashers_differ() {
        let a = KeyHasher::keyed().unwrap();
        let b = KeyHasher::keyed().unwrap();
        assert_ne!(a.seed(), b.seed());
        assert_eq!(a.seed_kind(), SeedKind::Keyed);
    }

    #[test]
    fn indices_in_range_and_k_long() {
        let h = KeyHasher::new().hash("key");
        for m in [1u64, 2, 3, 63, 64, 1000, u64::MAX] {
            let v: Vec<u64> = h.indices(7, m).collect();
            assert_eq!(v.len(), 7);
            assert!(v.iter().all(|&i| i < m));
        }
    }

    #[test]
    fn reduce_is_unbiased_over_full_range() {
        // multiply-shift maps equal-width slices of u64 onto each output.
        assert_eq!(reduce(0, 10), 0);
        assert_eq!(reduce(u64::MAX, 10), 9);
        assert_eq!(reduce(u64::MAX / 2, 2), 0);
        assert_eq!(reduce(u64::MAX / 2 + 1, 2), 1);
    }

    #[test]
    fn from_parts_validates() {
        assert!(
            KeyHasher::from_parts(HashAlgorithm::Xxh3_128, SeedKind::User, 1u128 << 70).is_err()
        );
        assert!(KeyHasher::from_parts(HashAlgorithm::Xxh64, SeedKind::User, 5).is_err());
        assert!(
            KeyHasher::from_parts(HashAlgorithm::SipHash13_128, SeedKind::Keyed, 1u128 << 70)
                .is_ok()
        );
    }
}
