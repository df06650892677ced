//! Many keys located while the GIL is held and read without it ([`Batch`]): lists, tuples
//! and other iterables, NumPy arrays (chunk by chunk) and Arrow arrays.

use std::ops::Range;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyTuple};

use super::out::ndarray_type;
use super::{key_bytes, Found, CHUNK};
use crate::arrow::ArrowKeys;
use crate::raw::{arena_keys, push_i64, push_u64, RawKey};

/// The element type of a fixed-width NumPy array.
#[derive(Clone, Copy, Debug)]
enum Fixed {
    Int { width: usize, signed: bool },
    Bytes { width: usize },
    Ucs4 { width: usize },
}

/// Many keys, located while the GIL was held, readable without it.
pub struct Batch {
    src: Source,
    /// A NumPy input's shape, for answers shaped like the input.
    pub shape: Option<Py<PyAny>>,
}

enum Source {
    /// Python objects: the keys point into `owner`'s items (immutable str and bytes objects)
    /// or into `arena` (converted keys), neither of which changes while the batch lives.
    Objects {
        keys: Vec<RawKey>,
        _arena: Vec<u8>,
        _owner: Py<PyAny>,
    },
    /// A NumPy array's bytes (a copy made by `tobytes()`, owned by `owner`).
    Fixed {
        data: RawKey,
        n: usize,
        kind: Fixed,
        big_endian: bool,
        _owner: Py<PyAny>,
    },
    Arrow(ArrowKeys),
}

// SAFETY: the raw pointers in a Batch point into memory it owns (an arena) or keeps alive
// through owned references (`Py` handles to immutable str/bytes objects, Arrow capsules), which
// nothing mutates while the batch exists; the batch only reads through them. `Py` handles are
// themselves Send and Sync, and the batch is dropped with the GIL held.
unsafe impl Send for Batch {}
// SAFETY: as above: shared access only reads immutable memory.
unsafe impl Sync for Batch {}

impl Batch {
    /// Collect the keys of `obj` (see the module docs for what it may be).
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        not_one_key(obj)?;
        if let Some(b) = Self::array(obj)? {
            return Ok(b);
        }
        let tuple = if obj.is_exact_instance_of::<PyTuple>() {
            obj.clone()
        } else {
            // A tuple holds a reference to every key for as long as the batch lives, whatever
            // another thread does to a list meanwhile; for generators and sets it is the
            // materialised sequence.
            // SAFETY: a valid object and the GIL; a new reference or NULL with an exception.
            let t = unsafe { ffi::PySequence_Tuple(obj.as_ptr()) };
            if t.is_null() {
                return Err(not_iterable(PyErr::fetch(py), py));
            }
            // SAFETY: `t` is a new, owned reference.
            unsafe { Bound::from_owned_ptr(py, t) }
        };
        Self::objects(tuple)
    }

    /// The keys of a NumPy or Arrow array, `None` for other objects.
    pub(super) fn array(obj: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        if let Some(b) = Self::numpy(obj)? {
            return Ok(Some(b));
        }
        Ok(ArrowKeys::new(obj)?.map(|a| Batch {
            src: Source::Arrow(a),
            shape: None,
        }))
    }

    fn objects(tuple: Bound<'_, PyAny>) -> PyResult<Self> {
        let t = tuple.cast::<PyTuple>()?;
        let n = t.len();
        let mut keys = Vec::with_capacity(n);
        let mut arena = Vec::new();
        // arena keys are recorded as (index, offset) and pointed at the arena once it stops
        // growing
        let mut fixups: Vec<(usize, usize)> = Vec::new();
        for (i, item) in t.iter_borrowed().enumerate() {
            let start = arena.len();
            match key_bytes(&item, &mut arena).map_err(|e| with_index(e, i))? {
                Found::Borrowed(b) => keys.push(RawKey::new(b)),
                Found::Written => {
                    fixups.push((i, start));
                    keys.push(RawKey {
                        ptr: std::ptr::null(),
                        len: arena.len() - start,
                    });
                }
            }
        }
        let base = arena.as_ptr();
        for (i, off) in fixups {
            // SAFETY: `off` is within the arena (it was its length before a push), which no
            // longer changes.
            keys[i].ptr = unsafe { base.add(off) };
        }
        Ok(Batch {
            src: Source::Objects {
                keys,
                _arena: arena,
                _owner: tuple.unbind(),
            },
            shape: None,
        })
    }

    fn numpy(obj: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        let py = obj.py();
        let Some(nd) = ndarray_type(py)? else {
            return Ok(None);
        };
        if !obj.is_instance(nd.bind(py))? {
            return Ok(None);
        }
        let dtype = obj.getattr(pyo3::intern!(py, "dtype"))?;
        let kind: String = dtype.getattr(pyo3::intern!(py, "kind"))?.extract()?;
        let width: usize = dtype.getattr(pyo3::intern!(py, "itemsize"))?.extract()?;
        let order: String = dtype.getattr(pyo3::intern!(py, "byteorder"))?.extract()?;
        let ndim: usize = obj.getattr(pyo3::intern!(py, "ndim"))?.extract()?;
        let shape = (ndim != 1).then(|| obj.getattr(pyo3::intern!(py, "shape")));
        let shape = match shape {
            Some(s) => Some(s?.unbind()),
            None => None,
        };
        let big_endian = order == ">" || (order == "=" && cfg!(target_endian = "big"));
        let fixed = match kind.as_str() {
            "i" | "u" if matches!(width, 1 | 2 | 4 | 8) => Fixed::Int {
                width,
                signed: kind == "i",
            },
            "S" => Fixed::Bytes { width },
            "U" => Fixed::Ucs4 { width },
            "O" => {
                let flat = obj.call_method0(pyo3::intern!(py, "ravel"))?;
                let items = flat.call_method0(pyo3::intern!(py, "tolist"))?;
                let mut b = Self::objects(items.cast_into::<PyList>()?.to_tuple().into_any())?;
                b.shape = shape;
                return Ok(Some(b));
            }
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "NumPy arrays of dtype {} are not keys: bloomery takes integer (decimal \
                     text), bytes (S), str (U) or object arrays; convert explicitly, e.g. \
                     arr.astype(str)",
                    dtype.str()?
                )))
            }
        };
        // C-order copy of the elements: the array may change while the GIL is released.
        let bytes = obj.call_method0(pyo3::intern!(py, "tobytes"))?;
        let data = RawKey::new(bytes.cast::<PyBytes>()?.as_bytes());
        let n: usize = obj.getattr(pyo3::intern!(py, "size"))?.extract()?;
        Ok(Some(Batch {
            src: Source::Fixed {
                data,
                n,
                kind: fixed,
                big_endian,
                _owner: bytes.unbind(),
            },
            shape,
        }))
    }

    /// The Arrow input, when the keys are an Arrow array or stream.
    pub fn arrow(&self) -> Option<&ArrowKeys> {
        match &self.src {
            Source::Arrow(a) => Some(a),
            _ => None,
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        match &self.src {
            Source::Objects { keys, .. } => keys.len(),
            Source::Fixed { n, .. } => *n,
            Source::Arrow(a) => a.len(),
        }
    }

    /// Hand the keys to `f` in order, in chunks (`f(start, keys)`, `start` the index of the
    /// first key of the chunk). Runs without the GIL. Stops at the first error.
    pub fn chunks(&self, f: impl FnMut(usize, &[RawKey]) -> PyResult<()>) -> PyResult<()> {
        self.chunks_in(0..self.len(), f)
    }

    /// [`Batch::chunks`] for the keys with indices in `range` only (`start` stays the index
    /// in the whole batch), so that parts of a batch can be handled on different threads.
    pub fn chunks_in(
        &self,
        range: Range<usize>,
        mut f: impl FnMut(usize, &[RawKey]) -> PyResult<()>,
    ) -> PyResult<()> {
        let range = range.start.min(self.len())..range.end.min(self.len());
        match &self.src {
            Source::Objects { keys, .. } => {
                for (i, c) in keys[range.clone()].chunks(CHUNK).enumerate() {
                    f(range.start + i * CHUNK, c)?;
                }
                Ok(())
            }
            Source::Fixed {
                data,
                kind,
                big_endian,
                ..
            } => fixed_chunks(data.bytes(), range, *kind, *big_endian, f),
            Source::Arrow(a) => a.chunks_in(range, f),
        }
    }
}

/// True for a NumPy or Arrow array (or stream), whose keys are read without the GIL; false
/// for lists, tuples and other iterables of Python objects.
pub fn is_array(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = obj.py();
    if let Some(nd) = ndarray_type(py)? {
        if obj.is_instance(nd.bind(py))? {
            return Ok(true);
        }
    }
    Ok(obj.hasattr(pyo3::intern!(py, "__arrow_c_array__"))?
        || obj.hasattr(pyo3::intern!(py, "__arrow_c_stream__"))?)
}

/// Refuse a single str or bytes where an iterable of keys is expected (iterating it would
/// split it into characters).
pub fn not_one_key(obj: &Bound<'_, PyAny>) -> PyResult<()> {
    if obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyByteArray>()
    {
        return Err(PyTypeError::new_err(
            "batch methods take an iterable of keys, not one str or bytes (which would be \
             split into characters): use the single-key method, or wrap it in a list",
        ));
    }
    Ok(())
}

pub(super) fn not_iterable(e: PyErr, py: Python<'_>) -> PyErr {
    if e.is_instance_of::<PyTypeError>(py) {
        PyTypeError::new_err(format!(
            "expected an iterable of keys, a NumPy array or an Arrow array: {e}"
        ))
    } else {
        e
    }
}

/// The same exception, its message prefixed with the index of the key that caused it.
pub fn with_index(e: PyErr, i: usize) -> PyErr {
    Python::attach(|py| {
        let msg = format!("key {i}: {}", e.value(py));
        let new = PyErr::from_type(e.get_type(py), msg);
        new.set_cause(py, Some(e));
        new
    })
}

/// Decode a NumPy array's elements chunk by chunk.
fn fixed_chunks(
    data: &[u8],
    range: Range<usize>,
    kind: Fixed,
    big_endian: bool,
    mut f: impl FnMut(usize, &[RawKey]) -> PyResult<()>,
) -> PyResult<()> {
    let mut arena: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::with_capacity(CHUNK.min(range.len()));
    let mut keys: Vec<RawKey> = Vec::with_capacity(CHUNK.min(range.len()));
    let mut start = range.start;
    while start < range.end {
        let end = (start + CHUNK).min(range.end);
        keys.clear();
        match kind {
            Fixed::Bytes { width } => {
                for i in start..end {
                    let e = &data[i * width..(i + 1) * width];
                    let len = e.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                    keys.push(RawKey::new(&e[..len]));
                }
            }
            Fixed::Int { width, signed } => {
                arena.clear();
                ends.clear();
                for i in start..end {
                    let e = &data[i * width..(i + 1) * width];
                    let mut b = [0u8; 8];
                    if big_endian {
                        b[8 - width..].copy_from_slice(e);
                        b.reverse();
                    } else {
                        b[..width].copy_from_slice(e);
                    }
                    let u = u64::from_le_bytes(b);
                    if signed {
                        // sign-extend from `width` bytes
                        let shift = 64 - 8 * width as u32;
                        push_i64(((u << shift) as i64) >> shift, &mut arena);
                    } else {
                        push_u64(u, &mut arena);
                    }
                    ends.push(arena.len());
                }
                arena_keys(&arena, &ends, &mut keys);
            }
            Fixed::Ucs4 { width } => {
                arena.clear();
                ends.clear();
                for i in start..end {
                    let e = &data[i * width..(i + 1) * width];
                    let code = |c: &[u8]| {
                        let a = [c[0], c[1], c[2], c[3]];
                        if big_endian {
                            u32::from_be_bytes(a)
                        } else {
                            u32::from_le_bytes(a)
                        }
                    };
                    // NumPy drops trailing NULs of U elements
                    let used = e
                        .chunks_exact(4)
                        .rposition(|c| code(c) != 0)
                        .map_or(0, |p| p + 1);
                    for c in e.chunks_exact(4).take(used).map(code) {
                        let ch = char::from_u32(c).ok_or_else(|| {
                            PyValueError::new_err(format!(
                                "element {i} of the array is not valid Unicode (code point \
                                 {c:#x}): it has no UTF-8 form"
                            ))
                        })?;
                        let mut tmp = [0u8; 4];
                        arena.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                    }
                    ends.push(arena.len());
                }
                arena_keys(&arena, &ends, &mut keys);
            }
        }
        f(start, &keys)?;
        start = end;
    }
    Ok(())
}
