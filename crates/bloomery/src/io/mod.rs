//! The file format, in layers without import circles:
//! - [`header`]: the pure header codec (bytes ↔ validated header, the payload encoding, the
//!   checksum), on top of the storage layer only;
//! - [`compress`]: the compressed and delta forms, on top of the codec;
//! - [`format`]: persistence ([`Persist`](format::Persist): save, load, map; atomic saves;
//!   save options), on top of both;
//! - [`mapped`]: big files (streaming verification, updates through a writable map of a
//!   copy), on top of persistence (they need the `mmap` feature);
//! - [`stream`]: a new file written front to back in one pass, atomically (the results of
//!   folds and unions streamed from mapped inputs);
//! - [`temp`]: the temporary file of atomic saves (the `tempfile` crate's, or a built-in one
//!   without the `tempfile` feature).
//!
//! serde support (`serde_impl`, at the crate root) serialises every structure through the
//! same bytes.

pub mod compress;
pub(crate) mod format;
pub(crate) mod fs;
pub(crate) mod header;
pub(crate) mod late_head;
pub(crate) mod mapped;
pub(crate) mod stream;
pub(crate) mod temp;

#[cfg(test)]
mod tests;
