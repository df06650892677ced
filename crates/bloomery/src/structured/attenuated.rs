//! The attenuated Bloom filter for probabilistic resource location: [`AttenuatedBloomFilter`] (its
//! docs say which paper it follows and when to pick it).

use crate::error::{inconsistent, invalid, Result};
use crate::filter::{Filter, Merge, Sizing, Stats};
use crate::hash::{Hashed, Key, KeyHasher};
use crate::io::format::{
    Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::sets::blocked::BlockedBloomFilter;
use crate::store;
use crate::structured::tree_path;

/// Largest depth d accepted.
pub const MAX_DEPTH: usize = 64;

/// Options for an [`AttenuatedBloomFilter`]: the depth plus the shared sizing, where
/// `capacity` is the items each level is sized for (the largest level's count), `fpr` each
/// level's rate at capacity and `max_bytes` a bound on all levels together (an explicit shape
/// does not apply).
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::AttenuatedBloomFilter;
///
/// let mut f = AttenuatedBloomFilter::builder().depth(3).capacity(1000).fpr(0.01).try_build()?;
/// f.insert_local("printer");
/// assert_eq!(f.distance("printer"), Some(0));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AttenuatedBuilder {
    depth: usize,
    sizing: Sizing,
}

impl AttenuatedBuilder {
    crate::filter::sizing_setters!();

    /// Depth d: filters per edge (default 3).
    pub fn depth(mut self, d: usize) -> Self {
        self.depth = d;
        self
    }
    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<AttenuatedBloomFilter> {
        self.sizing
            .refuse(&["bits", "hashes"], "an attenuated filter")?;
        let d = self.depth;
        if d == 0 || d > MAX_DEPTH {
            return Err(invalid(
                "depth",
                format!("must be in 1..={MAX_DEPTH}, got {d}"),
            ));
        }
        let n = self
            .sizing
            .capacity
            .ok_or_else(|| invalid("capacity", "required"))?;
        let p = self.sizing.fpr.ok_or_else(|| invalid("fpr", "required"))?;
        let first = BlockedBloomFilter::builder()
            // composite payloads store positions-layout sub-filters (no layout field)
            .layout(crate::sets::blocked::BlockLayout::Positions)
            .capacity(n)
            .fpr(p)
            .hasher(self.sizing.key_hasher())
            .max_bytes(self.sizing.limit())
            .try_build()?;
        store::check_size(
            first.blocks().saturating_mul(64).saturating_mul(d as u64),
            self.sizing.limit(),
        )?;
        let mut levels = vec![first; d];
        for l in &mut levels {
            l.clear();
        }
        Ok(AttenuatedBloomFilter {
            hasher: self.sizing.key_hasher(),
            levels,
        })
    }
}

/// The attenuated Bloom filter for probabilistic resource location (Broder & Mitzenmacher §6.2, Rhea &
/// Kubiatowicz, "Probabilistic Location and Routing", INFOCOM 2002).
///
/// A node keeps, for each outgoing edge, an array of d filters: filter 0 summarises the
/// resources held by the neighbour at the other end, filter i those reachable i hops beyond it.
/// A query routes towards the edge whose array matches at the smallest index
/// ([`AttenuatedBloomFilter::distance`]): the smallest plausible distance. A false positive
/// can send a query the wrong way; callers fall back (e.g. to the next-best edge or a
/// deterministic algorithm) when the resource is not found where the filter pointed.
///
/// The arrays are built with the union operation only: the array for edge u → v is
/// `A[0] = local(v)` and `A[i] = ∪_{w ∈ N(v) \ {u}} A_{v→w}[i-1]`
/// ([`AttenuatedBloomFilter::absorb`], which uses [`Merge::union_with`] of
/// [`BlockedBloomFilter`]). After d rounds of neighbours exchanging their arrays, level i is
/// exact up to Bloom false positives. All levels share one shape and hasher (so they can be
/// unioned, and a key is hashed once for the whole array); size them for the largest level,
/// usually the deepest.
///
/// **When to pick it:** routing queries in overlay or peer-to-peer networks where nearby copies
/// should be found quickly and far ones are left to a fallback; d of 3 to 5 is typical.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::AttenuatedBloomFilter;
///
/// // a path B -> A: A holds "printer"; B's filter for its edge to A learns it at distance 1
/// let mut at_a = AttenuatedBloomFilter::try_new(3, 1000, 0.01)?;
/// at_a.insert_local("printer");
/// let mut b_to_a = AttenuatedBloomFilter::try_new(3, 1000, 0.01)?;
/// b_to_a.absorb(&at_a)?; // level i of B's view = level i − 1 of A's
/// assert_eq!(at_a.distance("printer"), Some(0));
/// assert_eq!(b_to_a.distance("printer"), Some(1));
/// assert_eq!(b_to_a.distance("scanner"), None);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AttenuatedBloomFilter {
    hasher: KeyHasher,
    levels: Vec<BlockedBloomFilter>,
}

impl AttenuatedBloomFilter {
    /// A builder (d = 3, default hasher).
    pub fn builder() -> AttenuatedBuilder {
        AttenuatedBuilder {
            depth: 3,
            sizing: Sizing::default(),
        }
    }

    /// d levels, each sized for `n` items at rate `p`.
    pub fn try_new(depth: usize, n: u64, p: f64) -> Result<Self> {
        Self::builder().depth(depth).capacity(n).fpr(p).try_build()
    }

    /// An empty array of the same shape and hasher.
    pub fn empty_like(&self) -> Self {
        let mut e = self.clone();
        e.clear();
        e
    }

    /// Depth d.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }
    /// The filter at level i (0: the neighbour itself).
    pub fn level(&self, i: usize) -> Option<&BlockedBloomFilter> {
        self.levels.get(i)
    }
    /// The hasher.
    pub fn hasher(&self) -> &KeyHasher {
        &self.hasher
    }
    /// Total bits.
    pub fn bit_len(&self) -> u64 {
        self.levels.iter().map(Stats::bit_len).sum()
    }
    /// Empty every level.
    pub fn clear(&mut self) {
        for l in &mut self.levels {
            l.clear();
        }
    }

    /// Record a resource held by the neighbour itself (level 0).
    pub fn insert_local<K: Key + ?Sized>(&mut self, key: &K) -> bool {
        self.levels[0].insert(key)
    }

    /// Record a pre-hashed resource at level i.
    pub fn insert_at_hashed(&mut self, i: usize, h: Hashed) -> Result<bool> {
        let d = self.depth();
        let l = self
            .levels
            .get_mut(i)
            .ok_or_else(|| invalid("level", format!("{i} is not below the depth {d}")))?;
        Ok(l.insert_hashed(h))
    }

    /// Set level 0 to the union of itself and `local` (the neighbour's own summary).
    pub fn absorb_local(&mut self, local: &BlockedBloomFilter) -> Result<()> {
        self.levels[0].union_with(local)
    }

    /// Attenuate and merge an onward array (the neighbour's array for one of *its* edges):
    /// level i ∪= onward level i−1, for i = 1..d. Levels that would fall off the end are
    /// dropped.
    pub fn absorb(&mut self, onward: &Self) -> Result<()> {
        if onward.depth() != self.depth() {
            return Err(crate::filter::shape_mismatch(
                format!("depth {}", self.depth()),
                format!("depth {}", onward.depth()),
            ));
        }
        for i in 1..self.levels.len() {
            self.levels[i].union_with(&onward.levels[i - 1])?;
        }
        Ok(())
    }

    /// The smallest level whose filter may hold the pre-hashed key: the smallest plausible
    /// distance beyond the neighbour (0 = at the neighbour). `None`: not within d levels.
    pub fn distance_hashed(&self, h: Hashed) -> Option<usize> {
        self.levels.iter().position(|l| l.contains_hashed(h))
    }

    /// The smallest plausible distance of `key` (see [`distance_hashed`](Self::distance_hashed)).
    pub fn distance<K: Key + ?Sized>(&self, key: &K) -> Option<usize> {
        self.distance_hashed(self.hasher.hash(key))
    }
}

impl Merge for AttenuatedBloomFilter {
    /// Level-wise union (two routes' knowledge of the same edge).
    fn union_with(&mut self, other: &Self) -> Result<()> {
        if other.depth() != self.depth() {
            return Err(crate::filter::shape_mismatch(
                format!("depth {}", self.depth()),
                format!("depth {}", other.depth()),
            ));
        }
        for (a, b) in self.levels.iter_mut().zip(&other.levels) {
            a.union_with(b)?;
        }
        Ok(())
    }

    /// Level-wise intersection.
    fn intersect_with(&mut self, other: &Self) -> Result<()> {
        if other.depth() != self.depth() {
            return Err(crate::filter::shape_mismatch(
                format!("depth {}", self.depth()),
                format!("depth {}", other.depth()),
            ));
        }
        for (a, b) in self.levels.iter_mut().zip(&other.levels) {
            a.intersect_with(b)?;
        }
        Ok(())
    }
}

impl Persist for AttenuatedBloomFilter {
    const KIND: Kind = Kind::Attenuated;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut h = Header::new(Kind::Attenuated, self.hasher);
        h.items = self.levels[0].len();
        h.capacity = self.levels[0].capacity();
        h.target_fpr = self.levels[0].target_fpr();
        h.params = tree_path::encode_filters(ParamWriter::new(), &self.levels).finish();
        (
            h,
            Payload::new(self.levels.iter().map(|f| f.words_ref()).collect()),
        )
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        let mut r = ParamReader::new(&d.header.params);
        let levels = tree_path::decode_filters(&mut r, d, src, limit)?;
        r.finish()?;
        if levels.len() > MAX_DEPTH {
            return Err(inconsistent("attenuated depth too large"));
        }
        let (b, k) = (levels[0].blocks(), levels[0].hashes());
        if levels.iter().any(|l| l.blocks() != b || l.hashes() != k) {
            return Err(inconsistent("attenuated levels differ in shape"));
        }
        Ok(Self {
            hasher: d.header.hasher,
            levels,
        })
    }
}

impl crate::dispatch::OtherKind for AttenuatedBloomFilter {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        insert: true,
        merge: true,
        ..crate::kind::Capabilities::NONE
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Arrays for every directed edge of `adj` after `d` rounds of exchange, with `docs[v]`
    /// held at v.
    fn converge(
        adj: &[Vec<usize>],
        docs: &[Vec<u64>],
        d: usize,
    ) -> Vec<Vec<AttenuatedBloomFilter>> {
        let proto = AttenuatedBloomFilter::try_new(d, 400, 1e-4).unwrap();
        let locals: Vec<BlockedBloomFilter> = docs
            .iter()
            .map(|ds| {
                let mut f = proto.level(0).unwrap().clone();
                for x in ds {
                    f.insert(x);
                }
                f
            })
            .collect();
        let mut arr: Vec<Vec<AttenuatedBloomFilter>> = adj
            .iter()
            .map(|ns| vec![proto.empty_like(); ns.len()])
            .collect();
        for _ in 0..d {
            let old = arr.clone();
            for (u, ns) in adj.iter().enumerate() {
                for (e, &v) in ns.iter().enumerate() {
                    let mut a = proto.empty_like();
                    a.absorb_local(&locals[v]).unwrap();
                    for (e2, &w) in adj[v].iter().enumerate() {
                        if w != u {
                            a.absorb(&old[v][e2]).unwrap();
                        }
                    }
                    arr[u][e] = a;
                }
            }
        }
        arr
    }

    #[test]
    fn line_graph_distances() {
        // 0 - 1 - 2 - 3 - 4 - 5, document j at node j; from node 0 over its only edge,
        // document j is j - 1 hops beyond the neighbour.
        let adj: Vec<Vec<usize>> = (0..6)
            .map(|i: usize| {
                let mut v = Vec::new();
                if i > 0 {
                    v.push(i - 1);
                }
                if i < 5 {
                    v.push(i + 1);
                }
                v
            })
            .collect();
        let docs: Vec<Vec<u64>> = (0..6).map(|j| vec![j as u64 * 1000]).collect();
        let arr = converge(&adj, &docs, 3);
        let a = &arr[0][0];
        assert_eq!(a.depth(), 3);
        for j in 1..6u64 {
            let want = if j - 1 < 3 {
                Some(j as usize - 1)
            } else {
                None
            };
            assert_eq!(a.distance(&(j * 1000)), want, "doc {j}");
        }
        // node 0's own document is behind it, not over this edge (no backtracking)
        assert_eq!(a.distance(&0u64), None);
        let back = AttenuatedBloomFilter::from_bytes(&a.to_bytes()).unwrap();
        assert_eq!(&back, a);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]
        #[test]
        fn never_overestimates_distance(edges in prop::collection::vec((0usize..12, 0usize..12), 8..30)) {
            let nodes = 12;
            let mut adj = vec![Vec::new(); nodes];
            for (a, b) in edges {
                if a != b && !adj[a].contains(&b) {
                    adj[a].push(b);
                    adj[b].push(a);
                }
            }
            let docs: Vec<Vec<u64>> = (0..nodes as u64).map(|j| vec![j, j + 100]).collect();
            let d = 3;
            let arr = converge(&adj, &docs, d);
            // the shortest non-backtracking walk from v to the holder bounds the answer
            for (u, ns) in adj.iter().enumerate() {
                for (e, &v) in ns.iter().enumerate() {
                    // BFS over (node, came-from) states
                    let mut best = vec![usize::MAX; nodes];
                    let mut frontier = vec![(v, u)];
                    for dist in 0..d {
                        let mut next = Vec::new();
                        for &(x, from) in &frontier {
                            best[x] = best[x].min(dist);
                            for &y in &adj[x] {
                                if y != from {
                                    next.push((y, x));
                                }
                            }
                        }
                        frontier = next;
                    }
                    for (holder, &b) in best.iter().enumerate() {
                        if b != usize::MAX {
                            let got = arr[u][e].distance(&(holder as u64));
                            prop_assert!(got.is_some_and(|g| g <= b), "{u}->{v} doc {holder}: {got:?} > {b}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn errors() {
        assert!(AttenuatedBloomFilter::try_new(0, 10, 0.01).is_err());
        assert!(AttenuatedBloomFilter::try_new(MAX_DEPTH + 1, 10, 0.01).is_err());
        assert!(AttenuatedBloomFilter::try_new(3, 0, 0.01).is_err());
        assert!(AttenuatedBloomFilter::try_new(3, 10, 0.0).is_err());
        assert!(AttenuatedBloomFilter::builder()
            .depth(2)
            .try_build()
            .is_err());
        let a = AttenuatedBloomFilter::try_new(3, 100, 0.01).unwrap();
        let b = AttenuatedBloomFilter::try_new(2, 100, 0.01).unwrap();
        let c = AttenuatedBloomFilter::try_new(3, 10_000, 0.01).unwrap();
        assert!(a.clone().absorb(&b).is_err());
        assert!(a.clone().absorb(&c).is_err());
        assert!(a.clone().union_with(&b).is_err());
        let keyed = AttenuatedBloomFilter::builder()
            .capacity(100)
            .fpr(0.01)
            .hasher(KeyHasher::with_seed(5))
            .try_build()
            .unwrap();
        assert!(a.clone().absorb(&keyed).is_err());
        let mut m = a.clone();
        assert!(m.insert_at_hashed(3, Hashed::new(1, 1)).is_err());
        assert!(m.insert_at_hashed(2, Hashed::new(1, 1)).unwrap());
        assert_eq!(m.distance_hashed(Hashed::new(1, 1)), Some(2));
        let bytes = m.to_bytes();
        assert_eq!(AttenuatedBloomFilter::from_bytes(&bytes).unwrap(), m);
        assert!(AttenuatedBloomFilter::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(crate::structured::depth::DepthBloomFilter::from_bytes(&bytes).is_err());
        assert!(AttenuatedBloomFilter::builder()
            .capacity(1 << 30)
            .fpr(0.01)
            .max_bytes(1 << 20)
            .try_build()
            .is_err());
    }
}
