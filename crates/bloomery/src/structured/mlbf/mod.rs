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

mod builder;
mod debug;
mod persist;
mod url;

pub use builder::MlbfBuilder;
pub use url::normalize_url;
use url::*;

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
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::MultiLayerBloomFilter;
///
/// let mut seen = MultiLayerBloomFilter::try_new(4, 10_000, 0.01)?;
/// assert!(seen.insert("http://example.org/a/b.html")?); // new
/// assert!(seen.contains("HTTP://Example.org/a/b.html")?); // the same URL, normalised
/// assert!(!seen.check_and_insert("http://example.org/a/c.html")?); // not seen before
/// # Ok(()) }
/// ```
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
    /// Move the structure's heap allocations with `mv` (for an allocator that defragments by
    /// moving allocations, as the Redis module's defrag callback does): the list of layers, then each layer's bit array. Arrays in a
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
        unsafe { store::relocate_vec(&mut self.arrays, mv) };
        for w in &mut self.arrays {
            // SAFETY: as above.
            unsafe { w.relocate(mv) };
        }
    }

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
        MlbfBuilder::default()
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
mod tests;
