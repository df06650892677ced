//! Key lists against many Parquet files: directories walked in parallel, files read in parallel
//! (footer and filter bytes only), keys hashed at most once per physical type, in chunks and
//! only when a probe needs them, each row group's filter probed with every key (or, for
//! pruning, until the first hit: a prune often needs the first chunk of keys only).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

#[cfg(feature = "rayon")]
use rayon::prelude::*;
#[cfg(not(feature = "rayon"))]
use seq::*;

/// Without the `rayon` feature the scans run on the calling thread: `par_iter` and
/// `into_par_iter` are the sequential iterators.
#[cfg(not(feature = "rayon"))]
mod seq {
    pub(super) trait IntoParIter: IntoIterator + Sized {
        fn into_par_iter(self) -> Self::IntoIter {
            self.into_iter()
        }
    }
    impl<T: IntoIterator> IntoParIter for T {}

    pub(super) trait ParIter<T> {
        fn par_iter(&self) -> std::slice::Iter<'_, T>;
    }
    impl<T> ParIter<T> for [T] {
        fn par_iter(&self) -> std::slice::Iter<'_, T> {
            self.iter()
        }
    }
}

use super::file::{FooterFile, TailHint};
use super::keys::{ColumnType, KeyError};
use super::sidecar::ParquetSidecar;
use super::ParquetError;
use crate::io::format::Persist;
use crate::sets::split_block::MaskedHash;
use crate::sets::split_block::SplitBlockBits;

/// Keys, stored back to back: pushed one by one ([`KeyList::push`], [`KeyList::push_lines`]),
/// or taken over as a text of lines that is split only as far as it is read
/// ([`KeyList::from_lines`]: a prune that needs the first keys only never splits the rest).
///
/// ```
/// use bloomery::parquet::KeyList;
///
/// let mut keys = KeyList::new(false);
/// keys.push(b"7");
/// keys.push_lines(b"8\r\n9\n10".to_vec());
/// assert_eq!(keys.len(), 4);
/// assert_eq!(keys.get(1), b"8"); // the `\r` is not part of the key
/// assert_eq!(keys.get(3), b"10");
/// assert!(!keys.is_raw());
///
/// // a text of lines, split only as far as it is read
/// let lines = KeyList::from_lines(b"a\nb\n".to_vec(), false);
/// assert_eq!(lines.len(), 2);
/// assert_eq!(lines.get(1), b"b");
///
/// ```
#[derive(Debug, Default)]
pub struct KeyList {
    data: Vec<u8>,
    /// The text of lines when it is held elsewhere ([`KeyList::from_shared_lines`]); `data`
    /// is then empty.
    shared: Option<SharedText>,
    starts: Vec<usize>,
    ends: Vec<usize>,
    raw: bool,
    /// `data` is a text of lines, split on demand (`starts`/`ends` stay empty).
    lines: Option<Lines>,
}

/// A text of keys held by its owner and shared, e.g. a key file mapped into memory.
#[derive(Clone)]
struct SharedText(Arc<dyn AsRef<[u8]> + Send + Sync>);

impl std::fmt::Debug for SharedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedText({} bytes)", self.0.as_ref().as_ref().len())
    }
}

/// The on-demand split of a [`KeyList::from_lines`] text.
#[derive(Debug, Default)]
struct Lines {
    /// Number of keys, counted when first asked for.
    count: OnceLock<usize>,
    /// Every key's bounds, made when a key is first asked for by index.
    index: OnceLock<(Vec<usize>, Vec<usize>)>,
    /// The byte offsets where keys 0, step, 2·step, … start, as far as the text was split
    /// (the step, the offsets).
    marks: Mutex<(usize, Vec<usize>)>,
}

impl Clone for KeyList {
    fn clone(&self) -> Self {
        Self {
            data: self.data.clone(),
            shared: self.shared.clone(),
            starts: self.starts.clone(),
            ends: self.ends.clone(),
            raw: self.raw,
            lines: self.lines.as_ref().map(|_| Lines::default()),
        }
    }
}

/// The line of `text` starting at byte `at` (None at the end): its bounds without the `\n`
/// and a `\r` before it, and where the next line starts. A last line without `\n` counts
/// when it is not empty.
#[inline]
fn line_at(text: &[u8], at: usize) -> Option<(usize, usize, usize)> {
    if at >= text.len() {
        return None;
    }
    let (end, next) = match memchr::memchr(b'\n', &text[at..]) {
        Some(p) => (at + p, at + p + 1),
        None => (text.len(), text.len()),
    };
    let end = if end > at && text[end - 1] == b'\r' {
        end - 1
    } else {
        end
    };
    Some((at, end, next))
}

/// The bounds of the lines of `text[base..]` (as [`line_at`] cuts them), appended.
fn split_lines(text: &[u8], base: usize, starts: &mut Vec<usize>, ends: &mut Vec<usize>) {
    let lines = memchr::memchr_iter(b'\n', &text[base..]).count() + 1;
    starts.reserve(lines);
    ends.reserve(lines);
    let mut at = base;
    while let Some((start, end, next)) = line_at(text, at) {
        starts.push(start);
        ends.push(end);
        at = next;
    }
}

impl KeyList {
    /// An empty list. `raw`: the keys are values' plain encodings already (e.g. decoded from
    /// hex), not text to parse by the column type.
    pub fn new(raw: bool) -> Self {
        Self {
            raw,
            ..Self::default()
        }
    }

    /// The lines of `text` as keys, as [`push_lines`](Self::push_lines) splits them, but
    /// split only as far as they are read: a scan that needs the first keys only (a prune
    /// whose row groups all match early) touches only their bytes. Counting the keys
    /// ([`len`](Self::len)) and indexing them ([`get`](Self::get)) split the whole text once.
    pub fn from_lines(text: Vec<u8>, raw: bool) -> Self {
        Self {
            data: text,
            raw,
            lines: Some(Lines::default()),
            ..Self::default()
        }
    }

    /// As [`from_lines`](Self::from_lines), over a text held elsewhere and shared rather than
    /// copied: e.g. a key file mapped into memory, whose pages are then read only as far as
    /// the scan reads keys.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bloomery::parquet::KeyList;
    ///
    /// let text: Arc<Vec<u8>> = Arc::new(b"alpha\nbeta\r\ngamma".to_vec());
    /// let keys = KeyList::from_shared_lines(text, false);
    /// assert_eq!(keys.len(), 3);
    /// assert_eq!(keys.get(1), b"beta");
    /// ```
    pub fn from_shared_lines(text: Arc<dyn AsRef<[u8]> + Send + Sync>, raw: bool) -> Self {
        Self {
            shared: Some(SharedText(text)),
            raw,
            lines: Some(Lines::default()),
            ..Self::default()
        }
    }

    /// The text of lines, or the pushed keys back to back.
    fn text(&self) -> &[u8] {
        match &self.shared {
            Some(t) => t.0.as_ref().as_ref(),
            None => &self.data,
        }
    }

    /// A list built by [`from_lines`](Self::from_lines) becomes a list of pushed keys.
    fn settle(&mut self) {
        if self.lines.take().is_some() {
            let text = match self.shared.take() {
                Some(t) => t.0.as_ref().as_ref().to_vec(),
                None => std::mem::take(&mut self.data),
            };
            self.push_lines(text);
        }
    }

    /// Append a key.
    pub fn push(&mut self, key: &[u8]) {
        self.settle();
        self.starts.push(self.data.len());
        self.data.extend_from_slice(key);
        self.ends.push(self.data.len());
    }

    /// Append every line of `text` as a key, in order: lines end at `\n` (a `\r` before it is
    /// not part of the key), and a last line without one counts when it is not empty. The
    /// text is kept as it is (taken over without a copy when the list is empty): one pass to
    /// find the line ends, no copy per key.
    pub fn push_lines(&mut self, text: Vec<u8>) {
        self.settle();
        let base = self.data.len();
        if base == 0 {
            self.data = text;
        } else {
            self.data.extend_from_slice(&text);
        }
        split_lines(&self.data, base, &mut self.starts, &mut self.ends);
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        match &self.lines {
            None => self.ends.len(),
            Some(l) => *l.count.get_or_init(|| {
                let text = self.text();
                let newlines = memchr::memchr_iter(b'\n', text).count();
                newlines + usize::from(text.last().is_some_and(|&b| b != b'\n'))
            }),
        }
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        match &self.lines {
            None => self.ends.is_empty(),
            Some(_) => self.text().is_empty(),
        }
    }

    /// At least [`len`](Self::len), without counting a text of lines (a key takes at least
    /// one byte of it, its `\n`, but for the last).
    pub fn len_bound(&self) -> usize {
        match &self.lines {
            Some(l) if l.count.get().is_none() => self.text().len(),
            _ => self.len(),
        }
    }

    /// Key `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        let (starts, ends) = match &self.lines {
            None => (&self.starts, &self.ends),
            Some(l) => {
                let (s, e) = l.index.get_or_init(|| {
                    let (mut s, mut e) = (Vec::new(), Vec::new());
                    split_lines(self.text(), 0, &mut s, &mut e);
                    (s, e)
                });
                (s, e)
            }
        };
        &self.text()[starts[i]..ends[i]]
    }

    /// Keys `c·step ..` (at most `step` of them) with their indices, in order; how many
    /// there were (None: the list ends before key `c·step`).
    pub(crate) fn for_chunk(
        &self,
        c: usize,
        step: usize,
        mut f: impl FnMut(usize, &[u8]),
    ) -> Option<usize> {
        let first = c.checked_mul(step)?;
        let Some(l) = &self.lines else {
            let end = first.saturating_add(step).min(self.len());
            if first >= end {
                return None;
            }
            (first..end).for_each(|i| f(i, self.get(i)));
            return Some(end - first);
        };
        let text = self.text();
        let start = {
            let mut m = l.marks.lock().unwrap_or_else(|p| p.into_inner());
            if m.0 != step || m.1.is_empty() {
                *m = (step, vec![0]);
            }
            while m.1.len() <= c {
                let mut at = *m.1.last().unwrap_or(&0);
                if at >= text.len() {
                    return None;
                }
                for _ in 0..step {
                    match line_at(text, at) {
                        Some((_, _, next)) => at = next,
                        None => break,
                    }
                }
                m.1.push(at);
            }
            m.1[c]
        };
        let mut at = start;
        let mut n = 0;
        while n < step {
            let Some((s, e, next)) = line_at(text, at) else {
                break;
            };
            f(first + n, &text[s..e]);
            n += 1;
            at = next;
        }
        (n > 0).then_some(n)
    }

    /// Whether the keys are plain encodings rather than text.
    pub fn is_raw(&self) -> bool {
        self.raw
    }
}

/// What to compute per row group.
///
/// ```
/// use bloomery::parquet::{scan, FileAnswer, Hits, KeyList, Mode, Query};
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
/// let files = [lake.clone()];
/// let mut keys = KeyList::new(false);
/// keys.push_lines(b"5\n150\n1000".to_vec());
/// // row group 0 holds key 5, row group 1 key 150; 1000 is in neither
/// let answer = |mode| -> Result<Vec<Hits>, Box<dyn std::error::Error>> {
///     let q = Query { column: "id", keys: &keys, mode, use_sidecars: false };
///     let mut hits = Vec::new();
///     scan(&files, &q, |_, a: Result<FileAnswer, _>| -> Result<(), Box<dyn std::error::Error>> {
///         hits.extend(a?.row_groups.into_iter().map(|rg| rg.hits));
///         Ok(())
///     })?;
///     Ok(hits)
/// };
/// assert_eq!(answer(Mode::Any)?, [Hits::Any(true), Hits::Any(true)]);
/// // counts and lists may include false positives (at the filters' rate, 1%)
/// let count = answer(Mode::Count)?;
/// assert!(matches!(count[0], Hits::Count(n) if (1..=3).contains(&n)), "{count:?}");
/// let Hits::Keys(listed) = &answer(Mode::Keys)?[1] else { panic!() };
/// assert!(listed.contains(&1)); // key 1 of the list, 150
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Whether any key may be there (stops at the first).
    Any,
    /// How many keys may be there.
    Count,
    /// Which keys may be there.
    Keys,
}

/// A lake query.
///
/// ```
/// use bloomery::parquet::{scan, KeyList, Mode, ParquetError, Query};
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
/// let files = [lake.clone()];
/// let mut keys = KeyList::new(false);
/// keys.push_lines(b"5\n150\n1000".to_vec());
/// let q = Query { column: "id", keys: &keys, mode: Mode::Any, use_sidecars: false };
/// let mut seen = Vec::new();
/// scan(&files, &q, |path, answer| -> Result<(), ParquetError> {
///     let a = answer?;
///     seen.push(path.to_path_buf());
///     assert_eq!(a.column, "id");
///     assert_eq!(a.row_groups.len(), 2);
///     Ok(())
/// })?;
/// assert_eq!(seen, files);
///
/// // a column the file lacks is an error for that file
/// let q = Query { column: "name", ..q };
/// let r = scan(&files, &q, |_, answer| answer.map(|_| ()));
/// assert!(matches!(r, Err(ParquetError::NoColumn { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The column: a dotted path, or a leaf name that only one column has.
    pub column: &'a str,
    /// The keys.
    pub keys: &'a KeyList,
    /// What to compute.
    pub mode: Mode,
    /// Use sidecar files ([`ParquetSidecar::path_for`]) for row groups without a filter.
    pub use_sidecars: bool,
}

/// Where a row group's filter came from.
///
/// ```
/// use bloomery::parquet::{scan, FilterSource, KeyList, Mode, ParquetError, Query};
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
/// let files = [lake.clone()];
/// let mut keys = KeyList::new(false);
/// keys.push_lines(b"5\n150\n1000".to_vec());
/// let sources = |column| -> Result<Vec<FilterSource>, ParquetError> {
///     let q = Query { column, keys: &keys, mode: Mode::Any, use_sidecars: true };
///     let mut sources = Vec::new();
///     scan(&files, &q, |_, a| -> Result<(), ParquetError> {
///         sources.extend(a?.row_groups.iter().map(|rg| rg.source));
///         Ok(())
///     })?;
///     Ok(sources)
/// };
/// assert_eq!(sources("id")?, [FilterSource::Parquet; 2]);
/// // `raw` has no filters and no sidecar (see `ParquetSidecar` for one)
/// assert_eq!(sources("raw")?, [FilterSource::None; 2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterSource {
    /// The Parquet file's own filter.
    Parquet,
    /// The sidecar file.
    Sidecar,
    /// None: the row group may hold any key.
    None,
}

/// A row group's answer.
///
/// ```
/// use bloomery::parquet::{scan, Hits, KeyList, Mode, ParquetError, Query};
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
/// let files = [lake.clone()];
/// let mut keys = KeyList::new(false);
/// keys.push_lines(b"5\n150\n1000".to_vec());
/// let mut hits = Vec::new();
/// for column in ["id", "raw"] {
///     let q = Query { column, keys: &keys, mode: Mode::Count, use_sidecars: false };
///     scan(&files, &q, |_, a| -> Result<(), ParquetError> {
///         hits.extend(a?.row_groups.into_iter().map(|rg| rg.hits));
///         Ok(())
///     })?;
/// }
/// // `id`: each row group holds one of the keys (maybe a false positive more);
/// // `raw` has no filters: any key may be there
/// assert!(matches!(hits[0], Hits::Count(1..=3)), "{hits:?}");
/// assert!(matches!(hits[1], Hits::Count(1..=3)), "{hits:?}");
/// assert_eq!(hits[2..], [Hits::Unknown, Hits::Unknown]);
/// assert!(hits.iter().all(Hits::may_contain_any));
/// assert!(!Hits::Keys(Vec::new()).may_contain_any());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hits {
    /// No filter: unknown, any key may be there.
    Unknown,
    /// [`Mode::Any`]: whether some key may be there.
    Any(bool),
    /// [`Mode::Count`]: keys that may be there.
    Count(u64),
    /// [`Mode::Keys`]: indices of the keys that may be there, ascending.
    Keys(Vec<u32>),
}

impl Hits {
    /// True when some key may be in the row group (always, without a filter).
    pub fn may_contain_any(&self) -> bool {
        match self {
            Hits::Unknown => true,
            Hits::Any(b) => *b,
            Hits::Count(n) => *n > 0,
            Hits::Keys(k) => !k.is_empty(),
        }
    }
}

/// One row group of a file.
///
/// ```
/// use bloomery::parquet::{
///     scan, FilterSource, Hits, KeyList, Mode, ParquetError, Query, RowGroupAnswer,
/// };
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
/// let mut keys = KeyList::new(false);
/// keys.push(b"150");
/// let q = Query { column: "id", keys: &keys, mode: Mode::Keys, use_sidecars: false };
/// let mut groups: Vec<RowGroupAnswer> = Vec::new();
/// scan(&[lake], &q, |_, a| -> Result<(), ParquetError> {
///     groups = a?.row_groups;
///     Ok(())
/// })?;
/// assert_eq!(groups.len(), 2);
/// let second = &groups[1];
/// assert_eq!((second.index, second.rows), (1, 100));
/// assert_eq!(second.source, FilterSource::Parquet);
/// assert_eq!(second.hits, Hits::Keys(vec![0]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RowGroupAnswer {
    /// Index in the file.
    pub index: usize,
    /// Rows.
    pub rows: i64,
    /// Where the filter came from.
    pub source: FilterSource,
    /// The answer.
    pub hits: Hits,
}

/// What happened with a file's sidecar.
///
/// ```
/// use bloomery::parquet::{
///     build_filters, scan, KeyList, Mode, ParquetError, ParquetFile, ParquetSidecar, Query,
///     SidecarFilter, SidecarState, Sizing,
/// };
/// use bloomery::Persist;
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
/// let pf = ParquetFile::open(&lake)?;
/// let raw = pf.find_column("raw")?;
/// // filters for the two row groups of `raw`, kept beside the file
/// let side: Vec<Option<SidecarFilter>> = build_filters(&pf, raw, &[0, 1], 0.01, Sizing::Tight)?
///     .into_iter()
///     .map(|b| Some(SidecarFilter { filter: b.filter, distinct: b.distinct, fpr: 0.01 }))
///     .collect();
/// let state = |keys: &KeyList| -> Result<SidecarState, ParquetError> {
///     let q = Query { column: "raw", keys, mode: Mode::Any, use_sidecars: true };
///     let mut state = SidecarState::Unused;
///     scan(&[lake.clone()], &q, |_, a| -> Result<(), ParquetError> {
///         state = a?.sidecar;
///         Ok(())
///     })?;
///     Ok(state)
/// };
/// let mut keys = KeyList::new(false);
/// keys.push(b"5");
/// assert_eq!(state(&keys)?, SidecarState::Unused); // none yet
///
/// let path = ParquetSidecar::path_for(&lake, "raw");
/// let ct = pf.column_type(raw);
/// ParquetSidecar::new(pf.len(), pf.footer_hash(), "raw", ct, side.clone())?.save(&path)?;
/// assert_eq!(state(&keys)?, SidecarState::Used(path.clone()));
///
/// // a sidecar of another version of the file is ignored, with the reason
/// ParquetSidecar::new(pf.len(), pf.footer_hash() ^ 1, "raw", ct, side)?.save(&path)?;
/// assert!(matches!(state(&keys)?, SidecarState::Ignored(p, _) if p == path));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SidecarState {
    /// Not looked for (every row group had a filter, or sidecars were not asked for), or none.
    Unused,
    /// Used for at least one row group.
    Used(PathBuf),
    /// Present but not usable (another version of the file, another column, damaged): ignored.
    Ignored(PathBuf, String),
}

/// One file's answer.
///
/// ```
/// use bloomery::parquet::{
///     scan, ColumnType, FileAnswer, KeyList, Mode, ParquetError, PhysicalType, Query,
///     SidecarState,
/// };
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
/// let files = [lake.clone()];
/// let mut keys = KeyList::new(false);
/// keys.push_lines(b"5\n150\n1000".to_vec());
/// keys.push(b"not-a-number"); // key 3: cannot be an INT64 value
/// let q = Query { column: "id", keys: &keys, mode: Mode::Count, use_sidecars: false };
/// let mut answers: Vec<FileAnswer> = Vec::new();
/// scan(&files, &q, |_, a| -> Result<(), ParquetError> {
///     answers.push(a?);
///     Ok(())
/// })?;
/// let a = &answers[0];
/// assert_eq!(a.column, "id");
/// assert_eq!(a.column_type, ColumnType::new(PhysicalType::Int64, 0));
/// assert_eq!(a.row_groups.len(), 2);
/// assert_eq!((a.invalid_keys, a.keys_examined), (1, 4));
/// assert_eq!(a.invalid_example.as_ref().map(|(i, _)| *i), Some(3));
/// assert_eq!(a.sidecar, SidecarState::Unused);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FileAnswer {
    /// The column's dotted path in this file.
    pub column: String,
    /// Its type.
    pub column_type: ColumnType,
    /// Every row group, in order.
    pub row_groups: Vec<RowGroupAnswer>,
    /// Keys that cannot be values of this column's type (certainly absent), with the first.
    pub invalid_keys: u64,
    /// The first such key's index and why.
    pub invalid_example: Option<(usize, KeyError)>,
    /// The keys `invalid_keys` covers: the first `keys_examined` of the list. All of them
    /// for [`Mode::Count`] and [`Mode::Keys`]; a [`Mode::Any`] scan hashes the keys in
    /// chunks, in order, and stops probing a row group at its first hit, so it reads only
    /// as many chunks as its row groups needed (with many keys, usually the first) and
    /// reports on those. The answers are the same either way.
    pub keys_examined: usize,
    /// The sidecar.
    pub sidecar: SidecarState,
}

/// Keys hashed for one column type: one chunk of the key list.
struct Typed {
    hashes: Vec<u64>,
    /// The hashes in ascending order (so in the order of the blocks they probe), with their
    /// masks (a prune probes them against many filters), made when a prune first reads a
    /// filter in parts.
    sorted: OnceLock<Vec<MaskedHash>>,
    /// Key index of each hash.
    index: Vec<u32>,
    /// Keys in the chunk (hashed and invalid).
    keys: usize,
    invalid: u64,
    example: Option<(usize, KeyError)>,
}

/// Keys are hashed in chunks of this many, in input order, each chunk at most once per column
/// type and only when a probe needs it: a prune ([`Mode::Any`]) stops at a row group's first
/// hit, so with many keys it usually needs the first chunk only.
const HASH_CHUNK: usize = 1 << 14;

/// The key list hashed for one column type, chunk by chunk on demand (shared by the threads:
/// a chunk one thread is hashing, another waits for instead of hashing it too).
struct Hashed<'k> {
    keys: &'k KeyList,
    column_type: ColumnType,
    chunk: usize,
    /// One slot per chunk the list may have (None: past its end).
    chunks: Vec<OnceLock<Option<Typed>>>,
}

impl<'k> Hashed<'k> {
    fn new(keys: &'k KeyList, column_type: ColumnType, chunk: usize) -> Self {
        Self {
            keys,
            column_type,
            chunk,
            chunks: (0..keys.len_bound().div_ceil(chunk))
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// Chunk `c`, hashed now if no thread did before (None: the list ends before it).
    fn get(&self, c: usize) -> Option<&Typed> {
        self.chunks
            .get(c)?
            .get_or_init(|| {
                let mut out = Typed {
                    hashes: Vec::with_capacity(self.chunk),
                    sorted: OnceLock::new(),
                    index: Vec::with_capacity(self.chunk),
                    keys: 0,
                    invalid: 0,
                    example: None,
                };
                let mut buf = Vec::new();
                let raw = self.keys.is_raw();
                out.keys = self.keys.for_chunk(c, self.chunk, |i, key| {
                    match self.column_type.hash(key, raw, &mut buf) {
                        Ok(h) => {
                            out.hashes.push(h);
                            out.index.push(i as u32);
                        }
                        Err(e) => {
                            out.invalid += 1;
                            if out.example.is_none() {
                                out.example = Some((i, e));
                            }
                        }
                    }
                })?;
                Some(out)
            })
            .as_ref()
    }

    /// The only chunk, when the list has no more keys than a chunk holds.
    fn single(&self) -> Option<&Typed> {
        if self.keys.len_bound() <= self.chunk {
            self.get(0)
        } else {
            None
        }
    }

    /// The first chunk (None: no keys).
    fn first(&self) -> Option<&Typed> {
        self.get(0)
    }

    /// The chunks in order, hashed as they are reached.
    fn iter(&self) -> impl Iterator<Item = &Typed> {
        (0..).map_while(|c| self.get(c))
    }

    /// The keys' validity over the first `chunks` chunks: invalid keys, the first of them,
    /// and how many keys that covers.
    fn invalid(&self, chunks: usize) -> (u64, Option<(usize, KeyError)>, usize) {
        let mut invalid = 0;
        let mut example = None;
        let mut keys = 0;
        for t in self.iter().take(chunks) {
            invalid += t.invalid;
            keys += t.keys;
            if example.is_none() {
                example = t.example.clone();
            }
        }
        (invalid, example, keys)
    }
}

/// Hashed key lists per column type, shared by the files of a scan.
type TypedCache<'k> = Mutex<HashMap<ColumnType, Arc<Hashed<'k>>>>;

/// A row group's filter: a Parquet bitset where it was read, or a sidecar's filter.
trait Probe {
    fn contains_hash(&self, h: u64) -> bool;
    fn first_hit(&self, hashes: &[u64]) -> Option<usize> {
        hashes.iter().position(|&h| self.contains_hash(h))
    }
    fn count_hits(&self, hashes: &[u64]) -> usize {
        hashes.iter().filter(|&&h| self.contains_hash(h)).count()
    }
}

impl Probe for SplitBlockBits<'_> {
    fn contains_hash(&self, h: u64) -> bool {
        SplitBlockBits::contains_hash(self, h)
    }
    fn first_hit(&self, hashes: &[u64]) -> Option<usize> {
        SplitBlockBits::first_hit(self, hashes)
    }
    fn count_hits(&self, hashes: &[u64]) -> usize {
        SplitBlockBits::count_hits(self, hashes)
    }
}

impl Probe for crate::sets::split_block::SplitBlockBloomFilter {
    fn contains_hash(&self, h: u64) -> bool {
        crate::sets::split_block::SplitBlockBloomFilter::contains_hash(self, h)
    }
}

impl Typed {
    /// The hashes in ascending order, with their masks.
    fn sorted(&self) -> &[MaskedHash] {
        self.sorted.get_or_init(|| {
            let mut v = self.hashes.clone();
            v.sort_unstable();
            v.into_iter().map(MaskedHash::new).collect()
        })
    }
}

/// A row group's filter is probed one block read at a time when it has at least this many
/// bytes of bitset per key: a read of one 32-byte block costs about what copying 4 KiB does.
const BYTES_PER_BLOCK_READ: u64 = 4096;

/// Most bytes of the bitset a prune reads with the filter's header; each later read at least
/// doubles what was read.
const FIRST_PART: usize = 4096;

/// Keys a prune's first read of a bitset should cover: enough that one of them is likely to
/// pass the filter if any will (at a filter's usual 0.1–1 % rate, two in five to all).
const KEYS_IN_FIRST_PART: u64 = 512;

/// Probe row group `rg`'s own filter of column `col` (None: the chunk has none), reading of it
/// only what the probes need:
/// - few keys against a large bitset: the header, then each key's block alone;
/// - a prune ([`Mode::Any`]): the header and the bitset's first 4 KiB, then as far again each
///   time a key's block lies beyond what was read, keys taken in the order of their blocks, up
///   to the first hit (with many keys, usually within the first part);
/// - counting and listing keys: the whole filter in one read.
///
/// The answer and how many chunks of keys it took, as [`probe`] gives them.
fn probe_parquet(
    pf: &FooterFile,
    rg: usize,
    col: usize,
    h: &Hashed<'_>,
    mode: Mode,
    buf: &mut Vec<u8>,
) -> Result<Option<(Hits, usize)>, ParquetError> {
    let bad = |e: crate::error::Error| pf.filter_err(rg, col, e.to_string());
    let few = h.single().filter(|t| {
        pf.filter_location(rg, col)
            .and_then(|l| l.length)
            .is_some_and(|l| (t.hashes.len() as u64).saturating_mul(BYTES_PER_BLOCK_READ) <= l)
    });
    if let Some(t) = few {
        let Some(head) = pf.read_filter_head(rg, col, 0, buf)? else {
            return Ok(None);
        };
        let blocks = (head.num_bytes / 32) as u64;
        let check = |x: u64| -> Result<bool, ParquetError> {
            let b = SplitBlockBits::block_index(x, blocks) as usize;
            let block = if (b + 1) * 32 <= head.read {
                let at = head.header_len + b * 32;
                buf[at..at + 32].try_into().unwrap_or([0u8; 32])
            } else {
                pf.read_block(&head, b)?
            };
            Ok(SplitBlockBits::try_new(&block)
                .map_err(bad)?
                .contains_hash(x))
        };
        let hits = match mode {
            Mode::Any => {
                let mut any = false;
                for &x in &t.hashes {
                    if check(x)? {
                        any = true;
                        break;
                    }
                }
                return Ok(Some((Hits::Any(any), 1)));
            }
            Mode::Count => {
                let mut n = 0;
                for &x in &t.hashes {
                    n += u64::from(check(x)?);
                }
                Hits::Count(n)
            }
            Mode::Keys => {
                let mut keys = Vec::new();
                for (&x, &i) in t.hashes.iter().zip(&t.index) {
                    if check(x)? {
                        keys.push(i);
                    }
                }
                Hits::Keys(keys)
            }
        };
        return Ok(Some((hits, usize::MAX)));
    }
    if mode != Mode::Any {
        let Some(bits) = pf.read_filter_bytes(rg, col, buf)? else {
            return Ok(None);
        };
        let view = SplitBlockBits::try_new(&buf[bits]).map_err(bad)?;
        return Ok(Some(probe(&view, h, mode)));
    }
    // many keys: a first part of the bitset that holds the blocks of some 512 of them
    let first = match (
        pf.filter_location(rg, col).and_then(|l| l.length),
        h.first(),
    ) {
        (Some(l), Some(t)) if !t.hashes.is_empty() => {
            let part = l.saturating_mul(KEYS_IN_FIRST_PART) / t.hashes.len() as u64;
            (part.next_multiple_of(64) as usize).clamp(256, FIRST_PART)
        }
        _ => FIRST_PART,
    };
    let Some(head) = pf.read_filter_head(rg, col, first, buf)? else {
        return Ok(None);
    };
    let blocks = (head.num_bytes / 32) as u64;
    let mut read = head.read;
    let mut used = 0;
    for t in h.iter() {
        used += 1;
        let sorted = t.sorted();
        let mut done = 0;
        while done < sorted.len() {
            // the keys whose blocks were read, probed; then read on to the next key's block
            let ready = (read / 32) as u64;
            let upto = done
                + sorted[done..]
                    .partition_point(|x| SplitBlockBits::block_index(x.hash, blocks) < ready);
            if upto > done {
                let view = SplitBlockBits::try_new(&buf[head.bitset()]).map_err(bad)?;
                if view.first_hit_masked(&sorted[done..upto]).is_some() {
                    return Ok(Some((Hits::Any(true), used)));
                }
                done = upto;
                continue;
            }
            let need = (SplitBlockBits::block_index(sorted[done].hash, blocks) as usize + 1) * 32;
            let to = need.max(read.saturating_mul(2)).min(head.num_bytes);
            pf.read_bitset_part(&head, read..to, buf)?;
            read = to;
        }
    }
    Ok(Some((Hits::Any(false), used)))
}

/// Probe one row group's filter: its answer and how many chunks of keys that took.
fn probe(bits: &impl Probe, h: &Hashed<'_>, mode: Mode) -> (Hits, usize) {
    match mode {
        Mode::Any => {
            let mut used = 0;
            for t in h.iter() {
                used += 1;
                if bits.first_hit(&t.hashes).is_some() {
                    return (Hits::Any(true), used);
                }
            }
            (Hits::Any(false), used)
        }
        Mode::Count => {
            let hits = h.iter().map(|t| bits.count_hits(&t.hashes) as u64).sum();
            (Hits::Count(hits), usize::MAX)
        }
        Mode::Keys => {
            let mut hits = Vec::new();
            for t in h.iter() {
                hits.extend(
                    t.hashes
                        .iter()
                        .zip(&t.index)
                        .filter(|(&x, _)| bits.contains_hash(x))
                        .map(|(_, &i)| i),
                );
            }
            (Hits::Keys(hits), usize::MAX)
        }
    }
}

/// Load the sidecar of `pf`'s column `col` if it exists and describes this version of the file.
fn sidecar_for(
    pf: &FooterFile,
    column: &str,
    t: &ColumnType,
) -> (Option<ParquetSidecar>, SidecarState) {
    let path = ParquetSidecar::path_for(pf.path(), column);
    if !path.is_file() {
        return (None, SidecarState::Unused);
    }
    let s = match ParquetSidecar::load(&path) {
        Ok(s) => s,
        Err(e) => return (None, SidecarState::Ignored(path, e.to_string())),
    };
    let why = if s.source_len != pf.len() || s.source_footer_hash != pf.footer_hash() {
        Some("it was built for another version of the file (length or footer differ)".into())
    } else if s.column != column {
        Some(format!("it holds column `{}`", s.column))
    } else if (s.column_type.physical, s.column_type.type_length) != (t.physical, t.type_length) {
        Some(format!(
            "it was built for type {}",
            s.column_type.describe()
        ))
    } else if s.row_groups.len() != pf.row_groups() {
        Some(format!(
            "it has {} row groups, the file {}",
            s.row_groups.len(),
            pf.row_groups()
        ))
    } else {
        None
    };
    match why {
        Some(w) => (None, SidecarState::Ignored(path, w)),
        None => (Some(s), SidecarState::Used(path)),
    }
}

thread_local! {
    /// The buffer a scan thread reads filters into, reused from file to file.
    static FILTER_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

fn scan_file<'k>(
    path: &Path,
    q: &Query<'k>,
    cache: &TypedCache<'k>,
    tail: &TailHint,
) -> Result<FileAnswer, ParquetError> {
    let pf = FooterFile::open(path, Some(tail))?;
    let col = pf.find_column(q.column)?;
    let column = pf.column_path(col);
    let ct = pf.column_type(col);
    // the lock only hands out the shared list: its chunks are hashed outside it
    let hashed = {
        let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(
            c.entry(ct)
                .or_insert_with(|| Arc::new(Hashed::new(q.keys, ct, HASH_CHUNK))),
        )
    };
    let mut chunks_used = 0;
    // the file's own filters, probed where they were read (into the thread's buffer, kept
    // from file to file); then the sidecar's, if needed
    let mut buf = FILTER_BUF.take();
    let mut row_groups = Vec::with_capacity(pf.row_groups());
    for rg in 0..pf.row_groups() {
        let (source, hits) = match probe_parquet(&pf, rg, col, &hashed, q.mode, &mut buf)? {
            Some((hits, used)) => {
                chunks_used = chunks_used.max(used);
                (FilterSource::Parquet, hits)
            }
            None => (FilterSource::None, Hits::Unknown),
        };
        row_groups.push(RowGroupAnswer {
            index: rg,
            rows: pf.rows(rg),
            source,
            hits,
        });
    }
    let (side, sidecar) =
        if q.use_sidecars && row_groups.iter().any(|r| r.source == FilterSource::None) {
            sidecar_for(&pf, &column, &ct)
        } else {
            (None, SidecarState::Unused)
        };
    let mut used_side = false;
    if let Some(side) = &side {
        for r in row_groups
            .iter_mut()
            .filter(|r| r.source == FilterSource::None)
        {
            if let Some(s) = &side.row_groups[r.index] {
                used_side = true;
                r.source = FilterSource::Sidecar;
                let (hits, used) = probe(&s.filter, &hashed, q.mode);
                chunks_used = chunks_used.max(used);
                r.hits = hits;
            }
        }
    }
    let sidecar = match sidecar {
        SidecarState::Used(_) if !used_side => SidecarState::Unused,
        s => s,
    };
    // counting and listing read every key; a prune reports on the keys it needed
    if q.mode != Mode::Any {
        chunks_used = usize::MAX;
    }
    FILTER_BUF.set(buf);
    let (invalid_keys, invalid_example, keys_examined) = hashed.invalid(chunks_used);
    Ok(FileAnswer {
        column,
        column_type: ct,
        row_groups,
        invalid_keys,
        invalid_example,
        keys_examined,
        sidecar,
    })
}

/// Files processed in parallel before their answers are handed out, in order.
const BATCH: usize = 256;

/// Answer `q` for every file, in parallel, handing each file's answer to `emit` in the order
/// of `files`. Stops at the first error `emit` returns.
pub fn scan<E>(
    files: &[PathBuf],
    q: &Query<'_>,
    mut emit: impl FnMut(&Path, Result<FileAnswer, ParquetError>) -> Result<(), E>,
) -> Result<(), E> {
    let cache: TypedCache<'_> = Mutex::new(HashMap::new());
    let tail = TailHint::new();
    for batch in files.chunks(BATCH) {
        let answers: Vec<_> = batch
            .par_iter()
            .map(|p| scan_file(p, q, &cache, &tail))
            .collect();
        for (p, a) in batch.iter().zip(answers) {
            emit(p, a)?;
        }
    }
    Ok(())
}

/// True for the names the walk leaves out: sidecars (`*.bloomery`), checksum files (`*.crc`),
/// and hidden or bookkeeping entries (`.*`, `_*`: `_SUCCESS`, `_delta_log`, ...).
pub fn is_sidecar_name(name: &str) -> bool {
    name.ends_with(".bloomery")
}

fn skipped(name: &str) -> bool {
    name.starts_with('.')
        || name.starts_with('_')
        || is_sidecar_name(name)
        || name.ends_with(".crc")
}

/// A file to read: given on the command line (`explicit`: it must be Parquet) or found in a
/// directory (a file that turns out not to be Parquet may be skipped).
///
/// ```
/// use bloomery::parquet::{walk, Candidate};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("day=1"))?;
/// for name in ["day=1/a.parquet", "b.parquet", "b.parquet.id.bloomery", "_SUCCESS", ".hidden"] {
///     std::fs::write(dir.path().join(name), b"")?;
/// }
/// let named = dir.path().join("b.parquet");
/// let (files, errors) = walk(&[dir.path().to_path_buf(), named.clone()]);
/// assert!(errors.is_empty());
/// // found in the directory (sorted; sidecars and bookkeeping left out), then named
/// assert_eq!(
///     files,
///     [
///         Candidate { path: named.clone(), explicit: false },
///         Candidate { path: dir.path().join("day=1/a.parquet"), explicit: false },
///         Candidate { path: named, explicit: true },
///     ]
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The file.
    pub path: PathBuf,
    /// Named by the caller rather than found in a directory.
    pub explicit: bool,
}

fn walk_dir(dir: &Path) -> (Vec<Candidate>, Vec<ParquetError>) {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => return (Vec::new(), vec![ParquetError::io(dir, e)]),
    };
    // (name, path, is a directory): the names sort as the paths would (one directory)
    let mut entries: Vec<(std::ffi::OsString, PathBuf, bool)> = Vec::new();
    let mut errors = Vec::new();
    for e in rd {
        let e = match e {
            Ok(e) => e,
            Err(err) => {
                errors.push(ParquetError::io(dir, err));
                continue;
            }
        };
        let name = e.file_name();
        if skipped(&name.to_string_lossy()) {
            continue;
        }
        let path = e.path();
        // directories are followed only when they are real directories (no symlink loops);
        // symlinks to files are read
        match e.file_type() {
            Ok(ft) if ft.is_dir() => entries.push((name, path, true)),
            Ok(ft) if ft.is_file() => entries.push((name, path, false)),
            Ok(ft) if ft.is_symlink() && path.is_file() => entries.push((name, path, false)),
            Ok(_) => {}
            Err(err) => errors.push(ParquetError::io(&path, err)),
        }
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let parts: Vec<(Vec<Candidate>, Vec<ParquetError>)> = entries
        .into_par_iter()
        .map(|(_, p, is_dir)| {
            if is_dir {
                walk_dir(&p)
            } else {
                (
                    vec![Candidate {
                        path: p,
                        explicit: false,
                    }],
                    Vec::new(),
                )
            }
        })
        .collect();
    let mut files = Vec::new();
    for (f, e) in parts {
        files.extend(f);
        errors.extend(e);
    }
    (files, errors)
}

/// The files named by `paths`: files as given, directories walked recursively and in parallel
/// (sorted by path; hidden and bookkeeping entries, sidecars and checksum files left out).
pub fn walk(paths: &[PathBuf]) -> (Vec<Candidate>, Vec<ParquetError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                let (f, e) = walk_dir(p);
                files.extend(f);
                errors.extend(e);
            }
            Ok(_) => files.push(Candidate {
                path: p.clone(),
                explicit: true,
            }),
            Err(e) => errors.push(ParquetError::io(p, e)),
        }
    }
    (files, errors)
}

#[cfg(test)]
mod tests {
    use super::KeyList;

    fn keys(l: &KeyList) -> Vec<&[u8]> {
        (0..l.len()).map(|i| l.get(i)).collect()
    }

    /// Every key of `l` by chunks of `step`, with its index, as `for_chunk` hands them out.
    fn by_chunks(l: &KeyList, step: usize) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        for c in 0.. {
            let before = out.len();
            let Some(n) = l.for_chunk(c, step, |i, k| out.push((i, k.to_vec()))) else {
                break;
            };
            assert_eq!(out.len() - before, n);
            assert!(n <= step && n > 0);
        }
        out
    }

    /// A text taken over by `from_lines` is the keys `push_lines` makes of it, whether read by
    /// chunks (split as far as read: the chunks before the last never see the end of the
    /// text), counted or indexed, in any order.
    #[test]
    fn lines_split_on_demand_are_the_keys_push_lines_makes() {
        let mut texts: Vec<Vec<u8>> = [
            &b"1\n22\n333\n"[..],
            b"1\r\n22\r\n333",
            b"\n\nx\n",
            b"a\rb\n\r\n",
            b"last\r",
            b"\r",
            b"",
            b"\n",
        ]
        .iter()
        .map(|t| t.to_vec())
        .collect();
        let big: Vec<u8> = (0..1000)
            .flat_map(|i| match i % 7 {
                0 => b"\n".to_vec(),
                1 => format!("{i}\r\n").into_bytes(),
                _ => format!("key-{i}\n").into_bytes(),
            })
            .chain(*b"tail")
            .collect();
        texts.push(big);
        for text in texts {
            let mut eager = KeyList::new(false);
            eager.push_lines(text.clone());
            let want: Vec<(usize, Vec<u8>)> = keys(&eager)
                .into_iter()
                .enumerate()
                .map(|(i, k)| (i, k.to_vec()))
                .collect();
            for step in [1, 2, 3, 64, 1 << 14] {
                // chunks first, then the count and the index
                let lazy = KeyList::from_lines(text.clone(), false);
                assert!(lazy.len_bound() >= want.len());
                assert_eq!(by_chunks(&lazy, step), want, "step {step}");
                assert_eq!(by_chunks(&eager, step), want, "step {step}");
                assert_eq!(lazy.len(), want.len());
                assert_eq!(lazy.is_empty(), want.is_empty());
                assert_eq!(keys(&lazy), keys(&eager));
                // the index and count first, then the chunks; a later chunk before an earlier
                let lazy = KeyList::from_lines(text.clone(), false);
                assert_eq!(keys(&lazy), keys(&eager));
                if want.len() > step {
                    let mut second = Vec::new();
                    lazy.for_chunk(1, step, |i, k| second.push((i, k.to_vec())));
                    assert_eq!(second[..], want[step..want.len().min(2 * step)]);
                }
                assert_eq!(by_chunks(&lazy, step), want, "step {step}");
                // pushing after it keeps every key, in order
                let mut more = KeyList::from_lines(text.clone(), false);
                more.push(b"x");
                let mut also = eager.clone();
                also.push(b"x");
                assert_eq!(keys(&more), keys(&also));
            }
        }
    }

    #[test]
    fn lines_are_the_keys_push_would_make() {
        for (text, want) in [
            (&b"1\n22\n333\n"[..], &[&b"1"[..], b"22", b"333"][..]),
            (b"1\r\n22\r\n333", &[b"1", b"22", b"333"]),
            (b"\n\nx\n", &[b"", b"", b"x"]),
            (b"a\rb\n\r\n", &[b"a\rb", b""]),
            (b"last\r", &[b"last"]),
            (b"\r", &[b""]),
            (b"", &[]),
        ] {
            let mut l = KeyList::new(false);
            l.push_lines(text.to_vec());
            assert_eq!(keys(&l), want, "{:?}", String::from_utf8_lossy(text));
        }
        // appended after pushed keys and other lines, in order
        let mut l = KeyList::new(false);
        l.push(b"k");
        l.push_lines(b"1\n2".to_vec());
        l.push_lines(b"3\n".to_vec());
        l.push(b"");
        assert_eq!(keys(&l), [&b"k"[..], b"1", b"2", b"3", b""]);
    }
}
