//! Memory maps: the `memmap2` crate with the `mmap` feature; without it, types of the same
//! names that cannot be made (every constructor returns an `Unsupported` I/O error, every
//! value is uninhabited), so the code that uses maps compiles unchanged and never runs.
//! Arrays then live on the heap, `Persist::open_mmap`, `MappedFile::open` and
//! `FileUpdate::open` return [`Error::Unsupported`](crate::Error::Unsupported) (see
//! [`crate::io::fs::map_file`]).

#[cfg(feature = "mmap")]
pub(crate) use memmap2::{Advice, Mmap, MmapMut, UncheckedAdvice};

#[cfg(not(feature = "mmap"))]
pub(crate) use none::{Advice, Mmap, MmapMut, UncheckedAdvice};

/// The message of every operation that needs a memory map in a build without them.
pub(crate) const NO_MMAP: &str =
    "memory maps are not built in: enable bloomery's `mmap` feature to use files in place";

#[cfg(not(feature = "mmap"))]
mod none {
    #![allow(dead_code)]
    use std::fs::File;
    use std::io;
    use std::ops::{Deref, DerefMut};

    fn unsupported<T>() -> io::Result<T> {
        Err(io::Error::new(io::ErrorKind::Unsupported, super::NO_MMAP))
    }

    /// `crate::map::Advice` (only named, never applied).
    #[derive(Clone, Copy)]
    pub(crate) enum Advice {
        HugePage,
        Random,
        Sequential,
        WillNeed,
    }

    /// `crate::map::UncheckedAdvice` (only named, never applied).
    #[derive(Clone, Copy)]
    pub(crate) enum UncheckedAdvice {
        DontNeed,
    }

    /// A read-only map: none can exist.
    pub enum Mmap {}

    /// A writable map: none can exist.
    pub enum MmapMut {}

    impl Mmap {
        /// # Safety
        /// Never maps anything (the signature of `crate::map::Mmap::map`).
        pub(crate) unsafe fn map(_file: &File) -> io::Result<Mmap> {
            unsupported()
        }

        pub(crate) fn advise(&self, _a: Advice) -> io::Result<()> {
            match *self {}
        }

        pub(crate) fn advise_range(&self, _a: Advice, _at: usize, _n: usize) -> io::Result<()> {
            match *self {}
        }

        /// # Safety
        /// Unreachable: no `Mmap` exists.
        pub(crate) unsafe fn unchecked_advise_range(
            &self,
            _a: UncheckedAdvice,
            _at: usize,
            _n: usize,
        ) -> io::Result<()> {
            match *self {}
        }
    }

    impl Deref for Mmap {
        type Target = [u8];
        fn deref(&self) -> &[u8] {
            match *self {}
        }
    }

    impl MmapMut {
        pub(crate) fn map_anon(_len: usize) -> io::Result<MmapMut> {
            unsupported()
        }

        /// # Safety
        /// Never maps anything (the signature of `crate::map::MmapMut::map_mut`).
        pub(crate) unsafe fn map_mut(_file: &File) -> io::Result<MmapMut> {
            unsupported()
        }

        pub(crate) fn advise(&self, _a: Advice) -> io::Result<()> {
            match *self {}
        }

        pub(crate) fn advise_range(&self, _a: Advice, _at: usize, _n: usize) -> io::Result<()> {
            match *self {}
        }

        /// # Safety
        /// Unreachable: no `MmapMut` exists.
        pub(crate) unsafe fn unchecked_advise_range(
            &self,
            _a: UncheckedAdvice,
            _at: usize,
            _n: usize,
        ) -> io::Result<()> {
            match *self {}
        }

        pub(crate) fn flush(&self) -> io::Result<()> {
            match *self {}
        }

        pub(crate) fn make_read_only(self) -> io::Result<Mmap> {
            match self {}
        }
    }

    impl Deref for MmapMut {
        type Target = [u8];
        fn deref(&self) -> &[u8] {
            match *self {}
        }
    }

    impl DerefMut for MmapMut {
        fn deref_mut(&mut self) -> &mut [u8] {
            match *self {}
        }
    }
}
