//! `WindowFilter` (the last N insertions: the age-partitioned filter of Shtul, Baquero &
//! Almeida) and `TimeWindowFilter` (the last T seconds: after Rodrigues, Shtul, Baquero &
//! Almeida). Time is an argument: seconds (floats, as `time.time()` gives), kept to the
//! millisecond; a method given no time uses the clock, read here, never in the library.

use bloomery::builders::WindowLayout;
use bloomery::{AgePartitionedBloomFilter, Filter, Hashed, TimeWindowFilter};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::common::{count_arg, hasher};
use crate::errors::IntoPy;
use crate::keys::{self, bools_out, Hashes};
use crate::lock::Shared;
use crate::typed::typed_class;

/// A sliding window over the last `window` insertions (Shtul, Baquero & Almeida, "Age-
/// Partitioned Bloom Filters"): a key added among the last `window` adds is always found; one
/// followed by `window + slack` adds is found only as a key never added; the false-positive
/// rate is at most `fpr` at every point of an unbounded stream, in memory fixed by `window`
/// and `fpr`. `blocked=True` takes the blocked layout (the paper's age-partitioned blocked
/// filter: a key's bits in one block of k + l 64-bit words, a few cache lines per add or
/// query, a little more memory; saved files have kind `window-blocked`).
///
/// WindowFilter(window, fpr, *, seed=None, keyed=False, blocked=False)
#[pyclass(name = "WindowFilter", module = "bloomery", frozen)]
pub struct PyWindowFilter {
    f: Shared<AgePartitionedBloomFilter>,
}

fn any_window(_: &AgePartitionedBloomFilter) -> PyResult<()> {
    Ok(())
}

typed_class!(
    PyWindowFilter,
    "WindowFilter",
    AgePartitionedBloomFilter,
    any_window,
    {
        #[new]
        #[pyo3(signature = (window, fpr, *, seed = None, keyed = false, blocked = false))]
        fn new(
            py: Python<'_>,
            window: &Bound<'_, PyAny>,
            fpr: f64,
            seed: Option<u64>,
            keyed: bool,
            blocked: bool,
        ) -> PyResult<Self> {
            let layout = if blocked {
                WindowLayout::Blocked
            } else {
                WindowLayout::Sliced
            };
            let b = AgePartitionedBloomFilter::builder()
                .capacity(count_arg(window, "window", false)?)
                .fpr(fpr)
                .layout(layout)
                .hasher(hasher(seed, keyed)?);
            Ok(Self::wrap(py.detach(|| b.try_build().py_err())?))
        }

        /// Add a key (a repeat too: it stays fresh); True when a bit changed.
        fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
            let k = keys::one(key)?;
            Ok(self.f.write(py).insert(k.bytes()))
        }

        fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
            let k = keys::one(key)?;
            Ok(self.f.read(py).contains(k.bytes()))
        }

        /// Adds so far (the window holds the last `window` of them).
        fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
            crate::common::len_out(self.f.read(py).insertions())
        }

        /// Add each key in order, with the GIL released.
        fn add_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
            let h = *self.f.read(py).hasher();
            let hashes = Hashes::new(keys, h)?;
            let g = self.f.write_detached(py);
            py.detach(|| {
                let mut g = g;
                hashes.chunks(h, |_, hs| {
                    for &x in hs {
                        g.insert_hashed(x);
                    }
                    Ok(())
                })
            })
        }

        /// Query many keys with the GIL released (the window does not move): a NumPy bool array
        /// (a list without NumPy).
        fn contains_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
            crate::typed::contains_many(&self.f, py, keys)
        }

        /// Add the keys of each iterable, in order (as add_many).
        #[pyo3(signature = (*iterables))]
        fn update(
            &self,
            py: Python<'_>,
            iterables: &Bound<'_, pyo3::types::PyTuple>,
        ) -> PyResult<()> {
            for it in iterables.iter() {
                self.add_many(py, &it)?;
            }
            Ok(())
        }

        fn __repr__(&self, py: Python<'_>) -> String {
            let f = self.f.read(py);
            format!(
                "WindowFilter(window={}, k={}, l={}, {}{} bytes, fpr now {:.3e})",
                f.window(),
                f.hashes(),
                f.remembering_slices(),
                if f.layout() == WindowLayout::Blocked {
                    "blocked, "
                } else {
                    ""
                },
                bloomery::Stats::bit_len(&*f).div_ceil(8),
                f.model_fpr()
            )
        }

        /// The window: keys among the last `window` adds are always found.
        #[getter]
        fn window(&self, py: Python<'_>) -> u64 {
            self.f.read(py).window()
        }

        /// Further adds beyond the window after which a key is surely forgotten.
        #[getter]
        fn slack(&self, py: Python<'_>) -> u64 {
            self.f.read(py).slack()
        }

        /// Slices taking each add (k).
        #[getter]
        fn hashes(&self, py: Python<'_>) -> u32 {
            self.f.read(py).hashes()
        }

        /// Slices that only remember (l).
        #[getter]
        fn remembering_slices(&self, py: Python<'_>) -> u32 {
            self.f.read(py).remembering_slices()
        }

        /// True for the blocked layout (`blocked=True`).
        #[getter]
        fn blocked(&self, py: Python<'_>) -> bool {
            self.f.read(py).layout() == WindowLayout::Blocked
        }

        /// The model's false-positive rate now.
        #[getter]
        fn current_fpr(&self, py: Python<'_>) -> f64 {
            self.f.read(py).model_fpr()
        }

        /// The model's rate at the worst point of an unbounded stream (at most `fpr`).
        #[getter]
        fn worst_fpr(&self, py: Python<'_>) -> f64 {
            self.f.read(py).worst_fpr()
        }

        /// Bytes of the slices.
        #[getter]
        fn nbytes(&self, py: Python<'_>) -> u64 {
            bloomery::Stats::bit_len(&*self.f.read(py)).div_ceil(8)
        }
    }
);

/// A time window over the last `window` seconds (after Rodrigues, Shtul, Baquero & Almeida,
/// "Time-limited Bloom Filter"): a key added at most `window` seconds before the time of a
/// query is always found; one added more than `window + slack` seconds before is found only as
/// a key never added. `capacity` is the adds per window the slices are first sized for; memory
/// follows the rate, and the false-positive rate stays at most `fpr` at a steady rate of any
/// size.
///
/// Times are seconds (`time.time()`, a record's Unix time), kept to the millisecond; a method
/// given no time uses the clock. Times that run backwards are taken as the latest seen.
///
/// TimeWindowFilter(window, capacity, fpr, *, seed=None, keyed=False)
#[pyclass(name = "TimeWindowFilter", module = "bloomery", frozen)]
pub struct PyTimeWindowFilter {
    f: Shared<TimeWindowFilter>,
}

fn any_time_window(_: &TimeWindowFilter) -> PyResult<()> {
    Ok(())
}

/// Seconds as milliseconds; `None`: now.
fn ms(t: Option<f64>) -> PyResult<u64> {
    let t = match t {
        Some(t) => t,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
    };
    if !(0.0..1e13).contains(&t) {
        return Err(PyValueError::new_err(format!(
            "time {t}: seconds since 1970, at least 0"
        )));
    }
    Ok((t * 1000.0).round() as u64)
}

/// The times of `n` keys: the array given (one per key), or now for all.
fn times(timestamps: Option<&Bound<'_, PyAny>>, n: usize) -> PyResult<Vec<u64>> {
    match timestamps {
        None => {
            let now = ms(None)?;
            Ok(vec![now; n])
        }
        Some(ts) => {
            let v: Vec<f64> = ts.extract()?;
            if v.len() != n {
                return Err(PyValueError::new_err(format!(
                    "{} timestamps for {n} keys",
                    v.len()
                )));
            }
            v.into_iter().map(|t| ms(Some(t))).collect()
        }
    }
}

typed_class!(
    PyTimeWindowFilter,
    "TimeWindowFilter",
    TimeWindowFilter,
    any_time_window,
    {
        #[new]
        #[pyo3(signature = (window, capacity, fpr, *, seed = None, keyed = false))]
        fn new(
            py: Python<'_>,
            window: f64,
            capacity: &Bound<'_, PyAny>,
            fpr: f64,
            seed: Option<u64>,
            keyed: bool,
        ) -> PyResult<Self> {
            if !(0.001..1e12).contains(&window) {
                return Err(PyValueError::new_err(format!(
                    "window {window}: seconds, at least 0.001"
                )));
            }
            let b = TimeWindowFilter::builder()
                .window((window * 1000.0).round() as u64)
                .capacity(count_arg(capacity, "capacity", false)?)
                .fpr(fpr)
                .hasher(hasher(seed, keyed)?);
            Ok(Self::wrap(py.detach(|| b.try_build().py_err())?))
        }

        /// Add a key at time `t` (seconds; default now); True when a bit changed.
        #[pyo3(signature = (key, t = None))]
        fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>, t: Option<f64>) -> PyResult<bool> {
            let k = keys::one(key)?;
            let now = ms(t)?;
            Ok(self.f.write(py).insert_at(k.bytes(), now))
        }

        /// Was the key added in the window ending at `t` (seconds; default now)?
        #[pyo3(signature = (key, t = None))]
        fn contains(
            &self,
            py: Python<'_>,
            key: &Bound<'_, PyAny>,
            t: Option<f64>,
        ) -> PyResult<bool> {
            let k = keys::one(key)?;
            let now = ms(t)?;
            Ok(self.f.read(py).contains_at(k.bytes(), now))
        }

        /// `key in f`: contains(key) now.
        fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
            self.contains(py, key, None)
        }

        /// Adds so far.
        fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
            crate::common::len_out(self.f.read(py).insertions())
        }

        /// Add each key at its time (`timestamps`: one per key, seconds; default now for all),
        /// with the GIL released.
        #[pyo3(signature = (keys, timestamps = None))]
        fn add_many(
            &self,
            py: Python<'_>,
            keys: &Bound<'_, PyAny>,
            timestamps: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<()> {
            let h = *self.f.read(py).hasher();
            let hashes = Hashes::new(keys, h)?;
            let ts = times(timestamps, hashes.len())?;
            let g = self.f.write_detached(py);
            py.detach(|| {
                let mut g = g;
                hashes.chunks(h, |s, hs| {
                    for (&x, &t) in hs.iter().zip(&ts[s..]) {
                        g.insert_hashed_at(x, t);
                    }
                    Ok(())
                })
            })
        }

        /// Query many keys, each in the window ending at its time (`timestamps`: one per key,
        /// seconds; default now for all), with the GIL released: a NumPy bool array (a list
        /// without NumPy).
        #[pyo3(signature = (keys, timestamps = None))]
        fn contains_many(
            &self,
            py: Python<'_>,
            keys: &Bound<'_, PyAny>,
            timestamps: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<Py<PyAny>> {
            let h = *self.f.read(py).hasher();
            let hashes = Hashes::new(keys, h)?;
            let ts = times(timestamps, hashes.len())?;
            let g = self.f.read_detached(py);
            let out = py.detach(|| {
                let g = g;
                let mut out = vec![false; hashes.len()];
                hashes.chunks(h, |s, hs| {
                    let hs: &[Hashed] = hs;
                    for ((&x, &t), o) in hs.iter().zip(&ts[s..]).zip(&mut out[s..]) {
                        *o = g.contains_hashed_at(x, t);
                    }
                    Ok(())
                })?;
                PyResult::Ok(out)
            })?;
            bools_out(py, out, hashes.shape.as_ref())
        }

        /// Add the keys of each iterable, now (as add_many without timestamps).
        #[pyo3(signature = (*iterables))]
        fn update(
            &self,
            py: Python<'_>,
            iterables: &Bound<'_, pyo3::types::PyTuple>,
        ) -> PyResult<()> {
            for it in iterables.iter() {
                self.add_many(py, &it, None)?;
            }
            Ok(())
        }

        fn __repr__(&self, py: Python<'_>) -> String {
            let f = self.f.read(py);
            format!(
                "TimeWindowFilter(window={}s, {} slices, {} bytes, {} adds)",
                f.window() as f64 / 1000.0,
                f.slices(),
                f.bytes(),
                f.insertions()
            )
        }

        /// Move the clock to `t` (seconds; default now), retiring the slices that left the
        /// window.
        #[pyo3(signature = (t = None))]
        fn advance(&self, py: Python<'_>, t: Option<f64>) -> PyResult<()> {
            let now = ms(t)?;
            self.f.write(py).advance(now);
            Ok(())
        }

        /// The window, in seconds.
        #[getter]
        fn window(&self, py: Python<'_>) -> f64 {
            self.f.read(py).window() as f64 / 1000.0
        }

        /// Seconds beyond the window after which a key is surely forgotten.
        #[getter]
        fn slack(&self, py: Python<'_>) -> f64 {
            self.f.read(py).slack() as f64 / 1000.0
        }

        /// The adds per window the slices are first sized for.
        #[getter]
        fn capacity(&self, py: Python<'_>) -> u64 {
            self.f.read(py).capacity()
        }

        /// Slices in the ring.
        #[getter]
        fn slices(&self, py: Python<'_>) -> usize {
            self.f.read(py).slices()
        }

        /// The model's false-positive rate at time `t` (seconds; default now).
        #[pyo3(signature = (t = None))]
        fn current_fpr(&self, py: Python<'_>, t: Option<f64>) -> PyResult<f64> {
            let now = ms(t)?;
            Ok(self.f.read(py).current_fpr(now))
        }

        /// Adds of the generations begun in the window ending at `t` (seconds; default now).
        #[pyo3(signature = (t = None))]
        fn recent(&self, py: Python<'_>, t: Option<f64>) -> PyResult<u64> {
            let now = ms(t)?;
            Ok(self.f.read(py).recent_insertions(now))
        }

        /// Bytes of the slices.
        #[getter]
        fn nbytes(&self, py: Python<'_>) -> u64 {
            self.f.read(py).bytes()
        }
    }
);
