//! Key lists against many Parquet files: directories walked in parallel, files read in parallel
//! (footer and filter bytes only), each key hashed once per physical type, each row group's
//! filter probed with every key (or until the first hit, for pruning).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

use super::file::ParquetFile;
use super::keys::{ColumnType, KeyError};
use super::sidecar::ParquetSidecar;
use super::ParquetError;
use crate::io::format::Persist;
use crate::SplitBlockBits;

/// Keys, stored back to back.
#[derive(Debug, Clone, Default)]
pub struct KeyList {
    data: Vec<u8>,
    ends: Vec<usize>,
    raw: bool,
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

    /// Append a key.
    pub fn push(&mut self, key: &[u8]) {
        self.data.extend_from_slice(key);
        self.ends.push(self.data.len());
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Key `i`.
    pub fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// Whether the keys are plain encodings rather than text.
    pub fn is_raw(&self) -> bool {
        self.raw
    }
}

/// What to compute per row group.
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
    /// The sidecar.
    pub sidecar: SidecarState,
}

/// Keys hashed for one column type.
struct Typed {
    hashes: Vec<u64>,
    /// Key index of each hash.
    index: Vec<u32>,
    invalid: u64,
    example: Option<(usize, KeyError)>,
}

/// Keys hashed per chunk in parallel, then joined in input order.
const HASH_CHUNK: usize = 1 << 14;

fn typed(keys: &KeyList, t: &ColumnType) -> Typed {
    let chunks: Vec<Typed> = (0..keys.len().div_ceil(HASH_CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut buf = Vec::new();
            let range = c * HASH_CHUNK..((c + 1) * HASH_CHUNK).min(keys.len());
            let mut out = Typed {
                hashes: Vec::with_capacity(range.len()),
                index: Vec::with_capacity(range.len()),
                invalid: 0,
                example: None,
            };
            for i in range {
                match t.hash(keys.get(i), keys.is_raw(), &mut buf) {
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
            }
            out
        })
        .collect();
    let mut out = Typed {
        hashes: Vec::with_capacity(keys.len()),
        index: Vec::with_capacity(keys.len()),
        invalid: 0,
        example: None,
    };
    for c in chunks {
        out.hashes.extend_from_slice(&c.hashes);
        out.index.extend_from_slice(&c.index);
        out.invalid += c.invalid;
        if out.example.is_none() {
            out.example = c.example;
        }
    }
    out
}

type TypedCache = Mutex<HashMap<ColumnType, Arc<Typed>>>;

fn probe(contains: impl Fn(u64) -> bool, t: &Typed, mode: Mode) -> Hits {
    match mode {
        Mode::Any => Hits::Any(t.hashes.iter().any(|&h| contains(h))),
        Mode::Count => Hits::Count(t.hashes.iter().filter(|&&h| contains(h)).count() as u64),
        Mode::Keys => Hits::Keys(
            t.hashes
                .iter()
                .zip(&t.index)
                .filter(|(&h, _)| contains(h))
                .map(|(_, &i)| i)
                .collect(),
        ),
    }
}

/// Load the sidecar of `pf`'s column `col` if it exists and describes this version of the file.
fn sidecar_for(
    pf: &ParquetFile,
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

fn scan_file(path: &Path, q: &Query<'_>, cache: &TypedCache) -> Result<FileAnswer, ParquetError> {
    let pf = ParquetFile::open(path)?;
    let col = pf.find_column(q.column)?;
    let column = pf.column_path(col);
    let ct = pf.column_type(col);
    let t = {
        let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(c.entry(ct).or_insert_with(|| Arc::new(typed(q.keys, &ct))))
    };
    // the file's own filters, probed where they were read; then the sidecar's, if needed
    let mut buf = Vec::new();
    let mut row_groups = Vec::with_capacity(pf.row_groups());
    for rg in 0..pf.row_groups() {
        let (source, hits) = match pf.read_filter_bytes(rg, col, &mut buf)? {
            Some(range) => {
                let bits =
                    SplitBlockBits::try_new(&buf[range]).map_err(|e| ParquetError::Filter {
                        path: path.to_path_buf(),
                        row_group: rg,
                        column: column.clone(),
                        reason: e.to_string(),
                    })?;
                (
                    FilterSource::Parquet,
                    probe(|h| bits.contains_hash(h), &t, q.mode),
                )
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
                r.hits = probe(|h| s.filter.contains_hash(h), &t, q.mode);
            }
        }
    }
    let sidecar = match sidecar {
        SidecarState::Used(_) if !used_side => SidecarState::Unused,
        s => s,
    };
    Ok(FileAnswer {
        column,
        column_type: ct,
        row_groups,
        invalid_keys: t.invalid,
        invalid_example: t.example.clone(),
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
    let cache: TypedCache = Mutex::new(HashMap::new());
    for batch in files.chunks(BATCH) {
        let answers: Vec<_> = batch.par_iter().map(|p| scan_file(p, q, &cache)).collect();
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
    let mut entries: Vec<(PathBuf, bool)> = Vec::new();
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
            Ok(ft) if ft.is_dir() => entries.push((path, true)),
            Ok(ft) if ft.is_file() => entries.push((path, false)),
            Ok(ft) if ft.is_symlink() && path.is_file() => entries.push((path, false)),
            Ok(_) => {}
            Err(err) => errors.push(ParquetError::io(&path, err)),
        }
    }
    entries.sort();
    let parts: Vec<(Vec<Candidate>, Vec<ParquetError>)> = entries
        .into_par_iter()
        .map(|(p, is_dir)| {
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
