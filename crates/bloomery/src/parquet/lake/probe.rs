//! Keys hashed per column type in chunks on demand ([`Hashed`]), and a row group's filter
//! probed with them, reading of a Parquet bitset only what the probes need.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::parquet::file::FooterFile;
use crate::parquet::keys::{ColumnType, KeyError};
use crate::parquet::ParquetError;
use crate::sets::split_block::MaskedHash;
use crate::sets::split_block::SplitBlockBits;

use super::{Hits, KeyList, Mode};

/// Keys hashed for one column type: one chunk of the key list.
struct Typed {
    hashes: Vec<u64>,
    /// The hashes in ascending order (so in the order of the blocks they probe), with their
    /// masks (a prune probes them against many filters), made when a prune first reads a
    /// filter in parts.
    sorted: OnceLock<Vec<MaskedHash>>,
    /// Key index of each hash.
    index: Vec<u32>,
    /// Keys in the chunk (hashed and invalid).
    keys: usize,
    invalid: u64,
    example: Option<(usize, KeyError)>,
}

/// Keys are hashed in chunks of this many, in input order, each chunk at most once per column
/// type and only when a probe needs it: a prune ([`Mode::Any`]) stops at a row group's first
/// hit, so with many keys it usually needs the first chunk only.
pub(super) const HASH_CHUNK: usize = 1 << 14;

/// The key list hashed for one column type, chunk by chunk on demand (shared by the threads:
/// a chunk one thread is hashing, another waits for instead of hashing it too).
pub(super) struct Hashed<'k> {
    keys: &'k KeyList,
    column_type: ColumnType,
    chunk: usize,
    /// One slot per chunk the list may have (None: past its end).
    chunks: Vec<OnceLock<Option<Typed>>>,
}

impl<'k> Hashed<'k> {
    pub(super) fn new(keys: &'k KeyList, column_type: ColumnType, chunk: usize) -> Self {
        Self {
            keys,
            column_type,
            chunk,
            chunks: (0..keys.len_bound().div_ceil(chunk))
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// Chunk `c`, hashed now if no thread did before (None: the list ends before it).
    fn get(&self, c: usize) -> Option<&Typed> {
        self.chunks
            .get(c)?
            .get_or_init(|| {
                let mut out = Typed {
                    hashes: Vec::with_capacity(self.chunk),
                    sorted: OnceLock::new(),
                    index: Vec::with_capacity(self.chunk),
                    keys: 0,
                    invalid: 0,
                    example: None,
                };
                let mut buf = Vec::new();
                let raw = self.keys.is_raw();
                out.keys = self.keys.for_chunk(c, self.chunk, |i, key| {
                    match self.column_type.hash(key, raw, &mut buf) {
                        Ok(h) => {
                            out.hashes.push(h);
                            out.index.push(i as u32);
                        }
                        Err(e) => {
                            out.invalid += 1;
                            if out.example.is_none() {
                                out.example = Some((i, e));
                            }
                        }
                    }
                })?;
                Some(out)
            })
            .as_ref()
    }

    /// The only chunk, when the list has no more keys than a chunk holds.
    fn single(&self) -> Option<&Typed> {
        if self.keys.len_bound() <= self.chunk {
            self.get(0)
        } else {
            None
        }
    }

    /// The first chunk (None: no keys).
    fn first(&self) -> Option<&Typed> {
        self.get(0)
    }

    /// The chunks in order, hashed as they are reached.
    fn iter(&self) -> impl Iterator<Item = &Typed> {
        (0..).map_while(|c| self.get(c))
    }

    /// The keys' validity over the first `chunks` chunks: invalid keys, the first of them,
    /// and how many keys that covers.
    pub(super) fn invalid(&self, chunks: usize) -> (u64, Option<(usize, KeyError)>, usize) {
        let mut invalid = 0;
        let mut example = None;
        let mut keys = 0;
        for t in self.iter().take(chunks) {
            invalid += t.invalid;
            keys += t.keys;
            if example.is_none() {
                example = t.example.clone();
            }
        }
        (invalid, example, keys)
    }
}

/// Hashed key lists per column type, shared by the files of a scan.
pub(super) type TypedCache<'k> = Mutex<HashMap<ColumnType, Arc<Hashed<'k>>>>;

/// A row group's filter: a Parquet bitset where it was read, or a sidecar's filter.
pub(super) trait Probe {
    fn contains_hash(&self, h: u64) -> bool;
    fn first_hit(&self, hashes: &[u64]) -> Option<usize> {
        hashes.iter().position(|&h| self.contains_hash(h))
    }
    fn count_hits(&self, hashes: &[u64]) -> usize {
        hashes.iter().filter(|&&h| self.contains_hash(h)).count()
    }
}

impl Probe for SplitBlockBits<'_> {
    fn contains_hash(&self, h: u64) -> bool {
        SplitBlockBits::contains_hash(self, h)
    }
    fn first_hit(&self, hashes: &[u64]) -> Option<usize> {
        SplitBlockBits::first_hit(self, hashes)
    }
    fn count_hits(&self, hashes: &[u64]) -> usize {
        SplitBlockBits::count_hits(self, hashes)
    }
}

impl Probe for crate::sets::split_block::SplitBlockBloomFilter {
    fn contains_hash(&self, h: u64) -> bool {
        crate::sets::split_block::SplitBlockBloomFilter::contains_hash(self, h)
    }
}

impl Typed {
    /// The hashes in ascending order, with their masks.
    fn sorted(&self) -> &[MaskedHash] {
        self.sorted.get_or_init(|| {
            let mut v = self.hashes.clone();
            v.sort_unstable();
            v.into_iter().map(MaskedHash::new).collect()
        })
    }
}

/// A row group's filter is probed one block read at a time when it has at least this many
/// bytes of bitset per key: a read of one 32-byte block costs about what copying 4 KiB does.
const BYTES_PER_BLOCK_READ: u64 = 4096;

/// Most bytes of the bitset a prune reads with the filter's header; each later read at least
/// doubles what was read.
const FIRST_PART: usize = 4096;

/// Keys a prune's first read of a bitset should cover: enough that one of them is likely to
/// pass the filter if any will (at a filter's usual 0.1–1 % rate, two in five to all).
const KEYS_IN_FIRST_PART: u64 = 512;

/// Probe row group `rg`'s own filter of column `col` (None: the chunk has none), reading of it
/// only what the probes need:
/// - few keys against a large bitset: the header, then each key's block alone;
/// - a prune ([`Mode::Any`]): the header and the bitset's first 4 KiB, then as far again each
///   time a key's block lies beyond what was read, keys taken in the order of their blocks, up
///   to the first hit (with many keys, usually within the first part);
/// - counting and listing keys: the whole filter in one read.
///
/// The answer and how many chunks of keys it took, as [`probe`] gives them.
pub(super) fn probe_parquet(
    pf: &FooterFile,
    rg: usize,
    col: usize,
    h: &Hashed<'_>,
    mode: Mode,
    buf: &mut Vec<u8>,
) -> Result<Option<(Hits, usize)>, ParquetError> {
    let bad = |e: crate::error::Error| pf.filter_err(rg, col, e.to_string());
    let few = h.single().filter(|t| {
        pf.filter_location(rg, col)
            .and_then(|l| l.length)
            .is_some_and(|l| (t.hashes.len() as u64).saturating_mul(BYTES_PER_BLOCK_READ) <= l)
    });
    if let Some(t) = few {
        let Some(head) = pf.read_filter_head(rg, col, 0, buf)? else {
            return Ok(None);
        };
        let blocks = (head.num_bytes / 32) as u64;
        let check = |x: u64| -> Result<bool, ParquetError> {
            let b = SplitBlockBits::block_index(x, blocks) as usize;
            let block = if (b + 1) * 32 <= head.read {
                let at = head.header_len + b * 32;
                buf[at..at + 32].try_into().unwrap_or([0u8; 32])
            } else {
                pf.read_block(&head, b)?
            };
            Ok(SplitBlockBits::try_new(&block)
                .map_err(bad)?
                .contains_hash(x))
        };
        let hits = match mode {
            Mode::Any => {
                let mut any = false;
                for &x in &t.hashes {
                    if check(x)? {
                        any = true;
                        break;
                    }
                }
                return Ok(Some((Hits::Any(any), 1)));
            }
            Mode::Count => {
                let mut n = 0;
                for &x in &t.hashes {
                    n += u64::from(check(x)?);
                }
                Hits::Count(n)
            }
            Mode::Keys => {
                let mut keys = Vec::new();
                for (&x, &i) in t.hashes.iter().zip(&t.index) {
                    if check(x)? {
                        keys.push(i);
                    }
                }
                Hits::Keys(keys)
            }
        };
        return Ok(Some((hits, usize::MAX)));
    }
    if mode != Mode::Any {
        let Some(bits) = pf.read_filter_bytes(rg, col, buf)? else {
            return Ok(None);
        };
        let view = SplitBlockBits::try_new(&buf[bits]).map_err(bad)?;
        return Ok(Some(probe(&view, h, mode)));
    }
    // many keys: a first part of the bitset that holds the blocks of some 512 of them
    let first = match (
        pf.filter_location(rg, col).and_then(|l| l.length),
        h.first(),
    ) {
        (Some(l), Some(t)) if !t.hashes.is_empty() => {
            let part = l.saturating_mul(KEYS_IN_FIRST_PART) / t.hashes.len() as u64;
            (part.next_multiple_of(64) as usize).clamp(256, FIRST_PART)
        }
        _ => FIRST_PART,
    };
    let Some(head) = pf.read_filter_head(rg, col, first, buf)? else {
        return Ok(None);
    };
    let blocks = (head.num_bytes / 32) as u64;
    let mut read = head.read;
    let mut used = 0;
    for t in h.iter() {
        used += 1;
        let sorted = t.sorted();
        let mut done = 0;
        while done < sorted.len() {
            // the keys whose blocks were read, probed; then read on to the next key's block
            let ready = (read / 32) as u64;
            let upto = done
                + sorted[done..]
                    .partition_point(|x| SplitBlockBits::block_index(x.hash, blocks) < ready);
            if upto > done {
                let view = SplitBlockBits::try_new(&buf[head.bitset()]).map_err(bad)?;
                if view.first_hit_masked(&sorted[done..upto]).is_some() {
                    return Ok(Some((Hits::Any(true), used)));
                }
                done = upto;
                continue;
            }
            let need = (SplitBlockBits::block_index(sorted[done].hash, blocks) as usize + 1) * 32;
            let to = need.max(read.saturating_mul(2)).min(head.num_bytes);
            pf.read_bitset_part(&head, read..to, buf)?;
            read = to;
        }
    }
    Ok(Some((Hits::Any(false), used)))
}

/// Probe one row group's filter: its answer and how many chunks of keys that took.
pub(super) fn probe(bits: &impl Probe, h: &Hashed<'_>, mode: Mode) -> (Hits, usize) {
    match mode {
        Mode::Any => {
            let mut used = 0;
            for t in h.iter() {
                used += 1;
                if bits.first_hit(&t.hashes).is_some() {
                    return (Hits::Any(true), used);
                }
            }
            (Hits::Any(false), used)
        }
        Mode::Count => {
            let hits = h.iter().map(|t| bits.count_hits(&t.hashes) as u64).sum();
            (Hits::Count(hits), usize::MAX)
        }
        Mode::Keys => {
            let mut hits = Vec::new();
            for t in h.iter() {
                hits.extend(
                    t.hashes
                        .iter()
                        .zip(&t.index)
                        .filter(|(&x, _)| bits.contains_hash(x))
                        .map(|(_, &i)| i),
                );
            }
            (Hits::Keys(hits), usize::MAX)
        }
    }
}
