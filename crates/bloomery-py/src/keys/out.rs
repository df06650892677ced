//! The answers of batch queries: NumPy arrays shaped like the input when NumPy is there,
//! lists otherwise.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyList, PyType};

/// `numpy.ndarray`, when NumPy has been imported by the program (a NumPy array cannot exist
/// otherwise; bloomery does not import NumPy to find out).
pub(super) fn ndarray_type(py: Python<'_>) -> PyResult<Option<&'static Py<PyType>>> {
    static ND: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    if let Some(t) = ND.get(py) {
        return Ok(Some(t));
    }
    let modules = py.import("sys")?.getattr("modules")?;
    let Some(np) = modules.get_item("numpy").ok().filter(|m| !m.is_none()) else {
        return Ok(None);
    };
    let t = np.getattr("ndarray")?.cast_into::<PyType>()?.unbind();
    Ok(Some(ND.get_or_init(py, || t)))
}

/// NumPy, if it can be imported (answers of batch queries are NumPy arrays then, lists
/// otherwise).
pub fn numpy(py: Python<'_>) -> Option<&Bound<'_, PyModule>> {
    static NP: PyOnceLock<Option<Py<PyModule>>> = PyOnceLock::new();
    NP.get_or_init(py, || py.import("numpy").ok().map(Bound::unbind))
        .as_ref()
        .map(|m| m.bind(py))
}

/// One answer per key as a NumPy bool array shaped like the input (a list without NumPy).
pub fn bools_out(
    py: Python<'_>,
    answers: Vec<bool>,
    shape: Option<&Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    match numpy(py) {
        Some(np) => {
            // SAFETY: bool is one byte holding 0 or 1, NumPy's bool_ layout.
            let bytes: &[u8] =
                unsafe { std::slice::from_raw_parts(answers.as_ptr().cast::<u8>(), answers.len()) };
            let buf = PyByteArray::new(py, bytes);
            let arr = np.call_method1("frombuffer", (buf, np.getattr("bool_")?))?;
            reshape(arr, shape)
        }
        None => Ok(pyo3::types::PyList::new(py, answers)?.into_any().unbind()),
    }
}

/// The answer buffer of a batch query, allocated before the work: with NumPy, the memory of a
/// fresh `numpy.empty(n, bool)` array that the answers are written into directly (no
/// intermediate vector, no copy); without NumPy, a vector turned into a list at the end.
pub struct BoolsOut {
    /// The NumPy array that owns `ptr`'s memory (`None` without NumPy).
    arr: Option<Py<PyAny>>,
    ptr: *mut bool,
    vec: Vec<bool>,
    len: usize,
}

impl BoolsOut {
    /// A buffer of `len` answers.
    pub fn new(py: Python<'_>, len: usize) -> PyResult<Self> {
        let Some(np) = numpy(py) else {
            return Ok(Self {
                arr: None,
                ptr: std::ptr::null_mut(),
                vec: vec![false; len],
                len,
            });
        };
        let arr = np.call_method1(
            pyo3::intern!(py, "empty"),
            (len, np.getattr(pyo3::intern!(py, "bool_"))?),
        )?;
        let iface = arr.getattr(pyo3::intern!(py, "__array_interface__"))?;
        let (addr, _read_only): (usize, bool) = iface.get_item("data")?.extract()?;
        let ptr = if len == 0 {
            std::ptr::NonNull::<bool>::dangling().as_ptr()
        } else {
            addr as *mut bool
        };
        Ok(Self {
            arr: Some(arr.unbind()),
            ptr,
            vec: Vec::new(),
            len,
        })
    }

    /// The answers' slots, to fill (any thread; the GIL may be released).
    pub fn as_mut_slice(&mut self) -> &mut [bool] {
        match self.arr {
            // SAFETY: `ptr` is the data of the 1-D, C-contiguous, writable `len`-byte array
            // `numpy.empty(len, bool)` made, kept alive by `arr`; no other Python code has seen
            // that array yet, so this is the only reference to its memory. Every byte is
            // written (0 or 1, NumPy's bool_ layout) before the array is returned; until then
            // the uninitialised bytes are only overwritten, never read, and `bool` writes do
            // not read the old value.
            Some(_) => unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) },
            None => &mut self.vec,
        }
    }

    /// The answers as a NumPy bool array shaped like the input (a list without NumPy).
    pub fn finish(self, py: Python<'_>, shape: Option<&Py<PyAny>>) -> PyResult<Py<PyAny>> {
        match self.arr {
            Some(arr) => reshape(arr.into_bound(py), shape),
            None => Ok(PyList::new(py, self.vec)?.into_any().unbind()),
        }
    }
}

/// One count per key as a NumPy uint64 array shaped like the input (a list without NumPy).
pub fn counts_out(
    py: Python<'_>,
    counts: Vec<u64>,
    shape: Option<&Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    match numpy(py) {
        Some(np) => {
            let bytes: Vec<u8> = counts.iter().flat_map(|c| c.to_ne_bytes()).collect();
            let buf = PyByteArray::new(py, &bytes);
            let arr = np.call_method1("frombuffer", (buf, np.getattr("uint64")?))?;
            reshape(arr, shape)
        }
        None => Ok(pyo3::types::PyList::new(py, counts)?.into_any().unbind()),
    }
}

fn reshape(arr: Bound<'_, PyAny>, shape: Option<&Py<PyAny>>) -> PyResult<Py<PyAny>> {
    Ok(match shape {
        Some(s) => arr.call_method1("reshape", (s.bind(arr.py()),))?.unbind(),
        None => arr.unbind(),
    })
}
