//! `import bloomery`: the Python package (PyO3). Thin bindings over the library: every
//! structure, the file format and the hash path are the library's; this crate maps Python
//! objects to key bytes ([`keys`]), holds each structure behind a lock ([`lock`]) and releases
//! the GIL for batches and I/O.

mod arrow;
mod common;
mod errors;
mod keys;
mod lock;
mod sets;

use pyo3::prelude::*;

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FormatError", py.get_type::<errors::FormatError>())?;
    m.add("FullError", py.get_type::<errors::FullError>())?;
    m.add_class::<sets::PyBloomFilter>()?;
    m.add_class::<sets::PyScalableBloomFilter>()?;
    m.add_class::<sets::PyUrlFilter>()?;
    Ok(())
}
