//! Sidecar files of row-group filters (kind 24): see [`ParquetSidecar`].

use std::path::{Path, PathBuf};

use super::keys::{ColumnType, PhysicalType};
use crate::error::{inconsistent, invalid, Result};
use crate::filter::{Filter, Stats};
use crate::hash::KeyHasher;
use crate::io::format::{
    self, Decoded, Header, Kind, ParamReader, ParamWriter, Payload, Persist, Source,
};
use crate::sets::split_block::SplitBlockBloomFilter;

/// Most row groups a sidecar describes (its per-row-group parameters stay within the format's
/// header limit).
pub const MAX_ROW_GROUPS: usize = 40_000;

/// Longest column path stored.
pub const MAX_COLUMN_PATH: usize = 4096;

/// One row group's filter in a sidecar.
///
/// ```
/// use bloomery::parquet::{build_filters, ParquetFile, ParquetSidecar, SidecarFilter, Sizing};
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
/// assert!(side.iter().flatten().all(|f| f.distinct == 100 && f.fpr == 0.01));
/// let ct = pf.column_type(raw);
/// let sidecar = ParquetSidecar::new(pf.len(), pf.footer_hash(), "raw", ct, side)?;
/// assert_eq!(sidecar.filters(), 2);
/// // a rate outside [0, 1) is refused
/// let bad = SidecarFilter { fpr: 1.5, ..sidecar.row_groups[0].clone().unwrap() };
/// let refused = ParquetSidecar::new(pf.len(), pf.footer_hash(), "raw", ct, vec![Some(bad), None]);
/// assert!(refused.is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SidecarFilter {
    /// The filter.
    pub filter: SplitBlockBloomFilter,
    /// Distinct values inserted.
    pub distinct: u64,
    /// Rate it was sized for.
    pub fpr: f64,
}

/// Sidecar files: split-block filters for the row groups of one Parquet file's column that have
/// none inside the file, saved next to it in bloomery's file format (kind 24,
/// [`Kind::ParquetSidecar`]) and used by the lake queries as if the file carried them.
///
/// ```text
/// parameters (after the common header; hasher: Parquet's xxHash64, seed 0)
///   u64  length of the Parquet file the filters describe
///   u64  xxh3-64 of that file's footer (metadata and 8-byte tail)
///   u32  physical type id of the column (parquet-format `Type`), u32 its type length
///   u32  L, then L bytes: the column's dotted path (UTF-8)
///   u32  R row groups, then per row group:
///        u64 blocks (0: no filter here — the Parquet file has its own, or none was built)
///        u64 distinct values inserted, f64 the rate it was sized for
/// payload: the present filters' words in row-group order, each padded to 64 bytes
/// ```
///
/// The length and footer hash tie a sidecar to one version of its file: a rewritten file (new
/// footer) makes it stale, and the queries then ignore it with a warning instead of answering
/// from filters of other data.
///
/// ```
/// use bloomery::parquet::{build_filters, ParquetFile, ParquetSidecar, SidecarFilter, Sizing};
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
/// let ct = pf.column_type(raw);
/// let sidecar = ParquetSidecar::new(pf.len(), pf.footer_hash(), "raw", ct, side)?;
/// let path = ParquetSidecar::path_for(&lake, "raw");
/// assert_eq!(path, dir.path().join("lake.parquet.raw.bloomery"));
/// sidecar.save(&path)?;
/// let loaded = ParquetSidecar::load(&path)?;
/// assert_eq!(loaded, sidecar);
/// assert_eq!((loaded.source_len, loaded.filters()), (pf.len(), 2));
/// // the ids of row group 1 are in its filter
/// let filter = &loaded.row_groups[1].as_ref().unwrap().filter;
/// let mut buf = Vec::new();
/// assert!(filter.contains_hash(ct.hash(b"150", false, &mut buf)?));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ParquetSidecar {
    /// Length of the Parquet file.
    pub source_len: u64,
    /// xxh3-64 of its footer.
    pub source_footer_hash: u64,
    /// The column's dotted path.
    pub column: String,
    /// The column's physical type and type length.
    pub column_type: ColumnType,
    /// One entry per row group of the file.
    pub row_groups: Vec<Option<SidecarFilter>>,
}

impl ParquetSidecar {
    /// A sidecar for a file of `source_len` bytes with footer hash `source_footer_hash`.
    pub fn new(
        source_len: u64,
        source_footer_hash: u64,
        column: &str,
        column_type: ColumnType,
        mut row_groups: Vec<Option<SidecarFilter>>,
    ) -> Result<Self> {
        if row_groups.len() > MAX_ROW_GROUPS {
            return Err(invalid(
                "row groups",
                format!(
                    "{} row groups: a sidecar holds at most {MAX_ROW_GROUPS}",
                    row_groups.len()
                ),
            ));
        }
        if column.len() > MAX_COLUMN_PATH {
            return Err(invalid("column", "path longer than 4096 bytes"));
        }
        for rg in row_groups.iter_mut().flatten() {
            if rg.filter.hasher() != &KeyHasher::parquet() {
                return Err(invalid(
                    "filter",
                    "a sidecar's filters hash as Parquet does (xxHash64, seed 0)",
                ));
            }
            if !(rg.fpr >= 0.0 && rg.fpr < 1.0) {
                return Err(invalid("fpr", format!("{} is not in [0, 1)", rg.fpr)));
            }
            // what the file records per row group, so a loaded sidecar equals this one
            rg.filter.set_counts(rg.distinct, rg.distinct, rg.fpr);
        }
        Ok(Self {
            source_len,
            source_footer_hash,
            column: column.to_string(),
            column_type: ColumnType::new(column_type.physical, column_type.type_length),
            row_groups,
        })
    }

    /// Where the sidecar of `parquet`'s column `column` lives: beside the file, named
    /// `<file name>.<column>.bloomery` (bytes of the column path outside `A-Za-z0-9._-`
    /// written as `%XX`).
    pub fn path_for(parquet: &Path, column: &str) -> PathBuf {
        let mut name = parquet
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        let mut col = String::with_capacity(column.len());
        for b in column.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
                col.push(b as char);
            } else {
                col.push_str(&format!("%{b:02X}"));
            }
        }
        name.push(format!(".{col}.bloomery"));
        parquet.with_file_name(name)
    }

    /// Row groups with a filter here.
    pub fn filters(&self) -> usize {
        self.row_groups.iter().flatten().count()
    }
}

impl Persist for ParquetSidecar {
    const KIND: Kind = Kind::ParquetSidecar;

    fn encode_parts(&self) -> (Header, Payload<'_>) {
        let mut w = ParamWriter::new()
            .u64(self.source_len)
            .u64(self.source_footer_hash)
            .u32(self.column_type.physical.id())
            .u32(self.column_type.type_length)
            .u32(self.column.len() as u32);
        for b in self.column.bytes() {
            w = w.u8(b);
        }
        w = w.u32(self.row_groups.len() as u32);
        let mut parts = Vec::new();
        let (mut distinct, mut fpr) = (0u64, 0f64);
        for rg in &self.row_groups {
            match rg {
                Some(s) => {
                    w = w.u64(s.filter.blocks()).u64(s.distinct).f64(s.fpr);
                    parts.push(s.filter.words());
                    distinct = distinct.saturating_add(s.distinct);
                    fpr = fpr.max(s.fpr);
                }
                None => w = w.u64(0).u64(0).f64(0.0),
            }
        }
        let mut h = Header::new(Kind::ParquetSidecar, KeyHasher::parquet());
        h.items = distinct;
        h.capacity = distinct;
        h.target_fpr = fpr;
        h.params = w.finish();
        (h, Payload::new(parts))
    }

    fn decode_from(d: &Decoded, src: Source<'_>, limit: u64) -> Result<Self> {
        if d.header.hasher != KeyHasher::parquet() {
            return Err(inconsistent(
                "a Parquet sidecar must hash as Parquet does (xxHash64, seed 0)",
            ));
        }
        let mut r = ParamReader::new(&d.header.params);
        let source_len = r.u64()?;
        let source_footer_hash = r.u64()?;
        let physical = PhysicalType::from_id(r.u32()?)
            .ok_or_else(|| inconsistent("unknown Parquet physical type"))?;
        let type_length = r.u32()?;
        let path_len = r.u32()? as usize;
        if path_len > MAX_COLUMN_PATH {
            return Err(inconsistent(format!("column path of {path_len} bytes")));
        }
        let mut path = Vec::with_capacity(path_len);
        for _ in 0..path_len {
            path.push(r.u8()?);
        }
        let column =
            String::from_utf8(path).map_err(|_| inconsistent("column path is not UTF-8"))?;
        let n = r.u32()? as usize;
        if n > MAX_ROW_GROUPS {
            return Err(inconsistent(format!("{n} row groups")));
        }
        let mut shapes = Vec::with_capacity(n);
        for _ in 0..n {
            let blocks = r.u64()?;
            let distinct = r.u64()?;
            let fpr = r.f64()?;
            if blocks > crate::sets::split_block::MAX_BLOCKS || !(0.0..1.0).contains(&fpr) {
                return Err(inconsistent(format!(
                    "row group filter of {blocks} blocks at rate {fpr}"
                )));
            }
            shapes.push((blocks, distinct, fpr));
        }
        r.finish()?;
        let need: u64 = shapes
            .iter()
            .map(|&(b, _, _)| format::padded_len((b * 4) as usize))
            .fold(0u64, |a, b| a.saturating_add(b));
        if need != d.payload_len as u64 {
            return Err(inconsistent(format!(
                "payload is {} bytes, the row groups' filters need {need}",
                d.payload_len
            )));
        }
        let mut at = d.payload_offset;
        let mut row_groups = Vec::with_capacity(n);
        for (blocks, distinct, fpr) in shapes {
            if blocks == 0 {
                row_groups.push(None);
                continue;
            }
            let words = (blocks * 4) as usize;
            let w = src.words(at, words, limit)?;
            at += format::padded_len(words) as usize;
            let mut filter =
                SplitBlockBloomFilter::from_words(w, blocks, KeyHasher::parquet(), distinct)?;
            filter.set_counts(distinct, distinct, fpr);
            row_groups.push(Some(SidecarFilter {
                filter,
                distinct,
                fpr,
            }));
        }
        Ok(Self {
            source_len,
            source_footer_hash,
            column,
            column_type: ColumnType::new(physical, type_length),
            row_groups,
        })
    }
}

impl ParquetSidecar {
    /// The fill of row group `rg`'s filter (None: no filter here).
    pub fn fill(&self, rg: usize) -> Option<f64> {
        self.row_groups
            .get(rg)?
            .as_ref()
            .map(|s| s.filter.fill_ratio())
    }
}

impl crate::dispatch::OtherKind for ParquetSidecar {
    const CAPABILITIES: crate::kind::Capabilities = crate::kind::Capabilities {
        hashed: true,
        ..crate::kind::Capabilities::NONE
    };
}
