//! One Parquet file: its footer (decoded by the `parquet` crate, or for a lake scan read by
//! [`Footer::skim`] with the crate as the fallback) and its column chunks' Bloom filters
//! (header and bitset read by this crate, from the offsets the footer gives). Nothing else of
//! the file is read.

use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::file::metadata::ParquetMetaData;

use super::footer::Footer;
use super::header::{read_filter_header, TYPICAL_MAX_LEN};
use super::keys::ColumnType;
use super::ParquetError;
use crate::sets::split_block::SplitBlockBloomFilter;

/// Bytes read from the end of a file in one go: the 8-byte tail and, usually, the whole footer.
const TAIL_READ: u64 = 8 << 10;

/// How many bytes a scan reads first from the end of each file: the longest footer (with its
/// tail) it has met so far, at least [`MIN_TAIL_READ`], at most [`TAIL_READ`] — the files of a
/// lake are usually alike, and a footer longer than the read costs one more read.
#[derive(Debug)]
pub(crate) struct TailHint(std::sync::atomic::AtomicU64);

/// The first read from the end of a scan's first files.
const MIN_TAIL_READ: u64 = 1 << 10;

impl TailHint {
    pub(crate) fn new() -> Self {
        Self(std::sync::atomic::AtomicU64::new(MIN_TAIL_READ))
    }

    fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A footer of `n` bytes with its 8-byte tail was met.
    fn saw(&self, n: u64) {
        let want = n.next_multiple_of(512).clamp(MIN_TAIL_READ, TAIL_READ);
        self.0.fetch_max(want, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Bytes read for a filter header before the bitset's first bytes: more than a header of the
/// spec's fields takes ([`TYPICAL_MAX_LEN`]), with room for a field a newer writer adds.
const HEAD_READ: u64 = 64;

/// Bytes of a split-block bitset's block.
const BLOCK_BYTES: usize = 32;

/// `buf` holds at least `n` bytes; bytes already there stay (a reused buffer is not cleared).
fn fill(buf: &mut Vec<u8>, n: usize) {
    if buf.len() < n {
        buf.resize(n, 0);
    }
}

/// A filter whose header was read and validated ([`FooterFile::read_filter_head`]): where its
/// bitset lies in the file and in the read buffer, and how much of it was read with the header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FilterHead {
    rg: usize,
    col: usize,
    /// File offset of the bitset.
    at: u64,
    /// Offset of the bitset in the read buffer.
    pub(crate) header_len: usize,
    /// Bitset length (a positive multiple of 32, checked by the header reader).
    pub(crate) num_bytes: usize,
    /// Bytes of the bitset read with the header (from its start).
    pub(crate) read: usize,
}

impl FilterHead {
    /// Where the bitset lies in the read buffer.
    pub(crate) fn bitset(&self) -> std::ops::Range<usize> {
        self.header_len..self.header_len + self.num_bytes
    }
}

/// Positioned read of exactly `buf.len()` bytes (no shared cursor on Unix).
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(buf)
    }
}

/// Whether `file` starts with Parquet's magic bytes.
fn head_is_par1(file: &File) -> std::io::Result<bool> {
    let mut head = [0u8; 4];
    read_exact_at(file, &mut head, 0)?;
    Ok(&head == b"PAR1")
}

/// A Parquet file opened for its footer and filters.
///
/// ```
/// use bloomery::parquet::{ColumnType, ParquetFile, PhysicalType};
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
/// assert_eq!(pf.row_groups(), 2);
/// assert_eq!(pf.rows(1), 100);
/// assert_eq!(pf.column_paths(), ["id", "raw"]);
/// let id = pf.find_column("id")?;
/// assert_eq!(pf.column_type(id), ColumnType::new(PhysicalType::Int64, 0));
///
/// // the writer's filter of row group 0 admits its ids; a column without filters has none
/// let filter = pf.read_filter(0, id)?.expect("`id` has filters");
/// let mut buf = Vec::new();
/// for key in [&b"0"[..], b"42", b"99"] {
///     assert!(filter.contains_hash(pf.column_type(id).hash(key, false, &mut buf)?));
/// }
/// assert!(pf.read_filter(0, pf.find_column("raw")?)?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ParquetFile {
    inner: FooterFile,
    meta: ParquetMetaData,
}

/// A Parquet file opened for the footer fields a scan needs ([`Footer`]) and its filters.
pub(crate) struct FooterFile {
    path: PathBuf,
    file: File,
    len: u64,
    footer: Footer,
    footer_hash: u64,
}

/// Where a column chunk's filter lies in the file.
///
/// ```
/// use bloomery::parquet::{read_filter_header, FilterLocation, ParquetFile};
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
/// let loc: FilterLocation = pf.filter_location(0, pf.find_column("id")?).expect("a filter");
/// assert!(loc.offset < pf.len());
/// // the header at `offset` gives the bitset's size; with the recorded length, they agree
/// let bytes = std::fs::read(&lake)?;
/// let header = read_filter_header(&bytes[loc.offset as usize..])?;
/// if let Some(length) = loc.length {
///     assert_eq!(length, header.header_len as u64 + u64::from(header.num_bytes));
/// }
/// assert_eq!(pf.filter_location(0, pf.find_column("raw")?), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterLocation {
    /// Offset of the filter header.
    pub offset: u64,
    /// Header and bitset length, when the footer records it (newer writers do).
    pub length: Option<u64>,
}

impl std::fmt::Debug for ParquetFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetFile")
            .field("path", &self.inner.path)
            .field("len", &self.inner.len)
            .field("row_groups", &self.meta.num_row_groups())
            .finish()
    }
}

/// A file's footer bytes, read.
struct RawFooter {
    path: PathBuf,
    file: File,
    len: u64,
    /// The metadata and the 8-byte tail.
    footer: Vec<u8>,
}

/// Read the footer of the Parquet file at `path` and check the counts in it
/// ([`check_counts`](super::footer::check_counts)) before the `parquet` crate reads the file
/// itself: what a caller of the crate's own file readers runs first.
pub(crate) fn check_footer(path: &Path) -> Result<(), ParquetError> {
    let raw = RawFooter::read(path, None)?;
    super::footer::check_counts(raw.meta()).map_err(|reason| ParquetError::Footer {
        path: path.to_path_buf(),
        reason,
    })
}

impl RawFooter {
    fn meta(&self) -> &[u8] {
        &self.footer[..self.footer.len() - 8]
    }

    /// The footer decoded by the `parquet` crate (an error names the file: not Parquet when
    /// it does not start as Parquet, else a damaged footer).
    fn decode(&self) -> Result<ParquetMetaData, ParquetError> {
        super::footer::decode_metadata(self.meta()).map_err(|e| match head_is_par1(&self.file) {
            Ok(false) => ParquetError::NotParquet {
                path: self.path.clone(),
                reason: "no PAR1 magic at the start".into(),
            },
            Ok(true) => ParquetError::Footer {
                path: self.path.clone(),
                reason: e.to_string(),
            },
            Err(e) => ParquetError::io(&self.path, e),
        })
    }

    fn into_file(self, footer: Footer) -> FooterFile {
        FooterFile {
            footer_hash: xxhash_rust::xxh3::xxh3_64(&self.footer),
            path: self.path,
            file: self.file,
            len: self.len,
            footer,
        }
    }

    /// Open `path` and read its footer: the tail, and the footer in the same read when it
    /// fits (one more read when not). The start of the file is read only to tell a damaged
    /// Parquet file from another file, when the tail is not readable.
    fn read(path: &Path, hint: Option<&TailHint>) -> Result<Self, ParquetError> {
        let path = path.to_path_buf();
        let io = |e: std::io::Error| ParquetError::io(&path, e);
        let file = File::open(&path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let not = |reason: String| ParquetError::NotParquet {
            path: path.clone(),
            reason,
        };
        if len < 12 {
            let mut head = vec![0u8; len as usize];
            read_exact_at(&file, &mut head, 0).map_err(io)?;
            if head.starts_with(b"PAR1") {
                return Err(ParquetError::Footer {
                    path: path.clone(),
                    reason: format!("{len} bytes: truncated"),
                });
            }
            return Err(not(format!("{len} bytes is too short for a Parquet file")));
        }
        let tail_len = len.min(hint.map_or(TAIL_READ, TailHint::get));
        let mut tail = vec![0u8; tail_len as usize];
        read_exact_at(&file, &mut tail, len - tail_len).map_err(io)?;
        // a file that does not start as Parquet is not Parquet, whatever its end says: the
        // start is read only when the end is not a readable Parquet tail
        let damaged = |reason: String| -> ParquetError {
            match head_is_par1(&file) {
                Ok(false) => not("no PAR1 magic at the start".into()),
                Ok(true) => ParquetError::Footer {
                    path: path.clone(),
                    reason,
                },
                Err(e) => ParquetError::io(&path, e),
            }
        };
        let magic = &tail[tail.len() - 4..];
        if magic == b"PARE" {
            if !head_is_par1(&file).map_err(io)? {
                return Err(not("no PAR1 magic at the start".into()));
            }
            return Err(ParquetError::Unsupported {
                path: path.clone(),
                reason: "the footer is encrypted (Parquet modular encryption)".into(),
            });
        }
        if magic != b"PAR1" {
            return Err(damaged(
                "no PAR1 magic at the end: the file is truncated or damaged".into(),
            ));
        }
        let n = tail.len();
        let meta_len = u64::from(u32::from_le_bytes([
            tail[n - 8],
            tail[n - 7],
            tail[n - 6],
            tail[n - 5],
        ]));
        if meta_len + 12 > len {
            return Err(damaged(format!(
                "the footer claims {meta_len} bytes but the file has {len}: truncated or damaged"
            )));
        }
        if let Some(h) = hint {
            h.saw(meta_len + 8);
        }
        // the footer and its 8-byte tail, from the bytes at hand or one more read
        let footer: Vec<u8> = if meta_len + 8 <= tail_len {
            tail.split_off((tail_len - meta_len - 8) as usize)
        } else {
            let mut v = vec![0u8; (meta_len + 8) as usize];
            read_exact_at(&file, &mut v, len - meta_len - 8).map_err(io)?;
            v
        };
        Ok(Self {
            path,
            file,
            len,
            footer,
        })
    }
}

impl ParquetFile {
    /// Open `path` and decode its footer.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ParquetError> {
        let raw = RawFooter::read(path.as_ref(), None)?;
        let meta = raw.decode()?;
        let inner = raw.into_file(Footer::from_metadata(&meta));
        Ok(Self { inner, meta })
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        self.inner.path()
    }

    /// File length in bytes.
    pub fn len(&self) -> u64 {
        self.inner.len
    }

    /// Always false (a Parquet file has at least its magic bytes).
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// xxh3-64 of the footer (the metadata and the 8-byte tail): with the length, what a
    /// sidecar records to notice that the file changed.
    pub fn footer_hash(&self) -> u64 {
        self.inner.footer_hash
    }

    /// The decoded footer.
    pub fn metadata(&self) -> &ParquetMetaData {
        &self.meta
    }

    /// Number of row groups.
    pub fn row_groups(&self) -> usize {
        self.inner.row_groups()
    }

    /// Rows of row group `rg`.
    pub fn rows(&self, rg: usize) -> i64 {
        self.inner.rows(rg)
    }

    /// The leaf columns' dotted paths, in schema order.
    pub fn column_paths(&self) -> Vec<String> {
        self.inner.column_paths()
    }

    /// The leaf column named `name`: its dotted path (`a.b.c`), or its last name when only
    /// one column has it.
    pub fn find_column(&self, name: &str) -> Result<usize, ParquetError> {
        self.inner.find_column(name)
    }

    /// The dotted path of leaf column `col`.
    pub fn column_path(&self, col: usize) -> String {
        self.inner.column_path(col)
    }

    /// How column `col`'s values are hashed.
    pub fn column_type(&self, col: usize) -> ColumnType {
        self.inner.column_type(col)
    }

    /// Where the filter of row group `rg`, column `col` lies (None: it has none).
    pub fn filter_location(&self, rg: usize, col: usize) -> Option<FilterLocation> {
        self.inner.filter_location(rg, col)
    }

    /// The filter of row group `rg`, column `col` (None: the chunk has none). Reads its header
    /// and bitset only; a filter the footer points at but that cannot be read is an error.
    pub fn read_filter(
        &self,
        rg: usize,
        col: usize,
    ) -> Result<Option<SplitBlockBloomFilter>, ParquetError> {
        self.inner.read_filter(rg, col)
    }

    /// Read the filter of row group `rg`, column `col` into `buf` (reused between calls) and
    /// return where its validated bitset lies in `buf` (None: the chunk has no filter). For
    /// probing in place with [`crate::SplitBlockBits`].
    pub fn read_filter_bytes(
        &self,
        rg: usize,
        col: usize,
        buf: &mut Vec<u8>,
    ) -> Result<Option<std::ops::Range<usize>>, ParquetError> {
        self.inner.read_filter_bytes(rg, col, buf)
    }
}

impl FooterFile {
    /// Open `path` and read the footer fields a scan needs: by [`Footer::skim`], or by the
    /// `parquet` crate when the skim declines (whose error, if any, is the answer).
    pub(crate) fn open(path: &Path, hint: Option<&TailHint>) -> Result<Self, ParquetError> {
        let raw = RawFooter::read(path, hint)?;
        let footer = match Footer::skim(raw.meta()) {
            Some(f) => f,
            None => Footer::from_metadata(&raw.decode()?),
        };
        Ok(raw.into_file(footer))
    }

    /// The path it was opened from.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// File length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// xxh3-64 of the footer and its tail (see [`ParquetFile::footer_hash`]).
    pub(crate) fn footer_hash(&self) -> u64 {
        self.footer_hash
    }

    /// Number of row groups.
    pub(crate) fn row_groups(&self) -> usize {
        self.footer.rows.len()
    }

    /// Rows of row group `rg`.
    pub(crate) fn rows(&self, rg: usize) -> i64 {
        self.footer.rows[rg]
    }

    /// The leaf columns' dotted paths, in schema order.
    pub(crate) fn column_paths(&self) -> Vec<String> {
        self.footer.leaves.iter().map(|l| l.path.clone()).collect()
    }

    /// The leaf column named `name`: its dotted path (`a.b.c`), or its last name when only
    /// one column has it.
    pub(crate) fn find_column(&self, name: &str) -> Result<usize, ParquetError> {
        let cols = &self.footer.leaves;
        if let Some(i) = cols.iter().position(|c| c.path == name) {
            return Ok(i);
        }
        let by_name: Vec<usize> = (0..cols.len()).filter(|&i| cols[i].name == name).collect();
        match by_name.as_slice() {
            [i] => Ok(*i),
            [] => Err(ParquetError::NoColumn {
                path: self.path.clone(),
                column: name.to_string(),
                available: self.column_paths(),
            }),
            many => Err(ParquetError::NoColumn {
                path: self.path.clone(),
                column: name.to_string(),
                available: many.iter().map(|&i| cols[i].path.clone()).collect(),
            }),
        }
    }

    /// The dotted path of leaf column `col`.
    pub(crate) fn column_path(&self, col: usize) -> String {
        self.footer.leaves[col].path.clone()
    }

    /// How column `col`'s values are hashed.
    pub(crate) fn column_type(&self, col: usize) -> ColumnType {
        self.footer.leaves[col].column_type
    }

    /// The footer's filter fields of row group `rg`, column `col`.
    fn filter_fields(&self, rg: usize, col: usize) -> (Option<i64>, Option<i32>) {
        self.footer.filters[rg * self.footer.leaves.len() + col]
    }

    /// Where the filter of row group `rg`, column `col` lies (None: it has none).
    pub(crate) fn filter_location(&self, rg: usize, col: usize) -> Option<FilterLocation> {
        let (offset, length) = self.filter_fields(rg, col);
        Some(FilterLocation {
            offset: offset? as u64,
            length: length.map(|l| l as u64),
        })
    }

    /// The filter of row group `rg`, column `col` (None: the chunk has none). Reads its header
    /// and bitset only; a filter the footer points at but that cannot be read is an error.
    pub(crate) fn read_filter(
        &self,
        rg: usize,
        col: usize,
    ) -> Result<Option<SplitBlockBloomFilter>, ParquetError> {
        let mut buf = Vec::new();
        let Some(bits) = self.read_filter_bytes(rg, col, &mut buf)? else {
            return Ok(None);
        };
        SplitBlockBloomFilter::from_parquet_bitset(&buf[bits])
            .map(Some)
            .map_err(|e| self.filter_err(rg, col, e.to_string()))
    }

    pub(crate) fn filter_err(&self, rg: usize, col: usize, reason: String) -> ParquetError {
        ParquetError::Filter {
            path: self.path.clone(),
            row_group: rg,
            column: self.column_path(col),
            reason,
        }
    }

    /// Read the filter of row group `rg`, column `col` into `buf` (reused between calls) and
    /// return where its validated bitset lies in `buf` (None: the chunk has no filter). For
    /// probing in place with [`crate::SplitBlockBits`].
    pub(crate) fn read_filter_bytes(
        &self,
        rg: usize,
        col: usize,
        buf: &mut Vec<u8>,
    ) -> Result<Option<std::ops::Range<usize>>, ParquetError> {
        let Some(head) = self.read_filter_head(rg, col, usize::MAX, buf)? else {
            return Ok(None);
        };
        self.read_bitset_part(&head, head.read..head.num_bytes, buf)?;
        Ok(Some(head.bitset()))
    }

    /// Read and validate the header of row group `rg`'s filter of column `col` and, in the
    /// same read, up to `want` bytes of the bitset after it, into `buf` from its start (the
    /// bitset's bytes at `header_len..`; None: the chunk has no filter). The rest of the bitset
    /// is read by [`read_bitset_part`](Self::read_bitset_part) or
    /// [`read_block`](Self::read_block) as probes need it.
    pub(crate) fn read_filter_head(
        &self,
        rg: usize,
        col: usize,
        want: usize,
        buf: &mut Vec<u8>,
    ) -> Result<Option<FilterHead>, ParquetError> {
        let (offset, length) = self.filter_fields(rg, col);
        let Some(offset) = offset else {
            return Ok(None);
        };
        let err = |reason: String| self.filter_err(rg, col, reason);
        let io = |e: std::io::Error| err(format!("reading it: {e}"));
        let end = self.len - 8;
        if offset < 4 || offset as u64 >= end {
            return Err(err(format!(
                "its offset {offset} is outside the data of the {}-byte file",
                self.len
            )));
        }
        let offset = offset as u64;
        // the bitset must fit the memory limit before anything is allocated for it
        let fits = |n: u64| {
            crate::store::check_size(n, crate::store::max_bytes()).map_err(|e| err(e.to_string()))
        };
        // the header is small: a read of the header's usual most plus `want` bytes of the
        // bitset (the whole filter when the footer gives its length and that is less), read
        // again whole when the header turns out longer than the read
        let prefix = |limit: u64| limit.min(HEAD_READ.saturating_add(want as u64)) as usize;
        let (h, read) = match length {
            Some(l) => {
                if l <= 0 || offset + l as u64 > end {
                    return Err(err(format!(
                        "its length {l} at offset {offset} runs past the data of the {}-byte file",
                        self.len
                    )));
                }
                let l = l as u64;
                fits(l)?;
                let mut n = prefix(l);
                fill(buf, n);
                read_exact_at(&self.file, &mut buf[..n], offset).map_err(io)?;
                let h = match read_filter_header(&buf[..n]) {
                    Err(_) if (n as u64) < l => {
                        n = l as usize;
                        fill(buf, n);
                        read_exact_at(&self.file, &mut buf[..n], offset).map_err(io)?;
                        read_filter_header(&buf[..n])
                    }
                    h => h,
                }
                .map_err(|e| err(e.to_string()))?;
                if h.header_len as u64 + u64::from(h.num_bytes) != l {
                    return Err(err(format!(
                        "the header declares a {}-byte bitset, the footer a {l}-byte filter \
                         with a {}-byte header",
                        h.num_bytes, h.header_len
                    )));
                }
                (h, n)
            }
            None => {
                // the bitset's length is in the header: a generous prefix first
                let n = (end - offset).min(256.max(TYPICAL_MAX_LEN as u64)) as usize;
                fill(buf, n);
                read_exact_at(&self.file, &mut buf[..n], offset).map_err(io)?;
                let h = read_filter_header(&buf[..n]).map_err(|e| err(e.to_string()))?;
                let start = offset + h.header_len as u64;
                if start + u64::from(h.num_bytes) > end {
                    return Err(err(format!(
                        "its {}-byte bitset at offset {start} runs past the data of the \
                         {}-byte file",
                        h.num_bytes, self.len
                    )));
                }
                fits(u64::from(h.num_bytes))?;
                (h, n)
            }
        };
        let num_bytes = h.num_bytes as usize;
        // the bitset's place in `buf`, its unread part left as it was
        fill(buf, h.header_len + num_bytes);
        Ok(Some(FilterHead {
            rg,
            col,
            at: offset + h.header_len as u64,
            header_len: h.header_len,
            num_bytes,
            read: (read - h.header_len).min(num_bytes),
        }))
    }

    /// Read bytes `part` of the bitset `head` describes into their place in `buf` (after
    /// [`read_filter_head`](Self::read_filter_head) into the same buffer).
    pub(crate) fn read_bitset_part(
        &self,
        head: &FilterHead,
        part: std::ops::Range<usize>,
        buf: &mut [u8],
    ) -> Result<(), ParquetError> {
        if part.is_empty() {
            return Ok(());
        }
        let dst = &mut buf[head.header_len + part.start..head.header_len + part.end];
        read_exact_at(&self.file, dst, head.at + part.start as u64)
            .map_err(|e| self.filter_err(head.rg, head.col, format!("reading it: {e}")))
    }

    /// Read block `b` of the bitset `head` describes alone.
    pub(crate) fn read_block(
        &self,
        head: &FilterHead,
        b: usize,
    ) -> Result<[u8; BLOCK_BYTES], ParquetError> {
        let mut block = [0u8; BLOCK_BYTES];
        read_exact_at(&self.file, &mut block, head.at + (b * BLOCK_BYTES) as u64)
            .map_err(|e| self.filter_err(head.rg, head.col, format!("reading it: {e}")))?;
        Ok(block)
    }
}
