//! Python objects → key bytes: the one mapping every class uses, chosen so that a key hashes
//! to the same bits as the same key given to the `bloomery` CLI (a text line) or to the Redis
//! module (an argument):
//!
//! | Python key | bytes hashed |
//! |---|---|
//! | `str` | its UTF-8 encoding (`"héllo"` → `b"h\xc3\xa9llo"`); lone surrogates raise `UnicodeEncodeError` |
//! | `bytes`, `bytearray`, `memoryview` | the bytes themselves |
//! | `int` (and integer types with `__index__`, e.g. NumPy's) | its decimal text in ASCII: `42` → `b"42"`, `-7` → `b"-7"` |
//! | anything else (`bool`, `float`, `None`, tuples, ...) | `TypeError`: never Python's `hash()`, which is randomised per process |
//!
//! So `42`, `"42"` and `b"42"` are the same key, as they are for `bloomery add` (which reads the
//! line `42`) and `BF.ADD key 42`. (The Rust library's `Key` impl for integers hashes their
//! little-endian bytes instead; Python ints have no fixed width, and text is what the CLI and
//! Redis see.)
//!
//! Batches ([`Batch`]) take a list, tuple or any iterable of such keys, NumPy arrays of integers
//! (`i`/`u` dtypes: decimal text, as above), fixed-width bytes (`S`, trailing NULs dropped as
//! NumPy does) or text (`U`, as UTF-8) or objects (`O`, each element as above), and Arrow
//! arrays (see [`crate::arrow`]). Their bytes are located while the GIL is held and then read
//! without it.

use std::ffi::c_char;
use std::ops::Range;

use bloomery::{Hashed, KeyHasher};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyMemoryView, PyString, PyTuple, PyType};

use crate::arrow::{ArrowKeys, PyFail};
use crate::raw::{arena_keys, push_i64, push_u64, RawKey};

#[cfg(not(windows))]
extern "C" {
    // Part of the limited API since CPython 3.10 and exported by every CPython 3 build; the
    // 3.9 limited API has no way to read a str's UTF-8 without copying it into a new bytes
    // object. On Linux and macOS an extension resolves it from the interpreter at load time.
    // Windows links against python3.dll, whose 3.9 build does not export it: there the key is
    // encoded through PyUnicode_AsUTF8String (a copy) instead.
    fn PyUnicode_AsUTF8AndSize(o: *mut ffi::PyObject, size: *mut ffi::Py_ssize_t) -> *const c_char;
}

/// Keys handled per chunk by batch operations over NumPy and Arrow inputs (bounds the memory
/// of decoded keys).
pub const CHUNK: usize = 1 << 16;

/// Where a key's bytes are: borrowed from the Python object, or written into a buffer.
pub enum Found<'a> {
    /// The object's own bytes (an immutable `str` or `bytes`), valid while it lives.
    Borrowed(&'a [u8]),
    /// Appended to the caller's buffer.
    Written,
}

/// The UTF-8 bytes of a `str` (borrowed where the platform allows; see the extern above).
#[inline(always)]
fn str_bytes<'a>(s: &'a Bound<'_, PyAny>, _buf: &mut Vec<u8>) -> PyResult<Found<'a>> {
    #[cfg(not(windows))]
    {
        let mut size: ffi::Py_ssize_t = 0;
        // SAFETY: `s` is a str (checked by the caller) and we hold the GIL. The returned
        // buffer belongs to the str object (its UTF-8 form, kept with it), which is immutable
        // and outlives the borrow `'a` of `s`.
        let p = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut size) };
        if p.is_null() {
            return Err(PyErr::fetch(s.py()));
        }
        // SAFETY: CPython guarantees `size` bytes at `p` (see above).
        Ok(Found::Borrowed(unsafe {
            std::slice::from_raw_parts(p.cast::<u8>(), size as usize)
        }))
    }
    #[cfg(windows)]
    {
        let b = s.cast::<PyString>()?.encode_utf8()?;
        _buf.extend_from_slice(b.as_bytes());
        Ok(Found::Written)
    }
}

/// Append the decimal text of an `int` (exact or subclass, not `bool`).
fn int_text(i: &Bound<'_, PyAny>, buf: &mut Vec<u8>) -> PyResult<()> {
    if let Ok(v) = i.extract::<i64>() {
        push_i64(v, buf);
    } else if let Ok(v) = i.extract::<u64>() {
        push_u64(v, buf);
    } else {
        // Beyond 64 bits: Python's own decimal conversion (exact, any size up to
        // sys.get_int_max_str_digits()).
        let s = i.py().get_type::<pyo3::types::PyInt>().call1((i,))?.str()?;
        buf.extend_from_slice(s.to_cow()?.as_bytes());
    }
    Ok(())
}

fn type_error(obj: &Bound<'_, PyAny>) -> PyErr {
    let name = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "this type".into());
    PyTypeError::new_err(format!(
        "bloomery keys are str, bytes, bytearray, memoryview or int, not {name}: convert the \
         value explicitly (str(x), x.hex(), struct.pack(...)). Python's hash() is randomised \
         per process, so bloomery never falls back to it."
    ))
}

/// Locate the bytes of one key: borrowed from `obj`, or appended to `buf`.
#[inline(always)]
pub fn key_bytes<'a>(obj: &'a Bound<'_, PyAny>, buf: &mut Vec<u8>) -> PyResult<Found<'a>> {
    let p = obj.as_ptr();
    // SAFETY: `p` is a valid object pointer (from a live `Bound`) and we hold the GIL.
    if unsafe { ffi::PyUnicode_CheckExact(p) } != 0 {
        return str_bytes(obj, buf);
    }
    // SAFETY: as above.
    if unsafe { ffi::PyBytes_CheckExact(p) } != 0 {
        return Ok(Found::Borrowed(obj.cast::<PyBytes>()?.as_bytes()));
    }
    key_bytes_slow(obj, buf)
}

#[inline(never)]
fn key_bytes_slow<'a>(obj: &'a Bound<'_, PyAny>, buf: &mut Vec<u8>) -> PyResult<Found<'a>> {
    let p = obj.as_ptr();
    // SAFETY: as in `key_bytes`.
    unsafe {
        if ffi::PyBool_Check(p) != 0 {
            return Err(type_error(obj));
        }
        if ffi::PyLong_Check(p) != 0 {
            int_text(obj, buf)?;
            return Ok(Found::Written);
        }
        if ffi::PyUnicode_Check(p) != 0 {
            return str_bytes(obj, buf);
        }
        if ffi::PyBytes_Check(p) != 0 {
            return Ok(Found::Borrowed(obj.cast::<PyBytes>()?.as_bytes()));
        }
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        // copied: a bytearray can change while a batch runs without the GIL
        buf.extend_from_slice(&b.to_vec());
        return Ok(Found::Written);
    }
    if obj.is_instance_of::<PyMemoryView>() {
        let b = obj.call_method0(pyo3::intern!(obj.py(), "tobytes"))?;
        buf.extend_from_slice(b.cast::<PyBytes>()?.as_bytes());
        return Ok(Found::Written);
    }
    // Other integer types (NumPy's int64 scalars, ...) through __index__; never a bool.
    if !is_bool_like(obj) {
        // SAFETY: a valid object and the GIL; a new reference or NULL with an exception set.
        let idx = unsafe { ffi::PyNumber_Index(obj.as_ptr()) };
        if !idx.is_null() {
            // SAFETY: `idx` is a new, owned reference to an int.
            let i = unsafe { Bound::from_owned_ptr(obj.py(), idx) };
            int_text(&i, buf)?;
            return Ok(Found::Written);
        }
        drop(PyErr::take(obj.py()));
    }
    Err(type_error(obj))
}

/// `bool` or NumPy's `bool_`: refused as keys (True would otherwise be the key `1`).
fn is_bool_like(obj: &Bound<'_, PyAny>) -> bool {
    let t = obj.get_type();
    let name = t.name().map(|n| n.to_string()).unwrap_or_default();
    (name == "bool_" || name == "bool")
        && t.module()
            .map(|m| m.to_string().starts_with("numpy"))
            .unwrap_or(false)
}

/// One key's bytes, for the per-key methods.
pub struct OneKey<'a> {
    found: Found<'a>,
    buf: Vec<u8>,
}

impl OneKey<'_> {
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        match &self.found {
            Found::Borrowed(b) => b,
            Found::Written => &self.buf,
        }
    }
}

/// Extract one key (see the module docs for the mapping).
#[inline(always)]
pub fn one<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<OneKey<'a>> {
    let mut buf = Vec::new();
    let found = key_bytes(obj, &mut buf)?;
    Ok(OneKey { found, buf })
}

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
    fn array(obj: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
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

fn not_iterable(e: PyErr, py: Python<'_>) -> PyErr {
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

/// Many keys, hashed with one hasher.
///
/// Keys in Python objects (a list, tuple or any iterable) are read and hashed in one pass
/// while the GIL is held: each object is touched once (a cache miss each, for keys scattered
/// over the heap), and no reference needs keeping for later. NumPy and Arrow arrays are
/// hashed later, chunk by chunk, without the GIL. Either way the structure's work (probes,
/// inserts) runs without the GIL.
pub struct Hashes {
    src: HashSrc,
    /// A NumPy input's shape, for answers shaped like the input.
    pub shape: Option<Py<PyAny>>,
}

enum HashSrc {
    Ready(Vec<Hashed>),
    Keys(Batch),
}

impl Hashes {
    /// The hashes of the keys of `obj` under `h` (see [`Batch::new`] for what it may be).
    pub fn new(obj: &Bound<'_, PyAny>, h: KeyHasher) -> PyResult<Self> {
        not_one_key(obj)?;
        if let Some(mut b) = Batch::array(obj)? {
            let shape = b.shape.take();
            return Ok(Hashes {
                src: HashSrc::Keys(b),
                shape,
            });
        }
        let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
        hash_objects(obj, h, |x| {
            out.push(x);
            Ok(())
        })?;
        Ok(Hashes {
            src: HashSrc::Ready(out),
            shape: None,
        })
    }

    /// The keys themselves when they are not hashed yet (NumPy and Arrow inputs), for
    /// callers whose structure hashes and probes in one pipeline.
    pub fn unhashed(&self) -> Option<&Batch> {
        match &self.src {
            HashSrc::Keys(b) => Some(b),
            HashSrc::Ready(_) => None,
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        match &self.src {
            HashSrc::Ready(v) => v.len(),
            HashSrc::Keys(b) => b.len(),
        }
    }

    /// Hand the hashes to `f` in order, in chunks (`f(start, hashes)`); `h` must be the
    /// hasher given to [`Hashes::new`]. Runs without the GIL; stops at the first error.
    pub fn chunks(
        &self,
        h: KeyHasher,
        f: impl FnMut(usize, &[Hashed]) -> PyResult<()>,
    ) -> PyResult<()> {
        self.chunks_in(h, 0..self.len(), f)
    }

    /// [`Hashes::chunks`] for the keys with indices in `range` only (see [`Batch::chunks_in`]).
    pub fn chunks_in(
        &self,
        h: KeyHasher,
        range: Range<usize>,
        mut f: impl FnMut(usize, &[Hashed]) -> PyResult<()>,
    ) -> PyResult<()> {
        match &self.src {
            HashSrc::Ready(v) => {
                let range = range.start.min(v.len())..range.end.min(v.len());
                for (i, c) in v[range.clone()].chunks(CHUNK).enumerate() {
                    f(range.start + i * CHUNK, c)?;
                }
                Ok(())
            }
            HashSrc::Keys(b) => {
                if let Some(views) = b.arrow().map(ArrowKeys::binary).transpose()?.flatten() {
                    // string and binary arrays: hashed straight from Arrow's buffers (nulls
                    // were refused by `ArrowKeys::new`)
                    return crate::arrow::views_in(&views, range, |start, v| {
                        v.hash_chunks(&h, |s, hs| f(start + s, hs).map_err(PyFail))
                            .map_err(|PyFail(e)| e)
                    });
                }
                let mut hs = Vec::with_capacity(CHUNK.min(range.len()));
                b.chunks_in(range, |start, ks| {
                    hs.clear();
                    hs.extend(ks.iter().map(|k| h.hash_bytes(k.bytes())));
                    f(start, &hs)
                })
            }
        }
    }
}

/// Read and hash the keys of a list, tuple or other iterable (not an array) in order with the
/// GIL held, each object touched once, handing each key's hash to `sink` (which may release
/// the GIL: a list is read by index, its length checked again at each step, so another thread
/// changing it meanwhile changes which keys are read, never what memory is). Errors name the
/// key's index.
pub fn hash_objects(
    obj: &Bound<'_, PyAny>,
    h: KeyHasher,
    mut sink: impl FnMut(Hashed) -> PyResult<()>,
) -> PyResult<()> {
    let mut buf = Vec::new();
    let mut n = 0;
    let mut one = |item: &Bound<'_, PyAny>| -> PyResult<()> {
        buf.clear();
        let hashed = match key_bytes(item, &mut buf).map_err(|e| with_index(e, n))? {
            Found::Borrowed(b) => h.hash_bytes(b),
            Found::Written => h.hash_bytes(&buf),
        };
        n += 1;
        // the key's object is not used after this point: `sink` may release the GIL
        sink(hashed)
    };
    if let Ok(l) = obj.cast_exact::<PyList>() {
        let (py, lp) = (obj.py(), l.as_ptr());
        let mut i = 0;
        // the length read again at each step: Python code run for a key (an __index__)
        // may change the list
        // SAFETY: `lp` is a list and we hold the GIL.
        while (i as ffi::Py_ssize_t) < unsafe { ffi::PyList_Size(lp) } {
            // SAFETY: `i` is within the list (checked just above, nothing ran since); a
            // borrowed reference, valid as long as no Python code runs (only Python code
            // can take the item out of the list and free it).
            let item = unsafe { pyo3::Borrowed::from_ptr(py, ffi::PyList_GetItem(lp, i as _)) };
            let p = item.as_ptr();
            // SAFETY: type checks of a valid object with the GIL held.
            if unsafe { ffi::PyUnicode_CheckExact(p) != 0 || ffi::PyBytes_CheckExact(p) != 0 } {
                // exact str and bytes: read and hashed without running Python code, so
                // the borrowed reference stays valid throughout (no reference count
                // traffic per key)
                one(&item)?;
            } else {
                // anything else may run Python code (an __index__): an owned reference
                // keeps the object alive whatever that code does to the list
                one(&item.to_owned())?;
            }
            i += 1;
        }
    } else if let Ok(t) = obj.cast_exact::<PyTuple>() {
        for item in t.iter_borrowed() {
            one(&item)?;
        }
    } else {
        let it = obj.try_iter().map_err(|e| not_iterable(e, obj.py()))?;
        for item in it {
            one(&item?)?;
        }
    }
    Ok(())
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

/// `numpy.ndarray`, when NumPy has been imported by the program (a NumPy array cannot exist
/// otherwise; bloomery does not import NumPy to find out).
fn ndarray_type(py: Python<'_>) -> PyResult<Option<&'static Py<PyType>>> {
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
