//! Persistence: the one file format ([`format`]: header codec, payload, checksum, atomic
//! saves, memory maps), its compressed and delta forms ([`compress`]), and serde support
//! through the same bytes.

pub mod compress;
pub(crate) mod format;
pub(crate) mod mapped;
#[cfg(feature = "serde")]
mod serde_impl;

#[cfg(test)]
mod tests;
