//! Compressed Bloom filters and delta updates (Broder & Mitzenmacher §2.6, Mitzenmacher).
//!
//! A filter's bit array with a fraction `p` of zero bits carries only `m · H(p)` bits of
//! information; a sparse filter (large m, few hashes) therefore compresses well, and for a fixed
//! number of *transmitted* bits it can have a lower false-positive rate than the best
//! uncompressed filter (Table 1 of 002; see [`crate::params::compressed_shape`]).
//!
//! This module is a pure library layer over raw words (bit `i` is bit `i % 64` of word
//! `i / 64`, as in [`crate::BloomFilter::as_words`]):
//! - [`compress_bits`] / [`decompress_bits`]: a binary arithmetic (range) coder with a *static*
//!   model, the fraction of zero bits of the array. The header stores m and the exact
//!   number of one bits; the coding probabilities are derived from them in integer arithmetic
//!   (32-bit fixed point), so encoder and decoder agree bit for bit. Three stream forms, chosen
//!   by density (see `Mode`): arrays near half full are *stored* (H(p) ≥ 0.999, so storing is
//!   within 0.1 % of the bound, at memory speed); sparse (or dense) arrays, minority fraction
//!   below 1/4, are coded as *gaps* between minority bits with the exact geometric model of
//!   i.i.d. bits (a unary count of 2^r-bit blocks, then r remainder bits, each decision with
//!   its own static probability), which costs the same m·H(p) but about log2(1/q) + 2 coder
//!   decisions per minority bit instead of one per bit; the rest is coded one decision per bit
//!   (the first version's stream, tag 0xB1, which stays decodable for every density).
//! - [`diff`] / [`patch`]: the XOR of two versions of an array, compressed the same way (a delta
//!   is sparse, `p` close to 1), tagged with xxh3-64 fingerprints of the base and of the result,
//!   so a delta applied to the wrong base is refused and a damaged delta is detected.
//!
//! ## Stream layout (all integers little-endian)
//! ```text
//! compressed bits:  0  u8   tag: 0xB0 stored, 0xB1 one decision per bit, 0xB2 gaps
//!                   1  u64  m
//!                   9  u64  ones (number of one bits among the m)
//!                  17  ..   payload: 0xB0 the ⌈m/8⌉ bytes of the array; 0xB1 and 0xB2
//!                           range-coded (empty, tag 0xB1, if ones = 0 or ones = m)
//! delta:            0  u8   tag 0xD1
//!                   1  u64  xxh3-64 of the base's m bits
//!                   9  u64  xxh3-64 of the result's m bits
//!                  17  ..   a compressed-bits stream of `old XOR new`
//! ```
//! A coded payload carries 5 bytes of fixed overhead (a leading zero byte and the flush); with
//! the 17-byte header the fixed cost is 22 bytes. Measured on real filters of 1.2–4.8 million bits
//! the payload is within 0.005 % of `m · H(p)` (the tests assert ≤ 1.01 × m·H(p), and ≤ 1.001 ×
//! m·H(p) + 40 bits).
//!
//! ## Files of the common format
//! [`compress_file`] / [`decompress_file`] turn a file of any kind into its compressed form and
//! back, bit for bit: the same header with flag `FLAG_COMPRESSED`, a payload holding
//! the plain payload's compressed-bits stream and the plain file's checksum, and a checksum
//! trailer of its own. Every loader ([`crate::Persist::load`], [`crate::AnyFilter::load`],
//! [`crate::AnyCounter::load`], `open_mmap`) goes through [`plain_file`], so a compressed file
//! loads wherever a plain one does (decompressed in memory; both checksums verified).
//! [`diff_files`] / [`patch_file`] do the same for deltas (flag `FLAG_DELTA`), tagged
//! with the checksums of the base and result files. Files of format version 1 without a flag
//! are untouched: their layout and bytes are those of every earlier build.
//!
//! ## Why our own coder
//! The model is a single static binary probability: no context modelling, no adaptation, no
//! symbol tables. A carry-less 32-bit-range binary coder (the LZMA construction, with a 32-bit
//! probability instead of LZMA's 11 bits so that very sparse arrays such as deltas stay within
//! the bound) is about 100 lines and is exactly what the 1.01 × m·H(p) bound needs.
//! What crates.io offers (checked with `cargo info` on 2026-11-25):
//! - `constriction` 0.4.2 (0.5.0 latest; MIT/Apache/BSL): a maintained research-and-production
//!   library of range coders and ANS. It could code our bits with a two-symbol categorical model,
//!   but it is built around generic alphabets, model traits and word-sized compressed units; for
//!   one static binary probability it adds a dependency and an API surface far larger than the
//!   coder, and its quantised models' precision would have to be checked for p close to 1. We
//!   did not benchmark it.
//! - `arcode` 0.2.4 (MIT; `cargo info` says only "An Arithmetic Coder"): a general-purpose
//!   coder whose models are frequency-count (adaptive) models over symbol alphabets, with
//!   per-symbol model work we do not need and no 32-bit static probability.
//!
//! Owning the coder also lets us validate every byte of untrusted input ourselves (typed errors,
//! no panics, no allocation beyond the caller's limit).
//!
//! ## Untrusted input
//! Decoding takes m from the caller and checks it against the header, refuses arrays larger
//! than `limit_bytes` before allocating, requires the payload to be consumed exactly (a
//! truncated or padded stream is an error), and checks the decoded number of one bits against
//! the header. Damaged or truncated data is an [`Error::Format`], an array over the limit an
//! [`Error::TooLarge`], a delta for another base an [`Error::Incompatible`]; nothing panics.
//!
//! A small file can declare a large array (a sparse filter compresses to a few bytes), so
//! the decoders also bound their memory and work by what the input can hold:
//! - **One mode per density.** A stream must use the mode the encoder chooses for its m and
//!   number of ones (`Mode`; every file ever written did); any other is refused as forged.
//!   In its own modes every coder decision costs at least 0.415 bits of input, so decoding
//!   does at most about 20 decisions per input byte, and a stream too short for its array
//!   is refused before anything is allocated.
//! - **One allocation, fallible.** Decompressing a file allocates only the plain file it
//!   rebuilds (1× the declared payload, plus the header), with `try_reserve` or an anonymous
//!   map, after the checks above and the memory limit; the stream is decoded straight into it.
//!   An allocation the system refuses is an [`Error::AllocationFailed`], never an abort. The
//!   loaders use a large rebuilt payload in place, so loading a compressed file holds its
//!   plain payload once.

use crate::error::{inconsistent, invalid, Error, FormatError, Result};
use crate::io::header as format;
use crate::io::stream::StreamOut;
use crate::store::{self, Words};

/// Tag byte of a stored (uncoded) bit array, for arrays near half full.
const TAG_RAW: u8 = 0xB0;
/// Tag byte of a compressed bit array coded one decision per bit.
const TAG_BITS: u8 = 0xB1;
/// Tag byte of a compressed bit array coded as gaps between minority bits.
const TAG_GAPS: u8 = 0xB2;
/// Tag byte of a delta.
const TAG_DIFF: u8 = 0xD1;

/// Bytes of the compressed-bits header (tag, m, ones).
pub const HEADER_BYTES: usize = 17;
/// Bytes of the delta header (tag, two fingerprints) in front of its compressed-bits stream.
pub const DIFF_HEADER_BYTES: usize = 17;

/// Probability scale of the coder: 32-bit fixed point.
const PROB_BITS: u32 = 32;
/// The range is renormalised (one byte shifted out) when it drops below this.
const TOP: u32 = 1 << 24;

/// The probability of a zero bit as a 32-bit fixed-point number, clamped to `[1, 2^32 - 1]`.
fn zero_probability(m: u64, ones: u64) -> u64 {
    let zeros = u128::from(m - ones);
    let p = (zeros << PROB_BITS) / u128::from(m);
    (p as u64).clamp(1, (1u64 << PROB_BITS) - 1)
}

/// The split point of the current range: the sub-range `[0, bound)` codes a zero bit.
/// Always in `[1, range - 1]`, so both symbols stay codable.
#[inline]
fn split(range: u32, p0: u64) -> u32 {
    let b = ((u64::from(range) * p0) >> PROB_BITS) as u32;
    b.clamp(1, range - 1)
}

/// Carry-less range encoder (LZMA style): 33-bit `low`, 32-bit `range`, pending 0xFF bytes.
struct Encoder {
    low: u64,
    range: u32,
    cache: u8,
    cache_size: u64,
    out: Vec<u8>,
}

impl Encoder {
    fn new(out: Vec<u8>) -> Self {
        Self {
            low: 0,
            range: u32::MAX,
            cache: 0,
            cache_size: 1,
            out,
        }
    }

    fn shift_low(&mut self) {
        if self.low < 0xFF00_0000 || self.low > 0xFFFF_FFFF {
            let carry = (self.low >> 32) as u8;
            let mut byte = self.cache;
            loop {
                self.out.push(byte.wrapping_add(carry));
                byte = 0xFF;
                self.cache_size -= 1;
                if self.cache_size == 0 {
                    break;
                }
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.cache_size += 1;
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    #[inline]
    fn encode(&mut self, bit: bool, p0: u64) {
        let bound = split(self.range, p0);
        if bit {
            self.low += u64::from(bound);
            self.range -= bound;
        } else {
            self.range = bound;
        }
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    fn finish(mut self) -> Vec<u8> {
        for _ in 0..5 {
            self.shift_low();
        }
        self.out
    }
}

/// The matching decoder; reading past the end of the payload is an error.
struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    range: u32,
    code: u32,
}

fn truncated(needed: usize, have: usize) -> Error {
    Error::Format(FormatError::Truncated {
        needed: needed as u64,
        have: have as u64,
    })
}

impl<'a> Decoder<'a> {
    fn new(data: &'a [u8]) -> Result<Self> {
        if data.len() < 5 {
            return Err(truncated(5, data.len()));
        }
        if data[0] != 0 {
            return Err(inconsistent(
                "compressed payload must start with a zero byte",
            ));
        }
        let code = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
        // The encoder's range starts at u32::MAX; a code at or above it is impossible. With
        // code < range the invariant holds for every later step, so nothing can overflow.
        if code == u32::MAX {
            return Err(inconsistent(
                "compressed payload starts outside the coding range",
            ));
        }
        Ok(Self {
            data,
            pos: 5,
            range: u32::MAX,
            code,
        })
    }

    #[inline]
    fn decode(&mut self, p0: u64) -> Result<bool> {
        let bound = split(self.range, p0);
        let bit = if self.code < bound {
            self.range = bound;
            false
        } else {
            self.code -= bound;
            self.range -= bound;
            true
        };
        while self.range < TOP {
            let Some(&b) = self.data.get(self.pos) else {
                return Err(truncated(self.pos + 1, self.data.len()));
            };
            self.pos += 1;
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(b);
        }
        Ok(bit)
    }
}

/// Read access to the words of a bit array: a slice of words, a file's little-endian payload
/// bytes ([`LeWords`]), or the XOR of two arrays ([`XorWords`]). The encoder reads through it,
/// so compressing a file or diffing two copies nothing.
trait WordSource {
    /// Number of words.
    fn word_count(&self) -> usize;
    /// Word `i` (`i < word_count()`).
    fn word(&self, i: usize) -> u64;
}

impl WordSource for [u64] {
    #[inline]
    fn word_count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self[i]
    }
}

/// The words of a little-endian byte array (a payload: a multiple of 8 bytes).
struct LeWords<'a>(&'a [u8]);

impl WordSource for LeWords<'_> {
    #[inline]
    fn word_count(&self) -> usize {
        self.0.len() / 8
    }
    #[inline]
    fn word(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.0[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    }
}

/// The word-by-word XOR of two arrays (as long as the shorter).
struct XorWords<'a, A: ?Sized, B: ?Sized>(&'a A, &'a B);

impl<A: WordSource + ?Sized, B: WordSource + ?Sized> WordSource for XorWords<'_, A, B> {
    #[inline]
    fn word_count(&self) -> usize {
        self.0.word_count().min(self.1.word_count())
    }
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self.0.word(i) ^ self.1.word(i)
    }
}

/// Words needed for m bits, checked against the source.
fn check_words<S: WordSource + ?Sized>(words: &S, m: u64, name: &'static str) -> Result<usize> {
    let need =
        usize::try_from(m.div_ceil(64)).map_err(|_| invalid("m", "too large for this platform"))?;
    if words.word_count() < need {
        return Err(invalid(
            name,
            format!("{} words hold fewer than m = {m} bits", words.word_count()),
        ));
    }
    Ok(need)
}

/// Mask of the bits of word `i` that lie below m.
#[inline]
fn word_mask(i: usize, m: u64) -> u64 {
    let end = (i as u64 + 1) * 64;
    if end > m {
        (1u64 << (m % 64)) - 1
    } else {
        u64::MAX
    }
}

/// One bits among the first m bits of `words`.
fn count_ones_m<S: WordSource + ?Sized>(words: &S, m: u64) -> u64 {
    let full = (m / 64) as usize;
    let mut n: u64 = (0..full)
        .map(|i| u64::from(words.word(i).count_ones()))
        .sum();
    if !m.is_multiple_of(64) {
        n += u64::from((words.word(full) & word_mask(full, m)).count_ones());
    }
    n
}

/// How a stream codes its bits, chosen by the encoder from m and the number of one bits q·m
/// (the minority fraction q = min(ones, m − ones) / m):
/// - [`TAG_RAW`] when H(q) ≥ 0.999 (q ≥ 0.4814): the bits themselves, at memory speed, within
///   0.1 % of m·H(p). Half-full filters — the optimal shape — are the common case.
/// - [`TAG_GAPS`] when q < 1/4: the positions of the minority bits, as gaps coded by the
///   binary coder with the exact geometric model of i.i.d. bits (a unary count of 2^r-bit
///   blocks and r remainder bits, each with its own static probability), so the size stays
///   m·H(p) while the coder makes about log2(1/q) + 2 decisions per minority bit instead of
///   one per bit.
/// - [`TAG_BITS`] otherwise: one decision per bit.
///
/// Every compressed file and delta ever written chose its mode by exactly this rule, so the
/// decoder refuses a stream in any other mode: such a stream is forged, and a one-decision-
/// per-bit stream at a sparse density would cost billions of decisions per input byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Raw,
    Gaps,
    Bits,
}

impl Mode {
    fn tag(self) -> u8 {
        match self {
            Mode::Raw => TAG_RAW,
            Mode::Gaps => TAG_GAPS,
            Mode::Bits => TAG_BITS,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Raw => "stored",
            Mode::Gaps => "gap-coded",
            Mode::Bits => "bit-by-bit",
        }
    }
}

fn choose_mode(m: u64, ones: u64) -> Mode {
    let minority = u128::from(ones.min(m - ones));
    if minority * 10_000 >= u128::from(m) * 4_814 {
        Mode::Raw
    } else if minority * 4 < u128::from(m) {
        Mode::Gaps
    } else {
        Mode::Bits
    }
}

/// The static probabilities of the gap model: `pw[j] = P(majority)^(2^j)` in 32-bit fixed point
/// (integer squaring, so encoder and decoder agree on every platform), the block exponent r
/// (the first j with `pw[j] ≤ 1/2`), and the zero-probabilities of the remainder bits.
struct GapModel {
    r: u32,
    /// P(the next 2^r bits are all majority): the unary "continue" decision.
    p_continue: u64,
    /// For remainder bit j (value 2^j): P(bit = 0) = 1 / (1 + pw[j]).
    p_rem0: Vec<u64>,
}

impl GapModel {
    fn new(m: u64, minority: u64) -> Self {
        let one = 1u64 << PROB_BITS;
        let mut pw = vec![zero_probability(m, minority)];
        while pw[pw.len() - 1] > one / 2 && pw.len() < 60 {
            let x = pw[pw.len() - 1];
            pw.push(((u128::from(x) * u128::from(x)) >> PROB_BITS) as u64);
        }
        let r = (pw.len() - 1) as u32;
        let p_rem0 = pw[..r as usize]
            .iter()
            .map(|&x| {
                let p = (1u128 << (2 * PROB_BITS)) / (u128::from(one) + u128::from(x));
                (p as u64).clamp(1, one - 1)
            })
            .collect();
        Self {
            r,
            p_continue: pw[r as usize].clamp(1, one - 1),
            p_rem0,
        }
    }
}

/// The minority bits of word `i` (one bits, or zero bits when `flip`), masked to m.
#[inline]
fn minority_word<S: WordSource + ?Sized>(words: &S, i: usize, m: u64, flip: bool) -> u64 {
    let w = words.word(i);
    (if flip { !w } else { w }) & word_mask(i, m)
}

fn encode_gaps<S: WordSource + ?Sized>(
    enc: &mut Encoder,
    words: &S,
    m: u64,
    ones: u64,
    spill: &mut Spill<'_>,
) -> Result<()> {
    let flip = ones > m - ones;
    let minority = ones.min(m - ones);
    let model = GapModel::new(m, minority);
    let r = model.r;
    let mut next = 0u64; // first position not yet coded
    for i in 0..m.div_ceil(64) as usize {
        let mut w = minority_word(words, i, m, flip);
        while w != 0 {
            let pos = i as u64 * 64 + u64::from(w.trailing_zeros());
            w &= w - 1;
            let gap = pos - next;
            for _ in 0..(gap >> r) {
                enc.encode(false, model.p_continue);
            }
            enc.encode(true, model.p_continue);
            for j in (0..r).rev() {
                enc.encode((gap >> j) & 1 == 1, model.p_rem0[j as usize]);
            }
            next = pos + 1;
        }
        drain(&mut enc.out, spill)?;
    }
    Ok(())
}

/// Decode the gaps of `minority` minority bits, calling `put` for the non-zero words of the
/// array in increasing order (see [`decode_into`]).
fn decode_gaps(
    dec: &mut Decoder<'_>,
    m: u64,
    ones: u64,
    put: &mut dyn FnMut(usize, u64),
) -> Result<()> {
    let flip = ones > m - ones;
    let minority = ones.min(m - ones);
    let model = GapModel::new(m, minority);
    let r = model.r;
    let past_end = || inconsistent("a coded gap runs past the end of the array");
    let words = m.div_ceil(64) as usize;
    // The word being assembled: its index and its minority bits so far.
    let (mut cur, mut acc) = (0usize, 0u64);
    let mut emit = |i: usize, minority_bits: u64| {
        let w = if flip {
            !minority_bits & word_mask(i, m)
        } else {
            minority_bits
        };
        if w != 0 {
            put(i, w);
        }
    };
    let mut pos = 0u64;
    for _ in 0..minority {
        // the unary count of whole 2^r blocks, bounded by what is left of the array
        let mut gap = 0u64;
        while !dec.decode(model.p_continue)? {
            gap += 1u64 << r;
            if pos + gap >= m {
                return Err(past_end());
            }
        }
        for j in (0..r).rev() {
            if dec.decode(model.p_rem0[j as usize])? {
                gap |= 1 << j;
            }
        }
        pos = pos
            .checked_add(gap)
            .filter(|&p| p < m)
            .ok_or_else(past_end)?;
        let wi = (pos / 64) as usize;
        if wi != cur {
            emit(cur, acc);
            if flip {
                // words without a minority bit are all ones
                for j in cur + 1..wi {
                    emit(j, 0);
                }
            }
            (cur, acc) = (wi, 0);
        }
        acc |= 1 << (pos % 64);
        pos += 1;
    }
    emit(cur, acc);
    if flip {
        for j in cur + 1..words {
            emit(j, 0);
        }
    }
    Ok(())
}

/// Compress the first `m` bits of `words` (bits beyond m are ignored).
///
/// Errors only if `words` holds fewer than m bits.
pub fn compress_bits(words: &[u64], m: u64) -> Result<Vec<u8>> {
    compress_with(words, m, None)
}

/// [`compress_bits`] in the given mode (tests forge the other modes), or the encoder's choice.
fn compress_with<S: WordSource + ?Sized>(
    words: &S,
    m: u64,
    force: Option<Mode>,
) -> Result<Vec<u8>> {
    compress_spilling(words, m, force, None)
}

/// Bytes an encoder holds before it hands them to its spill.
const SPILL_AT: usize = 1 << 16;

/// Where finished stream bytes go as they are made (the coder's output is final once pushed:
/// carries are resolved before a byte leaves its cache).
type Spill<'a> = Option<&'a mut dyn FnMut(&[u8]) -> Result<()>>;

/// Hand `out` to `spill` once it holds [`SPILL_AT`] bytes (nothing without a spill).
#[inline]
fn drain(out: &mut Vec<u8>, spill: &mut Spill<'_>) -> Result<()> {
    if let Some(f) = spill {
        if out.len() >= SPILL_AT {
            f(out)?;
            out.clear();
        }
    }
    Ok(())
}

/// [`compress_with`], the stream's bytes handed to `spill` a piece at a time as they are
/// made (so the whole stream is never in memory); returns the bytes not yet handed on (all of
/// them without a spill). The bytes, in order, are those of [`compress_with`].
fn compress_spilling<S: WordSource + ?Sized>(
    words: &S,
    m: u64,
    force: Option<Mode>,
    mut spill: Spill<'_>,
) -> Result<Vec<u8>> {
    let len = check_words(words, m, "words")?;
    let ones = count_ones_m(words, m);
    let mode = if ones == 0 || ones == m {
        Mode::Bits // header only
    } else {
        force.unwrap_or_else(|| choose_mode(m, ones))
    };
    let mut out = Vec::with_capacity(HEADER_BYTES + 8);
    out.push(mode.tag());
    out.extend_from_slice(&m.to_le_bytes());
    out.extend_from_slice(&ones.to_le_bytes());
    if ones == 0 || ones == m {
        return Ok(out);
    }
    let reserve = |out: &mut Vec<u8>, bytes: usize| {
        out.try_reserve_exact(bytes)
            .map_err(|_| Error::AllocationFailed {
                bytes: bytes as u64,
            })
    };
    if mode == Mode::Raw {
        let bytes = m.div_ceil(8) as usize;
        reserve(&mut out, if spill.is_some() { SPILL_AT + 8 } else { bytes })?;
        for i in 0..len {
            let w = minority_word(words, i, m, false);
            let take = (bytes - i * 8).min(8);
            out.extend_from_slice(&w.to_le_bytes()[..take]);
            drain(&mut out, &mut spill)?;
        }
        return Ok(out);
    }
    let p0 = zero_probability(m, ones);
    if spill.is_some() {
        reserve(&mut out, SPILL_AT + 64)?;
    } else {
        // Expected size m·H(p)/8 plus slack: one allocation in the common case.
        let p = (m - ones) as f64 / m as f64;
        let expect = (m as f64 * crate::params::entropy(p) / 8.0 * 1.01) as usize + 16;
        reserve(&mut out, expect)?;
    }
    let mut enc = Encoder::new(out);
    if mode == Mode::Gaps {
        encode_gaps(&mut enc, words, m, ones, &mut spill)?;
        return Ok(enc.finish());
    }
    let full = (m / 64) as usize;
    for i in 0..full {
        let w = words.word(i);
        for j in 0..64 {
            enc.encode((w >> j) & 1 == 1, p0);
        }
        drain(&mut enc.out, &mut spill)?;
    }
    let rest = (m % 64) as u32;
    if rest > 0 {
        let w = words.word(full);
        for j in 0..rest {
            enc.encode((w >> j) & 1 == 1, p0);
        }
    }
    Ok(enc.finish())
}

/// A compressed-bits stream whose header was validated against m (see [`check_stream`]).
struct Stream<'a> {
    mode: Mode,
    m: u64,
    ones: u64,
    payload: &'a [u8],
}

/// Validate a compressed-bits stream for m bits before anything is allocated: the header, the
/// mode (the one the encoder chooses for this density, see [`Mode`]), and a length the coded
/// decisions need at the least.
///
/// Every decision of a valid mode narrows the coder's range by a factor of at most 3/4 (the
/// bit-by-bit mode only runs at minority fractions of 1/4 and more; the gap model's
/// decisions have probabilities of at most 3/4 and 2/3), so it costs at least
/// log2(4/3) = 0.415 bits of input, and the decoder reads a byte per 8 such bits. A stream
/// shorter than that is refused here; a longer one can at most make the decoder work about
/// 20 decisions per input byte before it runs out of input.
fn check_stream(data: &[u8], m: u64) -> Result<Stream<'_>> {
    if data.len() < HEADER_BYTES {
        return Err(truncated(HEADER_BYTES, data.len()));
    }
    let tag = data[0];
    if !matches!(tag, TAG_RAW | TAG_BITS | TAG_GAPS) {
        return Err(Error::Format(FormatError::BadMagic));
    }
    let stored_m = u64::from_le_bytes(data[1..9].try_into().expect("8 bytes"));
    let ones = u64::from_le_bytes(data[9..17].try_into().expect("8 bytes"));
    if stored_m != m {
        return Err(inconsistent(format!(
            "compressed array has m = {stored_m}, expected {m}"
        )));
    }
    if ones > m {
        return Err(inconsistent(format!("{ones} one bits in an array of {m}")));
    }
    usize::try_from(m.div_ceil(64)).map_err(|_| invalid("m", "too large for this platform"))?;
    let payload = &data[HEADER_BYTES..];
    if ones == 0 || ones == m {
        if tag != TAG_BITS {
            return Err(inconsistent("an empty or full array has a coded payload"));
        }
        if !payload.is_empty() {
            return Err(Error::Format(FormatError::TrailingData {
                extra: payload.len() as u64,
            }));
        }
        return Ok(Stream {
            mode: Mode::Bits,
            m,
            ones,
            payload,
        });
    }
    let mode = choose_mode(m, ones);
    if tag != mode.tag() {
        let found = [Mode::Raw, Mode::Gaps, Mode::Bits]
            .into_iter()
            .find(|md| md.tag() == tag)
            .unwrap_or(Mode::Bits);
        return Err(inconsistent(format!(
            "a {} stream for {ones} one bits in {m}: the encoder writes this density {}, \
             so the stream is forged or damaged",
            found.name(),
            mode.name()
        )));
    }
    let have = payload.len() as u64;
    match mode {
        Mode::Raw => {
            let bytes = m.div_ceil(8);
            if have < bytes {
                return Err(truncated(
                    HEADER_BYTES.saturating_add(usize::try_from(bytes).unwrap_or(usize::MAX)),
                    data.len(),
                ));
            }
            if have > bytes {
                return Err(Error::Format(FormatError::TrailingData {
                    extra: have - bytes,
                }));
            }
        }
        Mode::Bits | Mode::Gaps => {
            // the least coded bits: 0.415 per decision (0.415 for a gap's end, 0.584 for
            // each remainder bit), minus what the 5 leading bytes and the flush account for
            let least_bits = if mode == Mode::Bits {
                u128::from(m) * 415 / 1000
            } else {
                let r = GapModel::new(m, ones.min(m - ones)).r;
                u128::from(ones.min(m - ones)) * (415 + 584 * u128::from(r)) / 1000
            };
            let need = (least_bits / 8).saturating_sub(8);
            if u128::from(have) < need {
                return Err(inconsistent(format!(
                    "a {} stream of {have} bytes cannot hold {m} bits with {ones} ones \
                     (at least {need} bytes)",
                    mode.name()
                )));
            }
        }
    }
    Ok(Stream {
        mode,
        m,
        ones,
        payload,
    })
}

/// Decode a checked stream: `put(i, w)` is called for every non-zero word `w` of the array,
/// in increasing order of `i`, each once; the words not given are zero. Work is bounded by
/// the stream's length (see [`check_stream`]) plus one call per non-zero word.
fn decode_into(s: &Stream<'_>, put: &mut dyn FnMut(usize, u64)) -> Result<()> {
    let (m, ones) = (s.m, s.ones);
    let len = m.div_ceil(64) as usize;
    if ones == 0 {
        return Ok(());
    }
    if ones == m {
        for i in 0..len {
            put(i, word_mask(i, m));
        }
        return Ok(());
    }
    if s.mode == Mode::Raw {
        let mut decoded = 0u64;
        for (i, chunk) in s.payload.chunks(8).enumerate() {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            let w = u64::from_le_bytes(b);
            if w & !word_mask(i, m) != 0 {
                return Err(inconsistent("stored bits beyond m"));
            }
            decoded += u64::from(w.count_ones());
            if w != 0 {
                put(i, w);
            }
        }
        if decoded != ones {
            return Err(inconsistent(format!(
                "stored array has {decoded} one bits, header says {ones}: damaged payload"
            )));
        }
        return Ok(());
    }
    let mut dec = Decoder::new(s.payload)?;
    if s.mode == Mode::Gaps {
        // exactly `minority` positions are set, each once
        decode_gaps(&mut dec, m, ones, put)?;
    } else {
        let p0 = zero_probability(m, ones);
        let mut decoded = 0u64;
        for i in 0..len {
            let bits = if i + 1 == len && !m.is_multiple_of(64) {
                (m % 64) as u32
            } else {
                64
            };
            let mut v = 0u64;
            for j in 0..bits {
                if dec.decode(p0)? {
                    v |= 1 << j;
                }
            }
            decoded += u64::from(v.count_ones());
            if v != 0 {
                put(i, v);
            }
        }
        if decoded != ones {
            return Err(inconsistent(format!(
                "decoded {decoded} one bits, header says {ones}: damaged payload"
            )));
        }
    }
    if dec.pos != s.payload.len() {
        return Err(Error::Format(FormatError::TrailingData {
            extra: (s.payload.len() - dec.pos) as u64,
        }));
    }
    Ok(())
}

/// Decompress a stream of [`compress_bits`] for an array of `m` bits, refusing arrays larger
/// than `limit_bytes` (of words) before allocating. Bits beyond m in the last word are zero.
///
/// Decodes the streams of every version (tags 0xB0, 0xB1, 0xB2) in the mode the encoder
/// chooses for their density; a stream in another mode is refused as forged (see the
/// module docs, "Untrusted input"), and so is a stream too short for its m.
pub fn decompress_bits(data: &[u8], m: u64, limit_bytes: u64) -> Result<Words> {
    let s = check_stream(data, m)?;
    let mut words = Words::zeroed(m.div_ceil(64) as usize, limit_bytes)?;
    let out = words.as_mut_slice();
    decode_into(&s, &mut |i, w| out[i] = w)?;
    Ok(words)
}

/// Exact size in bits of [`compress_bits`]`(words, m)`, header included.
pub fn compressed_len_bits(words: &[u64], m: u64) -> Result<u64> {
    Ok(compress_bits(words, m)?.len() as u64 * 8)
}

/// The entropy bound `m · H(p)` in bits of the first m bits of `words`, p their fraction of zeros.
pub fn entropy_bits(words: &[u64], m: u64) -> Result<f64> {
    entropy_of(words, m)
}

fn entropy_of<S: WordSource + ?Sized>(words: &S, m: u64) -> Result<f64> {
    check_words(words, m, "words")?;
    if m == 0 {
        return Ok(0.0);
    }
    let p = (m - count_ones_m(words, m)) as f64 / m as f64;
    Ok(m as f64 * crate::params::entropy(p))
}

/// xxh3-64 fingerprint of the first m bits of `words` (bits beyond m masked out), with m mixed in.
pub fn fingerprint(words: &[u64], m: u64) -> Result<u64> {
    fingerprint_of(words, m)
}

fn fingerprint_of<S: WordSource + ?Sized>(words: &S, m: u64) -> Result<u64> {
    let len = check_words(words, m, "words")?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&m.to_le_bytes());
    let mut buf = [0u8; 4096];
    for start in (0..len).step_by(buf.len() / 8) {
        let end = (start + buf.len() / 8).min(len);
        for i in start..end {
            let at = 8 * (i - start);
            buf[at..at + 8].copy_from_slice(&(words.word(i) & word_mask(i, m)).to_le_bytes());
        }
        h.update(&buf[..8 * (end - start)]);
    }
    Ok(h.digest())
}

/// A delta from `old` to `new` (both of m bits): the compressed `old XOR new`, tagged with the
/// fingerprints of both versions.
pub fn diff(old: &[u64], new: &[u64], m: u64) -> Result<Vec<u8>> {
    diff_of(old, new, m)
}

fn diff_of<A: WordSource + ?Sized, B: WordSource + ?Sized>(
    old: &A,
    new: &B,
    m: u64,
) -> Result<Vec<u8>> {
    check_words(old, m, "old")?;
    check_words(new, m, "new")?;
    let body = compress_with(&XorWords(old, new), m, None)?;
    let mut out = Vec::with_capacity(DIFF_HEADER_BYTES + body.len());
    out.push(TAG_DIFF);
    out.extend_from_slice(&fingerprint_of(old, m)?.to_le_bytes());
    out.extend_from_slice(&fingerprint_of(new, m)?.to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Apply a [`diff`] to `old` (m bits). Refused with [`Error::Incompatible`] if `old` is not the
/// delta's base; a damaged delta is an [`Error::Format`]. Allocates the result only (at most
/// `limit_bytes`, fallibly), after the delta's stream passed its checks.
pub fn patch(old: &[u64], delta: &[u8], m: u64, limit_bytes: u64) -> Result<Vec<u64>> {
    let len = check_words(old, m, "old")?;
    let (target, s) = check_delta(old, delta, m)?;
    store::check_size(len as u64 * 8, limit_bytes)?;
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| Error::AllocationFailed {
            bytes: len as u64 * 8,
        })?;
    out.extend_from_slice(&old[..len]);
    if !m.is_multiple_of(64) {
        out[len - 1] &= word_mask(len - 1, m);
    }
    decode_into(&s, &mut |i, w| out[i] ^= w)?;
    let got = fingerprint_of(&out[..], m)?;
    if got != target {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: target,
            computed: got,
        }));
    }
    Ok(out)
}

/// Check a delta's header against its base and its stream against m; returns the result's
/// fingerprint and the stream.
fn check_delta<'a, S: WordSource + ?Sized>(
    old: &S,
    delta: &'a [u8],
    m: u64,
) -> Result<(u64, Stream<'a>)> {
    if delta.len() < DIFF_HEADER_BYTES {
        return Err(truncated(DIFF_HEADER_BYTES, delta.len()));
    }
    if delta[0] != TAG_DIFF {
        return Err(Error::Format(FormatError::BadMagic));
    }
    let base = u64::from_le_bytes(delta[1..9].try_into().expect("8 bytes"));
    let target = u64::from_le_bytes(delta[9..17].try_into().expect("8 bytes"));
    let have = fingerprint_of(old, m)?;
    if have != base {
        return Err(Error::Incompatible(crate::error::Incompatibility::Shape {
            left: format!("base with fingerprint {have:#018x}"),
            right: format!("delta for base {base:#018x}"),
        }));
    }
    Ok((target, check_stream(&delta[DIFF_HEADER_BYTES..], m)?))
}

// ---------------------------------------------------------------------------------------------
// Compressed and delta files in the common format.
// ---------------------------------------------------------------------------------------------

/// Offset of the payload-length field in the common header.
const AT_PAYLOAD_LEN: usize = 16;
/// Offset of the flags field in the common header.
const AT_FLAGS: usize = 26;
/// Bytes of the compressed container's fixed part (plain payload length, plain checksum,
/// stream length).
const PACK_FIXED: usize = 24;
/// Bytes of the delta container's fixed part (payload length, base and result checksums,
/// stream length).
const DELTA_FIXED: usize = 32;

/// The flags of a file that passed the magic check, or 0 for anything shorter or without the
/// magic (such input then fails in the ordinary decoder with the ordinary error).
fn raw_flags(bytes: &[u8]) -> u16 {
    if bytes.len() < 28 || bytes[..8] != format::MAGIC {
        return 0;
    }
    u16::from_le_bytes([bytes[AT_FLAGS], bytes[AT_FLAGS + 1]])
}

/// True if `bytes` look like a compressed file (magic and the compressed flag; nothing else is
/// checked). Cheap: reads the fixed header only.
pub fn is_packed(bytes: &[u8]) -> bool {
    raw_flags(bytes) == format::FLAG_COMPRESSED
}

/// True if `bytes` look like a delta file ([`diff_files`]).
pub fn is_delta(bytes: &[u8]) -> bool {
    raw_flags(bytes) == format::FLAG_DELTA
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The payload of a decoded file, as words (no copy).
fn payload_of<'a>(bytes: &'a [u8], d: &format::Decoded) -> LeWords<'a> {
    LeWords(&bytes[d.payload_offset..d.payload_offset + d.payload_len])
}

/// A file of the common format from a header (its bytes `[0, H)`, taken verbatim except for
/// the payload length and the flags), a payload, and a fresh checksum trailer. For the small
/// containers of compressed and delta files.
fn assemble(header: &[u8], flags: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(header.len() + payload.len() + 8);
    out.extend_from_slice(header);
    out[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    out[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(payload);
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Pad a container to a multiple of 64 bytes (the payload rule of the common format).
fn pad64(mut v: Vec<u8>) -> Vec<u8> {
    v.resize(v.len().div_ceil(64) * 64, 0);
    v
}

/// Validate a container's stream length field and its zero padding; returns the stream.
fn container_stream(c: &[u8], fixed: usize) -> Result<&[u8]> {
    let len = le64(c, fixed - 8);
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| l.checked_add(fixed))
        .filter(|&e| e <= c.len())
        .ok_or_else(|| inconsistent(format!("stream of {len} bytes overruns its container")))?;
    if c.len() - end >= 64 || c[end..].iter().any(|&b| b != 0) {
        return Err(inconsistent("bad container padding"));
    }
    Ok(&c[fixed..end])
}

/// Decode a plain file's header (checksum verified), refusing compressed or delta forms.
fn decode_plain(bytes: &[u8]) -> Result<format::Decoded> {
    Ok(format::decode(bytes, format::Verify::Checksum)?)
}

/// Compress a plain file of any kind into its compressed form: the same header (flag
/// `FLAG_COMPRESSED`), a payload holding the range-coded plain payload and the plain
/// file's checksum, and a checksum trailer of its own.
///
/// ```text
/// compressed payload:  0  u64  plain payload length P (bytes)
///                      8  u64  the plain file's checksum (its trailer)
///                     16  u64  stream length L
///                     24  L    compressed-bits stream of the plain payload (m = 8·P bits)
///                     ..       zero padding to a multiple of 64
/// ```
/// A compressed input is returned as it is (after validation).
pub fn compress_file(bytes: &[u8]) -> Result<Vec<u8>> {
    if is_packed(bytes) {
        decompress_file(bytes, store::max_bytes())?;
        return Ok(bytes.to_vec());
    }
    let d = decode_plain(bytes)?;
    let m = d.payload_len as u64 * 8;
    let stream = compress_with(&payload_of(bytes, &d), m, None)?;
    let plain_sum = le64(bytes, bytes.len() - 8);
    let mut c = Vec::with_capacity(PACK_FIXED + stream.len() + 64);
    c.extend_from_slice(&(d.payload_len as u64).to_le_bytes());
    c.extend_from_slice(&plain_sum.to_le_bytes());
    c.extend_from_slice(&(stream.len() as u64).to_le_bytes());
    c.extend_from_slice(&stream);
    Ok(assemble(
        &bytes[..d.payload_offset],
        format::FLAG_COMPRESSED,
        &pad64(c),
    ))
}

/// The compressed form of the file a structure saves as, made from its header and payload
/// without building the plain file first: the plain file's checksum is computed by streaming
/// its encoding through a sink that keeps only the trailer, and a payload of one word array is
/// coded in place (several arrays are joined once).
/// Equal, byte for byte, to [`compress_file`] of the plain file.
pub(crate) fn compress_parts(
    header: &format::Header,
    payload: &format::Payload<'_>,
) -> Result<Vec<u8>> {
    let mut sink = TailSink([0; 8]);
    format::write(header, payload, &mut sink)?;
    let plain_sum = u64::from_le_bytes(sink.0);
    let payload_len = payload.len();
    let m = payload_len * 8;
    let parts = payload.parts();
    let joined: std::borrow::Cow<'_, [u64]> = match parts {
        [one] if format::padded_len(one.len()) == (one.len() as u64) * 8 => {
            std::borrow::Cow::Borrowed(one.as_slice())
        }
        _ => {
            let mut v = Vec::new();
            v.try_reserve_exact((payload_len / 8) as usize)
                .map_err(|_| Error::AllocationFailed { bytes: payload_len })?;
            for part in parts {
                v.extend_from_slice(part.as_slice());
                v.resize(
                    (format::padded_len(part.len()) / 8) as usize + v.len() - part.len(),
                    0,
                );
            }
            std::borrow::Cow::Owned(v)
        }
    };
    let stream = compress_bits(&joined, m)?;
    let mut c = Vec::with_capacity(PACK_FIXED + stream.len() + 64);
    c.extend_from_slice(&payload_len.to_le_bytes());
    c.extend_from_slice(&plain_sum.to_le_bytes());
    c.extend_from_slice(&(stream.len() as u64).to_le_bytes());
    c.extend_from_slice(&stream);
    Ok(assemble(
        &header.encode(payload_len),
        format::FLAG_COMPRESSED,
        &pad64(c),
    ))
}

/// [`compress_file`] written to `path` (atomically: a temporary file beside it, renamed into
/// place) as the stream is made: memory holds a piece of the stream, never the whole, whatever
/// the file's size. The bytes are those of [`compress_file`]; returns their sizes, as
/// [`packed_sizes`] of the file written gives them. A compressed input is validated (streamed, without decompressing
/// it into memory) and copied.
pub fn compress_file_to(bytes: &[u8], path: &std::path::Path) -> Result<PackedSizes> {
    if is_packed(bytes) {
        let sizes = packed_sizes(bytes, true)?;
        let mut out = StreamOut::create(path, None)?;
        out.write(&bytes[..bytes.len() - 8])?;
        out.finish()?;
        return Ok(sizes);
    }
    let d = decode_plain(bytes)?;
    let m = d.payload_len as u64 * 8;
    let entropy_bits = entropy_of(&payload_of(bytes, &d), m)?;
    let h = d.payload_offset;
    let mut out = StreamOut::create(path, Some(h + PACK_FIXED))?;
    out.write_zeros((h + PACK_FIXED) as u64)?;
    let stream_len = spill_stream(&mut out, |spill| {
        compress_spilling(&payload_of(bytes, &d), m, None, Some(spill))
    })?;
    let padded = seal_container(&mut out, PACK_FIXED as u64 + stream_len)?;
    let mut head = bytes[..h].to_vec();
    head[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&padded.to_le_bytes());
    head[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&format::FLAG_COMPRESSED.to_le_bytes());
    head.extend_from_slice(&(d.payload_len as u64).to_le_bytes());
    head.extend_from_slice(&le64(bytes, bytes.len() - 8).to_le_bytes());
    head.extend_from_slice(&stream_len.to_le_bytes());
    out.finish_with_head(&head)?;
    Ok(PackedSizes {
        compressed_input: true,
        exact: true,
        plain_bytes: bytes.len() as u64,
        compressed_bytes: h as u64 + padded + 8,
        stream_bytes: stream_len,
        entropy_bits,
    })
}

/// Run an encoder whose output goes to `out` a piece at a time; returns the stream's length.
fn spill_stream(
    out: &mut StreamOut,
    encode: impl FnOnce(&mut dyn FnMut(&[u8]) -> Result<()>) -> Result<Vec<u8>>,
) -> Result<u64> {
    let mut n = 0u64;
    let rest = encode(&mut |b: &[u8]| {
        n += b.len() as u64;
        out.write(b)
    })?;
    out.write(&rest)?;
    Ok(n + rest.len() as u64)
}

/// Pad a container of `len` bytes (already written) to a multiple of 64; its padded length.
fn seal_container(out: &mut StreamOut, len: u64) -> Result<u64> {
    let padded = len.div_ceil(64) * 64;
    out.write_zeros(padded - len)?;
    Ok(padded)
}

/// [`diff_files`] written to `path` as the delta is made (see [`compress_file_to`]): memory
/// holds a piece of the delta, plus the plain form of a compressed input (within the memory
/// limit, as every loader). The bytes are those of [`diff_files`]; returns how many.
pub fn diff_files_to(old: &[u8], new: &[u8], path: &std::path::Path) -> Result<u64> {
    let old = plain_bytes(old)?;
    let new = plain_bytes(new)?;
    let (old, new) = (old.bytes(), new.bytes());
    let (a, b) = diff_pair(old, new)?;
    let m = a.payload_len as u64 * 8;
    let (wa, wb) = (payload_of(old, &a), payload_of(new, &b));
    check_words(&wa, m, "old")?;
    check_words(&wb, m, "new")?;
    let h = b.payload_offset;
    let mut out = StreamOut::create(path, Some(h + DELTA_FIXED))?;
    out.write_zeros((h + DELTA_FIXED) as u64)?;
    let mut tag = Vec::with_capacity(DIFF_HEADER_BYTES);
    tag.push(TAG_DIFF);
    tag.extend_from_slice(&fingerprint_of(&wa, m)?.to_le_bytes());
    tag.extend_from_slice(&fingerprint_of(&wb, m)?.to_le_bytes());
    out.write(&tag)?;
    let body = spill_stream(&mut out, |spill| {
        compress_spilling(&XorWords(&wa, &wb), m, None, Some(spill))
    })?;
    let stream_len = DIFF_HEADER_BYTES as u64 + body;
    let padded = seal_container(&mut out, DELTA_FIXED as u64 + stream_len)?;
    let mut head = new[..h].to_vec();
    head[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&padded.to_le_bytes());
    head[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&format::FLAG_DELTA.to_le_bytes());
    head.extend_from_slice(&(a.payload_len as u64).to_le_bytes());
    head.extend_from_slice(&le64(old, old.len() - 8).to_le_bytes());
    head.extend_from_slice(&le64(new, new.len() - 8).to_le_bytes());
    head.extend_from_slice(&stream_len.to_le_bytes());
    out.finish_with_head(&head)?;
    Ok(h as u64 + padded + 8)
}

/// A writer that keeps only the last 8 bytes written: fed a whole file by [`format::write`]
/// (which computes the checksum as it writes), it holds the file's checksum trailer and
/// nothing else.
struct TailSink([u8; 8]);

impl std::io::Write for TailSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() >= 8 {
            self.0.copy_from_slice(&buf[buf.len() - 8..]);
        } else {
            self.0.rotate_left(buf.len());
            self.0[8 - buf.len()..].copy_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A compressed file, validated up to its stream: what [`rebuild`] needs.
struct Packed<'a> {
    /// The header bytes `[0, H)`.
    header: &'a [u8],
    plain_len: u64,
    plain_sum: u64,
    stream: Stream<'a>,
}

/// Refuse a compressed file (header `d`, decoded from `bytes`) whose declared plain payload
/// exceeds `limit_bytes`, from its header, its container's fields and its stream's header
/// alone: before the checksum pass over the file, which for a large file takes as long as
/// reading it. Only a well-formed container is judged by its size here (its lengths, padding
/// and stream header agree with the declared size): a damaged file, or a plain one whose flag
/// was damaged, is left to the checksum, whose error names the damage.
pub(crate) fn check_declared_plain(
    bytes: &[u8],
    d: &format::Decoded,
    limit_bytes: u64,
) -> Result<()> {
    let c = &bytes[d.payload_offset..d.payload_offset + d.payload_len];
    if c.len() < PACK_FIXED {
        return Ok(());
    }
    let plain_len = le64(c, 0);
    let well_formed = plain_len.is_multiple_of(64)
        && plain_len.checked_mul(8).is_some_and(|m| {
            container_stream(c, PACK_FIXED).is_ok_and(|s| check_stream(s, m).is_ok())
        });
    if well_formed {
        store::check_size(plain_len, limit_bytes)?;
    }
    Ok(())
}

/// Validate a compressed file (its checksum, container and stream header) against
/// `limit_bytes`, before anything of the plain payload's size is allocated (the declared
/// size first, before the checksum pass).
fn check_packed(bytes: &[u8], limit_bytes: u64) -> Result<Packed<'_>> {
    let (d, flags) = format::decode_with_flags(bytes, format::Verify::HeaderOnly)?;
    if flags == format::FLAG_COMPRESSED {
        check_declared_plain(bytes, &d, limit_bytes)?;
    }
    let (d, flags) = format::decode_with_flags(bytes, format::Verify::Checksum)?;
    if flags != format::FLAG_COMPRESSED {
        return Err(delta_not_filter());
    }
    let c = &bytes[d.payload_offset..d.payload_offset + d.payload_len];
    if c.len() < PACK_FIXED {
        return Err(truncated(PACK_FIXED, c.len()));
    }
    let plain_len = le64(c, 0);
    let plain_sum = le64(c, 8);
    let stream = container_stream(c, PACK_FIXED)?;
    if !plain_len.is_multiple_of(64) {
        return Err(inconsistent(format!(
            "plain payload length {plain_len} is not a multiple of 64"
        )));
    }
    store::check_size(plain_len, limit_bytes)?;
    let m = plain_len
        .checked_mul(8)
        .ok_or_else(|| inconsistent("plain payload length overflows"))?;
    Ok(Packed {
        header: &bytes[..d.payload_offset],
        plain_len,
        plain_sum,
        stream: check_stream(stream, m)?,
    })
}

/// Rebuild the plain file of a checked compressed file into `out`, which is zero and exactly
/// `H + P + 8` bytes long (H the header, P the plain payload); verifies the plain checksum.
fn rebuild(p: &Packed<'_>, out: &mut [u8]) -> Result<()> {
    let h = p.header.len();
    let payload_end = h + p.plain_len as usize;
    debug_assert_eq!(out.len(), payload_end + 8);
    out[..h].copy_from_slice(p.header);
    out[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&p.plain_len.to_le_bytes());
    out[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&0u16.to_le_bytes());
    {
        let payload = &mut out[h..payload_end];
        decode_into(&p.stream, &mut |i, w| {
            payload[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        })?;
    }
    let got = xxhash_rust::xxh3::xxh3_64(&out[..payload_end]);
    if got != p.plain_sum {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: p.plain_sum,
            computed: got,
        }));
    }
    out[payload_end..].copy_from_slice(&got.to_le_bytes());
    Ok(())
}

/// The words of a plain payload, given as the decoder yields them (the non-zero ones, in
/// increasing order), hashed in order with the zero words between them: a checksum of the
/// payload without holding it.
struct WordHasher {
    h: xxhash_rust::xxh3::Xxh3,
    buf: Vec<u8>,
    filled: usize,
    /// The index of the next word to hash.
    next: usize,
}

impl WordHasher {
    fn new(head: &[u8]) -> Self {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(head);
        Self {
            h,
            buf: vec![0; 1 << 16],
            filled: 0,
            next: 0,
        }
    }

    fn flush_if_full(&mut self) {
        if self.filled == self.buf.len() {
            self.h.update(&self.buf);
            self.filled = 0;
        }
    }

    /// Zero words up to index `end` (exclusive).
    fn zeros_to(&mut self, end: usize) {
        while self.next < end {
            self.flush_if_full();
            let n = ((self.buf.len() - self.filled) / 8).min(end - self.next);
            self.buf[self.filled..self.filled + 8 * n].fill(0);
            self.filled += 8 * n;
            self.next += n;
        }
    }

    fn word(&mut self, i: usize, w: u64) {
        self.zeros_to(i);
        self.flush_if_full();
        self.buf[self.filled..self.filled + 8].copy_from_slice(&w.to_le_bytes());
        self.filled += 8;
        self.next = i + 1;
    }

    fn digest(mut self, words: usize) -> u64 {
        self.zeros_to(words);
        self.h.update(&self.buf[..self.filled]);
        self.h.digest()
    }
}

/// Verify a checked compressed file's plain checksum as [`rebuild`] does, decoding the stream
/// into a running hash instead of a buffer: the plain payload is never held.
fn verify_streamed(p: &Packed<'_>) -> Result<()> {
    let mut head = p.header.to_vec();
    head[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&p.plain_len.to_le_bytes());
    head[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&0u16.to_le_bytes());
    let mut hasher = WordHasher::new(&head);
    decode_into(&p.stream, &mut |i, w| hasher.word(i, w))?;
    let words = usize::try_from(p.plain_len / 8)
        .map_err(|_| invalid("payload", "too large for this platform"))?;
    let got = hasher.digest(words);
    if got != p.plain_sum {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: p.plain_sum,
            computed: got,
        }));
    }
    Ok(())
}

/// Bytes of the plain file a checked compressed file rebuilds to (header, payload, trailer).
fn plain_total(p: &Packed<'_>) -> Result<usize> {
    (p.header.len() as u64)
        .checked_add(p.plain_len)
        .and_then(|x| x.checked_add(8))
        .and_then(|x| usize::try_from(x).ok())
        .ok_or_else(|| invalid("payload", "too large for this platform"))
}

/// `len` zero bytes on the heap, allocated fallibly (an [`Error::AllocationFailed`] instead
/// of an abort) and zeroed by the allocator: a large buffer comes as fresh zero pages that
/// cost no memory until written, as `vec![0; len]` would, so decoding a sparse payload into
/// it touches few pages.
fn zeroed_vec(len: usize) -> Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len)
        .map_err(|_| Error::AllocationFailed { bytes: len as u64 })?;
    // SAFETY: `layout` has a non-zero size (len > 0, checked above).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(Error::AllocationFailed { bytes: len as u64 });
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `len` u8s
    // (alignment 1, size len), which is the layout a `Vec<u8>` of capacity `len` uses; all
    // `len` bytes are initialised (zeroed) and `len` ≤ the capacity `len`. The Vec takes sole
    // ownership of the allocation.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// The plain file held by a compressed file, bit for bit: both checksums are verified (the
/// compressed file's trailer, then the rebuilt plain file against the checksum it stored).
/// A plain input is returned as it is (after validation).
///
/// Untrusted input: the stream is checked (mode, length) and the plain payload refused over
/// `limit_bytes` before anything of its size is allocated; the one allocation is the result
/// itself (fallible: an [`Error::AllocationFailed`], never an abort), and the stream is
/// decoded straight into it.
pub fn decompress_file(bytes: &[u8], limit_bytes: u64) -> Result<Vec<u8>> {
    if raw_flags(bytes) != format::FLAG_COMPRESSED {
        let (_, flags) = format::decode_with_flags(bytes, format::Verify::Checksum)?;
        if flags == 0 {
            return Ok(bytes.to_vec());
        }
        return Err(delta_not_filter());
    }
    let p = check_packed(bytes, limit_bytes)?;
    let mut out = zeroed_vec(plain_total(&p)?)?;
    rebuild(&p, &mut out)?;
    Ok(out)
}

fn delta_not_filter() -> Error {
    Error::Unsupported(
        "this is a delta file, not a filter: apply it to its base with `patch`".into(),
    )
}

/// The bytes of a plain file: `bytes` itself when plain, the decompressed file when
/// compressed (both checksums verified, the plain payload limited to
/// [`store::max_bytes`]). A delta file is refused with [`Error::Unsupported`].
pub fn plain_file(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>> {
    Ok(match plain_bytes(bytes)? {
        PlainBytes::Borrowed(b) => std::borrow::Cow::Borrowed(b),
        other => std::borrow::Cow::Owned(other.bytes().to_vec()),
    })
}

/// The plain file behind `bytes`, as the loaders use it: borrowed when plain; when
/// compressed, rebuilt into one buffer — on the heap when small, else in an anonymous map
/// that the structure's words then use in place, writable (see
/// [`format::Source::Shared`](crate::io::format::Source::Shared)), so loading a compressed
/// file holds its plain payload once, and so does updating it (an insert writes the map
/// rather than a copy of it).
pub(crate) enum PlainBytes<'a> {
    /// A plain input.
    Borrowed(&'a [u8]),
    /// A small rebuilt file.
    Heap(Vec<u8>),
    /// A large rebuilt file: process memory, private to this process (no file behind it, so
    /// nothing ever releases its pages).
    Mapped(std::sync::Arc<store::SharedMap>),
}

impl PlainBytes<'_> {
    /// The plain file's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            PlainBytes::Borrowed(b) => b,
            PlainBytes::Heap(v) => v,
            // SAFETY: the whole map is initialised and readable; while the bytes are borrowed
            // from `self` no `Words` writes the map (one is made from it only through
            // `source`, by a decoder, which reads the bytes before any insert writes them).
            PlainBytes::Mapped(m) => unsafe { std::slice::from_raw_parts(m.ptr(), m.len()) },
        }
    }

    /// Where a structure's words come from: copied from the bytes, or the map in place.
    pub(crate) fn source(&self) -> crate::io::format::Source<'_> {
        match self {
            PlainBytes::Mapped(m) => crate::io::format::Source::Shared(m),
            other => crate::io::format::Source::Bytes(other.bytes()),
        }
    }
}

/// [`PlainBytes`] of `bytes`: what every loader calls first, so compressed files load
/// wherever plain ones do. A delta file is refused with [`Error::Unsupported`] (its header
/// validated first, so damage is reported as damage).
pub(crate) fn plain_bytes(bytes: &[u8]) -> Result<PlainBytes<'_>> {
    match raw_flags(bytes) {
        format::FLAG_COMPRESSED => {
            let p = check_packed(bytes, store::max_bytes())?;
            let total = plain_total(&p)?;
            if total < store::ANON_THRESHOLD_BYTES || !cfg!(feature = "mmap") {
                let mut out = zeroed_vec(total)?;
                rebuild(&p, &mut out)?;
                return Ok(PlainBytes::Heap(out));
            }
            // Zero pages cost nothing until written, so a sparse payload touches few of them
            // (no huge pages advised here: one bit would commit 2 MiB).
            let mut map =
                crate::map::MmapMut::map_anon(total).map_err(|_| Error::AllocationFailed {
                    bytes: total as u64,
                })?;
            rebuild(&p, &mut map)?;
            Ok(PlainBytes::Mapped(std::sync::Arc::new(
                store::SharedMap::new(map),
            )))
        }
        format::FLAG_DELTA => {
            format::decode_with_flags(bytes, format::Verify::Checksum)?;
            Err(delta_not_filter())
        }
        _ => Ok(PlainBytes::Borrowed(bytes)),
    }
}

/// Sizes of a file in its plain and compressed forms, and the entropy bound of its payload.
///
/// ```
/// use bloomery::{compress, BloomFilter, Filter, Persist};
///
/// # fn main() -> bloomery::Result<()> {
/// let mut f = BloomFilter::try_new(100_000, 0.01)?;
/// f.insert("only key"); // a nearly empty filter compresses well
/// let sizes = compress::packed_sizes(&f.to_bytes(), true)?;
/// assert!(sizes.exact && sizes.compressed_bytes < sizes.plain_bytes / 10);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PackedSizes {
    /// True if the file examined was compressed.
    pub compressed_input: bool,
    /// False when the compressed sizes are predicted from the entropy bound, not measured.
    pub exact: bool,
    /// Bytes of the plain file.
    pub plain_bytes: u64,
    /// Bytes of the compressed file.
    pub compressed_bytes: u64,
    /// Bytes of the compressed payload stream alone (no headers).
    pub stream_bytes: u64,
    /// `m · H(p)` of the plain payload, in bits (p its fraction of zero bits, m its bits).
    pub entropy_bits: f64,
}

impl PackedSizes {
    /// The compressed stream against the entropy bound (`8 · stream_bytes / (m·H(p))`; 0 when
    /// the bound is 0).
    pub fn ratio_to_entropy(&self) -> f64 {
        if self.entropy_bits > 0.0 {
            self.stream_bytes as f64 * 8.0 / self.entropy_bits
        } else {
            0.0
        }
    }
}

/// Plain and compressed sizes of a file in either form. With `exact`, a plain file is
/// compressed to measure its compressed form; without, the compressed sizes of a plain file
/// are predicted from the entropy bound (the coder's stream is `⌈m·H(p)/8⌉` bytes plus its
/// 22-byte fixed cost, to within 0.01 %: see the module docs), which costs one pass of
/// popcounts instead of a compression. A compressed file is always measured exactly, and
/// both its checksums verified, without decompressing it into memory (its stream is decoded
/// into the plain checksum; the entropy comes from the stream's count of one bits).
pub fn packed_sizes(bytes: &[u8], exact: bool) -> Result<PackedSizes> {
    let compressed_input = is_packed(bytes);
    if compressed_input {
        let p = check_packed(bytes, store::max_bytes())?;
        verify_streamed(&p)?;
        let (m, ones) = (p.stream.m, p.stream.ones);
        let entropy = if m == 0 {
            0.0
        } else {
            m as f64 * crate::params::entropy((m - ones) as f64 / m as f64)
        };
        let (pd, _) = format::decode_with_flags(bytes, format::Verify::HeaderOnly)?;
        return Ok(PackedSizes {
            compressed_input,
            exact: true,
            plain_bytes: plain_total(&p)? as u64,
            compressed_bytes: bytes.len() as u64,
            stream_bytes: le64(bytes, pd.payload_offset + 16),
            entropy_bits: entropy,
        });
    }
    let plain = plain_bytes(bytes)?;
    let plain = plain.bytes();
    let d = decode_plain(plain)?;
    let words = payload_of(plain, &d);
    let m = d.payload_len as u64 * 8;
    let entropy = entropy_of(&words, m)?;
    let (compressed_bytes, stream_bytes) = if compressed_input || exact {
        let packed = if compressed_input {
            std::borrow::Cow::Borrowed(bytes)
        } else {
            std::borrow::Cow::Owned(compress_file(bytes)?)
        };
        let (pd, _) = format::decode_with_flags(&packed, format::Verify::HeaderOnly)?;
        (packed.len() as u64, le64(&packed, pd.payload_offset + 16))
    } else {
        let p = predicted_sizes(
            d.payload_offset as u64,
            d.payload_len as u64,
            count_ones_m(&words, m),
        );
        (p.compressed_bytes, p.stream_bytes)
    };
    Ok(PackedSizes {
        compressed_input,
        exact: compressed_input || exact,
        plain_bytes: plain.len() as u64,
        compressed_bytes,
        stream_bytes,
        entropy_bits: entropy,
    })
}

/// The sizes [`packed_sizes`] predicts for a plain file (not measured: `exact` is false) from
/// its header and payload lengths and the number of one bits in its payload, with no pass
/// over the payload: for callers that already counted the bits (`bloomery info` on a mapped
/// file). Equal to `packed_sizes(file, false)` for the file they describe.
pub fn predicted_sizes(header_len: u64, payload_len: u64, ones: u64) -> PackedSizes {
    let m = payload_len * 8;
    let ones = ones.min(m);
    let entropy = if m == 0 {
        0.0
    } else {
        m as f64 * crate::params::entropy((m - ones) as f64 / m as f64)
    };
    let stream = if ones == 0 || ones == m {
        HEADER_BYTES as u64
    } else {
        (entropy / 8.0).ceil() as u64 + HEADER_BYTES as u64 + 5
    };
    let container = (PACK_FIXED as u64 + stream).div_ceil(64) * 64;
    PackedSizes {
        compressed_input: false,
        exact: false,
        plain_bytes: header_len + payload_len + 8,
        compressed_bytes: header_len + container + 8,
        stream_bytes: stream,
        entropy_bits: entropy,
    }
}

/// A delta file from `old` to `new` (each plain or compressed): the header of `new` with flag
/// `FLAG_DELTA`, and a payload holding the compressed XOR of the two payloads
/// ([`diff`]) tagged with the checksums of both plain files.
///
/// ```text
/// delta payload:  0  u64  payload length P (bytes, the same in both versions)
///                 8  u64  the base (old) plain file's checksum
///                16  u64  the result (new) plain file's checksum
///                24  u64  stream length L
///                32  L    a [`diff`] stream of the payloads (m = 8·P bits)
///                ..       zero padding to a multiple of 64
/// ```
/// Unrelated filters are refused with [`Error::Incompatible`]: the two must have the same
/// kind, hash algorithm and seed, parameter length and payload length (a scalable filter that
/// grew a sub-filter has a longer payload: send it whole).
pub fn diff_files(old: &[u8], new: &[u8]) -> Result<Vec<u8>> {
    let old = plain_bytes(old)?;
    let new = plain_bytes(new)?;
    let (old, new) = (old.bytes(), new.bytes());
    let (a, b) = diff_pair(old, new)?;
    let m = a.payload_len as u64 * 8;
    let stream = diff_of(&payload_of(old, &a), &payload_of(new, &b), m)?;
    let mut c = Vec::with_capacity(DELTA_FIXED + stream.len() + 64);
    c.extend_from_slice(&(a.payload_len as u64).to_le_bytes());
    c.extend_from_slice(&le64(old, old.len() - 8).to_le_bytes());
    c.extend_from_slice(&le64(new, new.len() - 8).to_le_bytes());
    c.extend_from_slice(&(stream.len() as u64).to_le_bytes());
    c.extend_from_slice(&stream);
    Ok(assemble(
        &new[..b.payload_offset],
        format::FLAG_DELTA,
        &pad64(c),
    ))
}

/// The decoded headers of two plain files a delta can join (same kind, hashing and shapes).
fn diff_pair(old: &[u8], new: &[u8]) -> Result<(format::Decoded, format::Decoded)> {
    let a = decode_plain(old)?;
    let b = decode_plain(new)?;
    let (ha, hb) = (&a.header, &b.header);
    if ha.kind != hb.kind {
        return Err(Error::Incompatible(crate::error::Incompatibility::Kind {
            left: ha.kind.name(),
            right: hb.kind.name(),
        }));
    }
    if ha.hasher != hb.hasher {
        return Err(Error::Incompatible(crate::error::Incompatibility::Hashing));
    }
    if a.payload_len != b.payload_len || ha.params.len() != hb.params.len() {
        return Err(Error::Incompatible(crate::error::Incompatibility::Shape {
            left: format!("{} payload bytes", a.payload_len),
            right: format!("{} payload bytes", b.payload_len),
        }));
    }
    Ok((a, b))
}

/// Apply a delta file to `old` (plain or compressed): the plain result file, bit for bit.
/// A delta for another base is refused with [`Error::Incompatible`] (the base's checksum is
/// checked before anything is decoded); a damaged delta is an [`Error::Format`] (both the
/// delta's own checksum and the result's are verified). The result is the one allocation
/// (fallible, at most `limit_bytes` of payload); the delta is decoded straight into it.
pub fn patch_file(old: &[u8], delta: &[u8], limit_bytes: u64) -> Result<Vec<u8>> {
    let (d, flags) = format::decode_with_flags(delta, format::Verify::Checksum)?;
    if flags != format::FLAG_DELTA {
        return Err(Error::Unsupported(
            "the second file is not a delta (make one with `diff`)".into(),
        ));
    }
    let c = &delta[d.payload_offset..d.payload_offset + d.payload_len];
    if c.len() < DELTA_FIXED {
        return Err(truncated(DELTA_FIXED, c.len()));
    }
    let plain_len = le64(c, 0);
    let base_sum = le64(c, 8);
    let result_sum = le64(c, 16);
    let stream = container_stream(c, DELTA_FIXED)?;
    let old = plain_bytes(old)?;
    let old = old.bytes();
    let a = decode_plain(old)?;
    let have = le64(old, old.len() - 8);
    if have != base_sum {
        return Err(Error::Incompatible(crate::error::Incompatibility::Shape {
            left: format!("base file with checksum {have:#018x}"),
            right: format!("delta for a base with checksum {base_sum:#018x}"),
        }));
    }
    if a.payload_len as u64 != plain_len {
        return Err(inconsistent(format!(
            "delta for a payload of {plain_len} bytes, base has {}",
            a.payload_len
        )));
    }
    store::check_size(plain_len, limit_bytes)?;
    let m = plain_len * 8;
    let base = payload_of(old, &a);
    let (target, s) = check_delta(&base, stream, m)?;
    let h = d.payload_offset;
    let payload_end = h + a.payload_len;
    let mut out = zeroed_vec(payload_end + 8)?;
    out[..h].copy_from_slice(&delta[..h]);
    out[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&plain_len.to_le_bytes());
    out[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&0u16.to_le_bytes());
    out[h..payload_end].copy_from_slice(base.0);
    {
        let payload = &mut out[h..payload_end];
        decode_into(&s, &mut |i, w| {
            let at = &mut payload[8 * i..8 * i + 8];
            let v = u64::from_le_bytes((&*at).try_into().expect("8 bytes")) ^ w;
            at.copy_from_slice(&v.to_le_bytes());
        })?;
    }
    let got = fingerprint_of(&LeWords(&out[h..payload_end]), m)?;
    if got != target {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: target,
            computed: got,
        }));
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&out[..payload_end]);
    if sum != result_sum {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: result_sum,
            computed: sum,
        }));
    }
    out[payload_end..].copy_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// [`patch_file`] written to `path` as it is made: the base's payload is copied to the new
/// file with the delta's words XORed in as they are decoded, so memory holds neither the
/// result nor the delta's decoded array (only the plain form of a compressed base, within
/// the memory limit, as every loader). Both the result's fingerprint and its file checksum
/// are verified before the file replaces `path`; on any error `path` is untouched. The
/// bytes are those of [`patch_file`]; returns how many.
pub fn patch_file_to(old: &[u8], delta: &[u8], path: &std::path::Path) -> Result<u64> {
    let (d, flags) = format::decode_with_flags(delta, format::Verify::Checksum)?;
    if flags != format::FLAG_DELTA {
        return Err(Error::Unsupported(
            "the second file is not a delta (make one with `diff`)".into(),
        ));
    }
    let c = &delta[d.payload_offset..d.payload_offset + d.payload_len];
    if c.len() < DELTA_FIXED {
        return Err(truncated(DELTA_FIXED, c.len()));
    }
    let plain_len = le64(c, 0);
    let base_sum = le64(c, 8);
    let result_sum = le64(c, 16);
    let stream = container_stream(c, DELTA_FIXED)?;
    let old = plain_bytes(old)?;
    let old = old.bytes();
    let a = decode_plain(old)?;
    let have = le64(old, old.len() - 8);
    if have != base_sum {
        return Err(Error::Incompatible(crate::error::Incompatibility::Shape {
            left: format!("base file with checksum {have:#018x}"),
            right: format!("delta for a base with checksum {base_sum:#018x}"),
        }));
    }
    if a.payload_len as u64 != plain_len {
        return Err(inconsistent(format!(
            "delta for a payload of {plain_len} bytes, base has {}",
            a.payload_len
        )));
    }
    let m = plain_len * 8;
    let base = payload_of(old, &a);
    let (target, s) = check_delta(&base, stream, m)?;
    let h = d.payload_offset;
    let mut head = delta[..h].to_vec();
    head[AT_PAYLOAD_LEN..AT_PAYLOAD_LEN + 8].copy_from_slice(&plain_len.to_le_bytes());
    head[AT_FLAGS..AT_FLAGS + 2].copy_from_slice(&0u16.to_le_bytes());
    let mut out = StreamOut::create(path, None)?;
    out.write(&head)?;
    // the result's words, in order: the base's, with the delta's XORed in where it has any
    let mut fp = xxhash_rust::xxh3::Xxh3::new();
    fp.update(&m.to_le_bytes());
    let src = base.0;
    let mut at = 0usize; // bytes of the payload written
    let mut failed: Option<Error> = None;
    let copy = |out: &mut StreamOut, fp: &mut xxhash_rust::xxh3::Xxh3, bytes: &[u8]| {
        fp.update(bytes);
        out.write(bytes)
    };
    decode_into(&s, &mut |i, w| {
        if failed.is_some() {
            return;
        }
        let start = 8 * i;
        let end = (start + 8).min(src.len());
        let mut word = [0u8; 8];
        word[..end - start].copy_from_slice(&src[start..end]);
        let v = (u64::from_le_bytes(word) ^ w).to_le_bytes();
        let r = copy(&mut out, &mut fp, &src[at..start])
            .and_then(|()| copy(&mut out, &mut fp, &v[..end - start]));
        at = end;
        if let Err(e) = r {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    copy(&mut out, &mut fp, &src[at..])?;
    // the fingerprint hashes whole words
    fp.update(&[0u8; 8][..(8 - src.len() % 8) % 8]);
    let got = fp.digest();
    if got != target {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: target,
            computed: got,
        }));
    }
    let sum = out.sum_so_far().expect("an inline checksum");
    if sum != result_sum {
        return Err(Error::Format(FormatError::ChecksumMismatch {
            stored: result_sum,
            computed: sum,
        }));
    }
    let n = out.written() + 8;
    out.finish()?;
    Ok(n)
}

/// [`patch_file_to`], the result compressed ([`compress_file_to`]): written as a plain file to
/// a temporary file beside `path`, then coded from it (mapped) into `path`, so memory holds
/// neither the result nor its stream. The bytes are those of [`compress_file`] of
/// [`patch_file`]'s result; returns their sizes.
pub fn patch_file_compressed_to(
    old: &[u8],
    delta: &[u8],
    path: &std::path::Path,
) -> Result<PackedSizes> {
    let dir = crate::io::temp::TempFile::dir_of(path);
    let plain = crate::io::temp::TempFile::new_in(&dir, ".plain.tmp")?;
    patch_file_to(old, delta, plain.path())?;
    let result = crate::io::mapped::MappedFile::open(plain.path())?;
    compress_file_to(result.bytes(), path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Filter;
    use crate::params::{compressed_bits, entropy, fpr_asymptotic};
    use crate::sets::classic::BloomFilter;
    use proptest::prelude::*;
    use rand::{Rng, SeedableRng};

    const LIMIT: u64 = 1 << 30;

    fn words_of(bits: &[bool]) -> Vec<u64> {
        let mut w = vec![0u64; bits.len().div_ceil(64)];
        for (i, &b) in bits.iter().enumerate() {
            if b {
                w[i / 64] |= 1 << (i % 64);
            }
        }
        w
    }

    fn round_trip(words: &[u64], m: u64) -> Vec<u8> {
        let c = compress_bits(words, m).unwrap();
        let d = decompress_bits(&c, m, LIMIT).unwrap();
        let len = m.div_ceil(64) as usize;
        let mut want = words[..len].to_vec();
        if !m.is_multiple_of(64) {
            want[len - 1] &= (1u64 << (m % 64)) - 1;
        }
        assert_eq!(d.as_slice(), &want[..], "m = {m}");
        c
    }

    fn random_words(m: u64, ones_fraction: f64, seed: u64) -> Vec<u64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut w = vec![0u64; m.div_ceil(64) as usize];
        for i in 0..m {
            if rng.gen_bool(ones_fraction) {
                w[(i / 64) as usize] |= 1 << (i % 64);
            }
        }
        w
    }

    fn filter(n: u64, bits_per_item: u64, k: u32, seed: u64) -> BloomFilter {
        let mut f = BloomFilter::try_with_shape(n * bits_per_item, k).unwrap();
        for i in 0..n {
            f.insert(&(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i));
        }
        f
    }

    /// The encoder picks the mode the docs say for each density and every such stream
    /// decodes; a stream in any other mode (which the encoder never writes) is refused.
    #[test]
    fn each_density_has_one_mode_and_forged_modes_are_refused() {
        for (m, frac) in [
            (1u64, 0.5),
            (70, 0.01),
            (1000, 0.1),
            (4097, 0.3),
            (20_000, 0.5),
            (20_000, 0.001),
            (5000, 0.99),
        ] {
            let w = random_words(m, frac, m ^ 77);
            let ones = count_ones_m(&w[..], m);
            if ones == 0 || ones == m {
                continue;
            }
            let mut want = w[..m.div_ceil(64) as usize].to_vec();
            if !m.is_multiple_of(64) {
                *want.last_mut().unwrap() &= (1u64 << (m % 64)) - 1;
            }
            let q = ones.min(m - ones) as f64 / m as f64;
            let chosen = if q >= 0.4814 {
                Mode::Raw
            } else if q < 0.25 {
                Mode::Gaps
            } else {
                Mode::Bits
            };
            let auto = compress_bits(&w, m).unwrap();
            assert_eq!(auto[0], chosen.tag(), "m = {m}, q = {q}");
            assert_eq!(
                decompress_bits(&auto, m, LIMIT).unwrap().as_slice(),
                &want[..]
            );
            for mode in [Mode::Raw, Mode::Bits, Mode::Gaps] {
                let c = compress_with(&w[..], m, Some(mode)).unwrap();
                assert_eq!(c[0], mode.tag());
                match decompress_bits(&c, m, LIMIT) {
                    Ok(d) => {
                        assert_eq!(mode, chosen, "m = {m}: a forged {mode:?} stream decoded");
                        assert_eq!(d.as_slice(), &want[..], "m = {m}, {mode:?}");
                    }
                    Err(Error::Format(FormatError::Inconsistent(e))) => {
                        assert_ne!(mode, chosen, "m = {m}: {e}");
                        assert!(e.contains("forged"), "{e}");
                    }
                    Err(e) => panic!("m = {m}, {mode:?}: {e}"),
                }
            }
        }
        // a raw stream with a stray bit beyond m, or the wrong count, is refused
        let mut c = compress_with(&[0b0011u64][..], 4, Some(Mode::Raw)).unwrap();
        assert_eq!(decompress_bits(&c, 4, LIMIT).unwrap().as_slice(), &[0b0011]);
        c[HEADER_BYTES] |= 0x10;
        assert!(decompress_bits(&c, 4, LIMIT).is_err());
    }

    /// A bit-by-bit stream at a density the encoder codes as gaps (one set bit in 2^30)
    /// would cost a billion decisions; it is refused before any allocation or decoding, and
    /// so is a stream too short for the array it claims.
    #[test]
    fn forged_streams_are_refused_before_work() {
        let m = 1u64 << 30;
        let mut forged = vec![TAG_BITS];
        forged.extend_from_slice(&m.to_le_bytes());
        forged.extend_from_slice(&1u64.to_le_bytes());
        forged.extend_from_slice(&[0, 0x10, 0, 0, 0, 0, 0, 0]);
        let t = std::time::Instant::now();
        // a limit far below the array: only the checks run (the refusal is not TooLarge)
        let e = decompress_bits(&forged, m, 1 << 20).unwrap_err();
        assert!(
            matches!(e, Error::Format(FormatError::Inconsistent(_))),
            "{e}"
        );
        assert!(e.to_string().contains("forged"), "{e}");
        // the right mode (gaps) for that density, but 8 bytes for a million gap decisions
        let q = 1u64 << 20;
        forged[0] = TAG_GAPS;
        forged[9..17].copy_from_slice(&q.to_le_bytes());
        let e = decompress_bits(&forged, m, 1 << 40).unwrap_err();
        assert!(e.to_string().contains("cannot hold"), "{e}");
        // bit by bit at q = 1/3: 0.415 bits per decision at least
        let mut short = vec![TAG_BITS];
        short.extend_from_slice(&m.to_le_bytes());
        short.extend_from_slice(&(m / 3).to_le_bytes());
        short.extend_from_slice(&[0u8; 1000]);
        let e = decompress_bits(&short, m, 1 << 40).unwrap_err();
        assert!(e.to_string().contains("cannot hold"), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
    }

    /// Decoding work is bounded by the input: whatever bytes a stream of the right mode and
    /// length holds, each coder decision narrows the range by at most 3/4, so the decoder
    /// makes at most about 20 decisions per input byte before it runs out of input.
    #[test]
    fn decoding_work_is_bounded_by_the_input() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        for (m, ones, noise) in [
            (1u64 << 24, (1u64 << 24) * 3 / 10, 880_000usize),
            (1 << 24, 1 << 12, 8_000),
            (1 << 24, (1 << 24) - 3000, 8_000),
        ] {
            let mut s = vec![if ones * 4 < m || ones * 4 > 3 * m {
                TAG_GAPS
            } else {
                TAG_BITS
            }];
            s.extend_from_slice(&m.to_le_bytes());
            s.extend_from_slice(&ones.to_le_bytes());
            s.push(0);
            s.extend((0..noise).map(|_| rng.gen::<u8>() & 0x7F));
            let st = check_stream(&s, m).unwrap();
            let mut last = 0usize;
            let r = decode_into(&st, &mut |i, _| last = i);
            // bits of the array decided before the stream ended (or was found damaged)
            let decided = (last as u64 + 1) * 64;
            if st.mode == Mode::Bits {
                assert!(
                    decided <= 20 * noise as u64 + 64,
                    "{decided} decisions from {noise} bytes"
                );
            }
            assert!(r.is_err(), "noise decoded as a valid stream");
        }
    }

    #[test]
    fn empty_full_sparse_dense() {
        for m in [1u64, 2, 63, 64, 65, 1000, 4097] {
            let len = m.div_ceil(64) as usize;
            let c = round_trip(&vec![0; len], m);
            assert_eq!(c.len(), HEADER_BYTES);
            let c = round_trip(&vec![u64::MAX; len], m);
            assert_eq!(c.len(), HEADER_BYTES);
            round_trip(&random_words(m, 0.001, m), m);
            round_trip(&random_words(m, 0.5, m), m);
            round_trip(&random_words(m, 0.999, m), m);
            let mut one = vec![0; len];
            one[len - 1] = 1;
            round_trip(&one, m);
        }
        // Stray bits beyond m are ignored.
        round_trip(&[u64::MAX, u64::MAX], 70);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn prop_round_trip(bits in proptest::collection::vec(any::<bool>(), 1..3000)) {
            let m = bits.len() as u64;
            round_trip(&words_of(&bits), m);
        }

        #[test]
        fn prop_round_trip_skewed(m in 1u64..20_000, frac in 0.0f64..1.0, seed in any::<u64>()) {
            let frac = frac * frac * frac; // mostly sparse
            round_trip(&random_words(m, frac, seed), m);
            round_trip(&random_words(m, 1.0 - frac, seed), m);
        }
    }

    #[test]
    fn bound_on_real_filters() {
        // n = 100k, m = 1.2M..4.8M bits, fills from ~0.06 to ~0.5 of ones.
        for (bpi, k) in [(12u64, 8u32), (16, 11), (16, 2), (24, 3), (48, 3), (48, 1)] {
            let f = filter(100_000, bpi, k, bpi * 31 + u64::from(k));
            let m = f.bits();
            let c = round_trip(f.as_words(), m);
            let h = entropy_bits(f.as_words(), m).unwrap();
            let payload = (c.len() - HEADER_BYTES) as f64 * 8.0;
            let ratio = payload / h;
            assert!(
                payload <= 1.01 * h,
                "m/n = {bpi}, k = {k}: {payload} bits vs m·H = {h}"
            );
            // The coder is close to exact: within 0.1 % plus the flush.
            assert!(payload <= h * 1.001 + 40.0, "ratio {ratio}");
            assert_eq!(
                compressed_len_bits(f.as_words(), m).unwrap(),
                c.len() as u64 * 8
            );
            println!("m/n = {bpi}, k = {k}, m = {m}: payload / m·H(p) = {ratio:.6}");
        }
    }

    #[test]
    fn table_1_from_formulas() {
        let n = 100_000u64;
        let rows = [
            (16u64, 11u32, 0.000459, 16.0),
            (28, 4, 0.000314, 15.846),
            (48, 3, 0.000222, 15.829),
        ];
        for (bpi, k, f, z) in rows {
            let m = n * bpi;
            let fpr = fpr_asymptotic(n, m, k);
            assert!((fpr - f).abs() < 0.0000005, "m/n = {bpi}: f = {fpr}");
            let zn = compressed_bits(n, m, k) / n as f64;
            if bpi == 16 {
                // The uncompressed filter: 16 bits, and compression cannot help (H ≈ 1).
                assert!(zn > 15.99 && zn <= 16.0, "{zn}");
            } else {
                assert!((zn - z).abs() < 0.0005, "m/n = {bpi}: z/n = {zn}");
            }
        }
    }

    #[test]
    fn table_1_from_real_filters() {
        let n = 100_000u64;
        for (bpi, k, z) in [(16u64, 11u32, 16.0), (28, 4, 15.846), (48, 3, 15.829)] {
            let f = filter(n, bpi, k, bpi);
            let c = round_trip(f.as_words(), f.bits());
            let zn = c.len() as f64 * 8.0 / n as f64;
            assert!(
                (zn - z).abs() / z < 0.01,
                "m/n = {bpi}: measured z/n = {zn}"
            );
            assert!(zn < 16.05, "m/n = {bpi}: {zn}");
            println!("Table 1, m/n = {bpi}, k = {k}: measured z/n = {zn:.4} (table {z})");
        }
    }

    #[test]
    fn corruption_is_an_error_never_a_panic() {
        let f = filter(2_000, 16, 4, 7);
        let m = f.bits();
        let c = compress_bits(f.as_words(), m).unwrap();
        // Truncation at every length.
        for cut in 0..c.len() {
            assert!(decompress_bits(&c[..cut], m, LIMIT).is_err(), "cut {cut}");
        }
        let mut longer = c.clone();
        longer.push(0);
        assert!(decompress_bits(&longer, m, LIMIT).is_err());
        assert!(decompress_bits(&c, m + 1, LIMIT).is_err());
        assert!(matches!(
            decompress_bits(&c, m, 8),
            Err(Error::TooLarge { .. })
        ));
        // Seeded mutations: every outcome is Ok (a different valid array) or a typed error.
        let mut rng = rand::rngs::StdRng::seed_from_u64(6);
        let mut detected = 0;
        for _ in 0..300 {
            let mut d = c.clone();
            for _ in 0..rng.gen_range(1..4) {
                let i = rng.gen_range(0..d.len());
                d[i] ^= 1 << rng.gen_range(0..8);
            }
            match decompress_bits(&d, m, LIMIT) {
                Err(Error::Format(_)) | Err(Error::TooLarge { .. }) => detected += 1,
                Err(e) => panic!("unexpected error {e}"),
                Ok(_) => {}
            }
        }
        println!("{detected}/300 mutated streams detected");
        assert!(detected > 250, "{detected}/300 detected");
        // Header lies: huge m with a small limit, ones > m.
        let mut huge = c.clone();
        huge[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decompress_bits(&huge, u64::MAX, LIMIT).is_err());
        let mut bad = c.clone();
        bad[9..17].copy_from_slice(&(m + 1).to_le_bytes());
        assert!(decompress_bits(&bad, m, LIMIT).is_err());
        // Deltas: mutations are detected (the result's fingerprint is checked).
        let g = filter(2_100, 16, 4, 7);
        let (a, b) = (f.as_words(), &g.as_words()[..(m.div_ceil(64) as usize)]);
        let d = diff(a, b, m).unwrap();
        for _ in 0..200 {
            let mut e = d.clone();
            let i = rng.gen_range(0..e.len());
            e[i] ^= 1 << rng.gen_range(0..8);
            assert!(patch(a, &e, m, LIMIT).is_err());
        }
        for cut in 0..d.len() {
            assert!(patch(a, &d[..cut], m, LIMIT).is_err());
        }
        assert!(compress_bits(&[0], 65).is_err());
    }

    #[test]
    fn delta_round_trip_and_wrong_base() {
        let n = 100_000u64;
        let k = 4;
        let m = n * 28;
        let mut f = BloomFilter::try_with_shape(m, k).unwrap();
        for i in 0..n {
            f.insert(&i);
        }
        let old = f.as_words().to_vec();
        let changed = 1_000u64;
        for i in n..n + changed {
            f.insert(&i);
        }
        let new = f.as_words().to_vec();
        let d = diff(&old, &new, m).unwrap();
        assert_eq!(patch(&old, &d, m, LIMIT).unwrap(), new);
        // Bytes per changed item against the entropy bound of the XOR: each new item flips at
        // most k bits, so the XOR has q ≤ k·changed/m ones and costs about m·H(q) bits.
        let flipped = old
            .iter()
            .zip(&new)
            .map(|(a, b)| (a ^ b).count_ones() as u64)
            .sum::<u64>();
        assert!(flipped <= k as u64 * changed);
        let bound_bytes = m as f64 * entropy(flipped as f64 / m as f64) / 8.0;
        let per_item = d.len() as f64 / changed as f64;
        let bound_per_item =
            (bound_bytes * 1.01 + (HEADER_BYTES + DIFF_HEADER_BYTES + 5) as f64) / changed as f64;
        assert!(
            per_item <= bound_per_item,
            "{per_item:.2} bytes per changed item, bound {bound_per_item:.2}"
        );
        // About k·log2(e·m/(k·changed))/8 ≈ 6.2 bytes per item at these sizes.
        let ideal =
            k as f64 * (std::f64::consts::E * m as f64 / (k as f64 * changed as f64)).log2() / 8.0;
        assert!(per_item < ideal * 1.02, "{per_item} vs {ideal}");
        println!(
            "delta: {changed} items, {flipped} bits flipped, {} bytes, {per_item:.3} bytes per \
             item (entropy bound {:.3}, ideal {ideal:.3})",
            d.len(),
            bound_bytes / changed as f64
        );
        // Wrong base: refused with a typed error.
        let mut other = old.clone();
        other[3] ^= 1 << 5;
        assert!(matches!(
            patch(&other, &d, m, LIMIT),
            Err(Error::Incompatible(_))
        ));
        assert!(patch(&old[..10], &d, m, LIMIT).is_err());
        // Identical versions: an empty delta payload.
        let same = diff(&old, &old, m).unwrap();
        assert_eq!(same.len(), DIFF_HEADER_BYTES + HEADER_BYTES);
        assert_eq!(patch(&old, &same, m, LIMIT).unwrap(), old);
    }

    #[test]
    fn streamed_files_equal_the_in_memory_ones_and_fail_without_writing() {
        use crate::io::format::Persist;
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        // sparse (gaps), moderately full (one decision per bit), half full (stored), empty,
        // and each over several spill pieces
        for (n, bits, k) in [
            (200_000u64, 200u64, 2u32),
            (600_000, 9, 1),
            (300_000, 6, 4),
            (0, 1 << 22, 3),
        ] {
            let mut f = BloomFilter::try_with_shape(bits * n.max(1), k).unwrap();
            for i in 0..n {
                f.insert(&i);
            }
            let old = f.to_bytes();
            for i in n..n + 50 {
                f.insert(&i);
            }
            let new = f.to_bytes();

            let sizes = compress_file_to(&new, &at("c")).unwrap();
            let packed = compress_file(&new).unwrap();
            assert_eq!(std::fs::read(at("c")).unwrap(), packed, "n {n}");
            assert_eq!(sizes, packed_sizes(&packed, true).unwrap());
            // a compressed input is copied as it is
            let again = compress_file_to(&packed, &at("c2")).unwrap();
            assert_eq!(again, sizes);
            assert_eq!(std::fs::read(at("c2")).unwrap(), packed);

            let len = diff_files_to(&old, &new, &at("d")).unwrap();
            let delta = diff_files(&old, &new).unwrap();
            assert_eq!(std::fs::read(at("d")).unwrap(), delta, "n {n}");
            assert_eq!(len, delta.len() as u64);
            // from a compressed base too
            let len = patch_file_to(&compress_file(&old).unwrap(), &delta, &at("p")).unwrap();
            assert_eq!(std::fs::read(at("p")).unwrap(), new, "n {n}");
            assert_eq!(len, new.len() as u64);
            assert_eq!(patch_file(&old, &delta, LIMIT).unwrap(), new);
            // codes a plain temporary file through a memory map: without the `mmap` feature,
            // an `Unsupported` error as for every use of a file in place
            let pc = patch_file_compressed_to(&old, &delta, &at("pc"));
            if cfg!(feature = "mmap") {
                let sizes = pc.unwrap();
                assert_eq!(std::fs::read(at("pc")).unwrap(), packed, "n {n}");
                assert_eq!(sizes, packed_sizes(&packed, true).unwrap());
            } else {
                assert!(matches!(pc, Err(Error::Unsupported(_))), "{pc:?}");
            }
        }
        // a damaged delta, a wrong base: errors, and the target keeps its bytes
        let mut f = BloomFilter::try_with_shape(1 << 16, 3).unwrap();
        let old = f.to_bytes();
        f.insert(&1u64);
        let new = f.to_bytes();
        let delta = diff_files(&old, &new).unwrap();
        std::fs::write(at("p"), b"before").unwrap();
        assert!(matches!(
            patch_file_to(&new, &delta, &at("p")),
            Err(Error::Incompatible(_))
        ));
        let mut bad = delta.clone();
        let i = bad.len() - 20;
        bad[i] ^= 0x10;
        assert!(patch_file_to(&old, &bad, &at("p")).is_err());
        assert_eq!(std::fs::read(at("p")).unwrap(), b"before");
        let names = std::fs::read_dir(dir.path()).unwrap().count();
        // c, c2, d, p and, with memory maps, pc: nothing else, no temporary file
        let made = if cfg!(feature = "mmap") { 5 } else { 4 };
        assert_eq!(names, made, "a temporary file left");
    }

    #[test]
    fn delta_non_multiple_of_64() {
        let m = 1_000_003u64;
        let a = random_words(m, 0.3, 1);
        let mut b = a.clone();
        for i in (0..m).step_by(997) {
            b[(i / 64) as usize] ^= 1 << (i % 64);
        }
        let d = diff(&a, &b, m).unwrap();
        let mut want = b.clone();
        let last = want.len() - 1;
        want[last] &= (1u64 << (m % 64)) - 1;
        let mut a_masked = a.clone();
        a_masked[last] &= (1u64 << (m % 64)) - 1;
        assert_eq!(patch(&a, &d, m, LIMIT).unwrap(), want);
        assert_eq!(patch(&a_masked, &d, m, LIMIT).unwrap(), want);
    }
}
