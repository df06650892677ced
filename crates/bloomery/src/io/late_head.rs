//! The file checksum (xxh3-64, seed 0) of bytes streamed front to back whose first bytes — the
//! header — are only known after the pass: what lets a one-pass update of a big file count
//! its new keys while it copies them in, and still seal the file without reading it again.
//!
//! XXH3 (Collet, the xxHash specification: "XXH3, long inputs") folds a long input into eight
//! 64-bit accumulators, a 1,024-byte block at a time (16 stripes of 64 bytes with the default
//! 192-byte secret). Within a block each stripe only *adds* to the accumulators a value
//! that depends on the stripe's bytes and its place in the block; after the block the
//! accumulators are scrambled (xorshift, xor with the secret's last 64 bytes, multiply). So a
//! block's effect before its scramble is a sum, [`block_sum`], computed from its bytes alone:
//! the pass computes the sums of every block after the header's, writes them to a spill file
//! (64 bytes a block: 1/16 of the file), and [`LateHeadHash::finish`], given the header,
//! chains `acc = scramble(acc + sum)` from the start — reading the spill once, not the file.
//!
//! The result is exactly `xxhash_rust::xxh3::xxh3_64` of the bytes with the header in place
//! (tested against it for every length class: short, mid-size, one block, many, partial).

use std::fs::File;
use std::path::Path;

use crate::io::temp::TempFile;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// Bytes of a stripe and of a block (16 stripes with the default secret).
const STRIPE: usize = 64;
const BLOCK: usize = 1024;

/// The default secret of XXH3 (the specification's `kSecret`), 192 bytes.
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// The accumulators' starting values.
const INIT: [u64; 8] = [
    PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1,
];

/// Where the last stripe's and the merge's secrets start.
const LAST_STRIPE_SECRET: usize = SECRET.len() - STRIPE - 7;
const MERGE_SECRET: usize = 11;

fn le(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// Add one stripe (64 bytes) to the accumulators, with the secret from byte `key`.
fn stripe(acc: &mut [u64; 8], data: &[u8], key: usize) {
    for i in 0..8 {
        let v = le(data, 8 * i);
        let k = v ^ le(&SECRET, key + 8 * i);
        acc[i ^ 1] = acc[i ^ 1].wrapping_add(v);
        acc[i] = acc[i].wrapping_add((k & 0xFFFF_FFFF).wrapping_mul(k >> 32));
    }
}

/// The sums of whole blocks, written to `out` (64 bytes each), with the CPU's widest vector
/// unit (AVX2 where the CPU has it and `BLOOMERY_NO_SIMD` is unset, chosen at run time).
fn block_sums(blocks: &[u8], out: &mut Vec<u8>) {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::avx2() {
        // SAFETY: the CPU has AVX2 (`simd::avx2` checked it), the one feature
        // `block_sums_avx2` is compiled for.
        return unsafe { block_sums_avx2(blocks, out) };
    }
    block_sums_portable(blocks, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn block_sums_avx2(blocks: &[u8], out: &mut Vec<u8>) {
    block_sums_portable(blocks, out);
}

#[inline(always)]
fn block_sums_portable(blocks: &[u8], out: &mut Vec<u8>) {
    for block in blocks.chunks_exact(BLOCK) {
        out.extend(block_sum(block).iter().flat_map(|w| w.to_le_bytes()));
    }
}

/// What the stripes of a whole block add to the accumulators (before the block's scramble).
#[inline(always)]
fn block_sum(block: &[u8]) -> [u64; 8] {
    // stripe `s` uses the secret from byte 8·s: lane `i` xors secret word `s + i`
    const KEYS: [u64; 23] = {
        let mut k = [0u64; 23];
        let mut w = 0;
        while w < 23 {
            let mut b = 0;
            while b < 8 {
                k[w] |= (SECRET[8 * w + b] as u64) << (8 * b);
                b += 1;
            }
            w += 1;
        }
        k
    };
    // the data is added to the neighbouring lane: summed per lane, swapped at the end
    let (mut data, mut mixed) = ([0u64; 8], [0u64; 8]);
    for (s, stripe) in block.chunks_exact(STRIPE).enumerate() {
        let keys = &KEYS[s..s + 8];
        for (i, word) in stripe.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            let k = v ^ keys[i];
            data[i] = data[i].wrapping_add(v);
            mixed[i] = mixed[i].wrapping_add((k & 0xFFFF_FFFF).wrapping_mul(k >> 32));
        }
    }
    std::array::from_fn(|i| mixed[i].wrapping_add(data[i ^ 1]))
}

fn add_scramble(acc: &mut [u64; 8], sum: &[u64; 8]) {
    for i in 0..8 {
        let mut a = acc[i].wrapping_add(sum[i]);
        a ^= a >> 47;
        a ^= le(&SECRET, SECRET.len() - STRIPE + 8 * i);
        acc[i] = a.wrapping_mul(PRIME32_1);
    }
}

fn merge(acc: &[u64; 8], len: u64) -> u64 {
    let mut r = len.wrapping_mul(PRIME64_1);
    for i in 0..4 {
        let a = acc[2 * i] ^ le(&SECRET, MERGE_SECRET + 16 * i);
        let b = acc[2 * i + 1] ^ le(&SECRET, MERGE_SECRET + 16 * i + 8);
        let p = u128::from(a) * u128::from(b);
        r = r.wrapping_add(p as u64 ^ (p >> 64) as u64);
    }
    r ^= r >> 37;
    r = r.wrapping_mul(0x1656_6791_9E37_79F9);
    r ^ (r >> 32)
}

/// The xxh3-64 (seed 0) of bytes fed front to back with [`update`](Self::update), the first
/// `head` of them (the header, placeholders while they are fed) replaced at
/// [`finish`](Self::finish). Memory: the blocks holding the header plus one block; the blocks'
/// sums go to a spill file (64 bytes per 1,024 of input).
pub(crate) struct LateHeadHash {
    /// The first blocks, up to the end of the header's block (`keep` bytes), as fed.
    first: Vec<u8>,
    keep: usize,
    /// The block being fed (after `first`), and the 64 bytes before it.
    current: Vec<u8>,
    before: [u8; STRIPE],
    fed: u64,
    /// Whole blocks after `first` whose sums are spilled (none is the last block: a block is
    /// summed only once a byte after it arrives).
    summed: u64,
    spill: BufWriter<File>,
    /// The sums of the blocks of one `update`, before they are spilled (reused).
    sums: Vec<u8>,
    /// The temporary file behind `spill`, when this hash made it ([`spilling_in`]): removed
    /// with the hash.
    ///
    /// [`spilling_in`]: Self::spilling_in
    _owned: Option<TempFile>,
}

impl LateHeadHash {
    /// A hash whose first `head` bytes are given at [`finish`](Self::finish); the sums
    /// spill to `spill` (an empty file it may read back; a temporary one, deleted after).
    pub(crate) fn new(head: usize, spill: File) -> Self {
        let keep = head.div_ceil(BLOCK).max(1) * BLOCK;
        Self {
            first: Vec::with_capacity(keep),
            keep,
            current: Vec::with_capacity(BLOCK),
            before: [0; STRIPE],
            fed: 0,
            summed: 0,
            spill: BufWriter::with_capacity(1 << 20, spill),
            sums: Vec::new(),
            _owned: None,
        }
    }

    /// [`new`](Self::new), the block sums spilled to a temporary `.bloomery-*.sums` file in
    /// `dir` (beside the file being written), removed when the hash is finished or dropped.
    pub(crate) fn spilling_in(dir: &Path, head: usize) -> io::Result<Self> {
        let tmp = TempFile::new_in(dir, ".sums")?;
        let mut h = Self::new(head, tmp.as_file().try_clone()?);
        h._owned = Some(tmp);
        Ok(h)
    }

    pub(crate) fn update(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        self.fed += bytes.len() as u64;
        let keep = self.keep;
        if self.first.len() < keep {
            let n = bytes.len().min(keep - self.first.len());
            self.first.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        while !bytes.is_empty() {
            if self.current.len() == BLOCK {
                // more follows: the block is not the last one
                self.spill_current()?;
            }
            if self.current.is_empty() && bytes.len() > BLOCK {
                // whole blocks straight from the input, the last one kept as the current block
                let whole = (bytes.len() - 1) / BLOCK;
                let (blocks, rest) = bytes.split_at(whole * BLOCK);
                self.sums.clear();
                block_sums(blocks, &mut self.sums);
                self.spill.write_all(&self.sums)?;
                self.summed += whole as u64;
                self.before
                    .copy_from_slice(&blocks[blocks.len() - STRIPE..]);
                bytes = rest;
            }
            let n = bytes.len().min(BLOCK - self.current.len());
            self.current.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        Ok(())
    }

    fn spill_current(&mut self) -> io::Result<()> {
        self.sums.clear();
        block_sums(&self.current, &mut self.sums);
        self.spill.write_all(&self.sums)?;
        self.summed += 1;
        self.before.copy_from_slice(&self.current[BLOCK - STRIPE..]);
        self.current.clear();
        Ok(())
    }

    /// The checksum of everything fed, with its first `head.len()` bytes replaced by `head`
    /// (at most the `head` given to [`new`](Self::new)).
    pub(crate) fn finish(self, head: &[u8]) -> io::Result<u64> {
        let (mut first, keep) = (self.first, self.keep);
        if head.len() > keep || head.len() as u64 > self.fed {
            return Err(io::Error::other(
                "the header is longer than the hash expected",
            ));
        }
        first[..head.len()].copy_from_slice(head);
        let len = self.fed;
        if len <= keep as u64 {
            // every byte is in `first`: short inputs take XXH3's other paths
            return Ok(xxhash_rust::xxh3::xxh3_64(&first));
        }
        let mut acc = INIT;
        for block in first.chunks_exact(BLOCK) {
            add_scramble(&mut acc, &block_sum(block));
        }
        let mut spill = self.spill.into_inner().map_err(|e| e.into_error())?;
        spill.seek(SeekFrom::Start(0))?;
        let mut sums = BufReader::with_capacity(1 << 20, spill);
        let mut buf = [0u8; STRIPE];
        for _ in 0..self.summed {
            sums.read_exact(&mut buf)?;
            add_scramble(&mut acc, &std::array::from_fn(|i| le(&buf, 8 * i)));
        }
        // the last block (1..=1024 bytes): its whole stripes but the last, then the input's
        // last 64 bytes with their own secret
        let last = &self.current;
        for (s, data) in last[..last.len() - 1].chunks_exact(STRIPE).enumerate() {
            stripe(&mut acc, data, 8 * s);
        }
        let before = if self.summed == 0 {
            &first[keep - STRIPE..]
        } else {
            &self.before[..]
        };
        let mut tail = [0u8; STRIPE];
        let from_before = STRIPE.saturating_sub(last.len());
        tail[..from_before].copy_from_slice(&before[STRIPE - from_before..]);
        tail[from_before..].copy_from_slice(&last[last.len() - (STRIPE - from_before)..]);
        stripe(&mut acc, &tail, LAST_STRIPE_SECRET);
        Ok(merge(&acc, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(PRIME64_2) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// Feed `data` in pieces of `step` bytes, its first `head` bytes zeroed, then finish with
    /// the real header.
    fn late(data: &[u8], head: usize, step: usize) -> u64 {
        let spill = tempfile::tempfile().unwrap();
        let mut h = LateHeadHash::new(head, spill);
        let mut fed = data.to_vec();
        fed[..head].fill(0);
        for piece in fed.chunks(step.max(1)) {
            h.update(piece).unwrap();
        }
        h.finish(&data[..head]).unwrap()
    }

    #[test]
    fn equals_xxh3_at_every_length_class_and_boundary() {
        for len in [
            128, 129, 240, 241, 1023, 1024, 1025, 1087, 1088, 1089, 2047, 2048, 2049, 2111, 3072,
            3073, 4096, 100_000,
        ] {
            let data = bytes(len, len as u64);
            for head in [0, 72, 128, 1024.min(len)] {
                for step in [1, 7, 64, 1000, 1024, 4096, len] {
                    assert_eq!(
                        late(&data, head, step),
                        xxhash_rust::xxh3::xxh3_64(&data),
                        "len {len}, head {head}, pieces of {step}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_header_over_several_blocks() {
        let data = bytes(20_000, 3);
        assert_eq!(late(&data, 3000, 777), xxhash_rust::xxh3::xxh3_64(&data));
    }

    #[test]
    fn a_header_longer_than_announced_is_refused() {
        let mut h = LateHeadHash::new(100, tempfile::tempfile().unwrap());
        h.update(&[0; 5000]).unwrap();
        assert!(h.finish(&[0; 2000]).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn equals_xxh3_for_any_input(len in 1usize..20_000, seed: u64, head in 0usize..1025,
                                     step in 1usize..5000) {
            let data = bytes(len, seed);
            let head = head.min(len);
            prop_assert_eq!(late(&data, head, step), xxhash_rust::xxh3::xxh3_64(&data));
        }
    }
}
