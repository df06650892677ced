//! Parquet files and their split-block Bloom filters (feature `parquet`).
//!
//! Parquet writers (arrow-rs, pyarrow, parquet-mr/Spark, DuckDB) can store one split-block
//! Bloom filter per row group and column, the very structure of
//! [`SplitBlockBloomFilter`](crate::SplitBlockBloomFilter). This module reads them, answers key
//! lists against whole directories of files, and builds filters where there are none:
//!
//! - [`ParquetFile`]: a file's footer (decoded by the `parquet` crate) and its filters (header
//!   and bitset, read by [`read_filter_header`] from the offsets in the footer). Nothing else
//!   of the file is read. A scan reads only the footer fields it needs (columns, row counts,
//!   filter offsets) straight from the footer's Thrift bytes, and hands any footer that reader
//!   is not sure of to the `parquet` crate.
//! - [`ColumnType`]: keys typed by the column's physical type, hashed as the specification
//!   does (xxHash64, seed 0, over the plain encoding: integers and floats little-endian, byte
//!   arrays as their bytes).
//! - [`scan`]: which keys may be in which file and row group, over files and directories
//!   walked and read in parallel ([`Query`], [`FileAnswer`]).
//! - [`ParquetSidecar`]: filters for row groups without one, kept beside the file in
//!   bloomery's format (kind 24) and used by [`scan`] as if the file had them; built by
//!   [`build_filters`], which reads the column's values.
//! - [`rewrite_with_filters`]: a copy of a Parquet file with filters embedded, the column
//!   chunks copied byte for byte.
//!
//! A row group without a filter is reported as such, never guessed: it may hold any key.

mod build;
mod file;
mod footer;
mod header;
mod keys;
mod lake;
mod sidecar;

use std::fmt;
use std::path::{Path, PathBuf};

pub use build::{
    build_filters, rewrite_with_filters, verify_rewrite, BuiltFilter, RewriteReport, Sizing,
};
pub use file::{FilterLocation, ParquetFile};
#[doc(hidden)]
pub use footer::{compare_footer_readers, FooterReaders};
pub use header::{read_filter_header, write_filter_header, FilterHeader, HeaderError};
pub use keys::{days_since_epoch, ColumnType, KeyError, PhysicalType, TextForm};
pub use lake::{
    is_sidecar_name, scan, walk, Candidate, FileAnswer, FilterSource, Hits, KeyList, Mode, Query,
    RowGroupAnswer, SidecarState,
};
pub use sidecar::{ParquetSidecar, SidecarFilter, MAX_ROW_GROUPS};

/// What went wrong with a Parquet file. Every variant names the file.
///
/// ```
/// use bloomery::parquet::{ParquetError, ParquetFile};
///
/// # use std::sync::Arc;
/// # use parquet::data_type::Int64Type;
/// # use parquet::file::{properties::WriterProperties, writer::SerializedFileWriter};
/// # use parquet::schema::{parser::parse_message_type, types::ColumnPath};
/// # fn write_lake(path: &std::path::Path) {
/// #     let schema = "message m { required int64 id; required int64 raw; }";
/// #     let schema = Arc::new(parse_message_type(schema).unwrap());
/// #     let props = WriterProperties::builder()
/// #         .set_column_bloom_filter_fpp(ColumnPath::from("id"), 0.01)
/// #         .set_column_bloom_filter_max_ndv(ColumnPath::from("id"), 100)
/// #         .build();
/// #     let file = std::fs::File::create(path).unwrap();
/// #     let mut w = SerializedFileWriter::new(file, schema, Arc::new(props)).unwrap();
/// #     for rg in 0..2i64 {
/// #         let ids: Vec<i64> = (rg * 100..rg * 100 + 100).collect();
/// #         let mut g = w.next_row_group().unwrap();
/// #         while let Some(mut c) = g.next_column().unwrap() {
/// #             c.typed::<Int64Type>().write_batch(&ids, None, None).unwrap();
/// #             c.close().unwrap();
/// #         }
/// #         g.close().unwrap();
/// #     }
/// #     w.close().unwrap();
/// # }
/// let dir = tempfile::tempdir()?;
/// let lake = dir.path().join("lake.parquet");
/// // two row groups, ids 0..100 and 100..200, in columns `id` (with Bloom filters,
/// // written by the `parquet` crate) and `raw` (without)
/// write_lake(&lake);
/// let text = dir.path().join("notes.txt");
/// std::fs::write(&text, "not a Parquet file")?;
/// let err = ParquetFile::open(&text).unwrap_err();
/// assert!(matches!(err, ParquetError::NotParquet { .. }), "{err}");
/// assert_eq!(err.path(), text);
///
/// let missing = ParquetFile::open(dir.path().join("missing.parquet")).unwrap_err();
/// assert!(matches!(missing, ParquetError::Io { .. }), "{missing}");
///
/// match ParquetFile::open(&lake)?.find_column("name") {
///     Err(ParquetError::NoColumn { available, .. }) => assert_eq!(available, ["id", "raw"]),
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ParquetError {
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not a Parquet file (no magic, too short).
    NotParquet {
        /// The file.
        path: PathBuf,
        /// Why not.
        reason: String,
    },
    /// The footer is damaged or truncated.
    Footer {
        /// The file.
        path: PathBuf,
        /// The decoder's message.
        reason: String,
    },
    /// A column chunk's filter is damaged or unsupported.
    Filter {
        /// The file.
        path: PathBuf,
        /// Row group index.
        row_group: usize,
        /// Column path.
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// The file has no such column (or the name is ambiguous).
    NoColumn {
        /// The file.
        path: PathBuf,
        /// The name asked for.
        column: String,
        /// The columns it could be (all of them if none matched).
        available: Vec<String>,
    },
    /// A feature of the file this reader does not handle (encryption, a codec).
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What.
        reason: String,
    },
    /// Reading column values or writing a file failed.
    Data {
        /// The file.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// A bloomery error (a sidecar file, a filter too large for the memory limit).
    Bloomery {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: crate::error::Error,
    },
}

impl ParquetError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ParquetError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn data(path: &Path, reason: impl fmt::Display) -> Self {
        ParquetError::Data {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        }
    }

    /// The same error about file `to` (a temporary file's error named after its target).
    pub(crate) fn renamed(mut self, to: &Path) -> Self {
        match &mut self {
            ParquetError::Io { path, .. }
            | ParquetError::NotParquet { path, .. }
            | ParquetError::Footer { path, .. }
            | ParquetError::Filter { path, .. }
            | ParquetError::NoColumn { path, .. }
            | ParquetError::Unsupported { path, .. }
            | ParquetError::Data { path, .. }
            | ParquetError::Bloomery { path, .. } => *path = to.to_path_buf(),
        }
        self
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ParquetError::Io { path, .. }
            | ParquetError::NotParquet { path, .. }
            | ParquetError::Footer { path, .. }
            | ParquetError::Filter { path, .. }
            | ParquetError::NoColumn { path, .. }
            | ParquetError::Unsupported { path, .. }
            | ParquetError::Data { path, .. }
            | ParquetError::Bloomery { path, .. } => path,
        }
    }
}

/// The message of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".to_string()
    }
}

/// Run `f`, which calls into the `parquet` crate's decoders, readers or writer, turning a
/// panic inside the crate (an assertion on a forged field the checks before it did not
/// foresee) into an error for the file `path`, so that the other files of a command are still
/// answered. The crate's state is dropped with the closure's.
pub(crate) fn guarded<T>(
    path: &Path,
    what: &str,
    f: impl FnOnce() -> Result<T, ParquetError>,
) -> Result<T, ParquetError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(ParquetError::data(
            path,
            format!("{what}: the parquet crate failed: {}", panic_message(&*p)),
        ))
    })
}

impl fmt::Display for ParquetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path().display();
        match self {
            ParquetError::Io { source, .. } => write!(f, "`{p}`: {source}"),
            ParquetError::NotParquet { reason, .. } => {
                write!(f, "`{p}` is not a Parquet file: {reason}")
            }
            ParquetError::Footer { reason, .. } => {
                write!(f, "`{p}`: cannot read the Parquet footer: {reason}")
            }
            ParquetError::Filter {
                row_group,
                column,
                reason,
                ..
            } => write!(
                f,
                "`{p}`: row group {row_group}, column `{column}`: bad bloom filter: {reason}"
            ),
            ParquetError::NoColumn {
                column, available, ..
            } => {
                let list = if available.len() > 12 {
                    format!(
                        "{}, … ({} columns)",
                        available[..12].join(", "),
                        available.len()
                    )
                } else {
                    available.join(", ")
                };
                write!(f, "`{p}` has no single column `{column}` (columns: {list})")
            }
            ParquetError::Unsupported { reason, .. } => write!(f, "`{p}`: unsupported: {reason}"),
            ParquetError::Data { reason, .. } => write!(f, "`{p}`: {reason}"),
            ParquetError::Bloomery { source, .. } => write!(f, "`{p}`: {source}"),
        }
    }
}

impl std::error::Error for ParquetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ParquetError::Io { source, .. } => Some(source),
            ParquetError::Bloomery { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic inside a call into the `parquet` crate is an error for the file, never the
    /// end of the caller.
    #[test]
    fn a_panic_in_the_parquet_crate_is_an_error_for_the_file() {
        let path = Path::new("lake/a.parquet");
        let e = guarded::<()>(path, "reading values", || {
            panic!("column start and length should not be negative")
        })
        .unwrap_err();
        assert_eq!(e.path(), path);
        let msg = e.to_string();
        assert!(
            msg.contains("reading values: the parquet crate failed: column start"),
            "{msg}"
        );
        assert_eq!(guarded(path, "x", || Ok(7)).unwrap(), 7);
    }
}
