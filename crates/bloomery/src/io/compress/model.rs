//! The stream forms and the static bit model: the tags and header sizes of the forms, which
//! form a density gets ([`Mode`]) and the probabilities of the gap form ([`GapModel`]).

use super::coder::{zero_probability, PROB_BITS};

/// Tag byte of a stored (uncoded) bit array, for arrays near half full.
pub(super) const TAG_RAW: u8 = 0xB0;
/// Tag byte of a compressed bit array coded one decision per bit.
pub(super) const TAG_BITS: u8 = 0xB1;
/// Tag byte of a compressed bit array coded as gaps between minority bits.
pub(super) const TAG_GAPS: u8 = 0xB2;
/// Tag byte of a delta.
pub(super) const TAG_DIFF: u8 = 0xD1;

/// Bytes of the compressed-bits header (tag, m, ones).
pub const HEADER_BYTES: usize = 17;
/// Bytes of the delta header (tag, two fingerprints) in front of its compressed-bits stream.
pub const DIFF_HEADER_BYTES: usize = 17;

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
pub(super) enum Mode {
    Raw,
    Gaps,
    Bits,
}

impl Mode {
    pub(super) fn tag(self) -> u8 {
        match self {
            Mode::Raw => TAG_RAW,
            Mode::Gaps => TAG_GAPS,
            Mode::Bits => TAG_BITS,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Mode::Raw => "stored",
            Mode::Gaps => "gap-coded",
            Mode::Bits => "bit-by-bit",
        }
    }
}

pub(super) fn choose_mode(m: u64, ones: u64) -> Mode {
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
pub(super) struct GapModel {
    pub(super) r: u32,
    /// P(the next 2^r bits are all majority): the unary "continue" decision.
    pub(super) p_continue: u64,
    /// For remainder bit j (value 2^j): P(bit = 0) = 1 / (1 + pw[j]).
    pub(super) p_rem0: Vec<u64>,
}

impl GapModel {
    pub(super) fn new(m: u64, minority: u64) -> Self {
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
