//! `import bloomery`: the Python package (PyO3). Thin bindings over the library: every
//! structure, the file format and the hash path are the library's; this crate maps Python
//! objects to key bytes (module `keys`), holds each structure behind a lock (module `lock`)
//! and releases the GIL for batches and I/O.
//!
//! Built by maturin (`pyproject.toml`), which turns on the `extension-module` feature. The
//! crate is a workspace member so that `cargo clippy --workspace` and `cargo fmt --all` cover
//! it; its library target has no Rust tests (`test = false`: a test binary would have to link
//! libpython), so `cargo test --workspace` builds nothing of it. Its tests are the pytest
//! suite in `tests/`, run by `scripts/test-python.sh`.

mod arrow;
mod common;
mod counting;
mod errors;
mod filters;
mod keys;
mod lock;
mod par;
mod quantiles;
mod raw;
mod sets;
mod shard;
mod sketches;
mod typed;

use std::path::PathBuf;

use bloomery::{AnyCounter, AnyFilter, Kind, Persist};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use errors::IntoPy;

/// Load a file of any kind bloomery's Python package has a class for, returning an object of
/// that class (BloomFilter, ScalableBloomFilter, UrlFilter, CountingBloomFilter,
/// CountMinSketch, TopK, TDigest, CuckooFilter or XorFilter).
#[pyfunction]
fn load(py: Python<'_>, path: PathBuf) -> PyResult<Py<PyAny>> {
    let kind = py
        .detach(|| bloomery::file::peek_header(&path).py_err_at(&path))?
        .kind;
    if kind.is_set() && kind != Kind::Mlbf || kind == Kind::Mlbf {
        let f = py.detach(|| AnyFilter::load(&path).py_err_at(&path))?;
        return sets::wrap_set(py, f, false);
    }
    let cls = match kind {
        // the 32-bit form (the Redis module's CMS.* values) opens with its counters widened
        Kind::CountMin | Kind::CountMin32 => py.get_type::<sketches::PyCountMinSketch>(),
        k if AnyCounter::holds(k) => py.get_type::<counting::PyCountingBloomFilter>(),
        Kind::Cuckoo => py.get_type::<filters::PyCuckooFilter>(),
        Kind::Xor => py.get_type::<filters::PyXorFilter>(),
        Kind::TopK | Kind::TopKSlots => py.get_type::<sketches::PyTopK>(),
        Kind::TDigest => py.get_type::<quantiles::PyTDigest>(),
        k => {
            return Err(PyTypeError::new_err(format!(
                "{}: a {} structure has no Python class yet: use the CLI or the Rust library",
                path.display(),
                k.name()
            )))
        }
    };
    Ok(cls.call_method1("load", (path,))?.unbind())
}

/// The largest structure, in bytes, that bloomery allocates in this process (default
/// 16 GiB); larger requests raise MemoryError before any memory is touched. open() maps
/// files without counting them against it.
#[pyfunction]
fn max_memory() -> u64 {
    bloomery::tuning::max_bytes()
}

/// Set the limit reported by max_memory().
#[pyfunction]
fn set_max_memory(limit: u64) {
    bloomery::tuning::set_max_bytes(limit)
}

/// Threads a large batch query may use (`BLOOMERY_THREADS`, else the machine's cores);
/// private, for the tests.
#[pyfunction]
fn _batch_threads() -> usize {
    par::threads()
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("FORMAT_VERSION", bloomery_format_version())?;
    m.add("FormatError", py.get_type::<errors::FormatError>())?;
    m.add("FullError", py.get_type::<errors::FullError>())?;
    m.add_class::<sets::PyBloomFilter>()?;
    m.add_class::<sets::PyScalableBloomFilter>()?;
    m.add_class::<sets::PyUrlFilter>()?;
    m.add_class::<counting::PyCountingBloomFilter>()?;
    m.add_class::<sketches::PyCountMinSketch>()?;
    m.add_class::<sketches::PyTopK>()?;
    m.add_class::<quantiles::PyTDigest>()?;
    m.add_class::<filters::PyCuckooFilter>()?;
    m.add_class::<filters::PyXorFilter>()?;
    m.add_class::<shard::PyShardLayout>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(max_memory, m)?)?;
    m.add_function(wrap_pyfunction!(set_max_memory, m)?)?;
    m.add_function(wrap_pyfunction!(_batch_threads, m)?)?;
    Ok(())
}

/// The file format version this build writes (the header's version of any saved structure).
fn bloomery_format_version() -> u16 {
    let b = bloomery::BlockedBloomFilter::try_with_shape(1, 1)
        .map(|f| f.to_bytes())
        .unwrap_or_default();
    b.get(8..10).map_or(1, |v| u16::from_le_bytes([v[0], v[1]]))
}
