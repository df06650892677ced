//! `CuckooFilter` (a set with deletion, RedisBloom's CF.*) and `XorFilter` (a static set in
//! the least memory).

use std::path::PathBuf;

use bloomery::{CuckooFilter, Persist, Verify, XorFilter};
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::common::{count_arg, hasher, human_bytes};
use crate::errors::{to_py_key, IntoPy};
use crate::keys::{self, Hashes};
use crate::lock::Shared;
use crate::typed::{contains_many, typed_class};

/// A cuckoo filter (Fan et al.): a set of fingerprints in buckets, with deletion, as the
/// Redis module's CF.* commands keep it.
///
/// CuckooFilter(capacity, *, bucket_size=2, max_iterations=20, expansion=1, seed=None,
/// keyed=False)
///
/// add() stores a copy of the key's fingerprint each time (so a key added twice is removed
/// twice); add_unique() adds only keys not already present. When the newest table is full
/// a new one `expansion` times larger is added; expansion=0 makes add() raise
/// bloomery.FullError instead. remove(key) raises KeyError when no copy is found; removing a
/// key that was never added may remove another key's fingerprint (as in every cuckoo filter).
#[pyclass(name = "CuckooFilter", module = "bloomery", frozen)]
pub struct PyCuckooFilter {
    f: Shared<CuckooFilter>,
}

typed_class!(PyCuckooFilter, "CuckooFilter", CuckooFilter, {
    #[new]
    #[pyo3(signature = (capacity, *, bucket_size = 2, max_iterations = 20, expansion = 1, seed = None, keyed = false))]
    fn new(
        py: Python<'_>,
        capacity: &Bound<'_, PyAny>,
        bucket_size: u32,
        max_iterations: u32,
        expansion: u32,
        seed: Option<u64>,
        keyed: bool,
    ) -> PyResult<Self> {
        let o = CuckooFilter::builder()
            .capacity(count_arg(capacity, "capacity", false)?)
            .bucket_size(bucket_size)
            .max_iterations(max_iterations)
            .expansion(expansion)
            .hasher(hasher(seed, keyed)?);
        Ok(Self::wrap(py.detach(|| o.try_build().py_err())?))
    }

    /// Add a key (another copy if it is already there); FullError when no table has room
    /// and growth is off or exhausted.
    fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = keys::one(key)?;
        self.f.write(py).insert(k.bytes()).py_err()
    }

    /// Add a key unless it may already be present; returns whether it was added.
    fn add_unique(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = keys::one(key)?;
        self.f.write(py).insert_unique(k.bytes()).py_err()
    }

    /// Remove one copy of a key; KeyError when none is found.
    fn remove(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = keys::one(key)?;
        self.f
            .write(py)
            .remove(k.bytes())
            .map_err(|_| PyKeyError::new_err(key.clone().unbind()))
    }

    /// Remove one copy of a key if found; returns whether one was.
    fn discard(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = keys::one(key)?;
        Ok(self.f.write(py).remove(k.bytes()).is_ok())
    }

    /// Copies of the key's fingerprint stored (at least the times it was added and not
    /// removed).
    fn count(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        let k = keys::one(key)?;
        Ok(self.f.read(py).count(k.bytes()))
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = keys::one(key)?;
        Ok(self.f.read(py).contains(k.bytes()))
    }

    /// Fingerprints stored (adds minus removes).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        crate::common::len_out(self.f.read(py).len())
    }

    /// Add each key (a copy each time), with the GIL released; on an error the keys
    /// before the failing one have been added.
    fn add_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        let h = *self.f.read(py).hasher();
        let hashes = Hashes::new(keys, h)?;
        let g = self.f.write_detached(py);
        py.detach(|| {
            let mut g = g;
            hashes.chunks(h, |start, hs| {
                for (i, &x) in hs.iter().enumerate() {
                    g.insert_hashed(x).map_err(|e| to_py_key(e, start + i))?;
                }
                Ok(())
            })
        })
    }

    /// Add the keys of each iterable (as add_many).
    #[pyo3(signature = (*iterables))]
    fn update(&self, py: Python<'_>, iterables: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        for it in iterables.iter() {
            self.add_many(py, &it)?;
        }
        Ok(())
    }

    /// Query many keys with the GIL released: a NumPy bool array (a list without NumPy).
    fn contains_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        contains_many(&self.f, py, keys)
    }

    /// The capacity of the first table.
    #[getter]
    fn capacity(&self, py: Python<'_>) -> u64 {
        self.f.read(py).capacity()
    }

    /// The false-positive rate implied by the current load.
    #[getter]
    fn current_fpr(&self, py: Python<'_>) -> f64 {
        self.f.read(py).current_fpr()
    }

    /// Bytes of fingerprint storage.
    #[getter]
    fn nbytes(&self, py: Python<'_>) -> u64 {
        self.f.read(py).allocated_bytes()
    }

    /// Slots per bucket.
    #[getter]
    fn bucket_size(&self, py: Python<'_>) -> u32 {
        self.f.read(py).bucket_size()
    }

    /// Tables so far (one more each time the newest fills up).
    #[getter]
    fn tables(&self, py: Python<'_>) -> usize {
        self.f.read(py).tables().len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let g = self.f.read(py);
        format!(
            "<bloomery.CuckooFilter capacity={} items={} tables={} size={} fpr_now={:.3e}>",
            g.capacity(),
            g.len(),
            g.tables().len(),
            human_bytes(g.allocated_bytes()),
            g.current_fpr()
        )
    }
});

/// A static set in nearly the least memory (binary-fuse xor filter): built once from all
/// its keys, then queried; about 9 bits per key at a rate of 1/256 with 8-bit fingerprints,
/// 18 bits per key at 1/65536 with 16.
///
/// XorFilter(keys, *, fingerprint_bits=8, seed=None, keyed=False)
///
/// keys: any iterable of keys, a NumPy or an Arrow array (repeated keys are kept once). The
/// filter cannot be changed after construction.
#[pyclass(name = "XorFilter", module = "bloomery", frozen)]
pub struct PyXorFilter {
    f: Shared<XorFilter>,
}

typed_class!(PyXorFilter, "XorFilter", XorFilter, {
    #[new]
    #[pyo3(signature = (keys, *, fingerprint_bits = 8, seed = None, keyed = false))]
    fn new(
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        fingerprint_bits: u32,
        seed: Option<u64>,
        keyed: bool,
    ) -> PyResult<Self> {
        let h = hasher(seed, keyed)?;
        let hashes = Hashes::new(keys, h)?;
        let f = py.detach(|| {
            let mut hs = Vec::with_capacity(hashes.len());
            hashes.chunks(h, |_, c| {
                hs.extend_from_slice(c);
                Ok(())
            })?;
            XorFilter::builder()
                .fingerprint_bits(fingerprint_bits)
                .hasher(h)
                .try_build_hashed(hs)
                .map_err(bloomery::Error::from)
                .py_err()
        })?;
        Ok(Self::wrap(f))
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = keys::one(key)?;
        Ok(self.f.read(py).contains(k.bytes()))
    }

    /// Distinct keys in the set.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        crate::common::len_out(self.f.read(py).len())
    }

    /// Query many keys with the GIL released: a NumPy bool array (a list without NumPy).
    fn contains_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        contains_many(&self.f, py, keys)
    }

    /// Not supported: a xor filter is built once from all its keys.
    fn add(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let _ = key;
        Err(PyTypeError::new_err(
            "a XorFilter is static: build a new one from all the keys (XorFilter(keys))",
        ))
    }

    /// The expected false-positive rate, 2**-fingerprint_bits.
    #[getter]
    fn fpr(&self, py: Python<'_>) -> f64 {
        self.f.read(py).expected_fpr()
    }

    /// Fingerprint width (8 or 16).
    #[getter]
    fn fingerprint_bits(&self, py: Python<'_>) -> u32 {
        self.f.read(py).fingerprint_bits()
    }

    /// Table bits per key.
    #[getter]
    fn bits_per_key(&self, py: Python<'_>) -> f64 {
        self.f.read(py).bits_per_key()
    }

    /// Bytes of the table.
    #[getter]
    fn nbytes(&self, py: Python<'_>) -> u64 {
        self.f.read(py).bit_len().div_ceil(8)
    }

    /// Open a file as a read-only memory map (the table stays in the file; see
    /// BloomFilter.open).
    #[classmethod]
    #[pyo3(signature = (path, *, verify = true))]
    fn open(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        path: PathBuf,
        verify: bool,
    ) -> PyResult<Self> {
        let v = if verify {
            Verify::Checksum
        } else {
            Verify::HeaderOnly
        };
        let f = py.detach(|| XorFilter::open_mmap(&path, v).py_err_at(&path))?;
        Ok(Self::wrap(f))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let g = self.f.read(py);
        format!(
            "<bloomery.XorFilter items={} fingerprint_bits={} fpr={} bits_per_key={:.2} size={}>",
            g.len(),
            g.fingerprint_bits(),
            g.expected_fpr(),
            g.bits_per_key(),
            human_bytes(g.bit_len().div_ceil(8))
        )
    }
});
