//! Typed errors for every fallible operation in the library.
//!
//! Nothing in bloomery panics on user input: wrong parameters, oversize requests, incompatible
//! merges and malformed files all come back as an [`Error`].

use std::fmt;

/// Everything that can go wrong in bloomery.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is out of its valid range (n = 0, ε outside (0, 1), NaN, k = 0, …).
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// The parameter's name as the API spells it.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The structure would need more memory than the configured limit allows.
    #[error(
        "requested size of {requested} bytes exceeds the limit of {limit} bytes \
         (raise it with `max_bytes`, or ask for a smaller capacity or a larger error rate)"
    )]
    TooLarge {
        /// Bytes the requested structure would need.
        requested: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The allocator refused the memory.
    #[error("could not allocate {bytes} bytes")]
    AllocationFailed {
        /// Bytes asked for.
        bytes: u64,
    },
    /// Two structures cannot be combined (union, intersection, estimates, patching).
    #[error("incompatible filters: {0}")]
    Incompatible(Incompatibility),
    /// A structure that does not grow is at capacity.
    #[error("filter is full: it was created non-scaling with capacity {capacity}")]
    Full {
        /// The capacity it was created with.
        capacity: u64,
    },
    /// The operation is not supported by this structure or its current shape.
    #[error("unsupported operation: {0}")]
    Unsupported(String),
    /// A removal was refused because the key is certainly not present (removing it would
    /// create false negatives for other keys); nothing was changed. What
    /// [`RemoveError::NotPresent`](crate::RemoveError::NotPresent) becomes through `?`.
    #[error("key is not present; removing it would create false negatives for other keys")]
    NotPresent,
    /// A file or byte buffer could not be decoded.
    #[error("invalid filter data: {0}")]
    Format(#[from] FormatError),
    /// An I/O error while reading or writing a file.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Why two structures cannot be combined.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Incompatibility {
    /// Different structure kinds.
    Kind {
        /// The left side's kind.
        left: &'static str,
        /// The right side's kind.
        right: &'static str,
    },
    /// Different shapes (bits, blocks, hash count, slices…).
    Shape {
        /// A human description of the left shape.
        left: String,
        /// A human description of the right shape.
        right: String,
    },
    /// Different hash algorithms or seeds: the same key maps to different bits.
    Hashing,
}

impl fmt::Display for Incompatibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Incompatibility::Kind { left, right } => {
                write!(f, "different kinds ({left} vs {right})")
            }
            Incompatibility::Shape { left, right } => {
                write!(f, "different shapes ({left} vs {right})")
            }
            Incompatibility::Hashing => write!(
                f,
                "different hash algorithm or seed (the same key sets different bits)"
            ),
        }
    }
}

/// Why a file or buffer could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// Fewer bytes than the header or the declared payload needs.
    #[error("truncated: need {needed} bytes, have {have}")]
    Truncated {
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        have: u64,
    },
    /// More bytes than the header declares.
    #[error("trailing data: {extra} bytes after the declared end")]
    TrailingData {
        /// Surplus bytes.
        extra: u64,
    },
    /// Not a bloomery file.
    #[error("bad magic: not a bloomery filter file")]
    BadMagic,
    /// A format version this build does not know (written by a newer bloomery).
    #[error("unknown format version {0} (this build reads versions 1..={max})", max = crate::version::FORMAT_VERSION)]
    UnknownVersion(u16),
    /// A structure kind this build does not know.
    #[error("unknown structure kind {0}")]
    UnknownKind(u16),
    /// The file holds a different kind than the caller asked for.
    #[error("wrong kind: expected {expected}, found {found}")]
    WrongKind {
        /// Kind asked for.
        expected: &'static str,
        /// Kind in the file.
        found: &'static str,
    },
    /// A hash algorithm this build does not know.
    #[error("unknown hash algorithm {0}")]
    UnknownHash(u8),
    /// The checksum does not match: the data was damaged.
    #[error("checksum mismatch: stored {stored:#018x}, computed {computed:#018x}")]
    ChecksumMismatch {
        /// Checksum in the file.
        stored: u64,
        /// Checksum of the bytes read.
        computed: u64,
    },
    /// Header fields contradict each other or the payload.
    #[error("inconsistent parameters: {0}")]
    Inconsistent(String),
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Build an [`Error::InvalidParameter`].
pub(crate) fn invalid(name: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidParameter {
        name,
        reason: reason.into(),
    }
}

/// Build a [`FormatError::Inconsistent`] wrapped in [`Error::Format`].
pub(crate) fn inconsistent(reason: impl Into<String>) -> Error {
    Error::Format(FormatError::Inconsistent(reason.into()))
}
