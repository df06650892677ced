//! URLs into layers: normalisation and the split of a URL on `/` into the filter's L segments
//! (Cen, Xu & Sun §IV), with a SWAR fast path for short URLs and the general parser behind it.

use super::*;

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
pub(super) const SCRATCH: usize = 256;

/// A layer value as up to three ranges of the cut URL: the first one lower-cased when `lower`
/// (the scheme and host), then the rest verbatim. Contiguous ranges with nothing to lower-case
/// are hashed in place; only the rest is copied (into a stack buffer).
#[derive(Clone, Copy)]
pub(super) struct Pieces {
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
pub(super) fn general_layers(
    url: &str,
    layers: u32,
    mut f: impl FnMut(Option<&[u8]>),
) -> Result<()> {
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
pub(super) const FAST_MAX: usize = 64;

/// Bit masks over the bytes of a URL (bit i for byte i).
pub(super) struct ByteMasks {
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
pub(super) fn byte_masks(buf: &[u8; FAST_MAX], len: usize) -> ByteMasks {
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
pub(super) fn byte_masks(buf: &[u8; FAST_MAX], len: usize) -> ByteMasks {
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
pub(super) fn low_bits(n: usize) -> u64 {
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
pub(super) fn fast_ranges(t: &[u8], l: usize, out: &mut Ranges) -> Option<usize> {
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

pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
pub(super) const HIGHS: u64 = 0x8080_8080_8080_8080;

/// High bit of each zero byte of `x`; the lowest one flagged is exact (a borrow can only
/// flag bytes above a real zero byte).
#[inline(always)]
pub(super) fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// First index of byte `a` or `b` in `s`, eight bytes at a time.
#[inline]
pub(super) fn find2(s: &[u8], a: u8, b: u8) -> Option<usize> {
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
pub(super) fn find1(s: &[u8], a: u8) -> Option<usize> {
    find2(s, a, a)
}

/// `(true, rest)` for another scheme `sc://` (kept in the first layer value), `(false, rest)`
/// with `http(s)://` dropped or no scheme. A scheme is `[A-Za-z][A-Za-z0-9+.-]*` followed by
/// `://`; `rest` is the offset just after the `://`.
#[inline]
pub(super) fn split_scheme_bytes(s: &[u8]) -> (bool, usize) {
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
pub(super) fn split_scheme(s: &str) -> (Option<&str>, &str) {
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
