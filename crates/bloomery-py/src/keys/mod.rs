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

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView};

use crate::raw::{push_i64, push_u64};

mod batch;
mod hashes;
mod out;

pub use batch::{is_array, not_one_key, with_index, Batch};
pub use hashes::{hash_objects, Hashes};
pub use out::{bools_out, counts_out, BoolsOut};

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
