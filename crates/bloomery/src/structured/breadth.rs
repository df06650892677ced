//! The Breadth Bloom filter: [`BreadthBloomFilter`] (its docs say which paper it follows and when
//! to pick it).

use std::collections::{HashMap, HashSet};

use crate::error::{inconsistent, invalid, Result};
use crate::filter::{Filter, Stats};
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::{
    Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::sets::blocked::BlockedBloomFilter;
use crate::store;
use crate::structured::tree_path::{self, PathQuery};

/// Options for a [`BreadthBloomFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::BreadthBloomFilter;
///
/// let paths = [vec!["library", "book", "title"]];
/// let f = BreadthBloomFilter::builder().fpr(0.001).try_build(&paths)?;
/// assert!(f.matches("/library/book")?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BreadthBuilder {
    fpr: f64,
    hasher: KeyHasher,
    max_bytes: u64,
}

impl BreadthBuilder {
    crate::filter::hashing_setters!();

    /// False-positive rate of each level filter (default 0.01).
    pub fn fpr(mut self, p: f64) -> Self {
        self.fpr = p;
        self
    }

    /// Build from a tree's root-to-node paths (see [`tree_path`](crate::keys::PathQuery)); each level filter is
    /// sized for the distinct names at its level.
    pub fn try_build<P: AsRef<[S]>, S: AsRef<str>>(
        self,
        paths: &[P],
    ) -> Result<BreadthBloomFilter> {
        crate::params::check_fpr(self.fpr)?;
        let depth = tree_path::check_paths(paths)?;
        let mut levels: Vec<HashSet<String>> = vec![HashSet::new(); depth + 1];
        for p in paths {
            for (i, s) in p.as_ref().iter().enumerate() {
                levels[0].insert(s.as_ref().to_owned());
                levels[i + 1].insert(s.as_ref().to_owned());
            }
        }
        let filters = tree_path::level_filters(&levels, self.fpr, self.hasher, self.max_bytes)?;
        Ok(BreadthBloomFilter {
            hasher: self.hasher,
            fpr: self.fpr,
            filters,
        })
    }
}

/// The Breadth Bloom filter (BBF) for path queries over trees (Salman §6.1, Koloniari &
/// Pitoura): one filter BBF_i per tree level i (root = level 1) holding the element names at
/// that level, plus BBF₀ holding every name.
///
/// Queries (Salman §6.1, implemented as written):
/// - every name of the query must be in BBF₀ (one hash per name, reused for every level);
/// - **root path** `/a₁/…/a_p`: `a_i ∈ BBF_i` for i = 1..p;
/// - **partial path** `a₁/…/a_p`: try start levels i = 1, 2, …; at each, check `a_j` in
///   `BBF_{i+j-1}` until a miss (then the next start level) or a full match;
/// - **ancestor-descendant** `P₁//P₂//…`: each part is matched as above and the matches are
///   compared: part r+1 must start at a level below where part r ended. Taking for each part
///   the earliest-ending match is enough to decide whether a consistent choice exists.
///
/// The structure forgets which node is under which, so it has the paper's extra false positive
/// (Salman §7): in the tree with paths /A/B/D and /A/C/E, the query /A/C/D matches (C is at level
/// 2, D at level 3) although no C has a child D. Its rate grows with the tree's fan-out.
///
/// **When to pick it:** summaries of many small documents for routing root and partial path
/// queries, when the trees are shallow and wide; the [`crate::DepthBloomFilter`] avoids the
/// level-mixing false positive at the price of storing every sub-path.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::BreadthBloomFilter;
///
/// let paths = [vec!["library", "book", "title"], vec!["library", "dvd"]];
/// let f = BreadthBloomFilter::try_from_paths(&paths, 0.01)?;
/// assert!(f.matches("/library/book")?); // rooted: from the top level
/// assert!(f.matches("book/title")?); // partial: anywhere
/// assert!(!f.matches("/book")?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BreadthBloomFilter {
    hasher: KeyHasher,
    fpr: f64,
    /// BBF₀ then BBF₁ … BBF_depth.
    filters: Vec<BlockedBloomFilter>,
}

impl BreadthBloomFilter {
    /// A builder (level rate 0.01, default hasher).
    pub fn builder() -> BreadthBuilder {
        BreadthBuilder {
            fpr: 0.01,
            hasher: KeyHasher::new(),
            max_bytes: store::max_bytes(),
        }
    }

    /// Build from root-to-node paths with level rate `fpr`.
    pub fn try_from_paths<P: AsRef<[S]>, S: AsRef<str>>(paths: &[P], fpr: f64) -> Result<Self> {
        Self::builder().fpr(fpr).try_build(paths)
    }

    /// Tree levels j (the filter holds j + 1 sub-filters).
    pub fn levels(&self) -> usize {
        self.filters.len() - 1
    }
    /// The sub-filters: BBF₀, BBF₁, …
    pub fn filters(&self) -> &[BlockedBloomFilter] {
        &self.filters
    }
    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
    /// Total bits.
    pub fn bit_len(&self) -> u64 {
        self.filters.iter().map(Stats::bit_len).sum()
    }

    /// Add a root-to-node path (its depth must not exceed [`levels`](Self::levels)). Level
    /// filters past their capacity lose accuracy; rebuild when the tree grows much.
    pub fn insert_path<S: AsRef<str>>(&mut self, path: &[S]) -> Result<()> {
        tree_path::check_paths(&[path])?;
        if path.len() > self.levels() {
            return Err(invalid(
                "paths",
                format!(
                    "depth {} exceeds the filter's {} levels",
                    path.len(),
                    self.levels()
                ),
            ));
        }
        for (i, s) in path.iter().enumerate() {
            let h = self.hasher.hash(s.as_ref());
            self.filters[0].insert_hashed(h);
            self.filters[i + 1].insert_hashed(h);
        }
        Ok(())
    }

    /// Does the (parsed) query possibly match? `false` is certain.
    pub fn matches_query(&self, q: &PathQuery) -> bool {
        // Step 1 (Salman §6.1): every element in BBF₀; hash each name once.
        let mut hashes: HashMap<&str, Hashed> = HashMap::new();
        for n in q.names() {
            let h = *hashes.entry(n).or_insert_with(|| self.hasher.hash(n));
            if !self.filters[0].contains_hashed(h) {
                return false;
            }
        }
        let at = |level: usize, name: &str| {
            level < self.filters.len() && self.filters[level].contains_hashed(hashes[name])
        };
        let fits =
            |start: usize, part: &[String]| part.iter().enumerate().all(|(j, n)| at(start + j, n));
        // `end`: level of the last element matched so far (0 before the first part).
        let mut end = 0usize;
        for (r, part) in q.parts.iter().enumerate() {
            if r == 0 && q.rooted {
                if !fits(1, part) {
                    return false;
                }
                end = part.len();
                continue;
            }
            // partial path: the earliest start level below `end` that matches
            match (end + 1..self.filters.len()).find(|&s| fits(s, part)) {
                Some(s) => end = s + part.len() - 1,
                None => return false,
            }
        }
        true
    }

    /// Parse and match a query (`/a/b`, `a/b`, `a//b`).
    pub fn matches(&self, query: &str) -> Result<bool> {
        Ok(self.matches_query(&PathQuery::parse(query)?))
    }
}

impl Persist for BreadthBloomFilter {
    const KIND: Kind = Kind::Breadth;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Breadth, self.hasher);
        h.items = self.filters[0].len();
        h.target_fpr = self.fpr;
        h.params = tree_path::encode_filters(ParamWriter::new(), &self.filters).finish();
        (
            h,
            Payload::new(self.filters.iter().map(|f| f.words_ref()).collect()),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let filters = tree_path::decode_filters(&mut r, d, src, limit)?;
        r.finish()?;
        let fpr = d.header.target_fpr;
        if filters.len() < 2 || !(fpr > 0.0 && fpr < 1.0) {
            return Err(inconsistent("bbf needs BBF0, one level and a rate"));
        }
        Ok(Self {
            hasher: d.header.hasher,
            fpr,
            filters,
        })
    }
}

impl crate::dispatch::OtherKind for BreadthBloomFilter {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        insert: true,
        ..crate::kind::Capabilities::NONE
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structured::tree_path::test_trees::{trees, true_queries};
    use proptest::prelude::*;

    fn paper_tree() -> BreadthBloomFilter {
        // Salman §7's example: /A/B/D and /A/C/E exist, /A/C/D does not.
        BreadthBloomFilter::builder()
            .fpr(1e-6)
            .try_build(&[vec!["A", "B", "D"], vec!["A", "C", "E"]])
            .unwrap()
    }

    #[test]
    fn paper_false_positive_a_c_d() {
        let f = paper_tree();
        assert_eq!(f.levels(), 3);
        assert!(f.matches("/A/B/D").unwrap());
        assert!(f.matches("/A/C/E").unwrap());
        // the BBF's extra false positive (Salman §7): C at level 2, D at level 3
        assert!(f.matches("/A/C/D").unwrap());
        assert!(f.matches("C/D").unwrap());
        // what it still rejects
        assert!(!f.matches("/A/D").unwrap()); // D is not at level 2
        assert!(!f.matches("/B").unwrap()); // B is not the root
        assert!(!f.matches("D/A").unwrap()); // nothing below level 3
        assert!(!f.matches("/A/B/D/E").unwrap());
        assert!(!f.matches("X").unwrap()); // not in BBF₀
        assert!(f.matches("A//E").unwrap());
        assert!(!f.matches("D//A").unwrap());
        assert!(!f.matches("B//C").unwrap()); // both at level 2
    }

    #[test]
    fn dbf_example_is_a_bbf_false_positive_too() {
        let f = BreadthBloomFilter::try_from_paths(
            &[vec!["a", "b", "c", "d"], vec!["a", "x", "m", "n"]],
            1e-6,
        )
        .unwrap();
        assert!(f.matches("a/b//m/n").unwrap());
        assert!(!f.matches("m/n//a").unwrap());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        #[test]
        fn no_false_negatives(paths in trees()) {
            let f = BreadthBloomFilter::try_from_paths(&paths, 0.01).unwrap();
            for q in true_queries(&paths) {
                prop_assert!(f.matches(&q).unwrap(), "{}", q);
            }
            let g = BreadthBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            prop_assert_eq!(&g, &f);
        }
    }

    #[test]
    fn insert_path_and_errors() {
        let mut f = paper_tree();
        assert!(!f.matches("/A/F").unwrap());
        f.insert_path(&["A", "F"]).unwrap();
        assert!(f.matches("/A/F").unwrap());
        assert!(f.insert_path(&["A", "B", "C", "D"]).is_err());
        assert!(f.insert_path::<&str>(&[]).is_err());
        assert!(f.matches("a///b").is_err());
        assert!(f.matches("").is_err());
        assert!(BreadthBloomFilter::try_from_paths(&[vec!["a", ""]], 0.01).is_err());
        assert!(BreadthBloomFilter::try_from_paths(&[vec!["a"]], 0.0).is_err());
        assert!(BreadthBloomFilter::try_from_paths::<Vec<&str>, &str>(&[], 0.01).is_err());
        assert!(BreadthBloomFilter::builder()
            .max_bytes(10)
            .try_build(&[vec!["a"]])
            .is_err());
        let bytes = f.to_bytes();
        assert!(BreadthBloomFilter::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(crate::sets::scalable::ScalableBloomFilter::from_bytes(&bytes).is_err());
    }
}
