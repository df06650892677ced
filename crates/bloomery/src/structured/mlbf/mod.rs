//! The multi-layer Bloom filter: [`MultiLayerBloomFilter`] (its docs say which paper it follows and
//! when to pick it).

use crate::dispatch::SetStats;
use crate::error::{inconsistent, invalid, Error, Incompatibility, Result};
use crate::filter::{shape_mismatch, KeySet, Merge, Stats};
use crate::hash::{reduce, Hashed, KeyHasher};
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::kind::Capabilities;
use crate::params;
use crate::store::{self, Words};

mod debug;

/// URLs hashed and prefetched together by [`MultiLayerBloomFilter::check_and_insert_batch`].
pub const BATCH: usize = 16;
/// k up to which the XOR values live in a small array (larger k take the general path).
const SMALL_K: usize = 8;
/// Largest number of URL layers accepted.
pub const MAX_LAYERS: u32 = 32;
/// Largest k accepted.
pub const MAX_HASHES: u32 = 64;
/// The value a layer holds when the URL has fewer segments than layers (not valid UTF-8, so no
/// real segment equals it).
pub const MISSING_SEGMENT: &[u8] = &[0xFF];

/// The paper's experiment shape (Cen, Xu & Sun §V): k = 3, m = 16,829,152 bits per layer, L = 4.
pub const PAPER_LAYERS: u32 = 4;
/// See [`PAPER_LAYERS`].
pub const PAPER_BITS: u64 = 16_829_152;
/// See [`PAPER_LAYERS`].
pub const PAPER_HASHES: u32 = 3;

/// Normalise `url` into exactly `layers` layer values (see the [`MultiLayerBloomFilter`] docs); `None` is
/// a missing layer (`MISSING_SEGMENT`).
pub fn normalize_url(url: &str, layers: u32) -> Result<Vec<Option<String>>> {
    let mut out = Vec::with_capacity(layers.min(MAX_LAYERS) as usize);
    for_each_layer(url, layers, |v| {
        out.push(v.map(|b| String::from_utf8_lossy(b).into_owned()));
    })?;
    Ok(out)
}

/// Bytes of a layer value assembled on the stack before spilling to the heap.
const SCRATCH: usize = 256;

/// A layer value as up to three ranges of the cut URL: the first one lower-cased when `lower`
/// (the scheme and host), then the rest verbatim. Contiguous ranges with nothing to lower-case
/// are hashed in place; only the rest is copied (into a stack buffer).
#[derive(Clone, Copy)]
struct Pieces {
    ranges: [(usize, usize); 3],
    len: usize,
    lower: bool,
}

impl Pieces {
    fn new() -> Self {
        Self {
            ranges: [(0, 0); 3],
            len: 0,
            lower: false,
        }
    }
    fn push(&mut self, a: usize, b: usize) {
        if a < b {
            self.ranges[self.len] = (a, b);
            self.len += 1;
        }
    }
    /// Call `f` with the value's bytes: borrowed from `t` when possible.
    #[inline(always)]
    fn emit(&self, t: &[u8], f: &mut impl FnMut(Option<&[u8]>)) {
        // the common case: one range of a path segment, or a host without capitals
        if self.len == 1 {
            let (a, b) = self.ranges[0];
            let v = &t[a..b];
            if !(self.lower && v.iter().any(u8::is_ascii_uppercase)) {
                f(Some(v));
                return;
            }
        }
        self.emit_general(t, f);
    }

    /// [`emit`](Self::emit) for several ranges or a value to lower-case.
    #[inline(never)]
    fn emit_general(&self, t: &[u8], f: &mut impl FnMut(Option<&[u8]>)) {
        let rs = &self.ranges[..self.len];
        let needs_lower = self.lower
            && rs
                .first()
                .is_some_and(|&(a, b)| t[a..b].iter().any(u8::is_ascii_uppercase));
        let contiguous = rs.windows(2).all(|w| w[0].1 == w[1].0);
        if !needs_lower && contiguous {
            let (a, b) = match rs {
                [] => (0, 0),
                [first, .., last] => (first.0, last.1),
                [only] => *only,
            };
            f(Some(&t[a..b]));
            return;
        }
        let total: usize = rs.iter().map(|&(a, b)| b - a).sum();
        let mut stack = [0u8; SCRATCH];
        let mut heap = Vec::new();
        let buf: &mut [u8] = if total <= SCRATCH {
            &mut stack[..total]
        } else {
            heap.resize(total, 0);
            &mut heap
        };
        let mut at = 0;
        for (i, &(a, b)) in rs.iter().enumerate() {
            let dst = &mut buf[at..at + (b - a)];
            dst.copy_from_slice(&t[a..b]);
            if i == 0 && self.lower {
                dst.make_ascii_lowercase();
            }
            at += b - a;
        }
        f(Some(buf));
    }
}

/// The normaliser without allocation: calls `f` once per layer, in order, with the layer's
/// value, or `None` for a missing layer. Exactly the rules of the [`MultiLayerBloomFilter`] docs.
pub(crate) fn for_each_layer(
    url: &str,
    layers: u32,
    mut f: impl FnMut(Option<&[u8]>),
) -> Result<()> {
    if layers == 0 || layers > MAX_LAYERS {
        return Err(invalid(
            "layers",
            format!("must be in 1..={MAX_LAYERS}, got {layers}"),
        ));
    }
    let mut ranges = [(0, 0); MAX_LAYERS as usize];
    if let Some(n) = fast_ranges(url.as_bytes(), layers as usize, &mut ranges) {
        for &(a, b) in &ranges[..n] {
            f(Some(&url.as_bytes()[a as usize..b as usize]));
        }
        for _ in n..layers as usize {
            f(None);
        }
        return Ok(());
    }
    general_layers(url, layers, f)
}

/// [`for_each_layer`] for any URL (the path of the URLs [`fast_ranges`] leaves); `layers`
/// already checked.
fn general_layers(url: &str, layers: u32, mut f: impl FnMut(Option<&[u8]>)) -> Result<()> {
    let t = url.trim().as_bytes();
    // one scan for the first `#` or `?`: the fragment never reaches the server; the query is
    // `[q, t.len())` (a lone `?` dropped) and `s_end` ends everything before it
    let (s_end, mut q, t) = match find2(t, b'#', b'?') {
        None => (t.len(), t.len(), t),
        Some(i) if t[i] == b'#' => (i, i, &t[..i]),
        Some(i) => {
            let e = find1(&t[i..], b'#').map_or(t.len(), |j| i + j);
            (i, i, &t[..e])
        }
    };
    if t.len() - q == 1 {
        q = t.len();
    }
    let s = &t[..s_end];
    let (other_scheme, rest_at) = split_scheme_bytes(s);
    let (auth_end, path_at) = match find1(&s[rest_at..], b'/') {
        Some(i) => (rest_at + i, Some(rest_at + i + 1)),
        None => (s_end, None),
    };
    // the first layer value: [first_at, host_end), lower-cased
    let first_at = if other_scheme { 0 } else { rest_at };
    let mut host_end = auth_end;
    if !other_scheme {
        for port in [&b":80"[..], b":443"] {
            if t[rest_at..host_end].ends_with(port) {
                host_end -= port.len();
                break;
            }
        }
    }
    if host_end == rest_at {
        return Err(invalid("url", format!("no host in {url:?}")));
    }
    // the path without trailing slashes: [path_at, path_end)
    let (path_at, path_end) = match path_at {
        Some(p) => {
            let mut e = s_end;
            while e > p && t[e - 1] == b'/' {
                e -= 1;
            }
            (p, e)
        }
        None => (s_end, s_end),
    };
    let l = layers as usize;
    let has_path = path_end > path_at;
    let mut first = Pieces::new();
    first.lower = true;
    first.push(first_at, host_end);
    if !has_path {
        first.push(q, t.len());
        first.emit(t, &mut f);
        for _ in 1..l {
            f(None);
        }
        return Ok(());
    }
    if l == 1 {
        // the whole path joins the host: host + "/" + path (+ query)
        first.push(path_at - 1, path_end);
        first.push(q, t.len());
        first.emit(t, &mut f);
        return Ok(());
    }
    first.emit(t, &mut f);
    let mut emitted = 1;
    let mut at = path_at;
    loop {
        let last_layer = emitted == l - 1;
        let end = if last_layer {
            path_end
        } else {
            find1(&t[at..path_end], b'/').map_or(path_end, |i| at + i)
        };
        let mut p = Pieces::new();
        p.push(at, end);
        if end == path_end {
            p.push(q, t.len());
        }
        p.emit(t, &mut f);
        emitted += 1;
        if end == path_end {
            break;
        }
        at = end + 1;
    }
    for _ in emitted..l {
        f(None);
    }
    Ok(())
}

/// URLs up to this many bytes may take [`fast_layers`].
const FAST_MAX: usize = 64;

/// Bit masks over the bytes of a URL (bit i for byte i).
struct ByteMasks {
    slash: u64,
    /// `?` or `#`
    query: u64,
    /// `A`..=`Z`
    upper: u64,
}

/// The [`ByteMasks`] of `buf` (bytes past the URL are zero and match nothing), 16 bytes at a
/// time with SSE2 (part of x86-64).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn byte_masks(buf: &[u8; FAST_MAX], len: usize) -> ByteMasks {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut m = ByteMasks {
        slash: 0,
        query: 0,
        upper: 0,
    };
    for (i, chunk) in buf.chunks_exact(16).take(len.div_ceil(16)).enumerate() {
        // SAFETY: SSE2 is part of the x86-64 baseline, so every intrinsic here is available;
        // `chunk` is 16 readable bytes and `_mm_loadu_si128` has no alignment requirement.
        let [slash, query, upper] = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            let slash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'/' as i8));
            let query = _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'?' as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'#' as i8)),
            );
            // signed compares: bytes ≥ 0x80 are negative, so never in 'A'..='Z'
            let upper = _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(b'A' as i8 - 1)),
                _mm_cmplt_epi8(v, _mm_set1_epi8(b'Z' as i8 + 1)),
            );
            [slash, query, upper].map(|x| _mm_movemask_epi8(x) as u16)
        };
        let at = 16 * i;
        m.slash |= u64::from(slash) << at;
        m.query |= u64::from(query) << at;
        m.upper |= u64::from(upper) << at;
    }
    m
}

/// The [`ByteMasks`] of `buf`, a byte at a time (targets without SSE2).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn byte_masks(buf: &[u8; FAST_MAX], len: usize) -> ByteMasks {
    let mut m = ByteMasks {
        slash: 0,
        query: 0,
        upper: 0,
    };
    for (i, &c) in buf[..len].iter().enumerate() {
        m.slash |= u64::from(c == b'/') << i;
        m.query |= u64::from(c == b'?' || c == b'#') << i;
        m.upper |= u64::from(c.is_ascii_uppercase()) << i;
    }
    m
}

/// Bits `[0, n)` set, for `n ≤ 64`.
#[inline(always)]
fn low_bits(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// The layer values of a URL that [`fast_ranges`] handles: byte ranges of the URL.
type Ranges = [(u8, u8); MAX_LAYERS as usize];

/// [`for_each_layer`] for the common URL, from bit masks of its bytes: at most [`FAST_MAX`]
/// bytes, no surrounding whitespace, no query or fragment, `http(s)://` or no scheme, a
/// non-empty lower-case host without a possible default port, no trailing slash. Then every
/// layer value is a range of the input and the rules of the [`MultiLayerBloomFilter`] docs reduce to
/// splitting on the slashes. Writes the ranges of the first layers into `out` and returns
/// how many there are (the other layers are missing), or `None` for any other URL (the
/// general path handles it, and reports errors). `l` must be in `1..=MAX_LAYERS`.
#[inline(always)]
fn fast_ranges(t: &[u8], l: usize, out: &mut Ranges) -> Option<usize> {
    let n = t.len();
    let graphic = |c: u8| (0x21..=0x7E).contains(&c);
    // (a first and a last byte that are printable ASCII: nothing to trim)
    if n == 0 || n > FAST_MAX || !graphic(t[0]) || !graphic(t[n - 1]) || t[n - 1] == b'/' {
        return None;
    }
    let mut buf = [0u8; FAST_MAX];
    buf[..n].copy_from_slice(t);
    let m = byte_masks(&buf, n);
    if m.query != 0 {
        return None;
    }
    let (other_scheme, rest) = split_scheme_bytes(t);
    if other_scheme {
        return None;
    }
    let slashes = m.slash & !low_bits(rest);
    let auth_end = if slashes == 0 {
        n
    } else {
        slashes.trailing_zeros() as usize
    };
    if auth_end == rest
        || matches!(t[auth_end - 1], b'0' | b'3')
        || m.upper & low_bits(auth_end) & !low_bits(rest) != 0
    {
        return None;
    }
    // (every offset is below FAST_MAX = 64, so fits a byte)
    let r = |a: usize, b: usize| (a as u8, b as u8);
    if l == 1 {
        // the whole path joins the host
        out[0] = r(rest, n);
        return Some(1);
    }
    out[0] = r(rest, auth_end);
    if auth_end == n {
        return Some(1);
    }
    let mut emitted = 1;
    let mut at = auth_end + 1;
    let mut more = slashes & (slashes - 1);
    while emitted < l - 1 && more != 0 {
        let p = more.trailing_zeros() as usize;
        out[emitted] = r(at, p);
        emitted += 1;
        at = p + 1;
        more &= more - 1;
    }
    // the last segment, or the tail joining the last layer
    out[emitted] = r(at, n);
    Some(emitted + 1)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// High bit of each zero byte of `x`; the lowest one flagged is exact (a borrow can only
/// flag bytes above a real zero byte).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// First index of byte `a` or `b` in `s`, eight bytes at a time.
#[inline]
fn find2(s: &[u8], a: u8, b: u8) -> Option<usize> {
    let (va, vb) = (ONES * u64::from(a), ONES * u64::from(b));
    let mut chunks = s.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        let x = u64::from_le_bytes(w);
        let hit = zero_bytes(x ^ va) | zero_bytes(x ^ vb);
        if hit != 0 {
            return Some(at + (hit.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&c| c == a || c == b)
        .map(|i| at + i)
}

/// First index of byte `a` in `s`.
#[inline]
fn find1(s: &[u8], a: u8) -> Option<usize> {
    find2(s, a, a)
}

/// `(true, rest)` for another scheme `sc://` (kept in the first layer value), `(false, rest)`
/// with `http(s)://` dropped or no scheme. A scheme is `[A-Za-z][A-Za-z0-9+.-]*` followed by
/// `://`; `rest` is the offset just after the `://`.
#[inline]
fn split_scheme_bytes(s: &[u8]) -> (bool, usize) {
    // `http://` or `https://` in any case: the first 8 bytes with the letters' case bit set
    // (`b | 0x20` equals a lower-case letter only for that letter and its upper case)
    let n = s.len().min(8);
    let x = match s.first_chunk::<8>() {
        Some(w) => u64::from_le_bytes(*w),
        None => {
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(&s[..n]);
            u64::from_le_bytes(w)
        }
    };
    if n >= 7 && (x | 0x2020_2020) & 0x00FF_FFFF_FFFF_FFFF == u64::from_le_bytes(*b"http://\0") {
        return (false, 7);
    }
    if n == 8 && x | 0x20_2020_2020 == u64::from_le_bytes(*b"https://") {
        return (false, 8);
    }
    let run = s
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))
        .unwrap_or(s.len());
    if run > 0 && s[0].is_ascii_alphabetic() && s[run..].starts_with(b"://") {
        return (true, run + 3);
    }
    (false, 0)
}

/// `(Some(other scheme), rest)`, or `(None, rest)` with `http(s)://` dropped (the reference
/// of the tests; [`split_scheme_bytes`] is what runs).
#[cfg(test)]
fn split_scheme(s: &str) -> (Option<&str>, &str) {
    for p in ["http://", "https://"] {
        if s.len() >= p.len() && s.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes()) {
            return (None, &s[p.len()..]);
        }
    }
    if let Some(i) = s.find("://") {
        let sc = &s[..i];
        let ok = sc.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && sc
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if ok {
            return (Some(sc), &s[i + 3..]);
        }
    }
    (None, s)
}

/// Normalise `url` and hash each of its `layers` values once into `hs` (a missing layer gets
/// `missing`, the hash of [`MISSING_SEGMENT`]); returns L.
#[inline]
pub(crate) fn hash_layers(
    hasher: &KeyHasher,
    missing: Hashed,
    url: &str,
    layers: u32,
    hs: &mut [Hashed],
) -> Result<usize> {
    let l = layers as usize;
    if hs.len() < l {
        return Err(invalid("layers", "more layers than hash slots"));
    }
    let mut ranges = [(0, 0); MAX_LAYERS as usize];
    if (1..=MAX_LAYERS).contains(&layers) {
        if let Some(n) = fast_ranges(url.as_bytes(), l, &mut ranges) {
            // one call site: the hash is inlined, and the segments' hashes can overlap
            for (h, &(a, b)) in hs[..n].iter_mut().zip(&ranges[..n]) {
                *h = hasher.hash_bytes(&url.as_bytes()[a as usize..b as usize]);
            }
            hs[n..l].fill(missing);
            return Ok(l);
        }
    }
    let mut n = 0;
    for_each_layer(url, layers, |v| {
        hs[n] = match v {
            Some(b) => hasher.hash_bytes(b),
            None => missing,
        };
        n += 1;
    })?;
    Ok(n)
}

/// Stack room for a URL's layer hashes: [`SMALL_LAYERS`] slots when L fits (128 bytes to
/// clear per URL), [`MAX_LAYERS`] otherwise. The size difference of the variants is the
/// point: it lives on the stack for one call, and only the variant in use is written.
#[allow(clippy::large_enum_variant)]
enum HashRoom {
    Small([Hashed; SMALL_LAYERS]),
    Large([Hashed; MAX_LAYERS as usize]),
}

/// L up to which a URL's hashes take the small [`HashRoom`].
const SMALL_LAYERS: usize = 8;

impl HashRoom {
    #[inline(always)]
    fn new(layers: u32) -> Self {
        if layers as usize <= SMALL_LAYERS {
            Self::Small([Hashed::default(); SMALL_LAYERS])
        } else {
            Self::Large([Hashed::default(); MAX_LAYERS as usize])
        }
    }

    #[inline(always)]
    fn slots(&mut self) -> &mut [Hashed] {
        match self {
            Self::Small(a) => a,
            Self::Large(a) => a,
        }
    }
}

/// Calls `f` with the k values of [`Hashed::sequence`] (enhanced double hashing), in order;
/// with k a constant at the call site the loop unrolls.
#[inline(always)]
fn for_each_value(h: Hashed, k: usize, mut f: impl FnMut(u64)) {
    let (mut x, mut y) = (h.lo, h.hi);
    for j in 0..k as u64 {
        f(x);
        x = x.wrapping_add(y);
        y = y.wrapping_add(j);
    }
}

/// Options for a [`MultiLayerBloomFilter`]: layers plus either (capacity, fpr) or an explicit
/// (bits per layer, hashes) shape.
#[derive(Debug, Clone)]
pub struct MlbfBuilder {
    layers: u32,
    capacity: Option<u64>,
    fpr: Option<f64>,
    bits: Option<u64>,
    hashes: Option<u32>,
    hasher: KeyHasher,
    max_bytes: u64,
}

impl MlbfBuilder {
    /// Number of URL layers L (default 4, the paper's).
    pub fn layers(mut self, l: u32) -> Self {
        self.layers = l;
        self
    }
    /// Expected number of URLs n.
    pub fn capacity(mut self, n: u64) -> Self {
        self.capacity = Some(n);
        self
    }
    /// Target rate ε for near misses: a URL with a segment that no inserted URL has at that
    /// layer (a known page with a new last segment, the paper's queries) is reported present
    /// with probability at most ε at capacity, whatever the URLs
    /// ([`params::mlbf_near_miss_shape`]). Such a URL passes every other layer for certain, so
    /// eq. 4's `ε^{1/L}` per layer (which assumes every segment is new) would give it
    /// `ε^{2/L}` or more. A URL whose every value was seen at its layer (segments recombined
    /// from different URLs) meets the XOR layer alone ([`MultiLayerBloomFilter::recombined_fpr`],
    /// about `√ε`); a URL of new segments only, far less.
    pub fn fpr(mut self, p: f64) -> Self {
        self.fpr = Some(p);
        self
    }
    /// Explicit bits per layer m (with [`hashes`](Self::hashes)).
    pub fn bits(mut self, m: u64) -> Self {
        self.bits = Some(m);
        self
    }
    /// Explicit k.
    pub fn hashes(mut self, k: u32) -> Self {
        self.hashes = Some(k);
        self
    }
    /// Hash with this hasher.
    pub fn hasher(mut self, h: KeyHasher) -> Self {
        self.hasher = h;
        self
    }
    /// Refuse to allocate more than this many bytes in total.
    pub fn max_bytes(mut self, limit: u64) -> Self {
        self.max_bytes = limit;
        self
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<MultiLayerBloomFilter> {
        let l = self.layers;
        if l == 0 || l > MAX_LAYERS {
            return Err(invalid(
                "layers",
                format!("must be in 1..={MAX_LAYERS}, got {l}"),
            ));
        }
        let (m, k, n, p) = match (self.bits, self.hashes) {
            (Some(m), Some(k)) => (m, k, self.capacity.unwrap_or(0), self.fpr.unwrap_or(0.0)),
            (Some(m), None) => {
                let n = self
                    .capacity
                    .ok_or_else(|| invalid("hashes", "give hashes or a capacity with bits"))?;
                params::check_capacity(n)?;
                (m, params::optimal_k(n, m), n, self.fpr.unwrap_or(0.0))
            }
            (None, Some(_)) => return Err(invalid("bits", "give bits with hashes")),
            (None, None) => {
                let n = self
                    .capacity
                    .ok_or_else(|| invalid("capacity", "required"))?;
                let p = self.fpr.ok_or_else(|| invalid("fpr", "required"))?;
                params::check_capacity(n)?;
                params::check_fpr(p)?;
                store::check_size(
                    (params::bits_asymptotic(n, p) / 8.0 * f64::from(l + 1)) as u64,
                    self.max_bytes,
                )?;
                let s = params::mlbf_near_miss_shape(n, p, MAX_HASHES)?;
                (s.m, s.k, n, p)
            }
        };
        if m == 0 {
            return Err(invalid("bits", "must be at least 1"));
        }
        params::check_hashes(k, MAX_HASHES)?;
        if let Some(p) = self.fpr {
            params::check_fpr(p)?;
        }
        let words = usize::try_from(m.div_ceil(64))
            .map_err(|_| invalid("bits", "too large for this platform"))?;
        let total = (words as u64)
            .saturating_mul(8)
            .saturating_mul(u64::from(l) + 1);
        store::check_size(total, self.max_bytes)?;
        let mut arrays = Vec::with_capacity(l as usize + 1);
        for _ in 0..=l {
            arrays.push(Words::zeroed(words, self.max_bytes)?);
        }
        Ok(MultiLayerBloomFilter {
            hasher: self.hasher,
            missing: self.hasher.hash_bytes(MISSING_SEGMENT),
            layers: l,
            m,
            k,
            arrays,
            items: 0,
            capacity: n,
            target_fpr: p,
        })
    }
}

/// The multi-layer Bloom filter (MLBF) for duplicated-URL detection (Cen, Xu & Sun: Cen, Xu, Sun,
/// "A Multi-Layer Bloom Filter for Duplicated URL Detection", §IV, Fig. 3 and 4, eq. 4).
///
/// A URL `http://a₁/a₂/…/a_L` loses its protocol and is split on `/`; layer `i` is a classic
/// filter `BF_i^{k,m}` holding segment `a_i`, and the extra layer `BF_{L+1}` holds, for
/// `j = 1..k`, the position `LAddr[j] = ⊕_i Hash_j(a_i)`: the XOR of the j-th positions of all
/// layers (Fig. 3). A query checks every layer, stopping at the first zero bit, then the k XOR
/// positions (Fig. 4). If the layers' rate is f, eq. 4 gives `f_MLBF = f^L`
/// ([`crate::params::fpr_mlbf`]).
///
/// Layers 1..L are bit for bit [`crate::BloomFilter`]s of shape (m, k) (the same index
/// mapping), so each segment is hashed **once** and that hash gives both its layer's bits and
/// its share of the XOR. The XOR is taken on the 64-bit hash values *before* they are mapped to
/// `[0, m)` (multiply-shift), then mapped: for m a power of two this is exactly the paper's XOR
/// of addresses (multiply-shift keeps the top bits, and XOR commutes with taking them); for any
/// other m the paper's XOR of addresses could leave `[0, m)`, while this cannot.
///
/// # Normalisation (what a crawler gets)
/// [`normalize_url`] turns a URL into exactly L layer values:
/// - surrounding whitespace is trimmed; an empty URL is an error;
/// - the **fragment** (`#…`) is dropped (it never reaches the server);
/// - the **protocol** `http://` or `https://` (any case) is dropped, as in the paper; any other
///   scheme (`ftp://`) is kept, lower-cased, in front of the host, so `ftp://h/x` and
///   `http://h/x` stay different; a URL without a scheme is taken as already scheme-less;
/// - the **host** (everything up to the first `/`, `?` or `#`) is lower-cased and a default
///   port `:80` or `:443` is removed; an empty host is an error;
/// - the **path keeps its case** and is not percent-decoded; **trailing slashes** are removed
///   (`h/a/` ≡ `h/a`, `h/` ≡ `h`); empty inner segments (`a//b`) are kept as empty segments;
/// - the **query string** (`?…`, kept verbatim, a lone `?` dropped) stays attached to the last
///   path segment, so `/` inside a query does not create layers;
/// - **more segments than L**: the tail joins the last layer (`a_L/a_{L+1}/…` is one value);
/// - **fewer segments than L**: each missing layer holds an explicit marker (the byte `0xFF`,
///   which no UTF-8 segment can equal), so `h/a` and `h/a/` + empty segment differ and a short
///   URL is never a prefix match of a long one.
///
/// # When to pick it
/// When the paper's structure is wanted (its experiment, its layered false-positive model), or
/// when URLs differ mostly in whole segments. It uses L+1 arrays; at **equal total memory** a
/// single [`crate::BloomFilter`] or [`crate::BlockedBloomFilter`] sized for the same n is
/// usually as good or better, and real URLs share hosts and directories, so eq. 4 (which assumes
/// every segment of a query is absent) is optimistic for near-duplicates: a URL with only its
/// last segment changed is rejected only by layer L and the XOR layer (≈ f²). Report both.
///
/// # What a rate means here
/// Sized by capacity and rate ε ([`MlbfBuilder::fpr`]), every array is sized for n values so
/// that at capacity:
/// - a **near miss** — a URL with a value that no inserted URL has at that layer, such as a
///   known page with a new last segment — is reported present at most at rate ε, whatever
///   the URLs ([`params::mlbf_near_miss_shape`]; n distinct URLs put at most n values in a
///   layer). Only its layer and the XOR layer can reject it, and they are correlated: the
///   XOR layer's positions are the layer's moved by the XOR of the other layers' hashes, so
///   for inserted URLs that share all the other values with the query (pages of one
///   directory) the XOR layer repeats the layer's answer at each index.
///   [`Stats::current_fpr`] reports the bound for the worst layer from the fills (the rate
///   when every URL shares the query's other values);
///   [`near_miss_fpr_unshared`](MultiLayerBloomFilter::near_miss_fpr_unshared) the rate when
///   none does. Real URLs lie in between;
/// - a **recombined** URL — every value seen at its layer, in a new combination (a known
///   directory of one host under another) — meets the XOR layer alone: about `√ε`;
/// - a **novel** URL (all segments new) passes all L+1 arrays: far below ε.
///
/// This costs about `(L+1)/1.65` times the memory of a classic filter at ε. An explicit shape
/// ([`MlbfBuilder::bits`], [`MlbfBuilder::hashes`]: the paper's experiment) is taken as given.
/// Files sized by earlier versions (each layer at `ε^{1/L}` by eq. 4) load and answer as
/// before; their reported rate is now the near-miss bound, which exceeds the ε they record.
///
/// **Speed.** An operation normalises the URL and hashes L segments (≈ 5–6× a classic filter's
/// insert with its table in cache) and touches up to k·(L+1) words in L+1 arrays. The
/// target of 1.5× the classic filter is out of reach for this structure under the one hash
/// path, even with blocked layers: docs/BENCHMARKS.md ("Structured keys") measures
/// the floor. The paper's own queries (a known URL plus an id, rejected by the XOR layer) are
/// the cheap case.
#[derive(Clone, PartialEq)]
pub struct MultiLayerBloomFilter {
    hasher: KeyHasher,
    layers: u32,
    m: u64,
    k: u32,
    /// L layer arrays then the XOR layer, m bits each.
    arrays: Vec<Words>,
    /// The hash of [`MISSING_SEGMENT`] (derived from `hasher`, kept to skip rehashing it).
    missing: Hashed,
    items: u64,
    capacity: u64,
    target_fpr: f64,
}

impl MultiLayerBloomFilter {
    /// The number of layers L of the paper's experiment (Cen, Xu & Sun §V).
    pub const PAPER_LAYERS: u32 = PAPER_LAYERS;
    /// Bits per layer m of the paper's experiment (Cen, Xu & Sun §V).
    pub const PAPER_BITS: u64 = PAPER_BITS;
    /// Hash functions per layer k of the paper's experiment (Cen, Xu & Sun §V).
    pub const PAPER_HASHES: u32 = PAPER_HASHES;
    /// Largest number of layers.
    pub const MAX_LAYERS: u32 = MAX_LAYERS;

    /// A builder (default L = 4).
    pub fn builder() -> MlbfBuilder {
        MlbfBuilder {
            layers: PAPER_LAYERS,
            capacity: None,
            fpr: None,
            bits: None,
            hashes: None,
            hasher: KeyHasher::new(),
            max_bytes: store::max_bytes(),
        }
    }

    /// L layers sized for `n` distinct URLs at rate `p` for near misses (see
    /// [`MlbfBuilder::fpr`]).
    pub fn try_new(layers: u32, n: u64, p: f64) -> Result<Self> {
        Self::builder()
            .layers(layers)
            .capacity(n)
            .fpr(p)
            .try_build()
    }

    /// An explicit shape: L layers of m bits with k hashes.
    pub fn try_with_shape(layers: u32, m: u64, k: u32) -> Result<Self> {
        Self::builder().layers(layers).bits(m).hashes(k).try_build()
    }

    /// The paper's experiment shape (Cen, Xu & Sun §V): L = 4, m = 16,829,152, k = 3 (about 10 MB).
    pub fn paper() -> Result<Self> {
        Self::try_with_shape(PAPER_LAYERS, PAPER_BITS, PAPER_HASHES)
    }

    /// Layers L (the XOR layer is extra).
    pub fn layers(&self) -> u32 {
        self.layers
    }
    /// Bits per layer m.
    pub fn bits_per_layer(&self) -> u64 {
        self.m
    }
    /// Hashes k.
    pub fn hashes(&self) -> u32 {
        self.k
    }
    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
    /// URLs inserted that changed the filter.
    pub fn len(&self) -> u64 {
        self.items
    }
    /// True when nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }
    /// Words of layer `i` (0-based; `i == layers()` is the XOR layer), or `None`.
    pub fn layer_words(&self, i: usize) -> Option<&[u64]> {
        self.arrays.get(i).map(Words::as_slice)
    }

    /// Normalise a URL and hash each layer's value once: L hashes.
    pub fn hash_url(&self, url: &str) -> Result<Vec<Hashed>> {
        let mut hs = [Hashed::default(); MAX_LAYERS as usize];
        let l = self.hash_layers(url, &mut hs)?;
        Ok(hs[..l].to_vec())
    }

    /// [`hash_url`](Self::hash_url) without allocating: writes the L hashes into `out[..L]`
    /// and returns L (an error if `out` holds fewer than L). For callers that hash a URL once
    /// and probe it in several filters of the same shape and hasher.
    #[inline]
    pub fn hash_url_into(&self, url: &str, out: &mut [Hashed]) -> Result<usize> {
        hash_layers(&self.hasher, self.missing, url, self.layers, out)
    }

    /// [`hash_url`](Self::hash_url) into a stack array (no allocation): the hashes and L.
    #[inline]
    fn hash_layers(&self, url: &str, hs: &mut [Hashed]) -> Result<usize> {
        hash_layers(&self.hasher, self.missing, url, self.layers, hs)
    }

    fn check_hashes_len(&self, hs: &[Hashed]) -> Result<()> {
        if hs.len() != self.layers as usize {
            return Err(invalid(
                "segments",
                format!("need {} layer hashes, got {}", self.layers, hs.len()),
            ));
        }
        Ok(())
    }

    /// Insert a URL (Fig. 3). Returns true when some bit was new.
    pub fn insert(&mut self, url: &str) -> Result<bool> {
        let mut room = HashRoom::new(self.layers);
        let hs = room.slots();
        let l = self.hash_layers(url, hs)?;
        Ok(self.insert_layers(&hs[..l]))
    }

    /// Query a URL (Fig. 4): false means certainly never inserted.
    pub fn contains(&self, url: &str) -> Result<bool> {
        let mut room = HashRoom::new(self.layers);
        let hs = room.slots();
        let l = self.hash_layers(url, hs)?;
        Ok(self.contains_layers(&hs[..l]))
    }

    /// Insert pre-hashed layer values (exactly L of them, e.g. from [`hash_url`](Self::hash_url)).
    pub fn insert_hashed(&mut self, hs: &[Hashed]) -> Result<bool> {
        self.check_hashes_len(hs)?;
        Ok(self.insert_layers(hs))
    }

    /// Query pre-hashed layer values (exactly L of them).
    pub fn contains_hashed(&self, hs: &[Hashed]) -> Result<bool> {
        self.check_hashes_len(hs)?;
        Ok(self.contains_layers(hs))
    }

    /// The XOR layer's k hash values (Fig. 3: `⊕_i Hash_j(a_i)`, before reduction), with a
    /// prefetch of every layer's k words on the way when `prefetch`. `k` is `self.k` (a
    /// constant where the caller dispatched on it, so the loops unroll).
    #[inline(always)]
    fn xor_values<const N: usize>(&self, hs: &[Hashed], k: usize, prefetch: bool) -> [u64; N] {
        let m = self.m;
        let mut laddr = [0u64; N];
        let k = k.min(laddr.len());
        for (layer, h) in self.arrays.iter().zip(hs) {
            let words = layer.as_slice();
            // `Hashed::sequence`, unrolled by hand
            let (mut x, mut y) = (h.lo, h.hi);
            for (j, a) in laddr[..k].iter_mut().enumerate() {
                if prefetch {
                    store::prefetch(words, (reduce(x, m) >> 6) as usize);
                }
                *a ^= x;
                x = x.wrapping_add(y);
                y = y.wrapping_add(j as u64);
            }
        }
        laddr
    }

    /// Fig. 3 on exactly L hashes: every position is computed and prefetched first, then set.
    /// The common k (1..=4) are compiled with k a constant.
    #[inline]
    fn insert_layers(&mut self, hs: &[Hashed]) -> bool {
        match self.k {
            1 => self.insert_k::<1>(hs, 1),
            2 => self.insert_k::<2>(hs, 2),
            3 => self.insert_k::<3>(hs, 3),
            4 => self.insert_k::<4>(hs, 4),
            k if k as usize <= SMALL_K => self.insert_k::<SMALL_K>(hs, k as usize),
            k => self.insert_k::<{ MAX_HASHES as usize }>(hs, k as usize),
        }
    }

    /// [`insert_layers`](Self::insert_layers) with the XOR values in an array of N ≥ k
    /// (`k == self.k`).
    #[inline(always)]
    fn insert_k<const N: usize>(&mut self, hs: &[Hashed], k: usize) -> bool {
        let m = self.m;
        let laddr = self.xor_values::<N>(hs, k, true);
        let k = k.min(laddr.len());
        let (layers, xor) = self.arrays.split_at_mut(self.layers as usize);
        let Some(xor) = xor.first_mut() else {
            return false;
        };
        let xor = xor.as_mut_slice();
        for &x in &laddr[..k] {
            store::prefetch(xor, (reduce(x, m) >> 6) as usize);
        }
        let mut new = false;
        for &x in &laddr[..k] {
            new |= store::set_bit(xor, reduce(x, m));
        }
        for (layer, h) in layers.iter_mut().zip(hs) {
            let words = layer.as_mut_slice();
            for_each_value(*h, k, |x| new |= store::set_bit(words, reduce(x, m)));
        }
        self.items = self.items.saturating_add(u64::from(new));
        new
    }

    /// Fig. 4 on exactly L hashes. The answer is the AND over the layers, so they are probed in
    /// the order that rejects soonest: the XOR layer (it depends on every segment, so a novel
    /// URL fails there, usually at its first word), then the layers last to first (URLs share
    /// hosts and directories). Each group's words are prefetched before it is probed, so its
    /// cache misses overlap; the layers' only once the XOR layer has passed, so a rejected
    /// query does not fetch them.
    #[inline]
    fn contains_layers(&self, hs: &[Hashed]) -> bool {
        match self.k {
            1 => self.contains_k::<1>(hs, 1),
            2 => self.contains_k::<2>(hs, 2),
            3 => self.contains_k::<3>(hs, 3),
            4 => self.contains_k::<4>(hs, 4),
            k if k as usize <= SMALL_K => self.contains_k::<SMALL_K>(hs, k as usize),
            k => self.contains_k::<{ MAX_HASHES as usize }>(hs, k as usize),
        }
    }

    /// [`contains_layers`](Self::contains_layers) with the XOR values in an array of N ≥ k
    /// (`k == self.k`).
    #[inline(always)]
    fn contains_k<const N: usize>(&self, hs: &[Hashed], k: usize) -> bool {
        let m = self.m;
        let laddr = self.xor_values::<N>(hs, k, false);
        let k = k.min(N);
        let xor = self.arrays[self.layers as usize].as_slice();
        // the XOR layer's k words in flight together, then probed
        for &x in &laddr[..k] {
            store::prefetch(xor, (reduce(x, m) >> 6) as usize);
        }
        if !laddr[..k]
            .iter()
            .all(|&x| store::get_bit(xor, reduce(x, m)))
        {
            return false;
        }
        // a likely member: every layer's words in flight together, then probed
        for (layer, h) in self.arrays.iter().zip(hs) {
            let words = layer.as_slice();
            for_each_value(*h, k, |x| {
                store::prefetch(words, (reduce(x, m) >> 6) as usize);
            });
        }
        self.arrays.iter().zip(hs).rev().all(|(layer, h)| {
            let words = layer.as_slice();
            let mut all = true;
            for_each_value(*h, k, |x| all &= store::get_bit(words, reduce(x, m)));
            all
        })
    }

    /// Insert and report whether the URL was already (probably) seen: a crawler's URL-seen test.
    pub fn check_and_insert(&mut self, url: &str) -> Result<bool> {
        let mut room = HashRoom::new(self.layers);
        let hs = room.slots();
        let l = self.hash_layers(url, hs)?;
        let seen = self.contains_layers(&hs[..l]);
        if !seen {
            self.insert_layers(&hs[..l]);
        }
        Ok(seen)
    }

    /// [`check_and_insert`](Self::check_and_insert) over many URLs, in order (a URL repeated
    /// inside the batch is seen the second time), with the same answers. URLs are taken in
    /// groups of `BATCH`: the group is normalised and hashed and every word it will touch is
    /// prefetched before the first probe, so the cache misses of different URLs overlap.
    pub fn check_and_insert_batch<S: AsRef<str>>(&mut self, urls: &[S]) -> Vec<Result<bool>> {
        let l = self.layers as usize;
        let mut out = Vec::with_capacity(urls.len());
        let mut hs = vec![Hashed::default(); BATCH * l];
        for group in urls.chunks(BATCH) {
            let mut ok = [false; BATCH];
            for (i, u) in group.iter().enumerate() {
                // hashed straight into the group's slots (no per-URL array to clear)
                match self.hash_layers(u.as_ref(), &mut hs[i * l..(i + 1) * l]) {
                    Ok(_) => {
                        self.prefetch_layers(&hs[i * l..(i + 1) * l]);
                        ok[i] = true;
                    }
                    Err(e) => out.push(Err(e)),
                }
                if ok[i] {
                    out.push(Ok(false)); // placeholder, answered below in input order
                }
            }
            let base = out.len() - group.len();
            for i in 0..group.len() {
                if ok[i] {
                    let h = &hs[i * l..(i + 1) * l];
                    let seen = self.contains_layers(h);
                    if !seen {
                        self.insert_layers(h);
                    }
                    out[base + i] = Ok(seen);
                }
            }
        }
        out
    }

    /// [`contains`](Self::contains) over many URLs, with the same answers in input order.
    /// URLs are taken in groups of `BATCH`: the group is hashed and its XOR-layer words
    /// prefetched; the URLs that pass the XOR layer then have their layers' words prefetched
    /// together and probed, so the cache misses of different URLs overlap.
    pub fn contains_batch<S: AsRef<str>>(&self, urls: &[S]) -> Vec<Result<bool>> {
        let l = self.layers as usize;
        let (k, m) = (self.k, self.m);
        let xor = self.arrays[l].as_slice();
        let mut out = Vec::with_capacity(urls.len());
        let mut hs = vec![Hashed::default(); BATCH * l];
        for group in urls.chunks(BATCH) {
            let base = out.len();
            let mut laddr = [[0u64; SMALL_K]; BATCH];
            let small = k as usize <= SMALL_K;
            for (i, u) in group.iter().enumerate() {
                let h = &mut hs[i * l..(i + 1) * l];
                match self.hash_layers(u.as_ref(), h) {
                    Ok(_) => {
                        if small {
                            laddr[i] = self.xor_values::<SMALL_K>(h, k as usize, false);
                            for &x in &laddr[i][..k as usize] {
                                store::prefetch(xor, (reduce(x, m) >> 6) as usize);
                            }
                        }
                        out.push(Ok(true)); // placeholder, answered below
                    }
                    Err(e) => out.push(Err(e)),
                }
            }
            // the XOR layer; survivors get their layers' words prefetched
            let mut pass = [false; BATCH];
            for i in 0..group.len() {
                if out[base + i].is_err() {
                    continue;
                }
                let h = &hs[i * l..(i + 1) * l];
                pass[i] = if small {
                    laddr[i][..k as usize]
                        .iter()
                        .all(|&x| store::get_bit(xor, reduce(x, m)))
                } else {
                    self.contains_layers(h)
                };
                if pass[i] && small {
                    for (layer, hh) in self.arrays.iter().zip(h) {
                        for x in hh.sequence(k) {
                            store::prefetch(layer.as_slice(), (reduce(x, m) >> 6) as usize);
                        }
                    }
                }
            }
            for i in 0..group.len() {
                if out[base + i].is_err() {
                    continue;
                }
                let h = &hs[i * l..(i + 1) * l];
                let yes = pass[i]
                    && (!small
                        || self.arrays.iter().zip(h).rev().all(|(layer, hh)| {
                            hh.sequence(k)
                                .all(|x| store::get_bit(layer.as_slice(), reduce(x, m)))
                        }));
                out[base + i] = Ok(yes);
            }
        }
        out
    }

    /// Prefetch every word of every layer (and the XOR layer) that `hs` touches.
    #[inline]
    fn prefetch_layers(&self, hs: &[Hashed]) {
        if self.k <= SMALL_K as u32 {
            self.prefetch_k::<SMALL_K>(hs);
        } else {
            self.prefetch_k::<{ MAX_HASHES as usize }>(hs);
        }
    }

    #[inline]
    fn prefetch_k<const N: usize>(&self, hs: &[Hashed]) {
        let m = self.m;
        let laddr = self.xor_values::<N>(hs, self.k as usize, true);
        let xor = self.arrays[self.layers as usize].as_slice();
        for &x in &laddr[..(self.k as usize).min(N)] {
            store::prefetch(xor, (reduce(x, m) >> 6) as usize);
        }
    }

    /// Eq. 4 for this shape after `len()` inserts: `f(k, m, n)^L` (exact f).
    pub fn model_fpr(&self) -> f64 {
        params::fpr_mlbf(self.items, self.m, self.k, self.layers)
    }

    /// The rate at which array `i` (0-based layers, `i == layers()` the XOR layer) passes a
    /// value it does not hold, from its fill: `(ones/m)^k`; `None` past the XOR layer.
    pub fn layer_fpr(&self, i: usize) -> Option<f64> {
        self.arrays
            .get(i)
            .map(|w| params::fpr_from_fill(store::count_ones(w.as_slice()), self.m, self.k))
    }

    /// The rates of the arrays, layers then the XOR layer ([`layer_fpr`](Self::layer_fpr)).
    pub fn layer_fprs(&self) -> Vec<f64> {
        (0..self.arrays.len())
            .filter_map(|i| self.layer_fpr(i))
            .collect()
    }

    /// The rate for a near miss whose one unseen value is in layer `i` (0-based), at most:
    /// that layer and the XOR layer must both pass (every other layer passes for certain),
    /// and among URLs that share the other values the XOR bit follows the layer bit
    /// ([`params::mlbf_near_miss_fpr`]; this is the rate when every URL shares them). A
    /// known page with a new last segment is a near miss in the layer after its last segment
    /// (or the last layer, which holds the tail of longer URLs).
    pub fn near_miss_fpr(&self, i: usize) -> Option<f64> {
        let (layer, xor) = self.near_miss_fills(i)?;
        Some(params::mlbf_near_miss_fpr(layer, xor, self.k))
    }

    /// [`near_miss_fpr`](Self::near_miss_fpr) for URLs that share no other values with the
    /// inserted ones (two independent tests, `(f_i · f_xor)^k`): the low end of the range real
    /// URLs fall in.
    pub fn near_miss_fpr_unshared(&self, i: usize) -> Option<f64> {
        let (layer, xor) = self.near_miss_fills(i)?;
        Some((layer * xor).powi(self.k as i32))
    }

    /// Fractions of ones of layer `i` and of the XOR layer.
    fn near_miss_fills(&self, i: usize) -> Option<(f64, f64)> {
        let l = self.layers as usize;
        if i >= l {
            return None;
        }
        let fill = |w: &Words| store::count_ones(w.as_slice()) as f64 / self.m as f64;
        Some((fill(&self.arrays[i]), fill(&self.arrays[l])))
    }

    /// The rate for a URL whose every layer value was inserted at that layer, in another
    /// combination: only the XOR layer can reject it.
    pub fn recombined_fpr(&self) -> f64 {
        self.layer_fpr(self.layers as usize).unwrap_or(1.0)
    }

    /// The rate for a URL whose every segment is new: every array must pass (eq. 4 with the
    /// arrays' real fills, the XOR layer included).
    pub fn novel_fpr(&self) -> f64 {
        self.layer_fprs().iter().product()
    }

    fn check_compatible(&self, other: &Self) -> Result<()> {
        if self.layers != other.layers || self.m != other.m || self.k != other.k {
            return Err(shape_mismatch(
                format!("L={} m={} k={}", self.layers, self.m, self.k),
                format!("L={} m={} k={}", other.layers, other.m, other.k),
            ));
        }
        if self.hasher != other.hasher {
            return Err(Error::Incompatible(Incompatibility::Hashing));
        }
        Ok(())
    }
}

impl Merge for MultiLayerBloomFilter {
    /// Layer-wise OR: contains every URL of both.
    fn union_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        for (a, b) in self.arrays.iter_mut().zip(&other.arrays) {
            store::or_assign(a.as_mut_slice(), b.as_slice());
        }
        self.items = self.items.max(other.items);
        Ok(())
    }

    /// Layer-wise AND. The items become the inner-product estimate of `|A ∩ B|`
    /// (Broder & Mitzenmacher §2.4) on the XOR layers, which hold one entry per distinct URL.
    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        let l = self.layers as usize;
        let (a, b) = (self.arrays[l].as_slice(), other.arrays[l].as_slice());
        let m = self.m;
        let est = params::estimate_intersection(
            m,
            self.k,
            m - store::count_ones(a),
            m - store::count_ones(b),
            m - store::count_and(a, b),
        );
        for (a, b) in self.arrays.iter_mut().zip(&other.arrays) {
            store::and_assign(a.as_mut_slice(), b.as_slice());
        }
        let bound = self.items.min(other.items);
        self.items = if est.is_finite() {
            (est.round() as u64).min(bound)
        } else {
            bound
        };
        Ok(())
    }
}

impl Stats for MultiLayerBloomFilter {
    /// Total bits over the L + 1 arrays.
    fn bit_len(&self) -> u64 {
        self.m.saturating_mul(u64::from(self.layers) + 1)
    }
    fn count_ones(&self) -> u64 {
        self.arrays
            .iter()
            .map(|w| store::count_ones(w.as_slice()))
            .sum()
    }
    fn hash_count(&self) -> u32 {
        self.k
    }
    /// The rate [`MlbfBuilder::fpr`] bounds: a near miss in the layer that passes unseen
    /// values most often, at most ([`near_miss_fpr`](MultiLayerBloomFilter::near_miss_fpr),
    /// from the arrays' fills). URLs of new segments only fare far better
    /// ([`novel_fpr`](MultiLayerBloomFilter::novel_fpr)); recombined ones worse
    /// ([`recombined_fpr`](MultiLayerBloomFilter::recombined_fpr)).
    fn current_fpr(&self) -> f64 {
        (0..self.layers as usize)
            .filter_map(|i| self.near_miss_fpr(i))
            .fold(0.0, f64::max)
    }
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn target_fpr(&self) -> f64 {
        self.target_fpr
    }
    /// Estimated URLs from the XOR layer (one entry per distinct URL).
    fn estimated_len(&self) -> f64 {
        let xor = self.arrays[self.layers as usize].as_slice();
        params::estimate_items(self.m, self.k, store::count_ones(xor))
    }
}

impl Persist for MultiLayerBloomFilter {
    const KIND: Kind = Kind::Mlbf;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Mlbf, self.hasher);
        h.items = self.items;
        h.capacity = self.capacity;
        h.target_fpr = self.target_fpr;
        h.params = ParamWriter::new()
            .u32(self.layers)
            .u64(self.m)
            .u32(self.k)
            .finish();
        (h, Payload::new(self.arrays.iter().collect()))
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let layers = r.u32()?;
        let m = r.u64()?;
        let k = r.u32()?;
        r.finish()?;
        if layers == 0 || layers > MAX_LAYERS || m == 0 || k == 0 || k > MAX_HASHES {
            return Err(inconsistent(format!("mlbf shape L={layers} m={m} k={k}")));
        }
        let words = usize::try_from(m.div_ceil(64)).map_err(|_| inconsistent("m too large"))?;
        let per = format::padded_len(words);
        let total = per.saturating_mul(u64::from(layers) + 1);
        if total != d.payload_len as u64 {
            return Err(inconsistent(format!(
                "payload is {} bytes, parameters need {total}",
                d.payload_len
            )));
        }
        store::check_size(total, limit)?;
        let mut arrays = Vec::with_capacity(layers as usize + 1);
        for i in 0..=layers as usize {
            let w = src.words(d.payload_offset + i * per as usize, words, limit)?;
            if m % 64 != 0 && w.as_slice()[words - 1] >> (m % 64) != 0 {
                return Err(inconsistent("bits set beyond m"));
            }
            arrays.push(w);
        }
        Ok(Self {
            hasher: d.header.hasher,
            missing: d.header.hasher.hash_bytes(MISSING_SEGMENT),
            layers,
            m,
            k,
            arrays,
            items: d.header.items,
            capacity: d.header.capacity,
            target_fpr: d.header.target_fpr,
        })
    }
}

/// URLs as bytes (invalid UTF-8 is replaced by U+FFFD, deterministically): a key that is not a
/// URL (no host) is an error for both calls.
impl KeySet for MultiLayerBloomFilter {
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool> {
        self.insert(&String::from_utf8_lossy(key))
    }
    fn try_contains_key(&self, key: &[u8]) -> Result<bool> {
        self.contains(&String::from_utf8_lossy(key))
    }
}

impl crate::dispatch::SetKind for MultiLayerBloomFilter {
    const CAPABILITIES: Capabilities = Capabilities {
        insert: true,
        merge: true,
        ..Capabilities::NONE
    };
    fn hasher(&self) -> &KeyHasher {
        MultiLayerBloomFilter::hasher(self)
    }
    fn len(&self) -> u64 {
        MultiLayerBloomFilter::len(self)
    }
    fn try_insert_key(&mut self, key: &[u8]) -> Result<bool> {
        KeySet::try_insert_key(self, key)
    }
    fn try_contains_key(&self, key: &[u8]) -> Result<bool> {
        KeySet::try_contains_key(self, key)
    }
    fn stats(&self) -> SetStats {
        SetStats {
            layers: self.layers(),
            ..SetStats::of(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BloomFilter, Filter};
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};

    fn layers(url: &str, l: u32) -> Vec<Option<String>> {
        normalize_url(url, l).unwrap()
    }
    fn s(v: &[&str]) -> Vec<Option<String>> {
        v.iter()
            .map(|x| if *x == "-" { None } else { Some(x.to_string()) })
            .collect()
    }

    /// The allocating normaliser of format v1's first release, kept as the oracle the
    /// allocation-free one must match exactly (the key → bits mapping of the format).
    fn reference_normalize(url: &str, layers: u32) -> Result<Vec<Option<String>>> {
        if layers == 0 || layers > MAX_LAYERS {
            return Err(invalid(
                "layers",
                format!("must be in 1..={MAX_LAYERS}, got {layers}"),
            ));
        }
        let s = url.trim();
        let s = s.split('#').next().unwrap_or("");
        let (s, query) = match s.find('?') {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, ""),
        };
        let query = if query == "?" { "" } else { query };
        let (scheme, rest) = split_scheme(s);
        let (auth, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let mut host = auth.to_ascii_lowercase();
        if scheme.is_none() {
            for port in [":80", ":443"] {
                if let Some(h) = host.strip_suffix(port) {
                    host.truncate(h.len());
                    break;
                }
            }
        }
        if host.is_empty() {
            return Err(invalid("url", format!("no host in {url:?}")));
        }
        let first = match scheme {
            Some(sc) => format!("{}://{host}", sc.to_ascii_lowercase()),
            None => host,
        };
        let mut segs: Vec<std::borrow::Cow<'_, str>> = vec![std::borrow::Cow::Owned(first)];
        let path = path.trim_end_matches('/');
        if !path.is_empty() {
            segs.extend(path.split('/').map(std::borrow::Cow::Borrowed));
        }
        if !query.is_empty() {
            let last = segs.pop().unwrap_or_default();
            segs.push(std::borrow::Cow::Owned(format!("{last}{query}")));
        }
        let l = layers as usize;
        let mut out: Vec<Option<String>> = Vec::with_capacity(l);
        if segs.len() > l {
            let tail = segs[l - 1..].join("/");
            out.extend(segs[..l - 1].iter().map(|s| Some(s.to_string())));
            out.push(Some(tail));
        } else {
            out.extend(segs.iter().map(|s| Some(s.to_string())));
            out.resize(l, None);
        }
        Ok(out)
    }

    fn messy_url() -> impl Strategy<Value = String> {
        (
            prop::sample::select(vec![
                "",
                " ",
                "http://",
                "HTTPS://",
                "ftp://",
                "Git+SSH://",
                "1x://",
                "://",
            ]),
            "[a-zA-Zé0-9.]{0,6}",
            prop::sample::select(vec!["", ":80", ":443", ":8080", ":"]),
            prop::collection::vec("[A-Za-z0-9_./:-]{0,5}", 0..7),
            prop::sample::select(vec![
                "", "/", "//", "?", "?a=1/B", "/?q", "#f", "?x#y/z", "#", " \n",
            ]),
        )
            .prop_map(|(sc, h, port, p, tail)| {
                let mut u = format!("{sc}{h}{port}");
                for s in p {
                    u.push('/');
                    u.push_str(&s);
                }
                u.push_str(tail);
                u
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn normaliser_matches_reference(u in messy_url(), l in 1u32..7) {
            let got = normalize_url(&u, l).ok();
            let want = reference_normalize(&u, l).ok();
            prop_assert_eq!(got, want, "{:?} L={}", u, l);
        }
    }

    /// The layers of the fast path, or `None` where it declines.
    fn fast(url: &str, l: u32) -> Option<Vec<Option<Vec<u8>>>> {
        let mut r = [(0, 0); MAX_LAYERS as usize];
        let n = fast_ranges(url.as_bytes(), l as usize, &mut r)?;
        let mut v: Vec<Option<Vec<u8>>> = r[..n]
            .iter()
            .map(|&(a, b)| Some(url.as_bytes()[a as usize..b as usize].to_vec()))
            .collect();
        v.resize(l as usize, None);
        Some(v)
    }

    fn general(url: &str, l: u32) -> Option<Vec<Option<Vec<u8>>>> {
        let mut v = Vec::new();
        general_layers(url, l, |x| v.push(x.map(<[u8]>::to_vec))).ok()?;
        Some(v)
    }

    /// URLs the fast path is meant for, and near misses of its conditions.
    fn plain_url() -> impl Strategy<Value = String> {
        (
            prop::sample::select(vec![
                "", "http://", "https://", "HTTPS://", "Http://", "x://",
            ]),
            "[a-z0-9.:-]{0,12}",
            prop::sample::select(vec!["", "", "A", ":80", ":443", ":8080", "0", "3"]),
            prop::collection::vec("[A-Za-z0-9_.~:-]{0,14}", 0..9),
            prop::sample::select(vec!["", "", "", "/", "?q", "#f", " "]),
        )
            .prop_map(|(sc, h, tail_of_host, p, end)| {
                let mut u = format!("{sc}{h}{tail_of_host}");
                for s in p {
                    u.push('/');
                    u.push_str(&s);
                }
                u.push_str(end);
                u
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn fast_path_matches_general_path(u in plain_url(), l in 1u32..10) {
            if let Some(got) = fast(&u, l) {
                prop_assert_eq!(Some(got), general(&u, l), "{:?} L={}", u, l);
            }
        }
    }

    #[test]
    fn fast_path_takes_common_urls_and_declines_the_rest() {
        for u in [
            "https://github.com/lamansky/2",
            "http://a.com/B/c",
            "a.com//x",
            "a.com:8081/x",
            "git.io",
        ] {
            assert!(fast(u, 4).is_some(), "{u}");
            assert_eq!(fast(u, 4), general(u, 4), "{u}");
        }
        for u in [
            "https://GitHub.com/x",
            "a.com:80/x",
            "https://a.com:443",
            "a.com/x/",
            "a.com/x?q",
            "a.com/x#f",
            " a.com/x",
            "ftp://a.com/x",
            "http:///x",
            "",
        ] {
            assert!(fast(u, 4).is_none(), "{u}");
        }
        // lengths around the 64-byte limit
        for n in 60..70 {
            let u = format!("h.org/{}", "p/".repeat(n).trim_end_matches('/'));
            let u = &u[..n];
            let u = u.trim_end_matches('/');
            assert_eq!(fast(u, 5).is_some(), u.len() <= FAST_MAX, "{u}");
            if fast(u, 5).is_some() {
                assert_eq!(fast(u, 5), general(u, 5), "{u}");
            }
        }
    }

    #[test]
    fn normalisation_cases() {
        assert_eq!(
            layers("http://a.com/b/c/d", 4),
            s(&["a.com", "b", "c", "d"])
        );
        // protocol dropped, http ≡ https, host lower-cased, path case kept
        assert_eq!(
            layers("HTTPS://A.Com/B/c", 4),
            layers("http://a.com/B/c", 4)
        );
        assert_ne!(layers("http://a.com/B", 4), layers("http://a.com/b", 4));
        // fewer segments: explicit missing markers
        assert_eq!(layers("a.com/x", 4), s(&["a.com", "x", "-", "-"]));
        assert_eq!(layers("http://a.com", 3), s(&["a.com", "-", "-"]));
        // more segments: the tail joins the last layer
        assert_eq!(layers("a.com/1/2/3/4/5", 3), s(&["a.com", "1", "2/3/4/5"]));
        // trailing slashes and fragments
        assert_eq!(layers("http://a.com/x/", 3), layers("http://a.com/x", 3));
        assert_eq!(layers("http://a.com/", 3), layers("a.com", 3));
        assert_eq!(layers("a.com/x#frag", 3), layers("a.com/x", 3));
        // query strings stay on the last segment, '/' inside them does not split
        assert_eq!(
            layers("a.com/x/y?q=1/2#f", 4),
            s(&["a.com", "x", "y?q=1/2", "-"])
        );
        assert_eq!(layers("a.com?q", 3), s(&["a.com?q", "-", "-"]));
        assert_eq!(layers("a.com/x?", 3), layers("a.com/x", 3));
        // default ports, other schemes, inner empty segments, whitespace
        assert_eq!(layers("http://a.com:80/x", 3), layers("a.com/x", 3));
        assert_eq!(layers("https://a.com:443/x", 3), layers("a.com/x", 3));
        assert_ne!(layers("a.com:8080/x", 3), layers("a.com/x", 3));
        assert_eq!(layers("FTP://H/x", 2), s(&["ftp://h", "x"]));
        assert_eq!(layers("a.com//x", 3), s(&["a.com", "", "x"]));
        assert_eq!(layers("  a.com/x \n", 3), layers("a.com/x", 3));
        // errors
        assert!(normalize_url("", 3).is_err());
        assert!(normalize_url("http:///x", 3).is_err());
        assert!(normalize_url("   ", 3).is_err());
        assert!(normalize_url("a.com", 0).is_err());
        assert!(normalize_url("a.com", MAX_LAYERS + 1).is_err());
    }

    #[test]
    fn layers_are_classic_filters_and_xor_layer_follows_fig3() {
        let mut f = MultiLayerBloomFilter::try_with_shape(2, 1 << 12, 3).unwrap();
        let mut host = BloomFilter::try_with_shape(1 << 12, 3).unwrap();
        let mut path = BloomFilter::try_with_shape(1 << 12, 3).unwrap();
        for i in 0..50 {
            let (h, p) = (format!("h{i}.org"), format!("p{}", i * 7));
            f.insert(&format!("http://{h}/{p}")).unwrap();
            host.insert(h.as_str());
            path.insert(p.as_str());
        }
        assert_eq!(f.layer_words(0).unwrap(), host.as_words());
        assert_eq!(f.layer_words(1).unwrap(), path.as_words());
        // m is a power of two: the XOR layer is the XOR of the layers' addresses (Fig. 3).
        let mut xor = vec![0u64; (1 << 12) / 64];
        let hs = KeyHasher::new();
        for i in 0..50 {
            let a: Vec<u64> = hs
                .hash(format!("h{i}.org").as_str())
                .indices(3, 1 << 12)
                .collect();
            let b: Vec<u64> = hs
                .hash(format!("p{}", i * 7).as_str())
                .indices(3, 1 << 12)
                .collect();
            for j in 0..3 {
                store::set_bit(&mut xor, a[j] ^ b[j]);
            }
        }
        assert_eq!(f.layer_words(2).unwrap(), &xor[..]);
    }

    #[test]
    fn large_k_takes_the_general_path_with_the_same_bits() {
        // k > SMALL_K: the XOR values live in the 64-entry array; k ≤ 4 are compiled with k
        // a constant; every path gives the same mapping (Fig. 3)
        for k in [1, 2, 3, 4, 5, SMALL_K as u32, SMALL_K as u32 + 1, 12] {
            let mut f = MultiLayerBloomFilter::try_with_shape(2, 1 << 12, k).unwrap();
            let mut host = BloomFilter::try_with_shape(1 << 12, k).unwrap();
            let mut xor = vec![0u64; (1 << 12) / 64];
            let hs = KeyHasher::new();
            for i in 0..40 {
                let (h, p) = (format!("h{i}.org"), format!("p{i}"));
                f.insert(&format!("{h}/{p}")).unwrap();
                host.insert(h.as_str());
                let a: Vec<u64> = hs.hash(h.as_str()).indices(k, 1 << 12).collect();
                let b: Vec<u64> = hs.hash(p.as_str()).indices(k, 1 << 12).collect();
                for j in 0..k as usize {
                    store::set_bit(&mut xor, a[j] ^ b[j]);
                }
            }
            assert_eq!(f.layer_words(0).unwrap(), host.as_words(), "k={k}");
            assert_eq!(f.layer_words(2).unwrap(), &xor[..], "k={k}");
            for i in 0..40 {
                assert!(f.contains(&format!("h{i}.org/p{i}")).unwrap());
            }
        }
    }

    #[test]
    fn batch_answers_as_one_by_one() {
        let mut urls: Vec<String> = (0..100)
            .map(|i| format!("https://h{}.org/u{}/r{i}", i % 7, i % 13))
            .collect();
        urls.push(String::new()); // an error in the middle of a group
        urls.extend((0..60).map(|i| format!("H{}.ORG/u{}/r{i}#x", i % 7, i % 13)));
        urls.push("http://".into());
        let mut a = MultiLayerBloomFilter::try_with_shape(4, 1 << 14, 3).unwrap();
        let mut b = a.clone();
        let one: Vec<Option<bool>> = urls.iter().map(|u| a.check_and_insert(u).ok()).collect();
        let many: Vec<Option<bool>> = b
            .check_and_insert_batch(&urls)
            .into_iter()
            .map(|r| r.ok())
            .collect();
        assert_eq!(one, many);
        assert_eq!(a, b);
        assert!(one.iter().filter(|x| **x == Some(true)).count() >= 60);
        // queries: the inserted URLs, fresh ones, and the errors, in and out of groups
        let mut qs = urls.clone();
        qs.extend((0..50).map(|i| format!("h{}.org/u{}/r{i}x", i % 7, i % 13)));
        let one: Vec<Option<bool>> = qs.iter().map(|u| a.contains(u).ok()).collect();
        let many: Vec<Option<bool>> = a.contains_batch(&qs).into_iter().map(|r| r.ok()).collect();
        assert_eq!(one, many);
        let big = MultiLayerBloomFilter::try_with_shape(2, 1 << 10, 12).unwrap();
        let one: Vec<Option<bool>> = qs.iter().map(|u| big.contains(u).ok()).collect();
        let many: Vec<Option<bool>> = big
            .contains_batch(&qs)
            .into_iter()
            .map(|r| r.ok())
            .collect();
        assert_eq!(one, many);
    }

    #[test]
    fn xor_layer_rejects_recombined_segments() {
        // Cen, Xu & Sun §IV.B: a₁/b/…/a_L with b from another URL passes every layer, the XOR layer
        // catches it (with a large filter, certainly).
        let mut f = MultiLayerBloomFilter::try_with_shape(3, 1 << 16, 3).unwrap();
        f.insert("a.com/x/1").unwrap();
        f.insert("b.com/y/2").unwrap();
        let hs = f.hash_url("a.com/y/1").unwrap();
        let mut per_layer = true;
        for (i, h) in hs.iter().enumerate() {
            let w = f.layer_words(i).unwrap();
            per_layer &= h.indices(3, 1 << 16).all(|p| store::get_bit(w, p));
        }
        assert!(per_layer, "every segment is in its layer");
        assert!(!f.contains("a.com/y/1").unwrap());
        assert!(f.contains("https://A.COM/x/1/").unwrap());
    }

    fn url_strategy() -> impl Strategy<Value = String> {
        (
            prop::sample::select(vec!["", "http://", "https://", "HTTP://"]),
            "[a-z0-9]{1,8}\\.(com|org)",
            prop::collection::vec("[A-Za-z0-9_.-]{0,6}", 0..7),
            prop::option::of("[a-z=&/]{0,6}"),
        )
            .prop_map(|(sc, h, p, q)| {
                let mut u = format!("{sc}{h}");
                for s in p {
                    u.push('/');
                    u.push_str(&s);
                }
                if let Some(q) = q {
                    u.push('?');
                    u.push_str(&q);
                }
                u
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn no_false_negatives(urls in prop::collection::vec(url_strategy(), 1..200), l in 1u32..6) {
            let mut f = MultiLayerBloomFilter::try_new(l, 200, 0.01).unwrap();
            for u in &urls {
                f.insert(u).unwrap();
            }
            for u in &urls {
                prop_assert!(f.contains(u).unwrap());
                let frag = format!("{u}#x");
                prop_assert!(f.contains(&frag).unwrap());
            }
            let g = MultiLayerBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            prop_assert_eq!(&g, &f);
        }
    }

    #[test]
    fn measured_fpr_matches_eq4() {
        // Every segment distinct and every query segment fresh: each of the L layers passes
        // with probability f and the XOR layer with about f, so the rate is ≈ f^{L+1} ≤ f^L.
        let (l, n, m, k) = (2u32, 3000u64, 12_000u64, 2u32);
        let mut f = MultiLayerBloomFilter::try_with_shape(l, m, k).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..n {
            f.insert(&format!("h{}.com/{}", rng.gen::<u64>(), rng.gen::<u64>()))
                .unwrap();
        }
        let fl = params::fpr_exact(n, m, k);
        let eq4 = params::fpr_mlbf(n, m, k, l);
        assert!((eq4 - fl * fl).abs() < 1e-12);
        assert!(f.model_fpr() <= eq4 && f.len() <= n);
        let q = 40_000u32;
        let mut hits = 0u32;
        for _ in 0..q {
            hits += u32::from(
                f.contains(&format!("h{}.com/{}", rng.gen::<u64>(), rng.gen::<u64>()))
                    .unwrap(),
            );
        }
        let rate = f64::from(hits) / f64::from(q);
        let want = fl.powi(l as i32 + 1);
        let sigma = (want * (1.0 - want) / f64::from(q)).sqrt();
        assert!(
            (rate - want).abs() < 4.0 * sigma + 0.002,
            "rate {rate} vs f^(L+1) {want}"
        );
        assert!(rate < eq4, "rate {rate} above eq. 4's f^L = {eq4}");
        // The paper's query set (Cen, Xu & Sun §V): inserted URLs with a unique id appended to the last
        // segment. Only layer L and the XOR layer can reject them.
        let mut fp = 0u32;
        let base: Vec<String> = (0..5000).map(|i| format!("site{i}.com/page")).collect();
        let mut g = MultiLayerBloomFilter::try_with_shape(l, m, k).unwrap();
        for u in base.iter().take(n as usize) {
            g.insert(u).unwrap();
        }
        for (i, u) in base.iter().take(n as usize).enumerate() {
            fp += u32::from(g.contains(&format!("{u}{i}")).unwrap());
        }
        assert!(f64::from(fp) / n as f64 <= fl * 1.5 + 0.01);
    }

    #[test]
    fn paper_numbers() {
        // Cen, Xu & Sun §V: ε = 0.1 per filter, n = 3.5M, eq. (2) gives m = 16,829,152; with k = 3 the
        // exact rate is ≈ 0.1 per layer, so eq. 4 gives ≈ 1e-4 for L = 4.
        let (n, m) = (3_500_000u64, PAPER_BITS);
        let m_eq2 = n as f64 * 0.1f64.ln() / 0.6185f64.ln();
        // 16,773,675 from 0.6185^{m/n} = 0.1: the paper's figure is 0.33 % larger (rounding).
        assert!((m_eq2 - m as f64).abs() / (m as f64) < 5e-3, "{m_eq2}");
        let f = params::fpr_exact(n, m, PAPER_HASHES);
        assert!((f - 0.1).abs() < 0.002, "{f}");
        let eq4 = params::fpr_mlbf(n, m, PAPER_HASHES, PAPER_LAYERS);
        assert!(
            (eq4 - f.powi(4)).abs() < 1e-15 && (eq4 - 1e-4).abs() < 1e-5,
            "{eq4}"
        );
        assert!((params::mlbf_layer_fpr(1e-4, 4) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn sizing_and_paper_shape() {
        let f = MultiLayerBloomFilter::try_new(4, 10_000, 1e-4).unwrap();
        assert!(params::fpr_mlbf(10_000, f.bits_per_layer(), f.hashes(), 4) <= 1e-4);
        // a near miss meets one layer and the XOR layer: the bound at capacity is the target
        let s = params::mlbf_near_miss_shape(10_000, 1e-4, MAX_HASHES).unwrap();
        assert_eq!((f.bits_per_layer(), f.hashes()), (s.m, s.k));
        let p = MultiLayerBloomFilter::paper().unwrap();
        assert_eq!(
            (p.layers(), p.bits_per_layer(), p.hashes()),
            (4, 16_829_152, 3)
        );
        assert_eq!(p.bit_len(), 5 * 16_829_152);
    }

    #[test]
    fn bad_parameters_and_files_are_errors() {
        assert!(MultiLayerBloomFilter::try_new(0, 10, 0.01).is_err());
        assert!(MultiLayerBloomFilter::try_new(MAX_LAYERS + 1, 10, 0.01).is_err());
        assert!(MultiLayerBloomFilter::try_new(3, 0, 0.01).is_err());
        assert!(MultiLayerBloomFilter::try_new(3, 10, 1.0).is_err());
        assert!(MultiLayerBloomFilter::try_with_shape(3, 0, 3).is_err());
        assert!(MultiLayerBloomFilter::try_with_shape(3, 64, 0).is_err());
        assert!(MultiLayerBloomFilter::builder()
            .bits(64)
            .try_build()
            .is_err());
        assert!(MultiLayerBloomFilter::builder()
            .capacity(u64::MAX / 4)
            .fpr(0.01)
            .max_bytes(1 << 20)
            .try_build()
            .is_err());
        let mut f = MultiLayerBloomFilter::try_with_shape(2, 100, 3).unwrap();
        assert!(f.insert("").is_err());
        assert!(f.insert_hashed(&[Hashed::new(1, 2)]).is_err());
        f.insert("a.com/b").unwrap();
        let bytes = f.to_bytes();
        assert_eq!(MultiLayerBloomFilter::from_bytes(&bytes).unwrap(), f);
        assert!(MultiLayerBloomFilter::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(crate::BloomFilter::from_bytes(&bytes).is_err());
        let g = MultiLayerBloomFilter::try_with_shape(3, 100, 3).unwrap();
        assert!(f.clone().union_with(&g).is_err());
        let mut u = MultiLayerBloomFilter::try_with_shape(2, 100, 3).unwrap();
        u.insert("x.org/y").unwrap();
        u.union_with(&f).unwrap();
        assert!(u.contains("a.com/b").unwrap() && u.contains("x.org/y").unwrap());
    }
}
