//! The newest version of the file format: a leaf module, so that the error messages and the
//! header codec share it without importing each other.

/// The newest format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;
