//! Batched operations of the run-time types: a slice of pre-hashed keys, each key's memory
//! prefetched [`PREFETCH_AHEAD`] keys before it is used, in input order (so the result is that
//! of the one-by-one calls; only the cache misses of consecutive keys overlap on a structure
//! larger than the caches). What streaming callers (the CLI's `add`, `check`, `count`,
//! `remove`) use instead of their own prefetch pipelines.

use crate::any::counter::AnyCounter;
use crate::any::filter::AnyFilter;
use crate::error::{Error, Result};
use crate::filter::RemoveError;
use crate::hash::Hashed;
use crate::store::Pipeline;

/// How many keys ahead of its use a batched operation prefetches a key's memory.
pub const PREFETCH_AHEAD: usize = 16;

/// Call `f(s, i, h)` for every hash of `hashes` in order, `PREFETCH_AHEAD` keys after
/// `prefetch(s, h)`; stops at the first error.
pub(crate) fn pipelined<S, E>(
    s: &mut S,
    hashes: &[Hashed],
    prefetch: impl Fn(&S, Hashed),
    mut f: impl FnMut(&mut S, usize, Hashed) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let mut pipe = Pipeline::<(usize, Hashed), PREFETCH_AHEAD>::default();
    for (i, &h) in hashes.iter().enumerate() {
        prefetch(s, h);
        if let Some((j, due)) = pipe.push((i, h)) {
            f(s, j, due)?;
        }
    }
    for (j, due) in pipe.drain() {
        f(s, j, due)?;
    }
    Ok(())
}

impl AnyFilter {
    /// Insert pre-hashed keys in order, prefetching ahead; returns how many were new. Stops at
    /// the first key the filter refuses (a kind without a pre-hashed path, a non-scaling
    /// filter at capacity), with that key's index in `hashes`; the keys before it are in.
    ///
    /// ```
    /// use bloomery::{AnyFilter, Kind, KeySet};
    ///
    /// # fn main() -> bloomery::Result<()> {
    /// let mut f = AnyFilter::builder(Kind::Blocked).capacity(1000).fpr(0.01).try_build()?;
    /// let hashes: Vec<_> = (0..100u32).map(|i| f.hasher().hash(&i)).collect();
    /// assert_eq!(f.insert_hashed_batch(&hashes).map_err(|(_, e)| e)?, 100);
    /// let mut found = Vec::new();
    /// f.contains_hashed_batch(&hashes, &mut found)?;
    /// assert!(found.iter().all(|&b| b));
    /// # Ok(()) }
    /// ```
    pub fn insert_hashed_batch(
        &mut self,
        hashes: &[Hashed],
    ) -> std::result::Result<u64, (usize, Error)> {
        if let AnyFilter::Blocked(b) = self {
            let before = crate::filter::Filter::len(b);
            b.insert_pipelined(hashes.iter().copied());
            return Ok(crate::filter::Filter::len(b) - before);
        }
        let mut new = 0;
        pipelined(
            self,
            hashes,
            |f, h| f.prefetch_hashed(h),
            |f, i, h| {
                new += u64::from(f.try_insert_hashed(h).map_err(|e| (i, e))?);
                Ok(())
            },
        )?;
        Ok(new)
    }

    /// Query pre-hashed keys in order, prefetching ahead: `out` gets one answer per key
    /// (cleared first). An error for a kind without a pre-hashed path.
    pub fn contains_hashed_batch(&self, hashes: &[Hashed], out: &mut Vec<bool>) -> Result<()> {
        out.clear();
        match self {
            // the blocked filter's own pipeline: one jump into its path's loop
            AnyFilter::Blocked(b) => {
                out.resize(hashes.len(), false);
                return b.contains_hashed_batch(hashes, out);
            }
            // the scalable filter's: its sub-filters' pipelines
            AnyFilter::Scalable(s) => {
                out.resize(hashes.len(), false);
                return s.contains_hashed_batch(hashes, out);
            }
            _ => {}
        }
        pipelined(
            &mut &*self,
            hashes,
            |f, h| f.prefetch_hashed(h),
            |f, _, h| {
                out.push(f.try_contains_hashed(h)?);
                Ok(())
            },
        )
    }
}

impl AnyCounter {
    /// Add one occurrence of each pre-hashed key in order, prefetching ahead. Stops at the
    /// first key refused (a full d-left filter), with its index in `hashes`; the keys before
    /// it are in, that key and the rest are not.
    pub fn insert_hashed_batch(
        &mut self,
        hashes: &[Hashed],
    ) -> std::result::Result<(), (usize, Error)> {
        pipelined(
            self,
            hashes,
            |f, h| f.prefetch_hashed(h),
            |f, i, h| f.insert_hashed(h).map_err(|e| (i, e)),
        )
    }

    /// The estimated count of each pre-hashed key, in order, prefetching ahead: `out` gets one
    /// count per key (cleared first).
    pub fn count_hashed_batch(&self, hashes: &[Hashed], out: &mut Vec<u64>) {
        out.clear();
        let _ = pipelined::<_, ()>(
            &mut &*self,
            hashes,
            |f, h| f.prefetch_hashed(h),
            |f, _, h| {
                out.push(f.count_hashed(h));
                Ok(())
            },
        );
    }

    /// Remove one occurrence of each pre-hashed key in order, prefetching ahead: `out` gets
    /// one result per key (cleared first), [`RemoveError::NotPresent`] for an absent key
    /// (nothing changed for it). Kinds without deletion answer
    /// [`RemoveError::Unsupported`] for every key.
    pub fn remove_hashed_batch(
        &mut self,
        hashes: &[Hashed],
        out: &mut Vec<std::result::Result<(), RemoveError>>,
    ) {
        out.clear();
        let _ = pipelined::<_, ()>(
            self,
            hashes,
            |f, h| f.prefetch_hashed(h),
            |f, _, h| {
                out.push(f.remove_hashed(h));
                Ok(())
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::any::spec::KindOptions;
    use crate::any::spec::Spec;
    use crate::filter::Sizing;
    use crate::kind::Kind;

    /// Batches answer exactly as one-by-one calls, across the prefetch distance and with
    /// repeats inside it.
    #[test]
    fn batches_equal_one_by_one_calls() {
        let hashes: Vec<Hashed> = (0..500u32)
            .map(|i| crate::hash::KeyHasher::new().hash(&(i % 170)))
            .collect();
        for &kind in Kind::COUNTERS {
            let o = if kind == Kind::CountMin {
                Spec::new(kind).options(KindOptions {
                    width: Some(300),
                    depth: Some(4),
                    ..KindOptions::default()
                })
            } else {
                Spec::new(kind).sizing(Sizing::default().capacity(400).fpr(0.01))
            };
            let mut a = AnyCounter::try_from_spec(&o).unwrap();
            let mut b = a.clone();
            a.insert_hashed_batch(&hashes).unwrap();
            for &h in &hashes {
                b.insert_hashed(h).unwrap();
            }
            let mut counts = Vec::new();
            a.count_hashed_batch(&hashes, &mut counts);
            if kind != Kind::SpaceCode {
                // space-code inserts draw their group at random
                assert_eq!(a.to_bytes(), b.to_bytes(), "{kind}");
            }
            for (i, &h) in hashes.iter().enumerate() {
                assert_eq!(counts[i], a.count_hashed(h), "{kind}");
            }
            let mut removed = Vec::new();
            a.remove_hashed_batch(&hashes[..200], &mut removed);
            for (i, &h) in hashes[..200].iter().enumerate() {
                assert_eq!(removed[i], b.remove_hashed(h), "{kind} {i}");
            }
        }
        for &kind in Kind::SETS {
            let mut f = AnyFilter::builder(kind)
                .capacity(400)
                .fpr(0.01)
                .try_build()
                .unwrap();
            let mut g = f.clone();
            let r = f.insert_hashed_batch(&hashes);
            if kind == Kind::Mlbf {
                assert_eq!(r.unwrap_err().0, 0);
                continue;
            }
            let new: u64 = hashes
                .iter()
                .map(|&h| u64::from(g.try_insert_hashed(h).unwrap()))
                .sum();
            assert_eq!(r.unwrap(), new, "{kind}");
            assert_eq!(f, g, "{kind}");
            let mut found = Vec::new();
            f.contains_hashed_batch(&hashes, &mut found).unwrap();
            assert!(found.iter().all(|&x| x), "{kind}");
            // absent keys: the same answers, false positives included
            let absent: Vec<Hashed> = (1000..3000u32)
                .map(|i| crate::hash::KeyHasher::new().hash(&i))
                .collect();
            f.contains_hashed_batch(&absent, &mut found).unwrap();
            assert_eq!(found.len(), absent.len(), "{kind}");
            for (i, &h) in absent.iter().enumerate() {
                assert_eq!(found[i], f.try_contains_hashed(h).unwrap(), "{kind} {i}");
            }
        }
    }
}
