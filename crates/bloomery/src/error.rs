//! Typed errors for every fallible operation in the library.
//!
//! Nothing in bloomery panics on user input: wrong parameters, oversize requests, incompatible
//! merges and malformed files all come back as an [`Error`].

use std::fmt;

/// Everything that can go wrong in bloomery.
///
/// ```
/// use bloomery::{BlockedBloomFilter, Error};
///
/// // parameters are checked: a typed error, never a panic
/// match BlockedBloomFilter::try_new(1000, 1.5) {
///     Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, "fpr"),
///     other => panic!("expected InvalidParameter, got {other:?}"),
/// }
/// // numbers in messages read well: a tiny rate prints as 1e-300, not 300 digits
/// let e = BlockedBloomFilter::try_new(1000, 1e-300).unwrap_err().to_string();
/// assert!(e.contains("1e-300") && e.len() < 120, "{e}");
/// ```
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
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BloomFilter, Error, Incompatibility, Merge};
///
/// let mut a = BloomFilter::try_new(1000, 0.01)?;
/// let b = BloomFilter::try_new(5000, 0.01)?;
/// assert!(matches!(
///     a.union_with(&b),
///     Err(Error::Incompatible(Incompatibility::Shape { .. }))
/// ));
/// # Ok(()) }
/// ```
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
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedBloomFilter, Error, Filter, FormatError, Persist};
///
/// let mut f = BlockedBloomFilter::try_new(100, 0.01)?;
/// f.insert("x");
/// let mut bytes = f.to_bytes();
/// let last = bytes.len() - 1;
/// bytes[last] ^= 1; // damage the checksum trailer
/// assert!(matches!(
///     BlockedBloomFilter::from_bytes(&bytes),
///     Err(Error::Format(FormatError::ChecksumMismatch { .. }))
/// ));
/// assert!(matches!(
///     BlockedBloomFilter::from_bytes(b"not a filter"),
///     Err(Error::Format(FormatError::Truncated { .. } | FormatError::BadMagic))
/// ));
/// # Ok(()) }
/// ```
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
    /// One of the errors above, in the file at `path`: what loading or opening a file by its
    /// path returns, so the message names the file. [`root`](Self::root) is the error itself.
    #[error("`{}`: {source}", path.display())]
    InFile {
        /// The file's path as it was given.
        path: std::path::PathBuf,
        /// What is wrong with its contents.
        source: Box<FormatError>,
    },
}

impl FormatError {
    /// What is wrong, without the file it was found in: the error itself, or for
    /// [`InFile`](Self::InFile) the error it wraps. Match on this to tell the kinds of damage
    /// apart whether the bytes came from a buffer or a file.
    ///
    /// ```
    /// # fn main() -> bloomery::Result<()> {
    /// use bloomery::{BloomFilter, Error, FormatError, Persist};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("junk.bloom");
    /// std::fs::write(&path, b"not a filter file, but long enough to hold a header")?;
    /// match BloomFilter::load(&path) {
    ///     Err(Error::Format(e)) => {
    ///         assert_eq!(e.root(), &FormatError::BadMagic);
    ///         assert_eq!(e.path(), Some(path.as_path()));
    ///         assert!(e.to_string().contains("junk.bloom"), "{e}"); // the message names it
    ///     }
    ///     other => panic!("expected a format error, got {other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn root(&self) -> &FormatError {
        match self {
            FormatError::InFile { source, .. } => source.root(),
            e => e,
        }
    }

    /// The file the error was found in, when it came from loading or opening a path.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            FormatError::InFile { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// Shorthand for results in this crate.
///
/// ```
/// fn build() -> bloomery::Result<bloomery::BloomFilter> {
///     bloomery::BloomFilter::try_new(1000, 0.01)
/// }
/// assert!(build().is_ok());
/// ```
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

/// An error about the file at `path`, its message naming the path (`` `f.bloom`: No such
/// file or directory``). For an I/O error the kind is kept and the OS error is its source, so
/// callers still match on [`std::io::Error::kind`] and find the errno; a format error becomes
/// [`FormatError::InFile`] (still an [`Error::Format`]). Other errors pass unchanged, as does
/// an error that already names a file.
pub(crate) fn at_path(path: &std::path::Path, e: Error) -> Error {
    match e {
        Error::Format(f) if f.path().is_none() => Error::Format(FormatError::InFile {
            path: path.to_path_buf(),
            source: Box::new(f),
        }),
        Error::Io(io) if io.get_ref().is_some_and(|r| r.is::<PathIo>()) => Error::Io(io),
        Error::Io(io) => Error::Io(std::io::Error::new(
            io.kind(),
            PathIo {
                path: path.to_path_buf(),
                source: io,
            },
        )),
        e => e,
    }
}

/// The payload of [`at_path`]'s error.
#[derive(Debug)]
struct PathIo {
    path: std::path::PathBuf,
    source: std::io::Error,
}

impl fmt::Display for PathIo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for PathIo {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
