//! What the classes over one library type share: files, bytes, pickling, copies and
//! equality ([`typed_class!`]), over the [`Structure`] trait.

use std::path::Path;

use bloomery::{
    AgePartitionedBloomFilter, AnyCounter, CountMinSketch, CuckooFilter, Hashed, KeyHasher,
    Persist, TDigest, TimeWindowFilter, TopK, XorFilter,
};
use pyo3::prelude::*;

use crate::keys::{bools_out, Hashes};
use crate::lock::Shared;

/// A library structure a Python class holds.
pub trait Structure: Clone + Send + Sync + Sized + 'static {
    fn load_file(path: &Path) -> bloomery::Result<Self>;
    fn decode(bytes: &[u8]) -> bloomery::Result<Self>;
    fn encode(&self) -> Vec<u8>;
    fn save_file(&self, path: &Path) -> bloomery::Result<()>;
    fn same(&self, other: &Self) -> bool;
}

macro_rules! persist_structure {
    ($($t:ty),*) => {$(
        impl Structure for $t {
            fn load_file(path: &Path) -> bloomery::Result<Self> {
                <$t as Persist>::load(path)
            }
            fn decode(bytes: &[u8]) -> bloomery::Result<Self> {
                <$t as Persist>::from_bytes(bytes)
            }
            fn encode(&self) -> Vec<u8> {
                Persist::to_bytes(self)
            }
            fn save_file(&self, path: &Path) -> bloomery::Result<()> {
                Persist::save(self, path)
            }
            fn same(&self, other: &Self) -> bool {
                self == other
            }
        }
    )*};
}
persist_structure!(
    CountMinSketch,
    CuckooFilter,
    XorFilter,
    TopK,
    TDigest,
    AgePartitionedBloomFilter,
    TimeWindowFilter
);

impl Structure for AnyCounter {
    fn load_file(path: &Path) -> bloomery::Result<Self> {
        AnyCounter::load(path)
    }
    fn decode(bytes: &[u8]) -> bloomery::Result<Self> {
        AnyCounter::from_bytes(bytes)
    }
    fn encode(&self) -> Vec<u8> {
        self.to_bytes()
    }
    fn save_file(&self, path: &Path) -> bloomery::Result<()> {
        self.save(path)
    }
    /// The same file bytes: the same kind, shape, hasher, counters and item count.
    fn same(&self, other: &Self) -> bool {
        self.kind() == other.kind() && self.to_bytes() == other.to_bytes()
    }
}

/// A set over one library type that probes hashed keys: what [`contains_many`] needs.
pub trait HashedSet: Structure {
    fn key_hasher(&self) -> KeyHasher;
    fn contains_one(&self, h: Hashed) -> bool;
}

impl HashedSet for CuckooFilter {
    fn key_hasher(&self) -> KeyHasher {
        *self.hasher()
    }
    fn contains_one(&self, h: Hashed) -> bool {
        self.contains_hashed(h)
    }
}

impl HashedSet for AgePartitionedBloomFilter {
    fn key_hasher(&self) -> KeyHasher {
        *bloomery::Filter::hasher(self)
    }
    fn contains_one(&self, h: Hashed) -> bool {
        bloomery::Filter::contains_hashed(self, h)
    }
}

impl HashedSet for XorFilter {
    fn key_hasher(&self) -> KeyHasher {
        *self.hasher()
    }
    fn contains_one(&self, h: Hashed) -> bool {
        self.contains_hashed(h)
    }
}

/// `contains_many` of a class over a [`HashedSet`]: the keys hashed (a Python list with the
/// GIL held, arrays chunk by chunk without it) and probed with the GIL released; a NumPy bool
/// array shaped like the input (a list without NumPy).
pub fn contains_many<S: HashedSet>(
    f: &Shared<S>,
    py: Python<'_>,
    keys: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let h = f.read(py).key_hasher();
    let hashes = Hashes::new(keys, h)?;
    let g = f.read_detached(py);
    let out = py.detach(|| {
        let g = g;
        let mut out = vec![false; hashes.len()];
        hashes.chunks(h, |s, hs| {
            for (&x, o) in hs.iter().zip(&mut out[s..]) {
                *o = g.contains_one(x);
            }
            Ok(())
        })?;
        PyResult::Ok(out)
    })?;
    bools_out(py, out, hashes.shape.as_ref())
}

/// The check of a class that takes every decoded value of its type.
pub fn any_value<S>(_: &S) -> PyResult<()> {
    Ok(())
}

/// Methods of a class `$T { f: Shared<$S> }` over one library structure; `$check` validates a
/// decoded structure (its kind; every value of the type when left out) and `$extra` adds the
/// constructor and the class's own methods.
macro_rules! typed_class {
    ($T:ident, $name:literal, $S:ty, { $($extra:tt)* }) => {
        $crate::typed::typed_class!($T, $name, $S, $crate::typed::any_value::<$S>, { $($extra)* });
    };
    ($T:ident, $name:literal, $S:ty, $check:expr, { $($extra:tt)* }) => {
        #[pymethods]
        impl $T {
            $($extra)*

            /// Save to a file in bloomery's format (atomically). The CLI, the Redis module and
            /// the Rust library read it.
            fn save(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
                use $crate::errors::IntoPy;
                let g = self.f.read_detached(py);
                py.detach(|| {
                    let g = g;
                    $crate::typed::Structure::save_file(&*g, &path).py_err_at(&path)
                })
            }

            /// Load a file, verifying its checksum: FormatError if it is damaged or holds
            /// another kind of structure, OSError if it cannot be read.
            #[classmethod]
            fn load(
                _cls: &Bound<'_, pyo3::types::PyType>,
                py: Python<'_>,
                path: std::path::PathBuf,
            ) -> PyResult<Self> {
                use $crate::errors::IntoPy;
                let s: $S = py.detach(|| {
                    <$S as $crate::typed::Structure>::load_file(&path).py_err_at(&path)
                })?;
                let check: fn(&$S) -> PyResult<()> = $check;
                check(&s)?;
                Ok(Self::wrap(s))
            }

            /// The file format as bytes (what save() writes).
            fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
                let g = self.f.read_detached(py);
                let b = py.detach(|| {
                    let g = g;
                    $crate::typed::Structure::encode(&*g)
                });
                pyo3::types::PyBytes::new(py, &b)
            }

            /// Decode the file format from a bytes-like object (e.g. the reply of the Redis
            /// module's BLOOMERY.DUMP), verifying its checksum.
            #[classmethod]
            fn from_bytes(
                _cls: &Bound<'_, pyo3::types::PyType>,
                py: Python<'_>,
                data: &Bound<'_, PyAny>,
            ) -> PyResult<Self> {
                use $crate::errors::IntoPy;
                let bytes = $crate::sets::bytes_arg(data)?;
                let s: $S = py.detach(|| <$S as $crate::typed::Structure>::decode(&bytes).py_err())?;
                let check: fn(&$S) -> PyResult<()> = $check;
                check(&s)?;
                Ok(Self::wrap(s))
            }

            fn __reduce__<'py>(
                slf: &Bound<'py, Self>,
            ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, pyo3::types::PyBytes>,))> {
                let ctor = slf.get_type().getattr("from_bytes")?;
                Ok((ctor, (slf.get().to_bytes(slf.py()),)))
            }

            /// A copy.
            fn copy(&self, py: Python<'_>) -> Self {
                Self::wrap(self.f.read(py).clone())
            }

            fn __copy__(&self, py: Python<'_>) -> Self {
                self.copy(py)
            }

            fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> Self {
                self.copy(py)
            }

            fn __eq__(&self, py: Python<'_>, other: PyRef<'_, Self>) -> bool {
                if std::ptr::eq(self, &*other) {
                    return true;
                }
                $crate::typed::Structure::same(&*self.f.read(py), &*other.f.read(py))
            }

            fn __ne__(&self, py: Python<'_>, other: PyRef<'_, Self>) -> bool {
                !self.__eq__(py, other)
            }

            #[classattr]
            const __hash__: Option<Py<PyAny>> = None;
        }

        impl $T {
            fn wrap(s: $S) -> Self {
                Self {
                    f: $crate::lock::Shared::new(s),
                }
            }
        }
    };
}
pub(crate) use typed_class;
