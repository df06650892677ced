//! What a lake scan needs of a Parquet footer, read straight from its Thrift compact bytes
//! (parquet-format `parquet.thrift`, `FileMetaData`): the leaf columns (dotted path, name,
//! physical type, type length, DATE/UUID annotation), each row group's row count, and each
//! column chunk's `bloom_filter_offset` / `bloom_filter_length`. Everything else (statistics,
//! encodings, key-value metadata, page-index offsets) is skipped unread.
//!
//! The skim ([`Footer::skim`], `skim.rs`) is conservative: any footer it is not sure to read
//! exactly as the `parquet` crate does (a missing required field, an unexpected type id, an encrypted column, an empty
//! group, a column count that disagrees with the schema, names that are not UTF-8, ...) gives
//! `None`, and the caller decodes the footer with the `parquet` crate instead, whose answer or
//! error message stands. Its output is checked against the crate's decode
//! ([`Footer::from_metadata`]) in the tests, on every file they write, and by a fuzz target.
//!
//! Footer bytes and page indexes the `parquet` crate is given are first checked
//! (`check.rs`: [`check_counts`], [`check_struct`]) for the counts it reserves memory by and
//! for the types of the fields it reads. Both walk the bytes with the shared compact-protocol
//! reader (`thrift.rs`), which refuses containers of booleans here
//! ([`BoolElements::Refused`](super::thrift::BoolElements::Refused)).

mod check;
mod skim;

/// Deepest nesting of structs and containers skipped.
const MAX_DEPTH: usize = 32;

pub(crate) use check::{
    check_counts, check_page_header, check_struct, decode_metadata, PageIndexPart,
};
pub(crate) use skim::Footer;

/// How the scan's footer reader and the `parquet` crate read the same footer bytes.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FooterReaders {
    /// Both read it, to the same columns, types, row counts and filter offsets.
    Agree,
    /// The scan's reader declined it (the crate's answer stands, as a scan uses it).
    Declined,
    /// The crate refused it, and the scan's reader declined it too.
    BothRefused,
    /// The crate refused it but the scan's reader read it (the crate's error: a footer the
    /// scan would read while the rest of the library refuses it).
    OnlySkimRead(String),
    /// Both read it, differently (a bug).
    Differ(String),
}

/// Read footer bytes (the Thrift `FileMetaData`, without the 8-byte tail) with both readers
/// and compare: for the tests and the fuzz target.
#[doc(hidden)]
pub fn compare_footer_readers(meta: &[u8]) -> FooterReaders {
    let skim = Footer::skim(meta);
    match (skim, decode_metadata(meta)) {
        (Some(s), Ok(m)) => {
            let theirs = Footer::from_metadata(&m);
            if s == theirs {
                FooterReaders::Agree
            } else {
                FooterReaders::Differ(format!("skim {s:?}\ncrate {theirs:?}"))
            }
        }
        (None, Ok(_)) => FooterReaders::Declined,
        (None, Err(_)) => FooterReaders::BothRefused,
        (Some(_), Err(e)) => FooterReaders::OnlySkimRead(e),
    }
}

#[cfg(test)]
mod tests;
