//! The Depth Bloom filter: [`DepthBloomFilter`] (its docs say which paper it follows and when to
//! pick it).

use std::collections::{HashMap, HashSet};

use crate::error::{inconsistent, invalid, Result};
use crate::filter::{Filter, Stats};
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::{
    Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::sets::blocked::BlockedBloomFilter;
use crate::store;
use crate::structured::tree_path::{self, PathQuery, MAX_DEPTH};

/// Options for a [`DepthBloomFilter`].
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::DepthBloomFilter;
///
/// let paths = [vec!["library", "book", "title"]];
/// let f = DepthBloomFilter::builder().fpr(0.001).max_path_length(8).try_build(&paths)?;
/// assert!(f.matches("library//title")?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DepthBuilder {
    fpr: f64,
    max_len: Option<usize>,
    hasher: KeyHasher,
    max_bytes: u64,
}

impl DepthBuilder {
    crate::filter::hashing_setters!();

    /// False-positive rate of each length filter (default 0.01).
    pub fn fpr(mut self, p: f64) -> Self {
        self.fpr = p;
        self
    }
    /// Store paths of at most this many edges (filters DBF₀..DBF_len); default: the tree's
    /// depth minus one (every path).
    pub fn max_path_length(mut self, len: usize) -> Self {
        self.max_len = Some(len);
        self
    }

    /// Build from a tree's root-to-node paths (see [`tree_path`](crate::keys::PathQuery)).
    pub fn try_build<P: AsRef<[S]>, S: AsRef<str>>(self, paths: &[P]) -> Result<DepthBloomFilter> {
        crate::params::check_fpr(self.fpr)?;
        let depth = tree_path::check_paths(paths)?;
        let filters = match self.max_len {
            Some(l) if l >= MAX_DEPTH => {
                return Err(invalid(
                    "max_path_length",
                    format!("must be below {MAX_DEPTH}"),
                ))
            }
            Some(l) => l + 1,
            None => depth,
        };
        let mut levels: Vec<HashSet<String>> = vec![HashSet::new(); filters];
        for p in paths {
            for_each_key(p.as_ref(), filters, |len, key| {
                levels[len].insert(key);
            });
        }
        let filters = tree_path::level_filters(&levels, self.fpr, self.hasher, self.max_bytes)?;
        Ok(DepthBloomFilter {
            hasher: self.hasher,
            fpr: self.fpr,
            filters,
        })
    }
}

/// Call `f(edges, key)` for every sub-path of `path` with fewer than `filters` edges, and for
/// the marked root prefixes.
fn for_each_key<S: AsRef<str>>(path: &[S], filters: usize, mut f: impl FnMut(usize, String)) {
    let names: Vec<&str> = path.iter().map(AsRef::as_ref).collect();
    // every sub-path ending at the last node (the others end at a prefix, given as its own
    // path or implied: include them all so the input need only list the leaves)
    for e in 1..=names.len() {
        for s in 0..e {
            let len = e - s - 1;
            if len >= filters {
                continue;
            }
            let key = names[s..e].join("/");
            if s == 0 {
                f(len, format!("/{key}"));
            }
            f(len, key);
        }
    }
}

/// The Depth Bloom filter (DBF) for path queries over trees (Salman §6.2, Koloniari &
/// Pitoura): filter DBF_i holds every path of length i (i + 1 nodes) of the tree, inserted as a
/// whole — the hash of the names joined by `/` — and the paths that start at the root are also
/// inserted in a marked form (a leading `/`), so root queries are checked against root paths.
/// DBF₀ holds the single elements (and the marked root element).
///
/// Queries (Salman §6.2, as written): every element of the query must be in DBF₀; then root and
/// partial paths are treated alike: for a (part of a) query of p names, every contiguous
/// sub-path of 2..p names is checked in the filter of its length (sub-paths longer than the
/// deepest filter are checked through their shorter sub-paths only). A root query also checks
/// its marked prefixes. With `//` the query is split at each `//` and every part is checked
/// this way; the query matches when all parts do.
///
/// Nothing relates the parts of a `//` query, which is the paper's DBF false positive (Salman §7):
/// with paths a/b/c/d and m/n in the tree (here /a/b/c/d and /a/x/m/n), the query a/b//m/n is
/// split into a/b and m/n, both present, and matches although m is not below b. In exchange a
/// DBF does not mix levels: in the tree /A/B/D, /A/C/E it rejects /A/C/D, which a
/// [`crate::BreadthBloomFilter`] accepts.
///
/// **When to pick it:** when queries are mostly root or partial paths and the trees are deep or
/// have repeated names across levels; it stores every sub-path (O(nodes · depth) keys), so cap
/// it with [`DepthBuilder::max_path_length`] for very deep trees.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::DepthBloomFilter;
///
/// let paths = [vec!["library", "book", "title"], vec!["library", "dvd"]];
/// let f = DepthBloomFilter::try_from_paths(&paths, 0.01)?;
/// assert!(f.matches("book/title")?);
/// assert!(f.matches("library//title")?); // `//`: any number of levels between
/// assert!(!f.matches("dvd/title")?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DepthBloomFilter {
    hasher: KeyHasher,
    fpr: f64,
    /// DBF₀ (elements), DBF₁ (paths of one edge), …
    filters: Vec<BlockedBloomFilter>,
}

impl DepthBloomFilter {
    /// A builder (rate 0.01, every path length, default hasher).
    pub fn builder() -> DepthBuilder {
        DepthBuilder {
            fpr: 0.01,
            max_len: None,
            hasher: KeyHasher::new(),
            max_bytes: store::max_bytes(),
        }
    }

    /// Build from root-to-node paths with rate `fpr` per length filter.
    pub fn try_from_paths<P: AsRef<[S]>, S: AsRef<str>>(paths: &[P], fpr: f64) -> Result<Self> {
        Self::builder().fpr(fpr).try_build(paths)
    }

    /// The sub-filters: DBF₀, DBF₁, …
    pub fn filters(&self) -> &[BlockedBloomFilter] {
        &self.filters
    }
    /// Longest path length stored (edges).
    pub fn max_path_length(&self) -> usize {
        self.filters.len() - 1
    }
    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
    /// Total bits.
    pub fn bit_len(&self) -> u64 {
        self.filters.iter().map(Stats::bit_len).sum()
    }

    /// Add a root-to-node path and all its sub-paths.
    pub fn insert_path<S: AsRef<str>>(&mut self, path: &[S]) -> Result<()> {
        tree_path::check_paths(&[path])?;
        let n = self.filters.len();
        let (hasher, filters) = (self.hasher, &mut self.filters);
        for_each_key(path, n, |len, key| {
            filters[len].insert_hashed(hasher.hash(key.as_str()));
        });
        Ok(())
    }

    fn has(&self, names: &[String], rooted: bool) -> bool {
        let len = names.len() - 1;
        if len >= self.filters.len() {
            return true; // not stored: checked through its sub-paths
        }
        let key = names.join("/");
        let h: Hashed = if rooted {
            self.hasher.hash(format!("/{key}").as_str())
        } else {
            self.hasher.hash(key.as_str())
        };
        self.filters[len].contains_hashed(h)
    }

    /// Does the (parsed) query possibly match? `false` is certain.
    pub fn matches_query(&self, q: &PathQuery) -> bool {
        let mut seen: HashMap<&str, bool> = HashMap::new();
        for n in q.names() {
            let ok = *seen
                .entry(n)
                .or_insert_with(|| self.filters[0].contains_hashed(self.hasher.hash(n)));
            if !ok {
                return false;
            }
        }
        for (r, part) in q.parts.iter().enumerate() {
            let p = part.len();
            if r == 0 && q.rooted {
                for e in 1..=p.min(self.filters.len()) {
                    if !self.has(&part[..e], true) {
                        return false;
                    }
                }
            }
            for l in 2..=p.min(self.filters.len()) {
                for s in 0..=p - l {
                    if !self.has(&part[s..s + l], false) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Parse and match a query (`/a/b`, `a/b`, `a//b`).
    pub fn matches(&self, query: &str) -> Result<bool> {
        Ok(self.matches_query(&PathQuery::parse(query)?))
    }
}

impl Persist for DepthBloomFilter {
    const KIND: Kind = Kind::Depth;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Depth, self.hasher);
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
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(inconsistent("dbf needs a rate"));
        }
        Ok(Self {
            hasher: d.header.hasher,
            fpr,
            filters,
        })
    }
}

impl crate::dispatch::OtherKind for DepthBloomFilter {
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

    #[test]
    fn paper_false_positive_a_b_m_n() {
        // Salman §7: paths a/b/c/d and m/n; a/b//m/n is split into a/b and m/n, both present.
        let f = DepthBloomFilter::try_from_paths(
            &[vec!["a", "b", "c", "d"], vec!["a", "x", "m", "n"]],
            1e-6,
        )
        .unwrap();
        assert_eq!(f.max_path_length(), 3);
        assert!(f.matches("a/b//m/n").unwrap()); // the DBF's extra false positive
        assert!(f.matches("/a/b//m/n").unwrap());
        assert!(f.matches("/a/b/c/d").unwrap());
        assert!(f.matches("x/m/n").unwrap());
        assert!(f.matches("a//n").unwrap());
        assert!(!f.matches("/b/c").unwrap()); // b/c exists, but not from the root
        assert!(!f.matches("a/m").unwrap());
        assert!(!f.matches("b/c/n").unwrap());
        assert!(!f.matches("a/b//q").unwrap());
    }

    #[test]
    fn rejects_the_bbf_false_positive() {
        let f = DepthBloomFilter::try_from_paths(&[vec!["A", "B", "D"], vec!["A", "C", "E"]], 1e-6)
            .unwrap();
        assert!(f.matches("/A/B/D").unwrap());
        assert!(!f.matches("/A/C/D").unwrap());
    }

    #[test]
    fn capped_path_length_keeps_zero_false_negatives() {
        let paths = [vec!["r", "a", "b", "c", "d", "e"]];
        let f = DepthBloomFilter::builder()
            .max_path_length(2)
            .fpr(1e-6)
            .try_build(&paths)
            .unwrap();
        assert_eq!(f.filters().len(), 3);
        assert!(f.matches("/r/a/b/c/d/e").unwrap());
        assert!(f.matches("a/b/c/d").unwrap());
        assert!(!f.matches("a/c/d").unwrap());
        assert!(!f.matches("/a/b/c/d").unwrap());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        #[test]
        fn no_false_negatives(paths in trees(), cap in prop::option::of(0usize..4)) {
            let mut b = DepthBloomFilter::builder().fpr(0.01);
            if let Some(c) = cap {
                b = b.max_path_length(c);
            }
            let f = b.try_build(&paths).unwrap();
            for q in true_queries(&paths) {
                prop_assert!(f.matches(&q).unwrap(), "{}", q);
            }
            let g = DepthBloomFilter::from_bytes(&f.to_bytes()).unwrap();
            prop_assert_eq!(&g, &f);
        }
    }

    #[test]
    fn insert_path_and_errors() {
        let mut f = DepthBloomFilter::try_from_paths(&[vec!["a", "b"]], 1e-4).unwrap();
        assert!(!f.matches("/a/c").unwrap());
        f.insert_path(&["a", "c", "d", "e"]).unwrap();
        assert!(f.matches("/a/c").unwrap() && f.matches("c/d").unwrap());
        assert!(f.insert_path(&["a", "b/c"]).is_err());
        assert!(f.matches("a//").is_err());
        assert!(DepthBloomFilter::try_from_paths(&[vec!["a"]], 2.0).is_err());
        assert!(DepthBloomFilter::builder()
            .max_path_length(MAX_DEPTH)
            .try_build(&[vec!["a"]])
            .is_err());
        assert!(DepthBloomFilter::builder()
            .max_bytes(10)
            .try_build(&[vec!["a"]])
            .is_err());
        let bytes = f.to_bytes();
        assert!(DepthBloomFilter::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(crate::structured::breadth::BreadthBloomFilter::from_bytes(&bytes).is_err());
    }
}
