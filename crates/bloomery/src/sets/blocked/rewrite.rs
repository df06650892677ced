//! A batch of keys inserted into a big blocked filter file in the pass that copies it
//! ([`FileUpdate::open_sweep`]): each piece of the file is read, its blocks' keys inserted in
//! the piece while it is in a buffer, and the piece written to the copy once, changed — no
//! page of the copy is written twice and, when the pass also seals the file, none is read back.
//!
//! Sealing in the same pass needs the new header, which holds the item count, inside the
//! checksum, but the count is only known once every key is in: the pass hashes what it
//! writes after the header and the header is hashed in at the end
//! ([`crate::io::late_head`]), so the source is read once and the copy never.

use std::sync::Arc;

use super::fill::FillPass;
use super::*;
use crate::error::Error;
use crate::io::mapped::{FileUpdate, Unsealed};

impl BlockedBloomFilter {
    /// Insert pre-hashed keys into a filter decoded from an update opened by
    /// [`FileUpdate::open_sweep`] (with [`AnyFilter::from_update`](crate::AnyFilter::from_update))
    /// while the update's copy is made: one pass over the file, each [`PASS_CHUNK`](crate::file::PASS_CHUNK) piece read
    /// from the source (its checksum computed when the update verifies it), the keys of its
    /// blocks inserted, and the piece written to the copy. Afterwards the copy is the whole
    /// file and the filter can be read and changed as any filter decoded from an update (more
    /// keys with [`insert_sorted`](Self::insert_sorted)); [`FileUpdate::commit`] seals it.
    /// `hashes` is sorted by block (stable: the bits and the item count equal inserting the
    /// keys in input order). Returns the keys that were new. `progress` is told the bytes of
    /// the file done.
    ///
    /// An update whose copy has started (or a filter not decoded from `up`) is refused; a
    /// source whose checksum does not match fails it, and the update must be dropped (the file
    /// is left as it was). To insert one batch and seal in the same pass, use
    /// [`AnyFilter::commit_with_keys`](crate::AnyFilter::commit_with_keys).
    ///
    /// ```
    /// use bloomery::{AnyFilter, BlockedBloomFilter, Filter, Persist, Verify};
    /// use bloomery::file::FileUpdate;
    ///
    /// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
    /// # #[cfg(feature = "mmap")]
    /// # fn main() -> bloomery::Result<()> {
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("seen.bloom");
    /// BlockedBloomFilter::try_new(100_000, 0.01)?.save(&path)?;
    ///
    /// let up = FileUpdate::open_sweep(&path, Verify::Checksum)?;
    /// let AnyFilter::Blocked(mut b) = AnyFilter::from_update(&up)? else { unreachable!() };
    /// let mut first: Vec<_> = (0..1000u32).map(|i| b.hasher().hash(&i)).collect();
    /// assert_eq!(b.insert_copying(&up, &mut first, &mut |_| {})?, 1000);
    /// let mut more: Vec<_> = (1000..2000u32).map(|i| b.hasher().hash(&i)).collect();
    /// b.insert_sorted(&mut more, |_| {});
    /// up.commit(b, &mut |_| {})?;
    ///
    /// let g = BlockedBloomFilter::load(&path)?;
    /// assert_eq!(g.len(), 2000);
    /// assert!((0..2000u32).all(|i| g.contains(&i)));
    /// # Ok(()) }
    /// ```
    pub fn insert_copying(
        &mut self,
        up: &FileUpdate,
        hashes: &mut [Hashed],
        progress: format::Progress<'_>,
    ) -> Result<u64> {
        self.check_decoded_from(up)?;
        self.sort_by_block(hashes);
        let (new, _, _) = self.insert_in_pass(up, hashes, false, progress)?;
        self.core.items = self.core.items.saturating_add(new);
        Ok(new)
    }

    /// [`insert_copying`](Self::insert_copying) that also seals the file in the same pass
    /// (the new checksum computed over the bytes as they are written, the new header —
    /// whose item count the pass itself counts — hashed in last) and replaces the original
    /// (fsync, rename, directory fsync): no pass over the copy after it. Returns the filter
    /// and its fill figures, counted on the pieces as they were written.
    pub(crate) fn commit_rewriting(
        mut self,
        up: FileUpdate,
        hashes: &mut [Hashed],
        progress: format::Progress<'_>,
    ) -> Result<(Self, SetStats)> {
        self.check_decoded_from(&up)?;
        self.sort_by_block(hashes);
        let (new, fill, unsealed) = self.insert_in_pass(&up, hashes, true, progress)?;
        self.core.items = self.core.items.saturating_add(new);
        let head = {
            let (header, payload) = self.encode_parts();
            header.encode(payload.len())
        };
        let unsealed = unsealed.ok_or_else(|| crate::error::inconsistent("no checksum state"))?;
        up.persist_rewritten(unsealed, &head)?;
        let stats = fill.finish(&self);
        Ok((self, stats))
    }

    /// A stable sort of `hashes` by block (keys sharing a block keep their order).
    fn sort_by_block(&self, hashes: &mut [Hashed]) {
        let blocks = self.blocks;
        hashes.sort_by_key(|&h| block_index(h, blocks));
    }

    /// Whether this filter's words are `up`'s copy, where its update's passes write them.
    fn check_decoded_from(&self, up: &FileUpdate) -> Result<()> {
        match self.core.words.shared_view() {
            Some((map, off))
                if Arc::ptr_eq(map, up.shared_map()) && off as u64 == up.payload_offset() =>
            {
                Ok(())
            }
            _ => Err(Error::Unsupported(
                "this filter is not the one decoded from this update".into(),
            )),
        }
    }

    /// The pass of [`FileUpdate::rewrite`] inserting the keys (sorted by block) into each
    /// piece, counting the fill of the pieces written when sealing (`seal`). Returns the keys
    /// that were new, the fill so far and, when sealing, the checksum waiting for the header.
    fn insert_in_pass(
        &self,
        up: &FileUpdate,
        hashes: &[Hashed],
        seal: bool,
        progress: format::Progress<'_>,
    ) -> Result<(u64, FillPass, Option<Unsealed>)> {
        let (blocks, k, layout) = (self.blocks, self.k, self.layout);
        let mut fill = FillPass::new(self);
        let mut next = 0usize;
        let mut new = 0u64;
        let out_of_order = || crate::error::inconsistent("a key's block outside the sweep's piece");
        let unsealed = up.rewrite(
            seal,
            &mut |p, words| {
                let w0 = usize::try_from(p / 8).map_err(|_| out_of_order())?;
                let w1 = w0 + words.len();
                while let Some(&x) = hashes.get(next) {
                    let (b, half) = place(x, blocks, layout);
                    if b >= w1 {
                        break;
                    }
                    let at = b.checked_sub(w0).ok_or_else(out_of_order)?;
                    if at + BLOCK_WORDS > words.len() {
                        return Err(out_of_order());
                    }
                    new += u64::from(Block::at_mut(words, at).insert(x, k, layout, half));
                    next += 1;
                }
                if seal {
                    fill.advance_words(layout, words);
                }
                Ok(())
            },
            progress,
        )?;
        if next != hashes.len() {
            return Err(out_of_order());
        }
        Ok((new, fill, unsealed))
    }
}

#[cfg(all(test, feature = "mmap"))]
mod tests {
    use super::*;
    use crate::any::filter::AnyFilter;
    use crate::any::filter::FilterInfo;
    use crate::error::FormatError;
    use crate::filter::Filter;
    use crate::io::header::Verify;
    use crate::io::header::PASS_CHUNK;
    use proptest::prelude::*;

    /// Blocks of a filter a little over two [`PASS_CHUNK`] pieces long: the passes cross
    /// piece boundaries, and the file stays small enough for a quick test.
    const BLOCKS: u64 = (2 * PASS_CHUNK as u64 + (1 << 20)) / 64;

    fn filter(sectors: bool) -> BlockedBloomFilter {
        let mut f = if sectors {
            BlockedBloomFilter::try_with_sectors(BLOCKS).unwrap()
        } else {
            BlockedBloomFilter::try_with_shape(BLOCKS, 7).unwrap()
        };
        // some keys already in the file
        for i in 0..500u64 {
            f.insert(&i);
        }
        f
    }

    fn temp_files(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    /// The file `f` saved at `path` becomes after inserting `keys` batch by batch, as the
    /// sweeping `add` does: one batch inserted and sealed in one pass, or the first batch by
    /// the pass that copies and the later ones into the copy.
    fn update(path: &std::path::Path, keys: &[u64], splits: &[usize]) -> Result<FilterInfo> {
        let up = FileUpdate::open_sweep(path, Verify::Checksum)?;
        let AnyFilter::Blocked(mut b) = AnyFilter::from_update(&up)? else {
            unreachable!("a blocked file")
        };
        let hasher = *b.hasher();
        let mut batches = Vec::new();
        let mut rest = keys;
        for &n in splits {
            let (a, r) = rest.split_at(n.min(rest.len()));
            batches.push(a);
            rest = r;
        }
        batches.push(rest);
        let hash = |ks: &[u64]| ks.iter().map(|k| hasher.hash(k)).collect::<Vec<_>>();
        if batches.len() == 1 {
            return AnyFilter::Blocked(b).commit_with_keys(up, &mut hash(keys), &mut |_| {});
        }
        b.insert_copying(&up, &mut hash(batches[0]), &mut |_| {})?;
        for batch in &batches[1..] {
            b.insert_sorted(&mut hash(batch), |_| {});
        }
        AnyFilter::Blocked(b).commit_with_info(up, &mut |_| {})
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]

        /// Whatever the batches, the file written is the one inserting the keys in input
        /// order in memory writes (bits, item count and so the checksum of a fresh save),
        /// it loads with its checksum verified, and every key is found.
        #[test]
        fn the_one_pass_update_writes_what_an_insert_in_memory_writes(
            sectors in any::<bool>(),
            keys in proptest::collection::vec(0u64..4000, 0..3000),
            splits in proptest::collection::vec(0usize..1500, 0..3),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f.bloom");
            let f = filter(sectors);
            f.save(&path).unwrap();
            let mut want = f.clone();
            for k in &keys {
                want.insert(k);
            }
            let info = update(&path, &keys, &splits).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            prop_assert!(bytes == want.to_bytes(), "the bytes differ");
            prop_assert_eq!(info.items, want.len());
            prop_assert_eq!(info.fill_ratio, AnyFilter::Blocked(want.clone()).info().fill_ratio);
            let got = BlockedBloomFilter::load(&path).unwrap();
            prop_assert!(keys.iter().all(|k| got.contains(k)));
            prop_assert!((0..500u64).all(|k| got.contains(&k)));
            prop_assert!(temp_files(dir.path()).is_empty());
        }
    }

    /// A payload damaged after every key's block: both passes refuse it (the source's
    /// checksum, computed as it is read, is checked when the copy is complete), the file is
    /// left as it was and no copy remains; trusting the payload (`Verify::HeaderOnly`) keeps
    /// the damage and seals it with a checksum of its own.
    #[test]
    fn a_damaged_source_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bloom");
        filter(false).save(&path).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 8 - 1;
        bytes[at] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let key = |b: &BlockedBloomFilter| vec![b.hasher().hash(&1u64)];
        for seal in [true, false] {
            let up = FileUpdate::open_sweep(&path, Verify::Checksum).unwrap();
            let AnyFilter::Blocked(mut b) = AnyFilter::from_update(&up).unwrap() else {
                unreachable!()
            };
            let mut hashes = key(&b);
            let err = if seal {
                AnyFilter::Blocked(b)
                    .commit_with_keys(up, &mut hashes, &mut |_| {})
                    .unwrap_err()
            } else {
                let e = b.insert_copying(&up, &mut hashes, &mut |_| {}).unwrap_err();
                // the update refuses to go on
                assert!(up.copy_rest().is_err());
                drop(up);
                e
            };
            assert!(
                matches!(err, Error::Format(FormatError::ChecksumMismatch { .. })),
                "{err}"
            );
            assert!(
                std::fs::read(&path).unwrap() == bytes,
                "the file is as it was"
            );
            assert!(temp_files(dir.path()).is_empty());
        }
        let up = FileUpdate::open_sweep(&path, Verify::HeaderOnly).unwrap();
        let b = AnyFilter::from_update(&up).unwrap();
        let mut hashes = vec![b.hasher().hash(&1u64)];
        b.commit_with_keys(up, &mut hashes, &mut |_| {}).unwrap();
        let after = BlockedBloomFilter::load(&path).unwrap(); // a valid checksum
        assert!(after.contains(&1u64));
        assert_eq!(
            std::fs::read(&path).unwrap()[at],
            bytes[at],
            "the damage is kept"
        );
    }

    /// The pass needs an update opened for it, untouched, and the filter decoded from it.
    #[test]
    fn the_pass_refuses_what_it_cannot_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bloom");
        filter(false).save(&path).unwrap();
        let before = std::fs::read(&path).unwrap();
        let unsupported = |r: Result<u64>| matches!(r, Err(Error::Unsupported(_)));
        // copied whole before any pass
        let up = FileUpdate::open(&path, Verify::Checksum, &mut |_| {}).unwrap();
        let AnyFilter::Blocked(mut b) = AnyFilter::from_update(&up).unwrap() else {
            unreachable!()
        };
        let mut hashes = vec![b.hasher().hash(&10_000u64)];
        assert!(unsupported(b.insert_copying(&up, &mut hashes, &mut |_| {})));
        // a filter of another update
        let other = FileUpdate::open_sweep(&path, Verify::Checksum).unwrap();
        assert!(unsupported(b.insert_copying(
            &other,
            &mut hashes,
            &mut |_| {}
        )));
        drop((up, b));
        // a second pass over the same update
        let AnyFilter::Blocked(mut b) = AnyFilter::from_update(&other).unwrap() else {
            unreachable!()
        };
        assert_eq!(
            b.insert_copying(&other, &mut hashes, &mut |_| {}).unwrap(),
            1
        );
        assert!(unsupported(b.insert_copying(
            &other,
            &mut hashes,
            &mut |_| {}
        )));
        drop((other, b));
        assert!(std::fs::read(&path).unwrap() == before);
        assert!(temp_files(dir.path()).is_empty());
    }
}
