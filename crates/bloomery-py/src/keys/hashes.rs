//! Many keys hashed with one hasher ([`Hashes`]): Python objects in one pass with the GIL
//! held, arrays later chunk by chunk without it.

use std::ops::Range;

use bloomery::{Hashed, KeyHasher};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::batch::{not_iterable, not_one_key, with_index, Batch};
use super::{key_bytes, Found, CHUNK};
use crate::arrow::{ArrowKeys, PyFail};

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
