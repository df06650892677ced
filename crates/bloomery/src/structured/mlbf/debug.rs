//! `Debug` for [`MultiLayerBloomFilter`] without anything derived from a keyed secret.

use super::MultiLayerBloomFilter;
use crate::hash::MaybeSecret;

/// The hash of the missing-layer marker is a value of the keyed hash on a known input, so it
/// is redacted with the secret it comes from.
impl std::fmt::Debug for MultiLayerBloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiLayerBloomFilter")
            .field("hasher", &self.hasher)
            .field("layers", &self.layers)
            .field("m", &self.m)
            .field("k", &self.k)
            .field("arrays", &self.arrays)
            .field(
                "missing",
                &MaybeSecret(self.hasher.is_secret(), self.missing),
            )
            .field("items", &self.items)
            .field("capacity", &self.capacity)
            .field("target_fpr", &self.target_fpr)
            .finish_non_exhaustive()
    }
}
