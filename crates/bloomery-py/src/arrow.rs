//! Keys from Arrow arrays, read in place through the Arrow C data interface (the PyCapsule
//! protocol: `__arrow_c_array__` for arrays, `__arrow_c_stream__` for chunked arrays and other
//! streams; PyArrow 14 and later, Polars, nanoarrow, ...).
//!
//! String and binary arrays (`string`, `large_string`, `binary`, `large_binary`,
//! `string_view`, `binary_view`, `fixed_size_binary`) are hashed straight from Arrow's buffers,
//! without a copy. Integer arrays (8 to 64 bits, signed or not) are keys by their decimal text,
//! as Python ints are ([`crate::keys`]). Nulls are refused (`ValueError`) before any work, so a
//! batch with a null inserts nothing: drop them first, e.g. with `pyarrow.compute.drop_null`.
//! String and binary arrays with 32- or 64-bit offsets go to the library's
//! `bloomery::lines::ArrowBinaryKeys` ([`ArrowKeys::binary`]), which hashes and probes or inserts
//! them straight from the buffers; the other layouts are handed out as chunks of key views. Dictionary-encoded arrays are refused with a hint
//! (`.dictionary_decode()`), other types with a `TypeError`.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ops::Range;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;

use crate::raw::{arena_keys, push_i64, push_u64, RawKey};

/// Keys handed out per chunk: Arrow keys are views into the array's own buffers, so a chunk
/// costs 16 bytes a key; 4096 keys (64 KiB) stay in the L1/L2 caches next to the filter's
/// blocks, where a chunk of 65,536 keys (1 MiB) would evict part of a megabyte-sized filter
/// from L2 between writing the keys and probing them.
const ARROW_CHUNK: usize = 1 << 12;

/// `struct ArrowSchema` of the Arrow C data interface.
#[repr(C)]
struct FfiSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut FfiSchema,
    dictionary: *mut FfiSchema,
    release: Option<unsafe extern "C" fn(*mut FfiSchema)>,
    private_data: *mut c_void,
}

/// `struct ArrowArray` of the Arrow C data interface.
#[repr(C)]
struct FfiArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut FfiArray,
    dictionary: *mut FfiArray,
    release: Option<unsafe extern "C" fn(*mut FfiArray)>,
    private_data: *mut c_void,
}

/// `struct ArrowArrayStream` of the Arrow C stream interface.
#[repr(C)]
struct FfiStream {
    get_schema: Option<unsafe extern "C" fn(*mut FfiStream, *mut FfiSchema) -> c_int>,
    get_next: Option<unsafe extern "C" fn(*mut FfiStream, *mut FfiArray) -> c_int>,
    get_last_error: Option<unsafe extern "C" fn(*mut FfiStream) -> *const c_char>,
    release: Option<unsafe extern "C" fn(*mut FfiStream)>,
    private_data: *mut c_void,
}

impl FfiSchema {
    fn empty() -> Self {
        Self {
            format: std::ptr::null(),
            name: std::ptr::null(),
            metadata: std::ptr::null(),
            flags: 0,
            n_children: 0,
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }
}

impl FfiArray {
    fn empty() -> Self {
        Self {
            length: 0,
            null_count: 0,
            offset: 0,
            n_buffers: 0,
            n_children: 0,
            buffers: std::ptr::null_mut(),
            children: std::ptr::null_mut(),
            dictionary: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }
}

/// How an array's values are laid out.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// 32-bit offsets + data (`string`, `binary`).
    Offsets32,
    /// 64-bit offsets + data (`large_string`, `large_binary`).
    Offsets64,
    /// 16-byte views + variadic data buffers (`string_view`, `binary_view`).
    View,
    /// Fixed-size binary of this width.
    Fixed(usize),
    /// Integers of this many bytes.
    Int { width: usize, signed: bool },
}

/// One array (a chunk of the input) and its layout.
struct Chunk {
    array: *const FfiArray,
    layout: Layout,
}

/// The keys of an Arrow array or stream (see the module docs).
pub struct ArrowKeys {
    chunks: Vec<Chunk>,
    len: usize,
    /// Capsules owning the structs that `chunks` point into (released by their destructors).
    _capsules: Vec<Py<PyAny>>,
    /// Structs taken from a stream: ours to release. Boxed: `chunks` points into them, so
    /// they must not move when the vector grows.
    #[allow(clippy::vec_box)]
    owned_arrays: Vec<Box<FfiArray>>,
    owned_schema: Option<Box<FfiSchema>>,
}

impl Drop for ArrowKeys {
    fn drop(&mut self) {
        for a in &mut self.owned_arrays {
            if let Some(release) = a.release {
                // SAFETY: the stream moved this array to us; releasing it once is our duty
                // (the callback marks it released by clearing `release`).
                unsafe { release(&mut **a) };
            }
        }
        if let Some(s) = &mut self.owned_schema {
            if let Some(release) = s.release {
                // SAFETY: as above, for the schema the stream gave us.
                unsafe { release(&mut **s) };
            }
        }
    }
}

fn format_of(schema: &FfiSchema) -> PyResult<Layout> {
    if schema.format.is_null() {
        return Err(PyValueError::new_err("Arrow schema without a format"));
    }
    // SAFETY: the C data interface requires `format` to be a NUL-terminated string, valid
    // while the schema is not released (we hold it).
    let f = unsafe { CStr::from_ptr(schema.format) }.to_bytes();
    if !schema.dictionary.is_null() {
        return Err(PyTypeError::new_err(
            "dictionary-encoded Arrow arrays are not keys: decode them first \
             (arr.dictionary_decode())",
        ));
    }
    Ok(match f {
        b"u" | b"z" => Layout::Offsets32,
        b"U" | b"Z" => Layout::Offsets64,
        b"vu" | b"vz" => Layout::View,
        b"c" => Layout::Int {
            width: 1,
            signed: true,
        },
        b"C" => Layout::Int {
            width: 1,
            signed: false,
        },
        b"s" => Layout::Int {
            width: 2,
            signed: true,
        },
        b"S" => Layout::Int {
            width: 2,
            signed: false,
        },
        b"i" => Layout::Int {
            width: 4,
            signed: true,
        },
        b"I" => Layout::Int {
            width: 4,
            signed: false,
        },
        b"l" => Layout::Int {
            width: 8,
            signed: true,
        },
        b"L" => Layout::Int {
            width: 8,
            signed: false,
        },
        _ if f.starts_with(b"w:") => {
            let w = std::str::from_utf8(&f[2..])
                .ok()
                .and_then(|s| s.parse::<usize>().ok())
                .ok_or_else(|| PyValueError::new_err("bad fixed-size binary format"))?;
            Layout::Fixed(w)
        }
        _ => {
            return Err(PyTypeError::new_err(format!(
                "Arrow arrays of type '{}' are not keys: bloomery takes string, binary \
                 (plain, large, view, fixed-size) and integer arrays; pass one column of a \
                 table, and cast other types explicitly (e.g. arr.cast(pyarrow.string()))",
                String::from_utf8_lossy(f)
            )))
        }
    })
}

fn check_array(a: &FfiArray, layout: Layout) -> PyResult<()> {
    let want = match layout {
        Layout::Offsets32 | Layout::Offsets64 => 3,
        Layout::View => 3, // at least: validity, views, variadic sizes
        Layout::Fixed(_) | Layout::Int { .. } => 2,
    };
    let ok = match layout {
        Layout::View => a.n_buffers >= want,
        _ => a.n_buffers == want,
    };
    if !ok || a.length < 0 || a.offset < 0 || a.buffers.is_null() {
        return Err(PyValueError::new_err(format!(
            "malformed Arrow array: {} buffers, length {}, offset {}",
            a.n_buffers, a.length, a.offset
        )));
    }
    Ok(())
}

fn capsule_ptr(c: &Bound<'_, PyAny>, name: &CStr) -> PyResult<*mut c_void> {
    // SAFETY: a valid object and the GIL; NULL with an exception set if `c` is not a capsule
    // of that name.
    let p = unsafe { ffi::PyCapsule_GetPointer(c.as_ptr(), name.as_ptr()) };
    if p.is_null() {
        return Err(PyErr::fetch(c.py()));
    }
    Ok(p)
}

impl ArrowKeys {
    /// The keys of `obj` if it exports Arrow data, `None` otherwise.
    pub fn new(obj: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        let py = obj.py();
        if obj.hasattr(pyo3::intern!(py, "__arrow_c_array__"))? {
            let pair = obj.call_method0(pyo3::intern!(py, "__arrow_c_array__"))?;
            let (schema_cap, array_cap): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
            let schema = capsule_ptr(&schema_cap, c"arrow_schema")?.cast::<FfiSchema>();
            let array = capsule_ptr(&array_cap, c"arrow_array")?.cast::<FfiArray>();
            // SAFETY: the capsules hold valid, unreleased structs of these types (the
            // protocol's contract), kept alive by the capsules we keep.
            let (s, a) = unsafe { (&*schema, &*array) };
            let layout = format_of(s)?;
            check_array(a, layout)?;
            let len = a.length as usize;
            return ArrowKeys {
                chunks: vec![Chunk { array, layout }],
                len,
                _capsules: vec![schema_cap.unbind(), array_cap.unbind()],
                owned_arrays: Vec::new(),
                owned_schema: None,
            }
            .refuse_nulls()
            .map(Some);
        }
        if obj.hasattr(pyo3::intern!(py, "__arrow_c_stream__"))? {
            let cap = obj.call_method0(pyo3::intern!(py, "__arrow_c_stream__"))?;
            let stream = capsule_ptr(&cap, c"arrow_array_stream")?.cast::<FfiStream>();
            let mut keys = ArrowKeys {
                chunks: Vec::new(),
                len: 0,
                _capsules: vec![cap.clone().unbind()],
                owned_arrays: Vec::new(),
                owned_schema: None,
            };
            // SAFETY: the capsule holds a valid stream (the protocol's contract). Its
            // callbacks are called as the interface specifies: get_schema once, get_next until
            // it returns a released (end-of-stream) array; what they return is ours.
            unsafe {
                let st = &mut *stream;
                let (Some(get_schema), Some(get_next)) = (st.get_schema, st.get_next) else {
                    return Err(PyValueError::new_err("released Arrow stream"));
                };
                let mut schema = Box::new(FfiSchema::empty());
                if get_schema(stream, &mut *schema) != 0 {
                    return Err(stream_error(stream, "get_schema"));
                }
                keys.owned_schema = Some(schema);
                let layout = format_of(keys.owned_schema.as_ref().expect("set above"))?;
                loop {
                    let mut a = Box::new(FfiArray::empty());
                    if get_next(stream, &mut *a) != 0 {
                        return Err(stream_error(stream, "get_next"));
                    }
                    if a.release.is_none() {
                        break; // end of stream
                    }
                    let checked = check_array(&a, layout);
                    let ptr: *const FfiArray = &*a;
                    let n = a.length.max(0) as usize;
                    keys.owned_arrays.push(a); // released on drop, even on error
                    checked?;
                    keys.len += n;
                    keys.chunks.push(Chunk { array: ptr, layout });
                }
            }
            return keys.refuse_nulls().map(Some);
        }
        Ok(None)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Refuse an input with a null anywhere (every layout), naming the first one's index, so
    /// that a batch with a null changes nothing.
    fn refuse_nulls(self) -> PyResult<Self> {
        let mut base = 0usize;
        for c in &self.chunks {
            // SAFETY: as in `chunks_in`.
            let a = unsafe { &*c.array };
            let (off, n) = (a.offset as usize, a.length as usize);
            // SAFETY: `buffers` has at least 2 entries (checked); the first is the validity
            // bitmap of at least `offset + length` bits, or null.
            let validity = unsafe { *a.buffers }.cast::<u8>();
            if a.null_count != 0 && !validity.is_null() && n > 0 {
                // SAFETY: see above.
                let bits = unsafe { std::slice::from_raw_parts(validity, (off + n).div_ceil(8)) };
                if let Some(i) = (off..off + n).find(|&j| bits[j / 8] & (1 << (j % 8)) == 0) {
                    return Err(PyValueError::new_err(format!(
                        "element {} of the Arrow array is null: drop nulls first \
                         (e.g. pyarrow.compute.drop_null(arr))",
                        base + i - off
                    )));
                }
            }
            base += n;
        }
        Ok(self)
    }

    /// The library's views of the arrays (one per chunk of a stream) when every one is a
    /// `string`, `binary`, `large_string` or `large_binary` array: the batch operations then
    /// hash the keys straight from Arrow's buffers (`bloomery::lines::ArrowBinaryKeys`). `None` for
    /// other layouts. Errors for malformed buffers.
    pub fn binary(&self) -> PyResult<Option<Vec<bloomery::lines::ArrowBinaryKeys<'_>>>> {
        let mut out = Vec::with_capacity(self.chunks.len());
        for c in &self.chunks {
            // SAFETY: as in `chunks_in`: an unreleased array we keep alive, its buffer count
            // checked by `check_array`.
            let a = unsafe { &*c.array };
            let (off, len) = (a.offset as usize, a.length as usize);
            let end = off + len;
            // SAFETY: `buffers` has `n_buffers` (3 for these layouts) entries.
            let bufs = unsafe { std::slice::from_raw_parts(a.buffers, a.n_buffers as usize) };
            // The C data interface: the validity bitmap (may be null when there are no
            // nulls) holds at least `offset + length` bits; the offsets buffer `offset +
            // length + 1` offsets (may be null for an empty array); the values buffer at
            // least as many bytes as the last offset says. All immutable while the array is
            // not released, which `self` prevents. The library checks the offsets against
            // the values' length before reading anything.
            let validity = (a.null_count != 0 && !bufs[0].is_null() && len > 0).then(|| {
                // SAFETY: see above.
                unsafe { std::slice::from_raw_parts(bufs[0].cast::<u8>(), end.div_ceil(8)) }
            });
            /// The offsets and values buffers as slices.
            ///
            /// # Safety
            /// `o` and `d` are the array's offsets and values buffers (see above).
            unsafe fn buffers<'b, O: Copy + Into<i64>>(
                o: *const c_void,
                d: *const c_void,
                end: usize,
                len: usize,
            ) -> (&'b [O], &'b [u8]) {
                if len == 0 || o.is_null() {
                    return (&[], &[]);
                }
                // SAFETY: the caller's contract: `end + 1` offsets.
                let offsets = unsafe { std::slice::from_raw_parts(o.cast::<O>(), end + 1) };
                let last = offsets[end].into();
                let values = if last <= 0 || d.is_null() {
                    &[][..]
                } else {
                    // SAFETY: the values buffer holds at least `last` bytes.
                    unsafe { std::slice::from_raw_parts(d.cast::<u8>(), last as usize) }
                };
                (offsets, values)
            }
            let keys = match c.layout {
                Layout::Offsets32 => {
                    // SAFETY: buffers 1 and 2 of a `string`/`binary` array.
                    let (o, d) = unsafe { buffers::<i32>(bufs[1], bufs[2], end, len) };
                    bloomery::lines::ArrowBinaryKeys::try_from_i32(o, d, validity, off, len)
                }
                Layout::Offsets64 => {
                    // SAFETY: buffers 1 and 2 of a `large_string`/`large_binary` array.
                    let (o, d) = unsafe { buffers::<i64>(bufs[1], bufs[2], end, len) };
                    bloomery::lines::ArrowBinaryKeys::try_from_i64(o, d, validity, off, len)
                }
                _ => return Ok(None),
            };
            out.push(
                keys.map_err(|e| PyValueError::new_err(format!("malformed Arrow array: {e}")))?,
            );
        }
        Ok(Some(out))
    }

    /// Hand the keys with indices in `range` to `f` in chunks of at most `ARROW_CHUNK` (see
    /// `Batch::chunks_in`).
    pub fn chunks_in(
        &self,
        range: Range<usize>,
        mut f: impl FnMut(usize, &[RawKey]) -> PyResult<()>,
    ) -> PyResult<()> {
        let mut keys: Vec<RawKey> = Vec::with_capacity(ARROW_CHUNK.min(range.len()));
        let mut arena: Vec<u8> = Vec::new();
        let mut ends: Vec<usize> = Vec::new();
        let mut base = 0usize;
        for c in &self.chunks {
            // SAFETY: `c.array` points to an unreleased array we keep alive (capsule or owned
            // box), checked by `check_array` for its buffer count.
            let a = unsafe { &*c.array };
            let n = a.length as usize;
            // this array's share of `range`, in its own indices
            let lo = range.start.saturating_sub(base).min(n);
            let hi = range.end.saturating_sub(base).min(n);
            if lo >= hi {
                base += n;
                continue;
            }
            let off = a.offset as usize;
            // SAFETY: `buffers` has `n_buffers` entries (checked); the C data interface makes
            // each a pointer to an immutable buffer long enough for `offset + length` values.
            let bufs = unsafe { std::slice::from_raw_parts(a.buffers, a.n_buffers as usize) };
            let validity = bufs[0].cast::<u8>();
            let mut start = lo;
            while start < hi {
                let end = (start + ARROW_CHUNK).min(hi);
                keys.clear();
                if a.null_count != 0 && !validity.is_null() {
                    for i in start..end {
                        let j = off + i;
                        // SAFETY: the validity bitmap holds `offset + length` bits.
                        if unsafe { *validity.add(j / 8) } & (1 << (j % 8)) == 0 {
                            return Err(PyValueError::new_err(format!(
                                "element {} of the Arrow array is null: drop nulls first \
                                 (e.g. pyarrow.compute.drop_null(arr))",
                                base + i
                            )));
                        }
                    }
                }
                match c.layout {
                    // SAFETY: the offsets (i32) and data buffers as the C data interface defines
                    // them for this layout, valid for values `offset .. offset + length`; `span`
                    // checks each key's range against the data buffer's length.
                    Layout::Offsets32 => unsafe {
                        let o = bufs[1].cast::<i32>();
                        let d = bufs[2].cast::<u8>();
                        for i in off + start..off + end {
                            let (s, e) = (*o.add(i), *o.add(i + 1));
                            keys.push(span(d, s as i64, e as i64)?);
                        }
                    },
                    // SAFETY: as for `Offsets32`, with i64 offsets.
                    Layout::Offsets64 => unsafe {
                        let o = bufs[1].cast::<i64>();
                        let d = bufs[2].cast::<u8>();
                        for i in off + start..off + end {
                            keys.push(span(d, *o.add(i), *o.add(i + 1))?);
                        }
                    },
                    // SAFETY: the 16-byte views of values `offset .. offset + length` (read
                    // unaligned); an inline key lies inside its view, an out-of-line one names a
                    // data buffer checked by `get` and a range checked by `span`.
                    Layout::View => unsafe {
                        let views = bufs[1].cast::<u8>();
                        let data = &bufs[2..bufs.len() - 1];
                        for i in off + start..off + end {
                            let v = views.add(16 * i);
                            let len = (v as *const i32).read_unaligned();
                            if len < 0 {
                                return Err(PyValueError::new_err("malformed Arrow view"));
                            }
                            if len <= 12 {
                                keys.push(RawKey::new(std::slice::from_raw_parts(
                                    v.add(4),
                                    len as usize,
                                )));
                            } else {
                                let b = (v.add(8) as *const i32).read_unaligned();
                                let o = (v.add(12) as *const i32).read_unaligned();
                                let d = usize::try_from(b)
                                    .ok()
                                    .and_then(|b| data.get(b))
                                    .ok_or_else(|| PyValueError::new_err("malformed Arrow view"))?;
                                keys.push(span(d.cast::<u8>(), o as i64, o as i64 + len as i64)?);
                            }
                        }
                    },
                    // SAFETY: a fixed-size binary array's data buffer holds `w` bytes for
                    // each of values `offset .. offset + length`.
                    Layout::Fixed(w) => unsafe {
                        let d = bufs[1].cast::<u8>();
                        for i in off + start..off + end {
                            keys.push(RawKey::new(std::slice::from_raw_parts(d.add(i * w), w)));
                        }
                    },
                    Layout::Int { width, signed } => {
                        arena.clear();
                        ends.clear();
                        let d = bufs[1].cast::<u8>();
                        for i in off + start..off + end {
                            let mut b = [0u8; 8];
                            // SAFETY: `width` bytes of value i (see above); Arrow data is
                            // little-endian on the hosts this builds for.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    d.add(i * width),
                                    b.as_mut_ptr(),
                                    width,
                                )
                            };
                            let u = u64::from_le_bytes(b);
                            if signed {
                                let shift = 64 - 8 * width as u32;
                                push_i64(((u << shift) as i64) >> shift, &mut arena);
                            } else {
                                push_u64(u, &mut arena);
                            }
                            ends.push(arena.len());
                        }
                        arena_keys(&arena, &ends, &mut keys);
                    }
                }
                f(base + start, &keys)?;
                start = end;
            }
            base += n;
        }
        Ok(())
    }
}

/// The bytes `data[s..e]` of an offsets layout, refusing decreasing offsets.
///
/// # Safety
/// `data` must hold at least `e` bytes when `0 <= s <= e`.
unsafe fn span(data: *const u8, s: i64, e: i64) -> PyResult<RawKey> {
    if s < 0 || e < s {
        return Err(PyValueError::new_err(format!(
            "malformed Arrow offsets ({s}, {e})"
        )));
    }
    if e == s {
        return Ok(RawKey::new(&[]));
    }
    // SAFETY: the caller's contract.
    Ok(RawKey::new(unsafe {
        std::slice::from_raw_parts(data.add(s as usize), (e - s) as usize)
    }))
}

/// The stream's own message for a failed call.
///
/// # Safety
/// `stream` must be a valid, unreleased stream.
unsafe fn stream_error(stream: *mut FfiStream, what: &str) -> PyErr {
    // SAFETY: the caller's contract; the message is valid until the next call on the stream.
    let msg = unsafe {
        (*stream)
            .get_last_error
            .map(|f| f(stream))
            .filter(|p| !p.is_null())
            .map(|p| CStr::from_ptr(p).to_string_lossy().into_owned())
    };
    PyValueError::new_err(format!(
        "Arrow stream {what} failed: {}",
        msg.unwrap_or_else(|| "no message".into())
    ))
}

/// Call `f(start, keys)` for the pieces of `views` (the chunks of an input, one after the
/// other) holding the keys with indices in `range`, in order; `start` is the index of the
/// piece's first key in the whole input.
pub fn views_in<'a>(
    views: &[bloomery::lines::ArrowBinaryKeys<'a>],
    range: Range<usize>,
    mut f: impl FnMut(usize, bloomery::lines::ArrowBinaryKeys<'a>) -> PyResult<()>,
) -> PyResult<()> {
    let mut base = 0;
    for v in views {
        let n = v.len();
        let lo = range.start.saturating_sub(base).min(n);
        let hi = range.end.saturating_sub(base).min(n);
        if let Some(piece) = v.slice(lo..hi).filter(|p| !p.is_empty()) {
            f(base + lo, piece)?;
        }
        base += n;
    }
    Ok(())
}

/// A Python exception through the library's `hash_chunks` (whose callbacks' errors must take
/// the library's errors).
pub struct PyFail(pub PyErr);

impl From<bloomery::Error> for PyFail {
    fn from(e: bloomery::Error) -> Self {
        PyFail(crate::errors::to_py(e))
    }
}
