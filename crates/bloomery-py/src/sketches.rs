//! `CountMinSketch` and `TopK` (HeavyKeeper): counts of a stream's keys.

use bloomery::{Count, CountMinSketch, Merge, TopK};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::common::{count_arg, hasher, human_bytes};
use crate::errors::IntoPy;
use crate::keys::{self, counts_out, Batch, Hashes};
use crate::lock::Shared;
use crate::typed::typed_class;

/// Approximate counts of a stream's keys in fixed memory (Cormode & Muthukrishnan): a
/// query never returns less than the true count, and more by at most epsilon·total with
/// probability 1 - delta.
///
/// CountMinSketch(width=None, depth=None, *, epsilon=None, delta=None, conservative=False,
/// seed=None, keyed=False)
///
/// Give width and depth (depth rows of width counters), or epsilon and delta
/// (width = ceil(e/epsilon), depth = ceil(ln(1/delta))). conservative=True uses the
/// conservative update of Estan & Varghese (smaller over-estimates; merges still add).
#[pyclass(name = "CountMinSketch", module = "bloomery", frozen)]
pub struct PyCountMinSketch {
    f: Shared<CountMinSketch>,
}

typed_class!(PyCountMinSketch, "CountMinSketch", CountMinSketch, {
    #[new]
    #[pyo3(signature = (width = None, depth = None, *, epsilon = None, delta = None, conservative = false, seed = None, keyed = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        width: Option<&Bound<'_, PyAny>>,
        depth: Option<u32>,
        epsilon: Option<f64>,
        delta: Option<f64>,
        conservative: bool,
        seed: Option<u64>,
        keyed: bool,
    ) -> PyResult<Self> {
        let mut b = CountMinSketch::builder()
            .conservative(conservative)
            .hasher(hasher(seed, keyed)?);
        match (width, depth, epsilon, delta) {
            (Some(w), Some(d), None, None) => b = b.dimensions(count_arg(w, "width", false)?, d),
            (None, None, Some(e), Some(d)) => b = b.error(e, d),
            _ => {
                return Err(PyValueError::new_err(
                    "give width and depth, or epsilon and delta (not both pairs)",
                ))
            }
        }
        Ok(Self::wrap(py.detach(|| b.try_build().py_err())?))
    }

    /// Add `count` (default 1) to a key.
    #[pyo3(signature = (key, count = 1))]
    fn incr(&self, py: Python<'_>, key: &Bound<'_, PyAny>, count: u64) -> PyResult<()> {
        let k = keys::one(key)?;
        self.f.write(py).insert_many(k.bytes(), count);
        Ok(())
    }

    /// Add one to a key.
    fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.incr(py, key, 1)
    }

    /// Add `count` (default 1) to each key, with the GIL released (a key repeated is
    /// added each time). See BloomFilter.add_many for what `keys` may be.
    #[pyo3(signature = (keys, count = 1))]
    fn incr_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>, count: u64) -> PyResult<()> {
        let h = *bloomery::Count::hasher(&*self.f.read(py));
        let hashes = Hashes::new(keys, h)?;
        let g = self.f.write_detached(py);
        py.detach(|| {
            let mut g = g;
            hashes.chunks(h, |_, hs| {
                g.insert_many_hashed_pipelined(hs.iter().copied(), count);
                Ok(())
            })
        })
    }

    /// Add one to each key of each iterable (like collections.Counter.update).
    #[pyo3(signature = (*iterables))]
    fn update(&self, py: Python<'_>, iterables: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        for it in iterables.iter() {
            self.incr_many(py, &it, 1)?;
        }
        Ok(())
    }

    /// The estimated count of a key: never below the true count.
    fn query(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        let k = keys::one(key)?;
        Ok(self.f.read(py).count(k.bytes()))
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.query(py, key)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.query(py, key)? > 0)
    }

    /// Estimated counts of many keys with the GIL released: a NumPy uint64 array (a list
    /// without NumPy).
    fn query_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let h = *bloomery::Count::hasher(&*self.f.read(py));
        let hashes = Hashes::new(keys, h)?;
        let g = self.f.read_detached(py);
        let out = py.detach(|| {
            let g = g;
            let mut out = vec![0u64; hashes.len()];
            hashes.chunks(h, |s, hs| {
                for (&x, o) in hs.iter().zip(&mut out[s..]) {
                    *o = g.count_hashed(x);
                }
                Ok(())
            })?;
            PyResult::Ok(out)
        })?;
        counts_out(py, out, hashes.shape.as_ref())
    }

    /// Add another sketch's counts into this one (same width, depth, update rule and seed;
    /// otherwise ValueError).
    fn merge(&self, py: Python<'_>, other: PyRef<'_, Self>) -> PyResult<()> {
        if std::ptr::eq(self, &*other) {
            let copy = self.f.read(py).clone();
            return self.f.write(py).union_with(&copy).py_err();
        }
        let o = other.f.read(py).clone();
        self.f.write(py).union_with(&o).py_err()
    }

    /// Reset every counter.
    fn clear(&self, py: Python<'_>) {
        self.f.write(py).clear()
    }

    /// Sum of all counts added.
    #[getter]
    fn total(&self, py: Python<'_>) -> u64 {
        self.f.read(py).total()
    }

    /// Counters per row.
    #[getter]
    fn width(&self, py: Python<'_>) -> u64 {
        self.f.read(py).width()
    }

    /// Rows.
    #[getter]
    fn depth(&self, py: Python<'_>) -> u32 {
        self.f.read(py).depth()
    }

    /// True with the conservative update.
    #[getter]
    fn conservative(&self, py: Python<'_>) -> bool {
        self.f.read(py).is_conservative()
    }

    /// (epsilon, delta): a query exceeds the true count by more than epsilon·total with
    /// probability at most delta.
    #[getter]
    fn error_bounds(&self, py: Python<'_>) -> (f64, f64) {
        self.f.read(py).error_bounds()
    }

    /// Bytes of the counters.
    #[getter]
    fn nbytes(&self, py: Python<'_>) -> u64 {
        let g = self.f.read(py);
        g.width() * u64::from(g.depth()) * 8
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let g = self.f.read(py);
        format!(
            "<bloomery.CountMinSketch width={} depth={} conservative={} total={} size={}>",
            g.width(),
            g.depth(),
            if g.is_conservative() { "True" } else { "False" },
            g.total(),
            human_bytes(g.width() * u64::from(g.depth()) * 8)
        )
    }
});

/// The k most frequent keys of a stream, with their estimated counts (HeavyKeeper, Gong et
/// al. 2018): counts decay away from keys that share a bucket with heavier ones, so the list
/// follows the heavy hitters in a few kilobytes. Counts never over-estimate. The structure
/// behind the Redis module's TOPK.* commands.
///
/// TopK(k, *, width=8, depth=7, decay=0.9, seed=None)
///
/// Keys are returned as str when their bytes are valid UTF-8 (str and int keys always are),
/// as bytes otherwise; decode=False returns bytes always.
#[pyclass(name = "TopK", module = "bloomery", frozen)]
pub struct PyTopK {
    f: Shared<TopK>,
}

/// A key's bytes as str (valid UTF-8, when `decode`) or bytes.
fn key_out(py: Python<'_>, b: &[u8], decode: bool) -> Py<PyAny> {
    match std::str::from_utf8(b) {
        Ok(s) if decode => PyString::new(py, s).into_any().unbind(),
        _ => PyBytes::new(py, b).into_any().unbind(),
    }
}

typed_class!(PyTopK, "TopK", TopK, {
    #[new]
    #[pyo3(signature = (k, *, width = 8, depth = 7, decay = 0.9, seed = None))]
    fn new(
        py: Python<'_>,
        k: u32,
        width: u64,
        depth: u32,
        decay: f64,
        seed: Option<u64>,
    ) -> PyResult<Self> {
        let b = TopK::builder(k)
            .width(width)
            .depth(depth)
            .decay(decay)
            .hasher(hasher(seed, false)?);
        Ok(Self::wrap(py.detach(|| b.try_build().py_err())?))
    }

    /// Add one arrival of a key; returns the key it expelled from the top-k list, or None.
    fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        self.incr(py, key, 1)
    }

    /// Add `count` arrivals of a key (0 to 2**32 - 1); returns the key it expelled, or None.
    #[pyo3(signature = (key, count = 1))]
    fn incr(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        count: u32,
    ) -> PyResult<Option<Py<PyAny>>> {
        let k = keys::one(key)?;
        let out = self.f.write(py).incr_by(k.bytes(), count);
        Ok(out.map(|b| key_out(py, &b, true)))
    }

    /// Add one arrival of each key, with the GIL released; returns the keys expelled from
    /// the list, in order.
    fn add_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
        let batch = Batch::new(keys)?;
        let g = self.f.write_detached(py);
        let out = py.detach(|| {
            let mut g = g;
            let mut out = Vec::new();
            batch.chunks(|_, ks| {
                out.extend(ks.iter().filter_map(|k| g.incr_by(k.bytes(), 1)));
                Ok(())
            })?;
            PyResult::Ok(out)
        })?;
        Ok(out.iter().map(|b| key_out(py, b, true)).collect())
    }

    /// Add one arrival of each key of each iterable.
    #[pyo3(signature = (*iterables))]
    fn update(&self, py: Python<'_>, iterables: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        for it in iterables.iter() {
            self.add_many(py, &it)?;
        }
        Ok(())
    }

    /// True when the key is in the top-k list now.
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = keys::one(key)?;
        Ok(self.f.read(py).contains(k.bytes()))
    }

    /// The estimated count of a key (never above the truth).
    fn count(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        let k = keys::one(key)?;
        Ok(self.f.read(py).count(k.bytes()))
    }

    /// The top-k list as (key, count) pairs, largest count first (ties by key bytes).
    #[pyo3(signature = (*, decode = true))]
    fn list(&self, py: Python<'_>, decode: bool) -> Vec<(Py<PyAny>, u64)> {
        // copied out first: no Python object is made while the structure is borrowed
        let items: Vec<(Vec<u8>, u64)> = self
            .f
            .read(py)
            .list()
            .into_iter()
            .map(|(k, c)| (k.to_vec(), c))
            .collect();
        items
            .into_iter()
            .map(|(k, c)| (key_out(py, &k, decode), c))
            .collect()
    }

    /// The n most common keys with their counts (all of the list when n is None), like
    /// collections.Counter.most_common.
    #[pyo3(signature = (n = None, *, decode = true))]
    fn most_common(&self, py: Python<'_>, n: Option<usize>, decode: bool) -> Vec<(Py<PyAny>, u64)> {
        let mut l = self.list(py, decode);
        if let Some(n) = n {
            l.truncate(n);
        }
        l
    }

    /// Keys in the list now (at most k).
    fn __len__(&self, py: Python<'_>) -> usize {
        self.f.read(py).len()
    }

    /// Arrivals added.
    #[getter]
    fn total(&self, py: Python<'_>) -> u64 {
        self.f.read(py).total()
    }

    /// Keys kept (k).
    #[getter]
    fn k(&self, py: Python<'_>) -> u32 {
        self.f.read(py).k()
    }

    #[getter]
    fn width(&self, py: Python<'_>) -> u64 {
        self.f.read(py).width()
    }

    #[getter]
    fn depth(&self, py: Python<'_>) -> u32 {
        self.f.read(py).depth()
    }

    #[getter]
    fn decay(&self, py: Python<'_>) -> f64 {
        self.f.read(py).decay()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let g = self.f.read(py);
        format!(
            "<bloomery.TopK k={} width={} depth={} decay={} listed={} total={}>",
            g.k(),
            g.width(),
            g.depth(),
            g.decay(),
            g.len(),
            g.total()
        )
    }
});
