//! `CountingBloomFilter`: the counting family's filters with deletion, over the library's
//! `AnyCounter` (counting, blocked counting, d-left counting and spectral filters; files of
//! the iterative and space-code filters load into it too, without deletion).

use bloomery::builders::SpectralMethod;
use bloomery::kinds::KindOptions;
use bloomery::{AnyCounter, Kind, RemoveError, Sizing, Spec};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::common::{count_arg, hasher, human_bytes};
use crate::errors::{to_py_key, FormatError, IntoPy};
use crate::keys::{self, bools_out, counts_out, Hashes};
use crate::lock::Shared;
use crate::typed::typed_class;

/// A Bloom filter with counters instead of bits: keys can be removed, and count(key) estimates
/// how many times a key was added (never below the truth unless a counter saturated).
///
/// CountingBloomFilter(capacity, fpr=0.01, *, kind="counting", counter_bits=None,
/// method=None, seed=None, keyed=False)
///
/// kind: "counting" (the classic counting filter, 4-bit counters by default),
/// "blocked-counting" (a key's counters in one cache line: faster, about 14% more memory),
/// "dlcbf" (d-left counting: less memory) or "spectral" (method "ms", "mi" or "rm";
/// 16-bit counters). remove(key) raises KeyError when the key is certainly absent (removing
/// it would create false negatives), like set.remove; discard(key) does not.
#[pyclass(name = "CountingBloomFilter", module = "bloomery", frozen)]
pub struct PyCountingBloomFilter {
    f: Shared<AnyCounter>,
}

fn counting_kind(name: &str) -> PyResult<Kind> {
    Ok(match name {
        "counting" => Kind::Counting,
        "blocked-counting" | "blocked_counting" => Kind::BlockedCounting,
        "dlcbf" | "dleft" => Kind::DLeftCounting,
        "spectral" => Kind::Spectral,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown kind {other:?}: CountingBloomFilter kinds are \"counting\" (default), \
                 \"blocked-counting\", \"dlcbf\" and \"spectral\" (CountMinSketch is its own \
                 class)"
            )))
        }
    })
}

fn not_cms(c: &AnyCounter) -> PyResult<()> {
    if c.kind() == Kind::CountMin {
        return Err(FormatError::new_err(
            "wrong kind: this is a count-min sketch: load it with bloomery.CountMinSketch.load \
             or bloomery.load()",
        ));
    }
    Ok(())
}

fn remove_error(e: RemoveError, key: &Bound<'_, PyAny>) -> PyErr {
    match e {
        RemoveError::NotPresent => PyKeyError::new_err(key.clone().unbind()),
        other => PyTypeError::new_err(other.to_string()),
    }
}

typed_class!(
    PyCountingBloomFilter,
    "CountingBloomFilter",
    AnyCounter,
    not_cms,
    {
        #[new]
        #[pyo3(signature = (capacity, fpr = 0.01, *, kind = "counting", counter_bits = None, method = None, seed = None, keyed = false))]
        #[allow(clippy::too_many_arguments)]
        fn new(
            py: Python<'_>,
            capacity: &Bound<'_, PyAny>,
            fpr: f64,
            kind: &str,
            counter_bits: Option<u32>,
            method: Option<&str>,
            seed: Option<u64>,
            keyed: bool,
        ) -> PyResult<Self> {
            let kind = counting_kind(kind)?;
            let method = match method {
                None => None,
                Some("ms") => Some(SpectralMethod::MinimumSelection),
                Some("mi") => Some(SpectralMethod::MinimalIncrease),
                Some("rm") => Some(SpectralMethod::RecurringMinimum),
                Some(m) => {
                    return Err(PyValueError::new_err(format!(
                        "unknown spectral method {m:?}: \"ms\", \"mi\" or \"rm\""
                    )))
                }
            };
            let spec = Spec {
                kind,
                sizing: Sizing::default()
                    .capacity(count_arg(capacity, "capacity", false)?)
                    .fpr(fpr)
                    .hasher(hasher(seed, keyed)?),
                options: KindOptions {
                    counter_bits,
                    method,
                    ..KindOptions::default()
                },
            };
            let f = py.detach(|| AnyCounter::try_from_spec(&spec).py_err())?;
            Ok(Self::wrap(f))
        }

        /// Add one occurrence of a key.
        fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
            let k = keys::one(key)?;
            let mut g = self.f.write(py);
            let h = g.hasher().hash_bytes(k.bytes());
            g.insert_hashed(h).py_err()
        }

        /// Remove one occurrence of a key; KeyError (nothing changed) when the key is
        /// certainly absent, TypeError for a kind without deletion.
        fn remove(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
            let k = keys::one(key)?;
            let mut g = self.f.write(py);
            let h = g.hasher().hash_bytes(k.bytes());
            g.remove_hashed(h).map_err(|e| remove_error(e, key))
        }

        /// Remove one occurrence of a key if it may be present; returns whether it was
        /// removed (TypeError for a kind without deletion).
        fn discard(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
            let k = keys::one(key)?;
            let mut g = self.f.write(py);
            let h = g.hasher().hash_bytes(k.bytes());
            match g.remove_hashed(h) {
                Ok(()) => Ok(true),
                Err(RemoveError::NotPresent) => Ok(false),
                Err(e) => Err(PyTypeError::new_err(e.to_string())),
            }
        }

        /// Estimated number of occurrences of a key (0: certainly absent).
        fn count(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u64> {
            let k = keys::one(key)?;
            let g = self.f.read(py);
            Ok(g.count_hashed(g.hasher().hash_bytes(k.bytes())))
        }

        fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
            let k = keys::one(key)?;
            let g = self.f.read(py);
            Ok(g.contains_hashed(g.hasher().hash_bytes(k.bytes())))
        }

        /// Occurrences added minus occurrences removed.
        fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
            crate::common::len_out(self.f.read(py).len())
        }

        /// Add one occurrence of each key, with the GIL released (see BloomFilter.add_many
        /// for what `keys` may be).
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

        /// Remove one occurrence of each key that may be present, with the GIL released;
        /// returns how many were removed (keys certainly absent are skipped).
        fn remove_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<u64> {
            let h = *self.f.read(py).hasher();
            let hashes = Hashes::new(keys, h)?;
            let g = self.f.write_detached(py);
            py.detach(|| {
                let mut g = g;
                let mut removed = 0u64;
                hashes.chunks(h, |_, hs| {
                    for &x in hs {
                        match g.remove_hashed(x) {
                            Ok(()) => removed += 1,
                            Err(RemoveError::NotPresent) => {}
                            Err(e) => return Err(PyTypeError::new_err(e.to_string())),
                        }
                    }
                    Ok(())
                })?;
                Ok(removed)
            })
        }

        /// Query many keys with the GIL released: a NumPy bool array (a list without NumPy).
        fn contains_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
            let h = *self.f.read(py).hasher();
            let hashes = Hashes::new(keys, h)?;
            let g = self.f.read_detached(py);
            let out = py.detach(|| {
                let g = g;
                let mut out = vec![false; hashes.len()];
                hashes.chunks(h, |s, hs| {
                    for (&x, o) in hs.iter().zip(&mut out[s..]) {
                        *o = g.contains_hashed(x);
                    }
                    Ok(())
                })?;
                PyResult::Ok(out)
            })?;
            bools_out(py, out, hashes.shape.as_ref())
        }

        /// Estimated counts of many keys with the GIL released: a NumPy uint64 array (a list
        /// without NumPy).
        fn count_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
            let h = *self.f.read(py).hasher();
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

        /// The plain Bloom filter answering membership as this one does (same bits, hashes and
        /// seed; a bit set where a counter is non-zero): what to send to peers in the
        /// summary-cache protocol. Only the "counting" kind has one (ValueError otherwise).
        fn to_bloom_filter(&self, py: Python<'_>) -> PyResult<crate::sets::PyBloomFilter> {
            let f = self.f.read(py).to_plain_filter().py_err()?;
            Ok(crate::sets::PyBloomFilter(crate::sets::SetCore::new(f)))
        }

        /// The kind, as the CLI names it.
        #[getter]
        fn kind(&self, py: Python<'_>) -> &'static str {
            self.f.read(py).kind().name()
        }

        /// The capacity it was sized for.
        #[getter]
        fn capacity(&self, py: Python<'_>) -> u64 {
            self.f.read(py).info().capacity
        }

        /// The false-positive rate it was sized for (None when built from a shape).
        #[getter]
        fn fpr(&self, py: Python<'_>) -> Option<f64> {
            self.f.read(py).info().target_fpr
        }

        /// The false-positive rate implied by its contents now (None for kinds without one).
        #[getter]
        fn current_fpr(&self, py: Python<'_>) -> Option<f64> {
            self.f.read(py).info().current_fpr
        }

        /// Bytes of the file format.
        #[getter]
        fn nbytes(&self, py: Python<'_>) -> u64 {
            self.f.read(py).info().bytes
        }

        /// Remove every key.
        fn clear(&self, py: Python<'_>) -> PyResult<()> {
            let mut g = self.f.write(py);
            match &mut *g {
                AnyCounter::Counting(f) => f.clear(),
                AnyCounter::BlockedCounting(f) => f.clear(),
                AnyCounter::Spectral(f) => f.clear(),
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "clear() is not available for {} filters: make a new one",
                        other.kind().name()
                    )))
                }
            }
            Ok(())
        }

        /// Everything `bloomery info --json` reports, as a dict.
        fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
            let i = self.f.read(py).info();
            let d = PyDict::new(py);
            d.set_item("kind", i.kind)?;
            d.set_item("items", i.items)?;
            d.set_item("bytes", i.bytes)?;
            d.set_item("bits_per_item", i.bits_per_item)?;
            d.set_item("capacity", i.capacity)?;
            d.set_item("removable", i.removable)?;
            d.set_item("saturated_counters", i.saturated_counters)?;
            d.set_item("counter_bits", i.counter_bits)?;
            d.set_item("hashes", i.hashes)?;
            d.set_item("size", i.size)?;
            d.set_item("method", i.method)?;
            d.set_item("occupied_cells", i.occupied_cells)?;
            d.set_item("target_fpr", i.target_fpr)?;
            d.set_item("current_fpr", i.current_fpr)?;
            d.set_item("distinctness", i.distinctness)?;
            d.set_item("groups", i.groups)?;
            Ok(d)
        }

        fn __repr__(&self, py: Python<'_>) -> String {
            let i = self.f.read(py).info();
            format!(
                "<bloomery.CountingBloomFilter kind={} capacity={} fpr={} items={} size={}>",
                i.kind,
                i.capacity,
                i.target_fpr.map_or("None".into(), |p| p.to_string()),
                i.items,
                human_bytes(i.bytes)
            )
        }
    }
);
