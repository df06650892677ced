//! Filters where there are none: read a column chunk's values (the `parquet` crate's column
//! reader), hash each non-null value as the specification does, and fill a split-block filter
//! sized for the distinct values; then keep the filters in a sidecar, or write a copy of the
//! file with them embedded.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::bloom_filter::Sbbf;
use parquet::column::reader::{get_column_reader, ColumnReader};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::AsBytes;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::serialized_reader::SerializedPageReader;
use parquet::file::writer::SerializedFileWriter;

use super::file::ParquetFile;
use super::footer::PageIndexPart;
use super::guarded;
use super::ParquetError;
use crate::hash::KeyHasher;
use crate::sets::split_block::SplitBlockBloomFilter;

/// How a built filter is sized.
///
/// ```
/// use bloomery::parquet::{build_filters, ParquetFile, Sizing};
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
/// let parquet = build_filters(&pf, raw, &[0], 0.01, Sizing::Parquet)?;
/// let tight = build_filters(&pf, raw, &[0], 0.01, Sizing::Tight)?;
/// // a power of two of bytes; whole 32-byte blocks, as many as the rate needs
/// let (p, t) = (parquet[0].filter.num_bytes(), tight[0].filter.num_bytes());
/// assert!(p.is_power_of_two(), "{p} bytes");
/// assert!(t % 32 == 0 && t < 2 * p, "{t} bytes");
/// // either admits every value of the row group
/// let mut buf = Vec::new();
/// for id in 0..100 {
///     let h = pf.column_type(raw).hash(id.to_string().as_bytes(), false, &mut buf)?;
///     assert!(parquet[0].filter.contains_hash(h) && tight[0].filter.contains_hash(h));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizing {
    /// As arrow-rs and parquet-mr size theirs: a power of two of bytes
    /// ([`crate::sets::split_block::parquet_num_bytes`]); what goes into Parquet files.
    Parquet,
    /// The least number of blocks meeting the rate by the exact split-block model (what
    /// sidecars use): not rounded up to a power of two, but larger where the Parquet
    /// writers' formula undersizes (100 values at 1%: 160 bytes against 128).
    Tight,
}

/// A filter built from a column chunk's values.
///
/// ```
/// use bloomery::parquet::{build_filters, BuiltFilter, ParquetFile, Sizing};
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
/// let built: Vec<BuiltFilter> = build_filters(&pf, raw, &[1], 0.01, Sizing::Tight)?;
/// assert_eq!(built.len(), 1);
/// let b = &built[0];
/// assert_eq!((b.row_group, b.values, b.distinct), (1, 100, 100));
/// // every value of the row group is in its filter
/// let mut buf = Vec::new();
/// for id in 100..200 {
///     let h = pf.column_type(raw).hash(id.to_string().as_bytes(), false, &mut buf)?;
///     assert!(b.filter.contains_hash(h));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct BuiltFilter {
    /// Row group index.
    pub row_group: usize,
    /// The filter.
    pub filter: SplitBlockBloomFilter,
    /// Distinct values (distinct 64-bit hashes) inserted.
    pub distinct: u64,
    /// Non-null values read.
    pub values: u64,
}

/// Rows asked for per read of the column reader.
const BATCH: usize = 8192;

/// The 64-bit hashes of every non-null value of row group `rg`, column `col`.
fn column_hashes(
    pf: &ParquetFile,
    file: &Arc<File>,
    rg: usize,
    col: usize,
) -> Result<Vec<u64>, ParquetError> {
    let path = pf.path();
    let meta = pf.metadata();
    let rgm = meta.row_group(rg);
    let err = |e: parquet::errors::ParquetError| {
        ParquetError::data(
            path,
            format!(
                "row group {rg}, column `{}`: reading values: {e}",
                pf.column_path(col)
            ),
        )
    };
    let rows = usize::try_from(rgm.num_rows()).map_err(|_| {
        ParquetError::data(path, format!("row group {rg} has {} rows", rgm.num_rows()))
    })?;
    let pages =
        SerializedPageReader::new(Arc::clone(file), rgm.column(col), rows, None).map_err(err)?;
    let descr = meta.file_metadata().schema_descr().column(col);
    let reader = get_column_reader(descr, Box::new(pages));
    let hasher = KeyHasher::parquet();
    let mut hashes = Vec::with_capacity(rows);
    let (mut def, mut rep) = (Vec::new(), Vec::new());
    macro_rules! read_all {
        ($r:expr) => {{
            let mut r = $r;
            let mut vals = Vec::with_capacity(BATCH);
            loop {
                vals.clear();
                def.clear();
                rep.clear();
                let (records, _, levels) = r
                    .read_records(BATCH, Some(&mut def), Some(&mut rep), &mut vals)
                    .map_err(err)?;
                for v in &vals {
                    hashes.push(hasher.hash_bytes(v.as_bytes()).lo);
                }
                if records == 0 && levels == 0 && vals.is_empty() {
                    break;
                }
            }
        }};
    }
    match reader {
        ColumnReader::BoolColumnReader(r) => read_all!(r),
        ColumnReader::Int32ColumnReader(r) => read_all!(r),
        ColumnReader::Int64ColumnReader(r) => read_all!(r),
        ColumnReader::Int96ColumnReader(r) => read_all!(r),
        ColumnReader::FloatColumnReader(r) => read_all!(r),
        ColumnReader::DoubleColumnReader(r) => read_all!(r),
        ColumnReader::ByteArrayColumnReader(r) => read_all!(r),
        ColumnReader::FixedLenByteArrayColumnReader(r) => read_all!(r),
    }
    Ok(hashes)
}

/// Check that every column chunk of `pf` lies inside the file (its start, the dictionary
/// page's offset or else the first data page's, plus its compressed size), before the
/// `parquet` crate reads or copies the chunks by those fields: a damaged or forged footer is
/// then an error naming the row group and column.
fn check_chunk_ranges(pf: &ParquetFile) -> Result<(), ParquetError> {
    let len = pf.len();
    for (r, rg) in pf.metadata().row_groups().iter().enumerate() {
        for col in rg.columns() {
            let start = col
                .dictionary_page_offset()
                .unwrap_or_else(|| col.data_page_offset());
            let size = col.compressed_size();
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(size).ok())
                .and_then(|(s, n)| s.checked_add(n));
            if end.is_none_or(|e| e > len) || col.data_page_offset() < start {
                return Err(ParquetError::Footer {
                    path: pf.path().to_path_buf(),
                    reason: format!(
                        "row group {r}, column {}: its chunk ({size} bytes at offset {start}) \
                         is outside the {len}-byte file",
                        col.column_path().string()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Build filters for row groups `row_groups` of column `col` at rate `fpp`, reading the
/// column's values.
pub fn build_filters(
    pf: &ParquetFile,
    col: usize,
    row_groups: &[usize],
    fpp: f64,
    sizing: Sizing,
) -> Result<Vec<BuiltFilter>, ParquetError> {
    let path = pf.path();
    check_chunk_ranges(pf)?;
    let file = File::open(path).map_err(|e| ParquetError::io(path, e))?;
    let file = Arc::new(file);
    let mut out = Vec::with_capacity(row_groups.len());
    for &rg in row_groups {
        let mut hashes = guarded(path, "reading values", || column_hashes(pf, &file, rg, col))?;
        let values = hashes.len() as u64;
        hashes.sort_unstable();
        hashes.dedup();
        let distinct = hashes.len() as u64;
        let bloomery = |e: crate::error::Error| ParquetError::Bloomery {
            path: path.to_path_buf(),
            source: e,
        };
        let mut filter = match sizing {
            Sizing::Parquet => SplitBlockBloomFilter::try_with_parquet_sizing(distinct, fpp),
            Sizing::Tight => SplitBlockBloomFilter::builder()
                .capacity(distinct.max(1))
                .fpr(fpp)
                .try_build(),
        }
        .map_err(bloomery)?;
        for h in hashes {
            filter.insert_hash(h);
        }
        out.push(BuiltFilter {
            row_group: rg,
            filter,
            distinct,
            values,
        });
    }
    Ok(out)
}

/// What [`rewrite_with_filters`] did.
///
/// ```
/// use bloomery::parquet::{rewrite_with_filters, verify_rewrite, ParquetFile, RewriteReport};
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
/// let out = dir.path().join("with-filters.parquet");
/// let report: RewriteReport = rewrite_with_filters(&lake, &out, "raw", 0.01)?;
/// // both row groups get a filter for `raw`; the two of `id` are copied
/// assert_eq!(report.row_groups, 2);
/// assert_eq!((report.built, report.kept), (2, 2));
/// assert_eq!(report.bytes, std::fs::metadata(&out)?.len());
/// verify_rewrite(&lake, &out, "raw")?;
/// let pf = ParquetFile::open(&out)?;
/// assert!(pf.read_filter(1, pf.find_column("raw")?)?.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewriteReport {
    /// Row groups of the file.
    pub row_groups: usize,
    /// Filters built for the column (row groups that had none).
    pub built: usize,
    /// Filters the file already had (of any column), copied.
    pub kept: usize,
    /// Bytes of the new file.
    pub bytes: u64,
}

/// Check the page index of `meta`'s file before the `parquet` crate reads it: each column
/// and offset index lies inside the file, within the memory limit, and is a well-formed Thrift
/// struct whose lists claim no more elements than their bytes hold. A damaged or forged index
/// is then an error that names the row group, column and index, from this crate's own reader
/// rather than from whatever the `parquet` crate's reader makes of it.
fn check_page_index(
    path: &Path,
    file: &File,
    meta: &ParquetMetaData,
    len: u64,
) -> Result<(), ParquetError> {
    let bad = |reason: String| ParquetError::Footer {
        path: path.to_path_buf(),
        reason,
    };
    let mut buf = Vec::new();
    for (r, rg) in meta.row_groups().iter().enumerate() {
        for col in rg.columns() {
            let indexes = [
                (
                    "column index",
                    PageIndexPart::Column,
                    col.column_index_offset(),
                    col.column_index_length(),
                ),
                (
                    "offset index",
                    PageIndexPart::Offset,
                    col.offset_index_offset(),
                    col.offset_index_length(),
                ),
            ];
            for (what, part, offset, length) in indexes {
                let (Some(offset), Some(length)) = (offset, length) else {
                    continue;
                };
                let at = format!(
                    "row group {r}, column {}: its {what}",
                    col.column_path().string()
                );
                if offset < 0 || length <= 0 || offset as u64 + length as u64 > len {
                    return Err(bad(format!(
                        "{at} ({length} bytes at offset {offset}) is outside the {len}-byte file"
                    )));
                }
                crate::store::check_size(length as u64, crate::store::max_bytes())
                    .map_err(|e| bad(format!("{at}: {e}")))?;
                buf.resize(length as usize, 0);
                super::file::read_exact_at(file, &mut buf, offset as u64)
                    .map_err(|e| ParquetError::io(path, e))?;
                super::footer::check_struct(&buf, part)
                    .map_err(|e| bad(format!("{at} is malformed: {e}")))?;
            }
        }
    }
    Ok(())
}

fn footer_with_page_index(
    path: &Path,
    file: &File,
    pf: &ParquetFile,
) -> Result<ParquetMetaData, ParquetError> {
    super::file::check_footer(path)?;
    check_page_index(path, file, pf.metadata(), pf.len())?;
    guarded(path, "reading the page index", || {
        ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Optional)
            .parse_and_finish(file)
            .map_err(|e| ParquetError::Footer {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
    })
}

/// Write a copy of `input` to `output` (atomically: a temporary file in the same directory,
/// renamed) with split-block filters embedded for the row groups whose column `column` has
/// none, sized as Parquet writers size them at rate `fpp`. Every column chunk is copied byte
/// for byte, with its statistics and page index; the file's key-value metadata (an Arrow
/// schema among them) and its `created_by` are kept, so readers apply the same
/// writer-specific rules as to the original. Filters the file had are copied. Before it
/// replaces `output`, the new file is read back and checked by [`verify_rewrite`]; a file that
/// fails is deleted and `output` left as it was.
pub fn rewrite_with_filters(
    input: &Path,
    output: &Path,
    column: &str,
    fpp: f64,
) -> Result<RewriteReport, ParquetError> {
    guarded(input, "rewriting", || {
        rewrite(input, output, column, fpp, |_| Ok(()))
    })
}

/// [`rewrite_with_filters`], panics of the `parquet` crate not caught; `before_check` runs on
/// the written temporary file before it is read back (tests damage it there).
fn rewrite(
    input: &Path,
    output: &Path,
    column: &str,
    fpp: f64,
    before_check: impl FnOnce(&Path) -> std::io::Result<()>,
) -> Result<RewriteReport, ParquetError> {
    let pf = ParquetFile::open(input)?;
    check_chunk_ranges(&pf)?;
    let col = pf.find_column(column)?;
    let missing: Vec<usize> = (0..pf.row_groups())
        .filter(|&rg| pf.filter_location(rg, col).is_none())
        .collect();
    let mut built = build_filters(&pf, col, &missing, fpp, Sizing::Parquet)?;
    let file = File::open(input).map_err(|e| ParquetError::io(input, e))?;
    let meta = footer_with_page_index(input, &file, &pf)?;
    let fm = meta.file_metadata();
    let write_err = |e: parquet::errors::ParquetError| {
        ParquetError::data(output, format!("writing the Parquet file: {e}"))
    };

    let mut props = WriterProperties::builder()
        .set_key_value_metadata(fm.key_value_metadata().cloned())
        .set_writer_version(if fm.version() >= 2 {
            WriterVersion::PARQUET_2_0
        } else {
            WriterVersion::PARQUET_1_0
        })
        // no new page index where the input had none
        .set_offset_index_disabled(meta.page_index().is_none());
    if let Some(cb) = fm.created_by() {
        props = props.set_created_by(cb.to_string());
    }
    let sorting = meta.row_groups().first().and_then(|r| r.sorting_columns());
    if meta
        .row_groups()
        .iter()
        .all(|r| r.sorting_columns() == sorting)
    {
        props = props.set_sorting_columns(sorting.cloned());
    }
    let props = Arc::new(props.build());

    let dir = crate::io::temp::TempFile::dir_of(output);
    let tmp = crate::io::temp::TempFile::new_in(&dir, ".parquet.tmp")
        .map_err(|e| ParquetError::io(output, e))?;
    let out_file = tmp.reopen().map_err(|e| ParquetError::io(output, e))?;
    let mut writer = SerializedFileWriter::new(
        std::io::BufWriter::with_capacity(1 << 20, out_file),
        fm.schema_descr().root_schema_ptr(),
        props,
    )
    .map_err(write_err)?;
    let mut kept = 0;
    let n_built = built.len();
    built.reverse(); // taken from the back in row-group order
    for rg in 0..meta.num_row_groups() {
        let rgm = meta.row_group(rg);
        let page_index = meta.page_index_for_row_group(rg);
        let mut rgw = writer.next_row_group().map_err(write_err)?;
        for c in 0..rgm.num_columns() {
            let cc = rgm.column(c);
            let bloom_filter = match pf.read_filter(rg, c)? {
                Some(f) => {
                    kept += 1;
                    Some(Sbbf::new(&f.to_parquet_bitset()))
                }
                None if c == col => {
                    let b = built.pop().filter(|b| b.row_group == rg).ok_or_else(|| {
                        ParquetError::data(input, "row group filters out of step")
                    })?;
                    Some(Sbbf::new(&b.filter.to_parquet_bitset()))
                }
                None => None,
            };
            let close = ColumnCloseResult {
                bytes_written: cc.compressed_size() as u64,
                rows_written: rgm.num_rows() as u64,
                metadata: cc.clone(),
                bloom_filter,
                column_index: page_index.column_index(c).cloned(),
                offset_index: page_index.offset_index(c).cloned(),
            };
            rgw.append_column(&file, close).map_err(write_err)?;
        }
        rgw.close().map_err(write_err)?;
    }
    let inner = writer.into_inner().map_err(write_err)?;
    let out_file = inner
        .into_inner()
        .map_err(|e| ParquetError::io(output, e.into_error()))?;
    out_file
        .sync_all()
        .map_err(|e| ParquetError::io(output, e))?;
    let bytes = out_file
        .metadata()
        .map_err(|e| ParquetError::io(output, e))?
        .len();
    drop(out_file);
    before_check(tmp.path()).map_err(|e| ParquetError::io(output, e))?;
    // read back from the disk before it replaces anything; errors name `output`
    verify(input, tmp.path(), column).map_err(|e| e.renamed(output))?;
    tmp.persist(output)
        .map_err(|e| ParquetError::io(output, e))?;
    #[cfg(unix)]
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(RewriteReport {
        row_groups: meta.num_row_groups(),
        built: n_built,
        kept,
        bytes,
    })
}

/// Check a rewritten file against its input: the same schema, row groups, rows and column
/// chunks (sizes, value counts, statistics); every filter of the input still there with the
/// same bitset; and, for column `column`, a filter in every row group, read back by the
/// `parquet` crate's own reader (`Sbbf::read_from_column_chunk`), that admits every value the
/// output file's column chunk holds.
pub fn verify_rewrite(input: &Path, output: &Path, column: &str) -> Result<(), ParquetError> {
    guarded(output, "verifying", || verify(input, output, column))
}

/// [`verify_rewrite`], panics of the `parquet` crate not caught.
fn verify(input: &Path, output: &Path, column: &str) -> Result<(), ParquetError> {
    let a = ParquetFile::open(input)?;
    let b = ParquetFile::open(output)?;
    let fail = |what: String| ParquetError::data(output, format!("verification failed: {what}"));
    if a.metadata().file_metadata().schema_descr().root_schema()
        != b.metadata().file_metadata().schema_descr().root_schema()
    {
        return Err(fail("the schema differs".into()));
    }
    if a.row_groups() != b.row_groups() {
        return Err(fail("the number of row groups differs".into()));
    }
    let col = b.find_column(column)?;
    let out_file = File::open(output).map_err(|e| ParquetError::io(output, e))?;
    let out_arc = Arc::new(
        out_file
            .try_clone()
            .map_err(|e| ParquetError::io(output, e))?,
    );
    for rg in 0..a.row_groups() {
        let (ra, rb) = (a.metadata().row_group(rg), b.metadata().row_group(rg));
        if ra.num_rows() != rb.num_rows() || ra.num_columns() != rb.num_columns() {
            return Err(fail(format!("row group {rg}: rows or columns differ")));
        }
        for c in 0..ra.num_columns() {
            let (ca, cb) = (ra.column(c), rb.column(c));
            if ca.compressed_size() != cb.compressed_size()
                || ca.num_values() != cb.num_values()
                || ca.statistics() != cb.statistics()
                || ca.compression() != cb.compression()
            {
                return Err(fail(format!(
                    "row group {rg}, column {c}: the chunk differs"
                )));
            }
            if let Some(fa) = a.read_filter(rg, c)? {
                let fb = b.read_filter(rg, c)?;
                if fb.map(|f| f.to_parquet_bitset()) != Some(fa.to_parquet_bitset()) {
                    return Err(fail(format!(
                        "row group {rg}, column {c}: a filter changed"
                    )));
                }
            }
        }
        let theirs = Sbbf::read_from_column_chunk(rb.column(col), &out_file)
            .map_err(|e| {
                fail(format!(
                    "row group {rg}: the parquet crate cannot read the filter: {e}"
                ))
            })?
            .ok_or_else(|| fail(format!("row group {rg}: no filter for `{column}`")))?;
        // the values come from the output file: the copied data pages decode there
        let hashes = column_hashes(&b, &out_arc, rg, col)?;
        let ours = b
            .read_filter(rg, col)?
            .ok_or_else(|| fail(format!("row group {rg}: no filter for `{column}`")))?;
        if let Some(h) = hashes.iter().find(|&&h| !ours.contains_hash(h)) {
            return Err(fail(format!(
                "row group {rg}: a value (hash {h:#x}) is missing from the filter"
            )));
        }
        // the parquet crate's filter is the same bitset, so it answers the same
        let mut bits = Vec::new();
        theirs
            .write_bitset(&mut bits)
            .map_err(|e| fail(e.to_string()))?;
        if bits != ours.to_parquet_bitset() {
            return Err(fail(format!(
                "row group {rg}: the parquet crate reads another bitset"
            )));
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use parquet::data_type::Int64Type;
    use parquet::schema::parser::parse_message_type;

    /// Two row groups of 100 ids in columns `id` and `raw`, neither with a filter.
    fn write_lake(path: &Path) {
        let schema = "message m { required int64 id; required int64 raw; }";
        let schema = Arc::new(parse_message_type(schema).unwrap());
        let file = File::create(path).unwrap();
        let props = Arc::new(WriterProperties::builder().build());
        let mut w = SerializedFileWriter::new(file, schema, props).unwrap();
        for rg in 0..2i64 {
            let ids: Vec<i64> = (rg * 100..rg * 100 + 100).collect();
            let mut g = w.next_row_group().unwrap();
            while let Some(mut c) = g.next_column().unwrap() {
                c.typed::<Int64Type>()
                    .write_batch(&ids, None, None)
                    .unwrap();
                c.close().unwrap();
            }
            g.close().unwrap();
        }
        w.close().unwrap();
    }

    /// Zero the bitset of the new filter of `raw` in row group 0, past its header.
    fn zero_filter(path: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let pf = ParquetFile::open(path).unwrap();
        let col = pf.find_column("raw").unwrap();
        let at = pf.filter_location(0, col).unwrap();
        let len = at.length.unwrap();
        assert!(len > 64, "a filter of {len} bytes");
        let f = std::fs::OpenOptions::new().write(true).open(path)?;
        f.write_all_at(&vec![0u8; (len - 32) as usize], at.offset + 32)?;
        f.sync_all()
    }

    #[test]
    fn a_rewrite_that_fails_its_check_replaces_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let lake = dir.path().join("lake.parquet");
        write_lake(&lake);
        let out = dir.path().join("out.parquet");
        std::fs::write(&out, b"the previous file").unwrap();
        let lake_bytes = std::fs::read(&lake).unwrap();

        let e = rewrite(&lake, &out, "raw", 0.01, zero_filter).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("verification failed"), "{msg}");
        assert!(msg.contains("out.parquet"), "{msg}");
        assert_eq!(std::fs::read(&out).unwrap(), b"the previous file");
        assert_eq!(std::fs::read(&lake).unwrap(), lake_bytes);
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["lake.parquet", "out.parquet"],
            "a temporary file left"
        );

        // undamaged, the same call replaces the file with one that passes the check
        let r = rewrite(&lake, &out, "raw", 0.01, |_| Ok(())).unwrap();
        assert_eq!((r.row_groups, r.built), (2, 2));
        verify_rewrite(&lake, &out, "raw").unwrap();
    }
}
