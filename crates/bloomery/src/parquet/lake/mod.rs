//! Key lists against many Parquet files: directories walked in parallel, files read in parallel
//! (footer and filter bytes only), keys hashed at most once per physical type, in chunks and
//! only when a probe needs them, each row group's filter probed with every key (or, for
//! pruning, until the first hit: a prune often needs the first chunk of keys only).

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

mod answer;
mod key_list;
mod probe;
mod walk;

pub use answer::{FileAnswer, FilterSource, Hits, Mode, Query, RowGroupAnswer, SidecarState};
pub use key_list::KeyList;
pub use walk::{is_sidecar_name, walk, Candidate};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::io::format::Persist;
use crate::parquet::file::{FooterFile, TailHint};
use crate::parquet::keys::ColumnType;
use crate::parquet::sidecar::ParquetSidecar;
use crate::parquet::ParquetError;
use probe::{probe, probe_parquet, Hashed, TypedCache, HASH_CHUNK};

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
