//! What a scan is asked ([`Query`], [`Mode`]) and what it answers ([`FileAnswer`],
//! [`RowGroupAnswer`], [`Hits`], [`SidecarState`]).

use std::path::PathBuf;

use crate::parquet::keys::{ColumnType, KeyError};

use super::KeyList;

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
    /// Use sidecar files ([`ParquetSidecar::path_for`](crate::parquet::ParquetSidecar::path_for)) for row groups without a filter.
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
