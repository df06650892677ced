//! `TDigest`: quantiles of a stream of numbers (the merging t-digest).

use bloomery::TDigest;
use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::lock::Shared;
use crate::typed::typed_class;

/// Quantiles, CDF and ranks of a stream of numbers in fixed memory: the merging t-digest
/// (Dunning & Ertl 2019, k1 scale), the structure behind the Redis module's TDIGEST.*
/// commands, with their answers (nan when empty, -2 ranks when empty, -1 below the smallest
/// value, inf past the last rank).
///
/// TDigest(compression=100)
///
/// Memory is 16 * (6 * compression + 10) bytes; the rank error of a quantile q is at most
/// about 2*pi*sqrt(q*(1-q))/compression (tails are nearly exact; min and max are exact).
#[pyclass(name = "TDigest", module = "bloomery", frozen)]
pub struct PyTDigest {
    f: Shared<TDigest>,
}

typed_class!(PyTDigest, "TDigest", TDigest, {
    #[new]
    #[pyo3(signature = (compression = 100))]
    fn new(compression: u64) -> PyResult<Self> {
        Ok(Self::wrap(TDigest::try_new(compression).py_err()?))
    }

    /// Add one value (a finite float; ValueError for nan and inf).
    fn add(&self, py: Python<'_>, value: f64) -> PyResult<()> {
        self.f.write(py).insert(value).py_err()
    }

    /// Add every value of an iterable of numbers; all are checked first (nothing is added
    /// when one is refused).
    fn add_many(&self, py: Python<'_>, values: Vec<f64>) -> PyResult<()> {
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "invalid parameter `value`: must be finite, got {v}"
            )));
        }
        let mut g = self.f.write(py);
        for v in values {
            g.insert(v).py_err()?;
        }
        Ok(())
    }

    /// Add the values of another digest (this one keeps its compression).
    fn merge(&self, py: Python<'_>, other: PyRef<'_, Self>) -> PyResult<()> {
        let theirs = other.f.read(py).clone();
        self.f.write(py).merge(&theirs).py_err()
    }

    /// Forget every value.
    fn reset(&self, py: Python<'_>) {
        self.f.write(py).reset()
    }

    /// The estimated value at quantile q (0 <= q <= 1); nan when empty or q is outside.
    fn quantile(&self, py: Python<'_>, q: f64) -> f64 {
        self.f.read(py).quantile(q)
    }

    /// quantile() of each q.
    fn quantiles(&self, py: Python<'_>, qs: Vec<f64>) -> Vec<f64> {
        self.f.read(py).quantiles(&qs)
    }

    /// The estimated fraction of values below x plus half those equal to x; nan when empty.
    fn cdf(&self, py: Python<'_>, x: f64) -> f64 {
        self.f.read(py).cdf(x)
    }

    /// The estimated rank of x (-1 below the smallest value, the count above the largest,
    /// -2 when empty).
    fn rank(&self, py: Python<'_>, x: f64) -> i64 {
        self.f.read(py).rank(x)
    }

    /// The estimated reverse rank of x (-1 above the largest value, -2 when empty).
    fn rev_rank(&self, py: Python<'_>, x: f64) -> i64 {
        self.f.read(py).rev_rank(x)
    }

    /// The estimated value of rank r (0: the smallest); inf from the count on, nan when empty.
    fn by_rank(&self, py: Python<'_>, r: u64) -> f64 {
        self.f.read(py).by_rank(r)
    }

    /// The estimated value of reverse rank r (0: the largest); -inf from the count on.
    fn by_rev_rank(&self, py: Python<'_>, r: u64) -> f64 {
        self.f.read(py).by_rev_rank(r)
    }

    /// The mean of the values between quantiles lo and hi; nan when empty or invalid cuts.
    fn trimmed_mean(&self, py: Python<'_>, lo: f64, hi: f64) -> f64 {
        self.f.read(py).trimmed_mean(lo, hi)
    }

    /// The smallest value added (nan when empty).
    #[getter]
    fn min(&self, py: Python<'_>) -> f64 {
        self.f.read(py).min()
    }

    /// The largest value added (nan when empty).
    #[getter]
    fn max(&self, py: Python<'_>) -> f64 {
        self.f.read(py).max()
    }

    #[getter]
    fn compression(&self, py: Python<'_>) -> u64 {
        self.f.read(py).compression()
    }

    /// Values added.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.f.read(py).count() as usize
    }

    /// The merged centroids as (mean, weight) pairs, in order of mean.
    fn centroids(&self, py: Python<'_>) -> Vec<(f64, u64)> {
        self.f.read(py).centroid_list()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let g = self.f.read(py);
        format!(
            "<bloomery.TDigest compression={} count={} centroids={}>",
            g.compression(),
            g.count(),
            g.merged_nodes() + g.unmerged_nodes()
        )
    }
});
