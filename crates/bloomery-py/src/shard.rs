//! `bloomery.ShardLayout`: the library's sharded-filter layout (`bloomery::shard`) for
//! Python clients of a Redis/Valkey Cluster (`bloomery.cluster.ShardedBloomFilter` is built
//! on it): the descriptor's bytes, the shard of each key, the shards' key names and the check
//! of a shard's header. Keys map to bytes as everywhere in the package (`keys`), which is
//! what redis-py sends for them, so a key routes to the shard that holds it.

use std::path::PathBuf;

use bloomery::shard::{key_slot, Layout};
use bloomery::{AnyFilter, Persist};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{to_py, IntoPy};
use crate::keys;

/// The layout of a Bloom filter sharded over a Redis/Valkey Cluster (see docs/CLUSTER.md):
/// shard count, shape, hash path, capacity and target rate, and the generation of its shard
/// keys. ShardLayout.from_bytes(client.get(name)) reads the descriptor `bloomery cluster
/// push` writes.
#[pyclass(name = "ShardLayout", module = "bloomery", frozen)]
pub struct PyShardLayout {
    layout: Layout,
}

#[pymethods]
impl PyShardLayout {
    /// Decode a descriptor (every field checked); FormatError if it is not one.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Layout::from_bytes(data)
            .map(|layout| Self { layout })
            .map_err(|e| to_py(bloomery::Error::Format(e)))
    }

    /// The layout of the blocked filter file at `path` cut into `shards` shards.
    #[staticmethod]
    #[pyo3(signature = (path, shards, generation = 1))]
    fn of_file(py: Python<'_>, path: PathBuf, shards: u32, generation: u64) -> PyResult<Self> {
        let f = py.detach(|| AnyFilter::load(&path).py_err_at(&path))?;
        let AnyFilter::Blocked(b) = &f else {
            return Err(PyValueError::new_err(format!(
                "{}: a {} filter; a sharded filter is split from a blocked filter",
                path.display(),
                f.kind().name()
            )));
        };
        let layout = Layout::of_filter(b, shards).py_err()?;
        Ok(Self {
            layout: layout.with_generation(generation),
        })
    }

    /// Shard `shard` of the blocked filter file at `path` as the Redis module's BF value
    /// bytes (what BF.LOADCHUNK loads).
    fn shard_bytes<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        shard: u32,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let f = py.detach(|| AnyFilter::load(&path).py_err_at(&path))?;
        let AnyFilter::Blocked(b) = &f else {
            return Err(PyValueError::new_err(format!(
                "{}: not a blocked filter",
                path.display()
            )));
        };
        let bytes = self.layout.split(b, shard).py_err()?.to_bytes();
        Ok(PyBytes::new(py, &bytes))
    }

    /// The descriptor's bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.layout.to_bytes())
    }

    #[getter]
    fn shards(&self) -> u32 {
        self.layout.shards()
    }
    #[getter]
    fn generation(&self) -> u64 {
        self.layout.generation()
    }
    #[getter]
    fn blocks_per_shard(&self) -> u64 {
        self.layout.blocks_per_shard()
    }
    #[getter]
    fn hashes(&self) -> u32 {
        self.layout.hashes()
    }
    #[getter]
    fn capacity(&self) -> u64 {
        self.layout.capacity()
    }
    #[getter]
    fn target_fpr(&self) -> f64 {
        self.layout.target_fpr()
    }

    /// The shard of one key.
    fn shard_of(&self, key: &Bound<'_, PyAny>) -> PyResult<u32> {
        Ok(self.layout.shard_of(keys::one(key)?.bytes()))
    }

    /// The shard of each key of an iterable, in order.
    fn route(&self, keys: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        for (i, k) in keys.try_iter()?.enumerate() {
            let k = k?;
            buf.clear();
            let found = keys::key_bytes(&k, &mut buf).map_err(|e| keys::with_index(e, i))?;
            let bytes = match &found {
                keys::Found::Borrowed(b) => *b,
                keys::Found::Written => buf.as_slice(),
            };
            out.push(self.layout.shard_of(bytes));
        }
        Ok(out)
    }

    /// The key name of shard `shard` of the filter named `name`.
    fn shard_key<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'_, PyAny>,
        shard: u32,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if shard >= self.layout.shards() {
            return Err(PyValueError::new_err(format!(
                "shard {shard} of {} shards",
                self.layout.shards()
            )));
        }
        let name = keys::one(name)?;
        Ok(PyBytes::new(
            py,
            &self.layout.shard_key(name.bytes(), shard),
        ))
    }

    /// The key names of every shard, in shard order.
    fn shard_keys<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let name = keys::one(name)?;
        Ok(self
            .layout
            .shard_keys(name.bytes())
            .iter()
            .map(|k| PyBytes::new(py, k))
            .collect())
    }

    /// Check a shard's header (the data of `BF.SCANDUMP key 0`) against the layout; returns
    /// (items, bytes). FormatError when it is not a shard of this layout.
    fn check_shard_header(&self, header: &[u8]) -> PyResult<(u64, u64)> {
        let h = self.layout.check_shard_header(header).py_err()?;
        Ok((h.items, h.len))
    }

    /// The model's false-positive rate of the whole filter when its shards hold `items`.
    fn current_fpr(&self, items: Vec<u64>) -> f64 {
        self.layout.current_fpr(&items)
    }

    /// The Redis Cluster slot of a key name (CRC16 of the key or of its hash tag).
    #[staticmethod]
    fn key_slot(key: &[u8]) -> u16 {
        key_slot(key)
    }

    fn __repr__(&self) -> String {
        format!(
            "ShardLayout(shards={}, blocks_per_shard={}, hashes={}, capacity={}, \
             target_fpr={}, generation={})",
            self.layout.shards(),
            self.layout.blocks_per_shard(),
            self.layout.hashes(),
            self.layout.capacity(),
            self.layout.target_fpr(),
            self.layout.generation()
        )
    }
}
