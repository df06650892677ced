//! The file format, in layers: each module imports only the ones listed before it.
//! - [`fs`]: file-system primitives (read-only maps of files, positioned writes, the
//!   directory sync after a rename);
//! - [`temp`]: the temporary file of atomic saves (the `tempfile` crate's, or a built-in one
//!   without the `tempfile` feature);
//! - [`header`]: the pure header codec (bytes ↔ validated header, the payload encoding, the
//!   checksum), on top of the storage layer only;
//! - [`late_head`]: the checksum of a file whose header is known only once its payload is
//!   written;
//! - [`stream`]: a new file written front to back in one pass, atomically (the results of
//!   folds and unions streamed from mapped inputs, compressed and delta files as coded);
//! - [`source`]: where a decoded structure's words come from (`Source`: bytes, a map, an
//!   update's copy, or a reader read front to back, each array straight into its own
//!   allocation: a load that needs the structure's memory, not twice it);
//! - [`compress`]: the compressed and delta forms, on top of the codec and the stream (a
//!   folder: range coder, bit model, word sources, the compressed-bits stream, delta coding,
//!   the container, sizes, streamed writers);
//! - [`format`]: persistence ([`Persist`](format::Persist): save, load, map; atomic saves;
//!   save options), on top of all of the above;
//! - [`mapped`]: big files (streaming verification, updates through a writable map of a
//!   copy), on top of persistence (they need the `mmap` feature).
//!
//! serde support (`serde_impl`, at the crate root) serialises every structure through the
//! same bytes.

pub mod compress;
pub(crate) mod format;
pub(crate) mod fs;
pub(crate) mod header;
pub(crate) mod late_head;
pub(crate) mod mapped;
pub(crate) mod source;
pub(crate) mod stream;
pub(crate) mod temp;

#[cfg(test)]
mod tests;
