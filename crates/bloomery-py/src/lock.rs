//! The lock every Python object keeps around its structure.
//!
//! Batch calls release the GIL while they work, so two Python threads can reach one structure
//! at the same time. A read-write lock makes that safe: queries share it, mutations take it
//! alone, so a mutation never interleaves with another operation on the same structure.
//!
//! The one rule that keeps this free of deadlocks: **nobody waits for the lock while holding
//! the GIL.** A thread first tries the lock without blocking (the uncontended case, a few
//! nanoseconds); if another thread holds it, it releases the GIL, waits for the lock to be free
//! and tries again. A thread may hold the lock while it waits for the GIL (returning from a
//! batch), since no GIL holder ever blocks on the lock.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

use pyo3::Python;

/// A structure behind a read-write lock (see the module docs).
#[derive(Debug)]
pub struct Shared<T> {
    inner: RwLock<T>,
}

impl<T: Send + Sync> Shared<T> {
    pub fn new(value: T) -> Self {
        Self {
            inner: RwLock::new(value),
        }
    }

    /// Shared access, for queries; call with the GIL held.
    pub fn read(&self, py: Python<'_>) -> RwLockReadGuard<'_, T> {
        loop {
            match self.inner.try_read() {
                Ok(g) => return g,
                // A panic in the library while the lock was held (a bug: the library does
                // not panic on user input) leaves the structure as the panic left it; it is
                // still memory-safe to use, so go on rather than fail every later call.
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    py.detach(|| drop(self.inner.read()));
                }
            }
        }
    }

    /// Exclusive access, for mutations; call with the GIL held.
    pub fn write(&self, py: Python<'_>) -> RwLockWriteGuard<'_, T> {
        loop {
            match self.inner.try_write() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    py.detach(|| drop(self.inner.write()));
                }
            }
        }
    }

    /// Shared access for code running without the GIL (inside `Python::detach`).
    pub fn read_detached(&self) -> RwLockReadGuard<'_, T> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Exclusive access for code running without the GIL (inside `Python::detach`).
    pub fn write_detached(&self) -> RwLockWriteGuard<'_, T> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }
}
