//! [`MlbfBuilder`]: the multi-layer filter sized by capacity and rate, or by the paper's shape.

use super::*;
use crate::filter::Sizing;

/// Options for a [`MultiLayerBloomFilter`]: layers plus the shared [`Sizing`](crate::Sizing),
/// either (capacity, fpr) or an explicit (bits per layer, hashes) shape.
///
/// **The rate.** [`fpr`](Self::fpr) is the target rate ε for near misses: a URL with a segment
/// that no inserted URL has at that layer (a known page with a new last segment, the paper's
/// queries) is reported present with probability at most ε at capacity, whatever the URLs
/// ([`params::mlbf_near_miss_shape`]). Such a URL passes every other layer for certain, so
/// eq. 4's `ε^{1/L}` per layer (which assumes every segment is new) would give it `ε^{2/L}` or
/// more. A URL whose every value was seen at its layer (segments recombined from different
/// URLs) meets the XOR layer alone ([`MultiLayerBloomFilter::recombined_fpr`], about `√ε`); a
/// URL of new segments only, far less. The memory limit bounds all layers together.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::MultiLayerBloomFilter;
///
/// let mut f = MultiLayerBloomFilter::builder().layers(4).capacity(10_000).fpr(0.01).try_build()?;
/// assert!(f.insert("http://example.org/a/b.html")?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MlbfBuilder {
    layers: u32,
    sizing: Sizing,
}

impl Default for MlbfBuilder {
    /// The paper's L = 4 layers, no size yet, the default hasher, the library's memory limit.
    fn default() -> Self {
        MlbfBuilder {
            layers: PAPER_LAYERS,
            sizing: Sizing::default(),
        }
    }
}

impl MlbfBuilder {
    crate::filter::sizing_setters!();

    /// Number of URL layers L (default 4, the paper's).
    pub fn layers(mut self, l: u32) -> Self {
        self.layers = l;
        self
    }
    /// Explicit bits per layer m (with [`hashes`](Self::hashes)).
    pub fn bits(mut self, m: u64) -> Self {
        self.sizing.bits = Some(m);
        self
    }
    /// Explicit k.
    pub fn hashes(mut self, k: u32) -> Self {
        self.sizing.hashes = Some(k);
        self
    }

    /// Build, validating every parameter.
    pub fn try_build(self) -> Result<MultiLayerBloomFilter> {
        let l = self.layers;
        if l == 0 || l > MAX_LAYERS {
            return Err(invalid(
                "layers",
                format!("must be in 1..={MAX_LAYERS}, got {l}"),
            ));
        }
        let (m, k, n, p) = match (self.sizing.bits, self.sizing.hashes) {
            (Some(m), Some(k)) => (
                m,
                k,
                self.sizing.capacity.unwrap_or(0),
                self.sizing.fpr.unwrap_or(0.0),
            ),
            (Some(m), None) => {
                let n = self
                    .sizing
                    .capacity
                    .ok_or_else(|| invalid("hashes", "give hashes or a capacity with bits"))?;
                params::check_capacity(n)?;
                (
                    m,
                    params::optimal_k(n, m),
                    n,
                    self.sizing.fpr.unwrap_or(0.0),
                )
            }
            (None, Some(_)) => return Err(invalid("bits", "give bits with hashes")),
            (None, None) => {
                let n = self
                    .sizing
                    .capacity
                    .ok_or_else(|| invalid("capacity", "required"))?;
                let p = self.sizing.fpr.ok_or_else(|| invalid("fpr", "required"))?;
                params::check_capacity(n)?;
                params::check_fpr(p)?;
                store::check_size(
                    (params::bits_asymptotic(n, p) / 8.0 * f64::from(l + 1)) as u64,
                    self.sizing.limit(),
                )?;
                let s = params::mlbf_near_miss_shape(n, p, MAX_HASHES)?;
                (s.m, s.k, n, p)
            }
        };
        if m == 0 {
            return Err(invalid("bits", "must be at least 1"));
        }
        params::check_hashes(k, MAX_HASHES)?;
        if let Some(p) = self.sizing.fpr {
            params::check_fpr(p)?;
        }
        let words = usize::try_from(m.div_ceil(64))
            .map_err(|_| invalid("bits", "too large for this platform"))?;
        let total = (words as u64)
            .saturating_mul(8)
            .saturating_mul(u64::from(l) + 1);
        store::check_size(total, self.sizing.limit())?;
        let mut arrays = Vec::with_capacity(l as usize + 1);
        for _ in 0..=l {
            arrays.push(Words::zeroed(words, self.sizing.limit())?);
        }
        Ok(MultiLayerBloomFilter {
            hasher: self.sizing.key_hasher(),
            missing: self.sizing.key_hasher().hash_bytes(MISSING_SEGMENT),
            layers: l,
            m,
            k,
            arrays,
            items: 0,
            capacity: n,
            target_fpr: p,
        })
    }
}
