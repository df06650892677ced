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
    starts: Vec<usize>,
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
        self.starts.push(self.data.len());
        self.data.extend_from_slice(key);
        self.ends.push(self.data.len());
    }

    /// Append every line of `text` as a key, in order: lines end at `\n` (a `\r` before it is
    /// not part of the key), and a last line without one counts when it is not empty. The
    /// text is kept as it is (taken over without a copy when the list is empty): one pass to
    /// find the line ends, no copy per key.
    pub fn push_lines(&mut self, text: Vec<u8>) {
        let base = self.data.len();
        if base == 0 {
            self.data = text;
        } else {
            self.data.extend_from_slice(&text);
        }
        let text = &self.data[base..];
        let lines = memchr::memchr_iter(b'\n', text).count() + 1;
        self.starts.reserve(lines);
        self.ends.reserve(lines);
        let mut start = 0;
        let mut line = |start: usize, end: usize| {
            let end = if end > start && text[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            self.starts.push(base + start);
            self.ends.push(base + end);
        };
        for end in memchr::memchr_iter(b'\n', text) {
            line(start, end);
            start = end + 1;
        }
        if start < text.len() {
            line(start, text.len());
        }
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
        &self.data[self.starts[i]..self.ends[i]]
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
    /// Key index of each hash.
    index: Vec<u32>,
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
    chunks: Vec<OnceLock<Typed>>,
}

impl<'k> Hashed<'k> {
    fn new(keys: &'k KeyList, column_type: ColumnType, chunk: usize) -> Self {
        Self {
            keys,
            column_type,
            chunk,
            chunks: (0..keys.len().div_ceil(chunk))
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// Chunk `c`, hashed now if no thread did before.
    fn get(&self, c: usize) -> &Typed {
        self.chunks[c].get_or_init(|| {
            let range = c * self.chunk..((c + 1) * self.chunk).min(self.keys.len());
            let mut out = Typed {
                hashes: Vec::with_capacity(range.len()),
                index: Vec::with_capacity(range.len()),
                invalid: 0,
                example: None,
            };
            let mut buf = Vec::new();
            for i in range {
                match self
                    .column_type
                    .hash(self.keys.get(i), self.keys.is_raw(), &mut buf)
                {
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
    }

    /// The keys' validity over the first `chunks` chunks: invalid keys, the first of them,
    /// and how many keys that covers.
    fn invalid(&self, chunks: usize) -> (u64, Option<(usize, KeyError)>, usize) {
        let mut invalid = 0;
        let mut example = None;
        for c in 0..chunks {
            let t = self.get(c);
            invalid += t.invalid;
            if example.is_none() {
                example = t.example.clone();
            }
        }
        (invalid, example, (chunks * self.chunk).min(self.keys.len()))
    }
}

/// Hashed key lists per column type, shared by the files of a scan.
type TypedCache<'k> = Mutex<HashMap<ColumnType, Arc<Hashed<'k>>>>;

/// Probe one row group's filter: its answer and how many chunks of keys that took.
fn probe(contains: impl Fn(u64) -> bool, h: &Hashed<'_>, mode: Mode) -> (Hits, usize) {
    let n = h.chunks.len();
    match mode {
        Mode::Any => {
            for c in 0..n {
                if h.get(c).hashes.iter().any(|&x| contains(x)) {
                    return (Hits::Any(true), c + 1);
                }
            }
            (Hits::Any(false), n)
        }
        Mode::Count => {
            let hits = (0..n)
                .map(|c| h.get(c).hashes.iter().filter(|&&x| contains(x)).count() as u64)
                .sum();
            (Hits::Count(hits), n)
        }
        Mode::Keys => {
            let mut hits = Vec::new();
            for c in 0..n {
                let t = h.get(c);
                hits.extend(
                    t.hashes
                        .iter()
                        .zip(&t.index)
                        .filter(|(&x, _)| contains(x))
                        .map(|(_, &i)| i),
                );
            }
            (Hits::Keys(hits), n)
        }
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

fn scan_file<'k>(
    path: &Path,
    q: &Query<'k>,
    cache: &TypedCache<'k>,
) -> Result<FileAnswer, ParquetError> {
    let pf = ParquetFile::open(path)?;
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
                let (hits, used) = probe(|h| bits.contains_hash(h), &hashed, q.mode);
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
                let (hits, used) = probe(|h| s.filter.contains_hash(h), &hashed, q.mode);
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
        chunks_used = hashed.chunks.len();
    }
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

#[cfg(test)]
mod tests {
    use super::KeyList;

    fn keys(l: &KeyList) -> Vec<&[u8]> {
        (0..l.len()).map(|i| l.get(i)).collect()
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
