//! Argument parsing and helpers shared by the classes.

use bloomery::KeyHasher;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt};

use crate::errors::IntoPy;

/// A count parameter (capacity, width, ...): an `int`, or a float with an integral value
/// (`1e6`); at least 1 unless `zero_ok`.
pub fn count_arg(obj: &Bound<'_, PyAny>, name: &str, zero_ok: bool) -> PyResult<u64> {
    let min = u64::from(!zero_ok);
    let bad = |what: String| PyValueError::new_err(format!("{name} must be {what}"));
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not bool"
        )));
    }
    if obj.is_instance_of::<PyInt>() {
        let v: i128 = obj.extract().map_err(|_| bad("below 2**64".into()))?;
        return u64::try_from(v)
            .ok()
            .filter(|&v| v >= min)
            .ok_or_else(|| bad(format!("at least {min}, got {v}")));
    }
    if obj.is_instance_of::<PyFloat>() {
        let v: f64 = obj.extract()?;
        if v.is_finite() && v.fract() == 0.0 && v >= min as f64 && v < 1.8e19 {
            return Ok(v as u64);
        }
        return Err(bad(format!("a whole number of at least {min}, got {v}")));
    }
    Err(PyTypeError::new_err(format!(
        "{name} must be an int, not {}",
        obj.get_type().name()?
    )))
}

/// The hasher for `seed` / `keyed` (the library default when neither is given, which is what
/// the CLI and the Redis module use).
pub fn hasher(seed: Option<u64>, keyed: bool) -> PyResult<KeyHasher> {
    match (seed, keyed) {
        (Some(_), true) => Err(PyValueError::new_err(
            "give either seed or keyed=True, not both (a keyed filter's secret is random)",
        )),
        (Some(s), false) => Ok(KeyHasher::with_seed(s)),
        (None, true) => KeyHasher::keyed().py_err(),
        (None, false) => Ok(KeyHasher::new()),
    }
}

/// The error for a mutation of a structure opened read-only (`open()`), like writing to a
/// file opened for reading.
pub fn read_only_error(py: Python<'_>) -> PyErr {
    match py
        .import("io")
        .and_then(|io| io.getattr("UnsupportedOperation"))
    {
        Ok(t) => PyErr::from_type(
            t.cast_into().expect("io.UnsupportedOperation is a type"),
            "opened read-only with open() (a memory map of the file): use load() or copy() \
             for a structure you can change",
        ),
        Err(e) => e,
    }
}

/// A length for `__len__` (which Python limits to `sys.maxsize`).
pub fn len_out(n: u64) -> PyResult<usize> {
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| {
            pyo3::exceptions::PyOverflowError::new_err(format!("{n} items: beyond sys.maxsize"))
        })
}

/// Bytes as a human size.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
