//! What the tree-path filters share ([`crate::BreadthBloomFilter`], [`crate::DepthBloomFilter`],
//! Salman §6): the in-crate tree representation, path-query parsing, and the persistence of a
//! list of sub-filters.
//!
//! **Trees** are given as root-to-node paths of element names (`["a", "b", "c"]` is the node
//! `c` under `b` under the root `a`); every prefix of a given path is a node too, so the
//! root-to-leaf paths suffice. Siblings with equal names collapse, which changes nothing for path
//! queries. No XML parser is needed here: the CLI turns documents into such paths.
//!
//! **Queries** are XPath-like: `/a/b/c` (a root path), `a/b` (a partial path, anywhere in the
//! tree), and the ancestor-descendant axis `//` anywhere (`a//b`, `/a/b//c/d`, `//c`).
//! Element names are non-empty and contain no `/`.

use std::collections::HashSet;

use crate::error::{inconsistent, invalid, Result};
use crate::hash::KeyHasher;
use crate::io::format::Source;
use crate::io::format::{self, Decoded, ParamReader, ParamWriter};
use crate::sets::blocked::BlockedBloomFilter;
use crate::store;

/// Largest tree depth (and number of sub-filters) accepted.
pub const MAX_DEPTH: usize = 1024;

/// A parsed path query: steps split at `//`.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::keys::PathQuery;
///
/// let q = PathQuery::parse("/a/b//c")?;
/// assert!(q.rooted);
/// assert_eq!(q.parts, vec![vec!["a".to_string(), "b".to_string()], vec!["c".to_string()]]);
/// assert!(PathQuery::parse("a//").is_err()); // an empty step
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathQuery {
    /// True when the query starts with a single `/` (the first part starts at the root).
    pub rooted: bool,
    /// The parts between `//` axes; each is a child-axis path of one or more names.
    pub parts: Vec<Vec<String>>,
}

impl PathQuery {
    /// Parse `/a/b`, `a/b`, `a//b`, `//a/b` (the last is the same as the partial `a/b`).
    pub fn parse(q: &str) -> Result<Self> {
        let q = q.trim();
        if q.is_empty() {
            return Err(invalid("query", "empty path"));
        }
        let (rooted, body) = if let Some(rest) = q.strip_prefix("//") {
            (false, rest)
        } else if let Some(rest) = q.strip_prefix('/') {
            (true, rest)
        } else {
            (false, q)
        };
        let mut parts = Vec::new();
        for part in body.split("//") {
            let names: Vec<String> = part.split('/').map(str::to_owned).collect();
            if names.iter().any(String::is_empty) {
                return Err(invalid("query", format!("empty step in {q:?}")));
            }
            parts.push(names);
        }
        Ok(Self { rooted, parts })
    }

    /// Every name in the query.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().flatten().map(String::as_str)
    }
}

/// Validate tree paths: non-empty paths of non-empty names without `/`, depth ≤ [`MAX_DEPTH`].
pub(crate) fn check_paths<P: AsRef<[S]>, S: AsRef<str>>(paths: &[P]) -> Result<usize> {
    if paths.is_empty() {
        return Err(invalid("paths", "no paths: the tree needs at least a root"));
    }
    let mut depth = 0;
    for p in paths {
        let p = p.as_ref();
        if p.is_empty() {
            return Err(invalid("paths", "a path needs at least the root element"));
        }
        if p.len() > MAX_DEPTH {
            return Err(invalid("paths", format!("deeper than {MAX_DEPTH}")));
        }
        for s in p {
            let s = s.as_ref();
            if s.is_empty() || s.contains('/') {
                return Err(invalid("paths", format!("bad element name {s:?}")));
            }
        }
        depth = depth.max(p.len());
    }
    Ok(depth)
}

/// Build one blocked filter per level for the given distinct keys.
pub(crate) fn level_filters(
    levels: &[HashSet<String>],
    fpr: f64,
    hasher: KeyHasher,
    max_bytes: u64,
) -> Result<Vec<BlockedBloomFilter>> {
    let mut out = Vec::with_capacity(levels.len());
    let mut used = 0u64;
    for keys in levels {
        let mut f = BlockedBloomFilter::builder()
            // composite payloads store positions-layout sub-filters (no layout field)
            .layout(crate::sets::blocked::BlockLayout::Positions)
            .capacity((keys.len() as u64).max(1))
            .fpr(fpr)
            .hasher(hasher)
            .max_bytes(max_bytes.saturating_sub(used))
            .try_build()
            .map_err(|e| crate::store::whole_after_growth(e, used, max_bytes))?;
        used += f.blocks() * 64;
        for k in keys {
            crate::filter::Filter::insert(&mut f, k.as_str());
        }
        out.push(f);
    }
    Ok(out)
}

/// Parameters describing a list of blocked sub-filters (scalable.rs's layout).
pub(crate) fn encode_filters(mut w: ParamWriter, filters: &[BlockedBloomFilter]) -> ParamWriter {
    use crate::filter::Stats;
    w = w.u32(filters.len() as u32);
    for f in filters {
        w = w
            .u64(f.blocks())
            .u32(f.hashes())
            .u64(f.capacity())
            .f64(f.target_fpr())
            .u64(crate::filter::Filter::len(f));
    }
    w
}

/// Decode the sub-filters described by `r` from the payload, validating every field.
pub(crate) fn decode_filters(
    r: &mut ParamReader<'_>,
    d: &Decoded,
    src: Source<'_>,
    limit: u64,
) -> Result<Vec<BlockedBloomFilter>> {
    let count = r.u32()? as usize;
    if count == 0 || count > MAX_DEPTH + 1 {
        return Err(inconsistent(format!("{count} sub-filters")));
    }
    let mut filters = Vec::with_capacity(count);
    let mut offset = d.payload_offset;
    let mut total = 0u64;
    for _ in 0..count {
        let blocks = r.u64()?;
        let k = r.u32()?;
        let capacity = r.u64()?;
        let fpr = r.f64()?;
        let items = r.u64()?;
        let words = blocks
            .checked_mul(8)
            .and_then(|w| usize::try_from(w).ok())
            .ok_or_else(|| inconsistent("too many blocks"))?;
        total = total.saturating_add(format::padded_len(words));
        if total > d.payload_len as u64 {
            return Err(inconsistent("sub-filters exceed the payload"));
        }
        if src.copies() {
            // a mapped file's sub-filters are its pages, not the heap the limit bounds
            store::check_size(total, limit)?;
        }
        let w = src.words(offset, words, limit)?;
        offset += format::padded_len(words) as usize;
        filters.push(BlockedBloomFilter::from_parts(
            blocks,
            k,
            d.header.hasher,
            w,
            items,
            capacity,
            fpr,
        )?);
    }
    if total != d.payload_len as u64 {
        return Err(inconsistent("payload longer than the sub-filters"));
    }
    Ok(filters)
}

#[cfg(test)]
pub(crate) mod test_trees {
    use proptest::prelude::*;

    /// Random trees as root-to-leaf paths over a small alphabet (so names repeat across levels).
    pub fn trees() -> impl Strategy<Value = Vec<Vec<String>>> {
        prop::collection::vec(
            prop::collection::vec(
                prop::sample::select(vec!["a", "b", "c", "d", "e", "f"]),
                1..7,
            ),
            1..12,
        )
        .prop_map(|ps| {
            ps.into_iter()
                .map(|p| {
                    let mut v = vec!["r".to_string()];
                    v.extend(p.into_iter().map(String::from));
                    v
                })
                .collect()
        })
    }

    /// Queries that are true of `paths`: every root path, every partial path, and `//` queries
    /// formed from a real path.
    pub fn true_queries(paths: &[Vec<String>]) -> Vec<String> {
        let mut out = Vec::new();
        for p in paths {
            for e in 1..=p.len() {
                out.push(format!("/{}", p[..e].join("/")));
                for s in 0..e {
                    out.push(p[s..e].join("/"));
                    out.push(format!("//{}", p[s..e].join("/")));
                }
            }
            for i in 0..p.len() {
                for j in i + 1..p.len() {
                    out.push(format!("/{}//{}", p[..=i].join("/"), p[j]));
                    out.push(format!("{}//{}", p[i], p[j..].join("/")));
                    if j + 2 < p.len() {
                        out.push(format!("{}//{}//{}", p[i], p[j], p[j + 2]));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_queries() {
        let q = PathQuery::parse("/a/b//c/d").unwrap();
        assert!(q.rooted);
        assert_eq!(q.parts, vec![vec!["a", "b"], vec!["c", "d"]]);
        let q = PathQuery::parse("//a").unwrap();
        assert!(!q.rooted);
        assert_eq!(q.parts, vec![vec!["a"]]);
        assert_eq!(PathQuery::parse("a/b").unwrap().parts, vec![vec!["a", "b"]]);
        for bad in ["", "/", "a///b", "a/", "a//", "/a//", "//"] {
            assert!(PathQuery::parse(bad).is_err(), "{bad:?}");
        }
        assert!(check_paths(&[vec!["a", ""]]).is_err());
        assert!(check_paths(&[vec!["a/b"]]).is_err());
        assert!(check_paths::<Vec<&str>, &str>(&[vec![]]).is_err());
        assert_eq!(check_paths(&[vec!["a", "b"], vec!["a"]]).unwrap(), 2);
    }
}
