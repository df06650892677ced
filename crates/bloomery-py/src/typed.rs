//! What the classes over one library type share: files, bytes, pickling, copies and
//! equality ([`typed_class!`]), over the [`Structure`] trait.

use std::path::Path;

use bloomery::{
    AgePartitionedBloomFilter, AnyCounter, CountMinSketch, CuckooFilter, Persist, TDigest,
    TimeWindowFilter, TopK, XorFilter,
};

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

/// Methods of a class `$T { f: Shared<$S> }` over one library structure; `$check` validates a
/// decoded structure (its kind) and `$extra` adds the constructor and the class's own
/// methods.
macro_rules! typed_class {
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
