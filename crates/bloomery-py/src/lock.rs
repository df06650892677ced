//! The lock every Python object keeps around its structure.
//!
//! Batch calls and file I/O release the GIL while they work, so two Python threads can reach
//! one structure at the same time. [`Shared`] makes that safe — a mutation never interleaves
//! with another operation on the same structure — and keeps the per-key path (one `in` or
//! `add` from a Python loop, which holds the GIL throughout) free of atomic read-modify-write
//! instructions, which would cost more than the rest of the lookup.
//!
//! Two kinds of holders:
//! - **GIL guards** ([`Shared::read`], [`Shared::write`]) for code that keeps the GIL for as
//!   long as it holds the guard. The GIL already excludes every other GIL holder, so they only
//!   count themselves in a plain (GIL-protected) counter, like a `RefCell`, and check with one
//!   atomic load that no detached holder is active. They are `!Send`, and must not be held
//!   across anything that releases the GIL (`Python::detach`, or Python code that may).
//! - **Detached guards** ([`Shared::read_detached`], [`Shared::write_detached`]) for work
//!   done without the GIL. They are taken while the GIL is held (so GIL holders never see a
//!   half-taken lock), recorded in an atomic state, and released from any thread.
//!
//! Nobody ever blocks while holding the GIL: a thread that finds the structure busy releases
//! the GIL and sleeps on a condition variable until the detached holder finishes, then tries
//! again with the GIL. So there is no lock-order deadlock between the GIL and a structure.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use pyo3::exceptions::PyRuntimeError;
use pyo3::Python;

/// `state`: a detached writer.
const WRITER: usize = 1 << (usize::BITS - 1);

/// A structure shared by Python threads (see the module docs).
pub struct Shared<T> {
    value: UnsafeCell<T>,
    /// Detached holders: [`WRITER`], or the number of detached readers.
    state: AtomicUsize,
    /// GIL holders: the number of read guards, or -1 for a write guard. Only touched with the
    /// GIL held.
    gil: UnsafeCell<isize>,
    /// Where threads wait for the detached holders to finish.
    idle: Mutex<()>,
    woken: Condvar,
}

// SAFETY: the value moves with the Shared; sending it to another thread is sending a T.
unsafe impl<T: Send> Send for Shared<T> {}
// SAFETY: shared access hands out `&T` to several threads at once (T: Sync) and `&mut T` to
// one thread at a time, possibly another than the one that made it (T: Send); `gil` is only
// read and written while the GIL is held, which serialises those accesses.
unsafe impl<T: Send + Sync> Sync for Shared<T> {}

impl<T> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

fn misuse(what: &str) -> pyo3::PyErr {
    PyRuntimeError::new_err(format!(
        "bloomery: {what} (a structure was used again while this thread was changing it)"
    ))
}

impl<T: Send + Sync> Shared<T> {
    pub fn new(value: T) -> Self {
        Self {
            value: UnsafeCell::new(value),
            state: AtomicUsize::new(0),
            gil: UnsafeCell::new(0),
            idle: Mutex::new(()),
            woken: Condvar::new(),
        }
    }

    /// The GIL holders' counter.
    ///
    /// # Safety
    /// The GIL must be held (the `Python` token of every caller proves it), and the returned
    /// reference not kept past the caller's statement.
    #[allow(clippy::mut_from_ref)]
    unsafe fn gil_count(&self, _py: Python<'_>) -> &mut isize {
        // SAFETY: the caller holds the GIL, which serialises every access to `gil`.
        unsafe { &mut *self.gil.get() }
    }

    /// Release the GIL and sleep until `busy` is false (then the caller tries again with the
    /// GIL, since another thread may have taken the structure meanwhile).
    #[cold]
    #[inline(never)]
    fn wait(&self, py: Python<'_>, busy: impl Fn(usize) -> bool + Send + Sync) {
        py.detach(|| {
            let mut g = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            while busy(self.state.load(Ordering::Acquire)) {
                g = self.woken.wait(g).unwrap_or_else(|p| p.into_inner());
            }
        });
    }

    fn notify(&self) {
        let _g = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        self.woken.notify_all();
    }

    /// Shared access while the GIL is held.
    #[inline]
    pub fn read<'a>(&'a self, py: Python<'_>) -> GilRead<'a, T> {
        loop {
            // SAFETY: the GIL is held (`py`).
            if unsafe { *self.gil_count(py) } < 0 {
                panic!("{}", misuse("read during a write"));
            }
            if self.state.load(Ordering::Acquire) & WRITER == 0 {
                // SAFETY: as above.
                unsafe { *self.gil_count(py) += 1 };
                return GilRead {
                    s: self,
                    _gil: PhantomData,
                };
            }
            self.wait(py, |s| s & WRITER != 0);
        }
    }

    /// Exclusive access while the GIL is held.
    #[inline]
    pub fn write<'a>(&'a self, py: Python<'_>) -> GilWrite<'a, T> {
        loop {
            // SAFETY: the GIL is held (`py`).
            if unsafe { *self.gil_count(py) } != 0 {
                panic!("{}", misuse("write during another access"));
            }
            if self.state.load(Ordering::Acquire) == 0 {
                // SAFETY: as above.
                unsafe { *self.gil_count(py) = -1 };
                return GilWrite {
                    s: self,
                    _gil: PhantomData,
                };
            }
            self.wait(py, |s| s != 0);
        }
    }

    /// Shared access for work done without the GIL: take it with the GIL held, then move it
    /// into `Python::detach`.
    pub fn read_detached<'a>(&'a self, py: Python<'_>) -> DetachedRead<'a, T> {
        loop {
            if let Some(r) = self.try_read_detached(py) {
                return r;
            }
            self.wait(py, |s| s & WRITER != 0);
        }
    }

    /// [`read_detached`](Self::read_detached), or `None` (at once) while a detached writer
    /// holds the structure.
    pub fn try_read_detached<'a>(&'a self, py: Python<'_>) -> Option<DetachedRead<'a, T>> {
        // SAFETY: the GIL is held (`py`).
        if unsafe { *self.gil_count(py) } < 0 {
            panic!("{}", misuse("read during a write"));
        }
        if self.state.load(Ordering::Acquire) & WRITER != 0 {
            return None;
        }
        // Only GIL holders take detached guards and the GIL is ours, so nobody can set
        // WRITER between the load and this increment; releases only decrement.
        self.state.fetch_add(1, Ordering::Acquire);
        Some(DetachedRead { s: self })
    }

    /// Exclusive access for work done without the GIL: take it with the GIL held, then move
    /// it into `Python::detach`.
    pub fn write_detached<'a>(&'a self, py: Python<'_>) -> DetachedWrite<'a, T> {
        loop {
            // SAFETY: the GIL is held (`py`).
            if unsafe { *self.gil_count(py) } != 0 {
                panic!("{}", misuse("write during another access"));
            }
            if self
                .state
                .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return DetachedWrite { s: self };
            }
            self.wait(py, |s| s != 0);
        }
    }
}

/// Exclusive access to `a` and shared access to `b` (two different structures) for work
/// without the GIL, taken without ever waiting while holding one of them (so two threads
/// merging in opposite directions cannot wait for each other).
pub fn write_read_detached<'a, 'b, T: Send + Sync, U: Send + Sync>(
    py: Python<'_>,
    a: &'a Shared<T>,
    b: &'b Shared<U>,
) -> (DetachedWrite<'a, T>, DetachedRead<'b, U>) {
    loop {
        let w = a.write_detached(py);
        if let Some(r) = b.try_read_detached(py) {
            return (w, r);
        }
        drop(w);
        b.wait(py, |s| s & WRITER != 0);
    }
}

/// Shared access under the GIL (see [`Shared::read`]).
pub struct GilRead<'a, T: Send + Sync> {
    s: &'a Shared<T>,
    /// `!Send`: the guard stays on the thread (and under the GIL) that took it.
    _gil: PhantomData<*const ()>,
}

impl<T: Send + Sync> Deref for GilRead<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: no writer exists while this guard lives: GIL writers are excluded by the
        // counter (checked when they start), detached writers by `state` (checked here, and
        // they start only with the GIL, which this thread keeps).
        unsafe { &*self.s.value.get() }
    }
}

impl<T: Send + Sync> Drop for GilRead<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the guard is `!Send` and never held across a GIL release, so the GIL is
        // still held here.
        unsafe { *self.s.gil.get() -= 1 };
    }
}

/// Exclusive access under the GIL (see [`Shared::write`]).
pub struct GilWrite<'a, T: Send + Sync> {
    s: &'a Shared<T>,
    _gil: PhantomData<*const ()>,
}

impl<T: Send + Sync> Deref for GilWrite<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: see `deref_mut`.
        unsafe { &*self.s.value.get() }
    }
}

impl<T: Send + Sync> DerefMut for GilWrite<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the only access: no other GIL guard (the counter was 0 and is
        // -1 now) and no detached guard (`state` was 0, and detached guards start only with
        // the GIL, which this thread keeps).
        unsafe { &mut *self.s.value.get() }
    }
}

impl<T: Send + Sync> Drop for GilWrite<'_, T> {
    fn drop(&mut self) {
        // SAFETY: as for `GilRead`: the GIL is still held.
        unsafe { *self.s.gil.get() = 0 };
    }
}

/// Shared access without the GIL (see [`Shared::read_detached`]).
pub struct DetachedRead<'a, T: Send + Sync> {
    s: &'a Shared<T>,
}

impl<T: Send + Sync> Deref for DetachedRead<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: no writer starts while `state` counts this reader (writers need 0), and
        // none was active when it was taken.
        unsafe { &*self.s.value.get() }
    }
}

impl<T: Send + Sync> Drop for DetachedRead<'_, T> {
    fn drop(&mut self) {
        if self.s.state.fetch_sub(1, Ordering::Release) == 1 {
            self.s.notify();
        }
    }
}

/// Exclusive access without the GIL (see [`Shared::write_detached`]).
pub struct DetachedWrite<'a, T: Send + Sync> {
    s: &'a Shared<T>,
}

impl<T: Send + Sync> Deref for DetachedWrite<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: see `deref_mut`.
        unsafe { &*self.s.value.get() }
    }
}

impl<T: Send + Sync> DerefMut for DetachedWrite<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: `state` is WRITER: no other detached guard exists or can start, and GIL
        // guards neither exist (the counter was 0 when this was taken, with the GIL) nor
        // start while WRITER is set.
        unsafe { &mut *self.s.value.get() }
    }
}

impl<T: Send + Sync> Drop for DetachedWrite<'_, T> {
    fn drop(&mut self) {
        self.s.state.store(0, Ordering::Release);
        self.s.notify();
    }
}
