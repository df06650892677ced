//! The compressed-bits stream: encoding (in memory or spilled a piece at a time), validation
//! of untrusted streams before any allocation, and decoding into a caller's words.

use super::coder::{truncated, zero_probability, Decoder, Encoder};
use super::model::{choose_mode, GapModel, Mode, HEADER_BYTES, TAG_BITS, TAG_GAPS, TAG_RAW};
use super::words::{check_words, count_ones_m, minority_word, word_mask, WordSource};
use crate::error::{inconsistent, invalid, Error, FormatError, Result};

pub(super) fn encode_gaps<S: WordSource + ?Sized>(
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
pub(super) fn decode_gaps(
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

/// [`compress_bits`] in the given mode (tests forge the other modes), or the encoder's choice.
pub(super) fn compress_with<S: WordSource + ?Sized>(
    words: &S,
    m: u64,
    force: Option<Mode>,
) -> Result<Vec<u8>> {
    compress_spilling(words, m, force, None)
}

/// Bytes an encoder holds before it hands them to its spill.
pub(super) const SPILL_AT: usize = 1 << 16;

/// Where finished stream bytes go as they are made (the coder's output is final once pushed:
/// carries are resolved before a byte leaves its cache).
pub(super) type Spill<'a> = Option<&'a mut dyn FnMut(&[u8]) -> Result<()>>;

/// Hand `out` to `spill` once it holds [`SPILL_AT`] bytes (nothing without a spill).
#[inline]
pub(super) fn drain(out: &mut Vec<u8>, spill: &mut Spill<'_>) -> Result<()> {
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
pub(super) fn compress_spilling<S: WordSource + ?Sized>(
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
pub(super) struct Stream<'a> {
    pub(super) mode: Mode,
    pub(super) m: u64,
    pub(super) ones: u64,
    pub(super) payload: &'a [u8],
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
pub(super) fn check_stream(data: &[u8], m: u64) -> Result<Stream<'_>> {
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
pub(super) fn decode_into(s: &Stream<'_>, put: &mut dyn FnMut(usize, u64)) -> Result<()> {
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

pub(super) fn entropy_of<S: WordSource + ?Sized>(words: &S, m: u64) -> Result<f64> {
    check_words(words, m, "words")?;
    if m == 0 {
        return Ok(0.0);
    }
    let p = (m - count_ones_m(words, m)) as f64 / m as f64;
    Ok(m as f64 * crate::params::entropy(p))
}
