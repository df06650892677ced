//! The one storage layer: 64-byte-aligned arrays of 64-bit words, owned or memory-mapped.
//!
//! Every bit array in bloomery is a [`Words`] value:
//! - small arrays live on the heap in cache-line-aligned chunks (so a 512-bit block never
//!   straddles two cache lines);
//! - large arrays (≥ 1 MiB) are anonymous memory maps, page-aligned, zeroed lazily by the kernel,
//!   and advised to use transparent huge pages on Linux, which removes most TLB misses of random
//!   probes into filters far larger than the caches ([`set_global_allocator_only`] keeps them on
//!   the heap instead, for programs whose allocator must see every byte);
//! - arrays opened from a file through a read-only map are views into the file; the first
//!   mutation copies them (copy-on-write), so a mapped filter is never written behind the
//!   caller's back;
//! - arrays of a file opened for an update ([`SharedMap`]) are writable views: writes go to the
//!   file's pages (a private copy of the file that the update renames over the original).
//!
//! The size of every allocation is checked against a limit first ([`max_bytes`], settable per
//! process with [`set_max_bytes`] and per builder), so a huge request is refused with
//! [`Error::TooLarge`] before any memory is touched; allocation failure is an error, not an abort.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// Default limit on one structure's memory: 16 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 16 << 30;

static MAX_BYTES: AtomicU64 = AtomicU64::new(DEFAULT_MAX_BYTES);

/// The process-wide default limit on the bytes one structure may allocate.
pub fn max_bytes() -> u64 {
    MAX_BYTES.load(Ordering::Relaxed)
}

/// Set the process-wide default limit (builders can still override it per structure).
pub fn set_max_bytes(limit: u64) {
    MAX_BYTES.store(limit, Ordering::Relaxed);
}

/// Refuse `bytes` if it exceeds `limit`.
pub fn check_size(bytes: u64, limit: u64) -> Result<()> {
    if bytes > limit {
        return Err(Error::TooLarge {
            requested: bytes,
            limit,
        });
    }
    Ok(())
}

/// A structure that grows one part at a time sizes the new part within what its limit
/// leaves (`limit - used`); a refusal is reported for the whole structure (`used` plus the
/// part, against `limit`), so that the limit named is the structure's own: the process-wide
/// one, or a smaller one it was built with (and stores in its file).
pub(crate) fn whole_after_growth(e: Error, used: u64, limit: u64) -> Error {
    match e {
        Error::TooLarge { requested, .. } => Error::TooLarge {
            requested: used.saturating_add(requested),
            limit,
        },
        e => e,
    }
}

/// Move a vector's buffer with `mv` (an allocator that defragments moves allocations so; see
/// [`Words::relocate`]): `mv` gets the buffer's address and returns where its bytes are now,
/// or `None` to leave it. Nothing for an empty buffer.
///
/// # Safety
/// A returned address must hold a copy of the buffer's bytes in an allocation of the global
/// allocator of the same size and at least `T`'s alignment, and the old buffer must have been
/// freed; nothing may reference the vector or its elements during the call.
pub(crate) unsafe fn relocate_vec<T>(
    v: &mut Vec<T>,
    mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
) {
    if v.capacity() == 0 || std::mem::size_of::<T>() == 0 {
        return;
    }
    let Some(new) = std::ptr::NonNull::new(v.as_mut_ptr().cast::<u8>()).and_then(mv) else {
        return;
    };
    let (len, cap) = (v.len(), v.capacity());
    // SAFETY: `new` holds the buffer's bytes (`len` initialised elements of `cap`) in memory of
    // the global allocator with `T`'s alignment, the old buffer freed (the caller's contract):
    // the vector is rebuilt over it without dropping the old one.
    unsafe { std::ptr::write(v, Vec::from_raw_parts(new.as_ptr().cast::<T>(), len, cap)) };
}

/// One cache line of words; the heap storage unit, so the heap buffer is 64-byte aligned.
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// Arrays at least this large are anonymous maps with huge pages advised (unless
/// [`set_global_allocator_only`] turned maps off).
pub(crate) const ANON_THRESHOLD_BYTES: usize = 1 << 20;

static GLOBAL_ALLOCATOR_ONLY: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Put every array the library allocates on the global allocator (`true`), or let large ones
/// (≥ 1 MiB: bit and counter arrays, file buffers) be anonymous memory maps with huge pages
/// advised (`false`, the default). Without the `mmap` feature every array is on the global
/// allocator whatever this says.
///
/// An embedding program whose global allocator accounts for memory turns this on, so that
/// every byte a structure holds is seen by that allocator. The Redis module does: Redis counts
/// what the module allocates through it (`INFO memory`, `maxmemory`, eviction), but not
/// private maps. Applies to arrays allocated after the call; memory-mapped files
/// ([`Persist::open_mmap`](crate::Persist::open_mmap)) are views of the file either way.
pub fn set_global_allocator_only(on: bool) {
    GLOBAL_ALLOCATOR_ONLY.store(on, Ordering::Relaxed);
}

/// Whether every array goes to the global allocator (see [`set_global_allocator_only`]).
pub fn global_allocator_only() -> bool {
    GLOBAL_ALLOCATOR_ONLY.load(Ordering::Relaxed)
}

/// Whether an array of `bytes` bytes is an anonymous map rather than a heap allocation.
pub(crate) fn use_anon_map(bytes: usize) -> bool {
    cfg!(feature = "mmap") && bytes >= ANON_THRESHOLD_BYTES && !global_allocator_only()
}

/// `len` zero bytes in an anonymous map with transparent huge pages advised (fewer page faults
/// and TLB misses than 4 KiB pages).
pub(crate) fn anon_map(len: usize) -> std::io::Result<crate::map::MmapMut> {
    let map = crate::map::MmapMut::map_anon(len)?;
    #[cfg(target_os = "linux")]
    {
        // Advice only: failure (e.g. THP disabled) changes nothing but speed.
        let _ = map.advise(crate::map::Advice::HugePage);
    }
    Ok(map)
}

thread_local! {
    /// Set while [`untouched_arrays`] runs its closure on this thread.
    static UNTOUCHED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with the large arrays it allocates on this thread made as anonymous maps that
/// reserve no memory (`MAP_NORESERVE`): the kernel then lends them without counting them
/// against RAM and swap, and pages that are only read stay the shared zero page. For
/// structures that are written to a file and dropped without a write to their words (an
/// empty filter made only to be saved, e.g. one larger than RAM); a structure written to in
/// such a map may find no memory behind a page, which the kernel answers by killing the
/// process, so nothing else may use it.
pub(crate) fn untouched_arrays<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            UNTOUCHED.with(|u| u.set(self.0));
        }
    }
    let _reset = Reset(UNTOUCHED.with(|u| u.replace(true)));
    f()
}

/// Whether an array of `bytes` made on this thread now is an untouched map (see
/// [`untouched_arrays`]).
fn use_untouched_map(bytes: usize) -> bool {
    cfg!(feature = "mmap") && bytes >= ANON_THRESHOLD_BYTES && UNTOUCHED.with(|u| u.get())
}

/// `len` zero bytes in an anonymous map that reserves no memory (see [`untouched_arrays`]).
#[cfg(feature = "mmap")]
fn untouched_map(len: usize) -> std::io::Result<crate::map::MmapMut> {
    let map = memmap2::MmapOptions::new()
        .len(len)
        .no_reserve_swap()
        .map_anon()?;
    #[cfg(target_os = "linux")]
    {
        // Read faults of a huge-page region map the huge zero page: few faults, no memory.
        let _ = map.advise(crate::map::Advice::HugePage);
    }
    Ok(map)
}

#[cfg(not(feature = "mmap"))]
fn untouched_map(_len: usize) -> std::io::Result<crate::map::MmapMut> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        crate::map::NO_MMAP,
    ))
}

/// A writable shared map of a whole file, for updates in place (see `FileUpdate`): the words
/// of a structure decoded from it write straight into the file's pages. It also holds the
/// plain file rebuilt from a compressed one (an anonymous map, see `PlainBytes`), whose
/// structure's words write in place the same way; [`release`](Self::release) is for file
/// maps only (it would drop an anonymous map's contents). The map is only ever
/// reached through raw pointers (never a `&[u8]` of the whole map), so structures holding
/// disjoint ranges of it can write while the update reads or writes other ranges.
pub struct SharedMap {
    /// Owns the mapping; never dereferenced after `ptr` was taken.
    map: crate::map::MmapMut,
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    /// A file's pages (an update's copy), which a pass may drop behind it; false for an
    /// anonymous map, whose pages hold the only copy of their contents.
    file: bool,
}

// SAFETY: the map is plain memory shared with the file; `SharedMap` hands out raw pointers
// only, and every user (`Words` over a disjoint range, the update's header and checksum
// passes) follows the borrow rules of the structure that owns the range.
unsafe impl Send for SharedMap {}
// SAFETY: see `Send` above.
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// Take over a writable anonymous map (its pages are never dropped by a pass).
    pub(crate) fn new(mut map: crate::map::MmapMut) -> Self {
        let len = map.len();
        let ptr = std::ptr::NonNull::new(map.as_mut_ptr()).unwrap_or(std::ptr::NonNull::dangling());
        Self {
            map,
            ptr,
            len,
            file: false,
        }
    }

    /// Take over a writable shared map of a file (an update's copy): a pass over a structure's
    /// words may drop its pages behind it ([`Words::release_words`]).
    pub(crate) fn of_file(map: crate::map::MmapMut) -> Self {
        Self {
            file: true,
            ..Self::new(map)
        }
    }

    /// Bytes mapped.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The first byte.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Drop the pages of `[offset, offset + len)` from this process's memory. The data stays
    /// in the file's pages (a shared file map writes through), so nothing is lost: the next
    /// access faults the page back in. Bounds the resident memory of a long update.
    pub(crate) fn release(&self, offset: usize, len: usize) {
        let len = len.min(self.len.saturating_sub(offset));
        if len == 0 {
            return;
        }
        #[cfg(unix)]
        // SAFETY: MADV_DONTNEED on a shared file mapping only unmaps the pages from this
        // process; their contents, written ones included, stay in the page cache and come back
        // on the next access, so no value any reference could observe changes.
        unsafe {
            let _ =
                self.map
                    .unchecked_advise_range(crate::map::UncheckedAdvice::DontNeed, offset, len);
        }
    }

    /// Advise the kernel how the map is about to be read (advice only: a failure changes
    /// nothing but speed). A pass over a file larger than the page cache needs read-ahead,
    /// which the random-access advice of an update turns off.
    pub(crate) fn advise_pass(&self, sequential: bool) {
        #[cfg(unix)]
        {
            let _ = self.map.advise(if sequential {
                crate::map::Advice::Sequential
            } else {
                crate::map::Advice::Random
            });
        }
        #[cfg(not(unix))]
        let _ = sequential;
    }

    /// Start reading `[offset, offset + len)` of the file in (advice only).
    pub(crate) fn will_need(&self, offset: usize, len: usize) {
        let len = len.min(self.len.saturating_sub(offset));
        #[cfg(unix)]
        if len > 0 {
            let _ = self
                .map
                .advise_range(crate::map::Advice::WillNeed, offset, len);
        }
        #[cfg(not(unix))]
        let _ = (offset, len);
    }

    /// Write the map's dirty pages back to the file and wait for the disk.
    pub(crate) fn flush(&self) -> std::io::Result<()> {
        self.map.flush()
    }
}

enum Buf {
    Heap(Vec<Line>),
    Anon(crate::map::MmapMut),
    Mapped {
        map: Arc<crate::map::Mmap>,
        offset: usize,
    },
    /// A writable view into a file opened for an update.
    Shared {
        map: Arc<SharedMap>,
        offset: usize,
    },
}

/// A 64-byte-aligned array of `len` little-endian 64-bit words (see the module docs).
pub struct Words {
    buf: Buf,
    len: usize,
    /// The first word, cached from `buf` (see [`Words::from_buf`]), so the hot paths reach the
    /// words with one load instead of a match over the three kinds of buffer.
    ptr: std::ptr::NonNull<u64>,
}

// SAFETY: `ptr` points into memory owned by `buf` (a Vec, an anonymous map, an Arc'd
// read-only file map, or a disjoint range of an Arc'd writable file map), all of which are
// Send and Sync; `Words` hands out `&[u64]` only through
// `&self` and `&mut [u64]` only through `&mut self`, exactly like a `Vec<u64>`, so sharing or
// sending it is as safe as sharing or sending `buf` itself.
unsafe impl Send for Words {}
// SAFETY: see `Send` above.
unsafe impl Sync for Words {}

impl Words {
    /// An all-zero array of `len` words, refused if it exceeds `limit` bytes.
    pub fn zeroed(len: usize, limit: u64) -> Result<Self> {
        let bytes = (len as u64).checked_mul(8).ok_or(Error::TooLarge {
            requested: u64::MAX,
            limit,
        })?;
        check_size(bytes, limit)?;
        let lines = len.div_ceil(8);
        let byte_len = lines * 64;
        let buf = if use_untouched_map(byte_len) {
            let map = untouched_map(byte_len).map_err(|_| Error::AllocationFailed { bytes })?;
            Buf::Anon(map)
        } else if use_anon_map(byte_len) {
            let map = anon_map(byte_len).map_err(|_| Error::AllocationFailed { bytes })?;
            Buf::Anon(map)
        } else {
            let mut v: Vec<Line> = Vec::new();
            v.try_reserve_exact(lines)
                .map_err(|_| Error::AllocationFailed { bytes })?;
            v.resize(lines, Line::default());
            Buf::Heap(v)
        };
        Ok(Self::from_buf(buf, len))
    }

    /// Wrap a buffer, caching the pointer to its first word. The pointer stays valid for the
    /// life of `buf`: moving a Vec or a map moves only its handle, never its memory, and
    /// nothing reallocates a buffer after this (a mapped view is replaced by a new `Words`).
    fn from_buf(mut buf: Buf, len: usize) -> Self {
        let ptr = match &mut buf {
            Buf::Heap(v) => v.as_mut_ptr().cast::<u64>(),
            Buf::Anon(m) => m.as_mut_ptr().cast::<u64>(),
            Buf::Mapped { map, offset } => map[*offset..].as_ptr().cast::<u64>().cast_mut(),
            // SAFETY: `offset` is within the map (checked by `Words::shared`).
            Buf::Shared { map, offset } => unsafe { map.ptr().add(*offset).cast::<u64>() },
        };
        let ptr = std::ptr::NonNull::new(ptr).unwrap_or(std::ptr::NonNull::dangling());
        Self { buf, len, ptr }
    }

    /// Copy an array from little-endian bytes (`bytes.len()` must be a multiple of 8).
    pub fn from_le_bytes(bytes: &[u8], limit: u64) -> Result<Self> {
        debug_assert_eq!(bytes.len() % 8, 0);
        let len = bytes.len() / 8;
        let byte_len = len.div_ceil(8) * 64;
        if cfg!(target_endian = "little") && !use_anon_map(byte_len) && !use_untouched_map(byte_len)
        {
            // a heap array written once, line by line, with no zeroing pass first (for a
            // large array: half the memory traffic and no page touched twice)
            check_size(len as u64 * 8, limit)?;
            let mut v: Vec<Line> = Vec::new();
            v.try_reserve_exact(len.div_ceil(8))
                .map_err(|_| Error::AllocationFailed {
                    bytes: len as u64 * 8,
                })?;
            let whole = bytes.len() / 64 * 64;
            v.extend(bytes[..whole].chunks_exact(64).map(|c| {
                let mut l = Line::default();
                bytemuck::bytes_of_mut(&mut l.0).copy_from_slice(c);
                l
            }));
            if whole < bytes.len() {
                let mut l = Line::default();
                bytemuck::cast_slice_mut::<u64, u8>(&mut l.0)[..bytes.len() - whole]
                    .copy_from_slice(&bytes[whole..]);
                v.push(l);
            }
            return Ok(Self::from_buf(Buf::Heap(v), len));
        }
        let mut w = Self::zeroed(bytes.len() / 8, limit)?;
        if cfg!(target_endian = "little") {
            // the file's bytes are the native words: one copy
            let dst: &mut [u8] = bytemuck::cast_slice_mut(w.as_mut_slice());
            dst.copy_from_slice(&bytes[..dst.len()]);
            return Ok(w);
        }
        for (dst, src) in w.as_mut_slice().iter_mut().zip(bytes.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(src);
            *dst = u64::from_le_bytes(b);
        }
        Ok(w)
    }

    /// A read-only view of `len` words at `offset` in a mapped file. On big-endian hosts (where
    /// the file's bytes are not native words) the words are copied instead.
    pub fn mapped(
        map: Arc<crate::map::Mmap>,
        offset: usize,
        len: usize,
        limit: u64,
    ) -> Result<Self> {
        let end = offset
            .checked_add(len.saturating_mul(8))
            .filter(|&e| e <= map.len())
            .ok_or_else(|| crate::error::inconsistent("mapped range beyond end of file"))?;
        if cfg!(target_endian = "big") || !offset.is_multiple_of(8) {
            return Self::from_le_bytes(&map[offset..end], limit);
        }
        Ok(Self::from_buf(Buf::Mapped { map, offset }, len))
    }

    /// A writable view of `len` words at `offset` in a file opened for an update. Writes go to
    /// the file's pages. On big-endian hosts, or at an unaligned offset, the words are copied
    /// instead (the update then writes them back when it commits).
    pub(crate) fn shared(
        map: &Arc<SharedMap>,
        offset: usize,
        len: usize,
        limit: u64,
    ) -> Result<Self> {
        let end = offset
            .checked_add(len.saturating_mul(8))
            .filter(|&e| e <= map.len())
            .ok_or_else(|| crate::error::inconsistent("mapped range beyond end of file"))?;
        if cfg!(target_endian = "big") || !offset.is_multiple_of(8) {
            // SAFETY: `[offset, end)` is within the map (checked above) and nothing writes to
            // it while this copy is made (the update is decoding).
            let bytes = unsafe { std::slice::from_raw_parts(map.ptr().add(offset), end - offset) };
            return Self::from_le_bytes(bytes, limit);
        }
        Ok(Self::from_buf(
            Buf::Shared {
                map: Arc::clone(map),
                offset,
            },
            len,
        ))
    }

    /// The map and byte offset of a writable view into a file opened for an update.
    pub(crate) fn shared_view(&self) -> Option<(&Arc<SharedMap>, usize)> {
        match &self.buf {
            Buf::Shared { map, offset } => Some((map, *offset)),
            _ => None,
        }
    }

    /// Number of words.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no words.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when this is a read-only view of a mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.buf, Buf::Mapped { .. })
    }

    /// The words.
    #[inline(always)]
    pub fn as_slice(&self) -> &[u64] {
        // SAFETY: `ptr` points to `len` initialised, 8-aligned u64s inside `buf` (see
        // `from_buf`; every buffer is at least `len` words, checked where it is made), which
        // live as long as `self`; the shared borrow of `self` keeps them from being mutated.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The words, mutably. A mapped view is first copied into owned memory.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [u64] {
        if self.is_mapped() {
            self.make_owned();
        }
        // SAFETY: as in `as_slice`, and the buffer is writable: owned, or a writable view of a
        // file opened for an update, whose range no other `Words` shares (a read-only mapped
        // view was just replaced by an owned copy); the exclusive borrow of `self` makes this the only
        // reference to the words while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The first word, for writing, when the caller already knows the words are owned (not
    /// [mapped](Self::is_mapped)): [`as_mut_slice`](Self::as_mut_slice) without its check.
    /// Writing through the pointer while the words are mapped would fault; callers keep their
    /// own flag of that (see `BlockedBloomFilter`'s fused insert).
    #[inline(always)]
    pub(crate) fn owned_mut_ptr(&mut self) -> *mut u64 {
        debug_assert!(!self.is_mapped());
        self.ptr.as_ptr()
    }

    fn make_owned(&mut self) {
        // The mapped view's bytes were already validated and counted against a limit when the
        // file was opened; copying them cannot exceed what the caller accepted.
        let mut owned = Self::zeroed(self.len, u64::MAX).unwrap_or_else(|_| {
            // Allocation failure here is the same condition as a failed Vec growth.
            std::alloc::handle_alloc_error(std::alloc::Layout::new::<Line>())
        });
        owned.as_mut_slice().copy_from_slice(self.as_slice());
        *self = owned;
    }

    /// The words viewed as atomics, for lock-free parallel updates under an exclusive borrow.
    pub fn as_atomic(&mut self) -> &[AtomicU64] {
        let words = self.as_mut_slice();
        const _: () = assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>());
        const _: () = assert!(std::mem::size_of::<AtomicU64>() == std::mem::size_of::<u64>());
        // SAFETY: AtomicU64 has the same size and alignment as u64 (checked above), and the
        // exclusive borrow of `self` guarantees no other reference to these words exists while
        // the returned shared slice of atomics lives; all access through it is atomic.
        unsafe { &*(words as *mut [u64] as *const [AtomicU64]) }
    }

    /// Append the little-endian bytes `[a, b)` of the array to `out` (`b` at most 8 × `len`).
    pub(crate) fn le_range(&self, a: usize, b: usize, out: &mut Vec<u8>) {
        if cfg!(target_endian = "little") {
            let bytes: &[u8] = bytemuck::cast_slice(self.as_slice());
            out.extend_from_slice(&bytes[a..b]);
        } else {
            let words = self.as_slice();
            for i in a..b {
                out.push(words[i / 8].to_le_bytes()[i % 8]);
            }
        }
    }

    /// The words as little-endian bytes, written with `f` in chunks (no copy on little-endian).
    pub fn write_le<E>(&self, mut f: impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        if cfg!(target_endian = "little") {
            f(bytemuck::cast_slice(self.as_slice()))
        } else {
            let mut buf = Vec::with_capacity(8 * 1024);
            for chunk in self.as_slice().chunks(1024) {
                buf.clear();
                for w in chunk {
                    buf.extend_from_slice(&w.to_le_bytes());
                }
                f(&buf)?;
            }
            Ok(())
        }
    }

    /// Move the words' buffer with `mv` when they live on the global allocator's heap (an
    /// allocator that defragments moves allocations so): `mv` gets the buffer's address and
    /// returns where its bytes are now, or `None` to leave it. Words in a map (an anonymous
    /// huge-page map or a file's pages) never move. Returns whether they moved.
    ///
    /// # Safety
    /// A returned address must hold a copy of the buffer's bytes in an allocation of the global
    /// allocator of the same size and at least 64-byte alignment, and the old buffer must have
    /// been freed (what `RedisModule_DefragAlloc` does under Redis's allocator); nothing may
    /// reference the words during the call.
    pub unsafe fn relocate(
        &mut self,
        mv: &mut dyn FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>>,
    ) -> bool {
        let Buf::Heap(v) = &mut self.buf else {
            return false;
        };
        if v.capacity() == 0 {
            return false;
        }
        let Some(new) = std::ptr::NonNull::new(v.as_mut_ptr().cast::<u8>()).and_then(mv) else {
            return false;
        };
        debug_assert_eq!(
            new.as_ptr() as usize % 64,
            0,
            "moved words must stay aligned"
        );
        let (len, cap) = (v.len(), v.capacity());
        // SAFETY: `new` holds the buffer's `cap` lines (`len` of them initialised) in memory of
        // the global allocator with the lines' alignment, and the old buffer was freed (the
        // caller's contract): the vector is rebuilt over it without dropping the old one.
        unsafe {
            std::ptr::write(
                v,
                Vec::from_raw_parts(new.as_ptr().cast::<Line>(), len, cap),
            )
        };
        self.ptr = std::ptr::NonNull::new(v.as_mut_ptr().cast::<u64>())
            .unwrap_or(std::ptr::NonNull::dangling());
        true
    }

    /// Drop the pages of words `[start, start + len)` from the process when they are a file's
    /// pages (a read-only map of a file, or an update's writable map of its copy): their
    /// contents stay in the page cache (written ones included) and fault back in when read
    /// again. Nothing for memory the process owns (heap, anonymous maps), whose pages hold
    /// the only copy. What a pass over a big file's words calls behind it ([`Behind`]).
    pub(crate) fn release_words(&self, start: usize, len: usize) {
        let len = len.min(self.len.saturating_sub(start));
        if len == 0 {
            return;
        }
        match &self.buf {
            Buf::Mapped { map, offset } => {
                let at = offset + start * 8;
                #[cfg(unix)]
                // SAFETY: MADV_DONTNEED on a read-only map of a file unmaps the pages; the next
                // access reads the same bytes back from the file, which must not change while
                // mapped (the contract of every map), so no reference observes a change.
                unsafe {
                    let _ = map.unchecked_advise_range(
                        crate::map::UncheckedAdvice::DontNeed,
                        at,
                        (len * 8).min(map.len().saturating_sub(at)),
                    );
                }
                #[cfg(not(unix))]
                let _ = (map, at);
            }
            Buf::Shared { map, offset } if map.file => map.release(offset + start * 8, len * 8),
            _ => {}
        }
    }

    /// Heap bytes held (for memory reports).
    pub fn allocated_bytes(&self) -> usize {
        match &self.buf {
            Buf::Heap(v) => v.capacity() * 64,
            Buf::Anon(m) => m.len(),
            Buf::Mapped { .. } | Buf::Shared { .. } => 0,
        }
    }

    /// Try to clone, checking the limit.
    pub fn try_clone(&self) -> Result<Self> {
        if let Buf::Mapped { map, offset } = &self.buf {
            return Ok(Self::from_buf(
                Buf::Mapped {
                    map: Arc::clone(map),
                    offset: *offset,
                },
                self.len,
            ));
        }
        // an owned or a writable view's words are copied: a clone never writes to the file
        let mut w = Self::zeroed(self.len, u64::MAX)?;
        w.as_mut_slice().copy_from_slice(self.as_slice());
        Ok(w)
    }
}

impl Clone for Words {
    fn clone(&self) -> Self {
        self.try_clone()
            .unwrap_or_else(|_| std::alloc::handle_alloc_error(std::alloc::Layout::new::<Line>()))
    }
}

impl PartialEq for Words {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Words {}

impl std::fmt::Debug for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Words")
            .field("len", &self.len)
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

/// Words a pass over a file's array reads before it drops them ([`Behind`]): 8 MiB, the
/// pieces of the file format's streaming passes.
pub(crate) const BEHIND_STEP_WORDS: usize = (8 << 20) / 8;

/// A front-to-back pass over an array's words that drops the file's pages behind it every
/// [`BEHIND_STEP_WORDS`] ([`Words::release_words`]; nothing for owned memory): a whole-array
/// count over a mapped file holds a step of it resident, not the file. The rest is dropped
/// when it goes out of scope.
pub(crate) struct Behind<'a> {
    words: &'a Words,
    /// Words dropped so far (from the front).
    done: usize,
}

impl<'a> Behind<'a> {
    pub(crate) fn new(words: &'a Words) -> Self {
        Self { words, done: 0 }
    }

    /// The pass has read every word before `word`.
    #[inline]
    pub(crate) fn reached(&mut self, word: usize) {
        if word >= self.done + BEHIND_STEP_WORDS {
            self.words.release_words(self.done, word - self.done);
            self.done = word;
        }
    }

    /// Visit `words` (`Words` of the pass) in steps, each dropped behind: `f(start, step)`.
    pub(crate) fn steps(words: &'a Words, mut f: impl FnMut(usize, &[u64])) {
        let mut b = Self::new(words);
        let all = words.as_slice();
        let mut at = 0;
        while at < all.len() {
            let end = (at + BEHIND_STEP_WORDS).min(all.len());
            f(at, &all[at..end]);
            b.reached(end);
            at = end;
        }
    }
}

impl Drop for Behind<'_> {
    fn drop(&mut self) {
        self.words.release_words(
            self.done,
            self.words.len() - self.done.min(self.words.len()),
        );
    }
}

/// Bits set in `words`, a step at a time, the file's pages dropped behind ([`Behind`]).
pub(crate) fn count_ones_behind(words: &Words) -> u64 {
    let mut ones = 0;
    Behind::steps(words, |_, w| ones += count_ones(w));
    ones
}

/// Bit `i` of a word array.
#[inline(always)]
pub fn get_bit(words: &[u64], i: u64) -> bool {
    (words[(i >> 6) as usize] >> (i & 63)) & 1 == 1
}

/// Set bit `i`; returns true if it was zero.
#[inline(always)]
pub fn set_bit(words: &mut [u64], i: u64) -> bool {
    let w = &mut words[(i >> 6) as usize];
    let mask = 1u64 << (i & 63);
    let was = *w & mask;
    *w |= mask;
    was == 0
}

/// Number of set bits.
pub fn count_ones(words: &[u64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::popcnt() {
        // SAFETY: `popcnt()` is true only on a CPU with the POPCNT instruction, the only
        // feature `count_ones_popcnt` enables.
        return unsafe { count_ones_popcnt(words) };
    }
    count_ones_portable(words)
}

#[inline(always)]
fn count_ones_portable(words: &[u64]) -> u64 {
    words.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// [`count_ones`] with the POPCNT instruction (the portable code compiles to a bit-twiddling
/// sequence several times slower when the target does not promise it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_ones_popcnt(words: &[u64]) -> u64 {
    count_ones_portable(words)
}

/// `dst |= src` word by word.
pub fn or_assign(dst: &mut [u64], src: &[u64]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d |= *s;
    }
}

/// `dst &= src` word by word.
pub fn and_assign(dst: &mut [u64], src: &[u64]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d &= *s;
    }
}

/// Number of bits set in both arrays (the inner product of Broder & Mitzenmacher §2.4).
pub fn count_and(a: &[u64], b: &[u64]) -> u64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| u64::from((x & y).count_ones()))
        .sum()
}

/// Number of bits set in either array.
pub fn count_or(a: &[u64], b: &[u64]) -> u64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| u64::from((x | y).count_ones()))
        .sum()
}

/// A software pipeline of depth `D`: the caller prefetches what an item needs as the item
/// arrives, [`push`](Self::push)es it, and processes the item `push` hands back — the one that
/// arrived `D` items earlier, whose memory has had time to come in — then processes the
/// [`drain`](Self::drain) at the end. Items come back in arrival order, so the result equals
/// processing them one by one; only the cache misses of consecutive items overlap.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// use bloomery::{BlockedBloomFilter, Filter, Hashed};
/// use bloomery::tuning::Pipeline;
///
/// let mut f = BlockedBloomFilter::try_new(10_000, 0.01)?;
/// let keys: Vec<u64> = (0..1000).collect();
/// f.extend(keys.iter().copied());
/// let mut pipe = Pipeline::<Hashed, 8>::default();
/// let mut hits = 0;
/// for k in &keys {
///     let h = f.hasher().hash(k);
///     f.prefetch_hashed(h); // start the cache miss now ...
///     if let Some(old) = pipe.push(h) {
///         hits += usize::from(f.contains_hashed(old)); // ... answer the key of 8 keys ago
///     }
/// }
/// hits += pipe.drain().filter(|&h| f.contains_hashed(h)).count();
/// assert_eq!(hits, keys.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Pipeline<T, const D: usize> {
    ring: [T; D],
    seen: usize,
}

impl<T: Copy + Default, const D: usize> Default for Pipeline<T, D> {
    fn default() -> Self {
        Self {
            ring: [T::default(); D],
            seen: 0,
        }
    }
}

impl<T: Copy + Default, const D: usize> Pipeline<T, D> {
    /// Add an item; returns the item `D` places before it, if any.
    #[inline(always)]
    pub fn push(&mut self, item: T) -> Option<T> {
        let slot = &mut self.ring[self.seen % D];
        let due = (self.seen >= D).then_some(*slot);
        *slot = item;
        self.seen += 1;
        due
    }

    /// The items still waiting, oldest first.
    #[inline(always)]
    pub fn drain(self) -> impl Iterator<Item = T> {
        (self.seen.saturating_sub(D)..self.seen).map(move |i| self.ring[i % D])
    }
}

/// Hint the CPU to bring the cache line holding `words[i]` closer, without blocking.
#[inline(always)]
pub fn prefetch(words: &[u64], i: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if i < words.len() {
            // SAFETY: `i` is in bounds, so the pointer is valid; a prefetch never faults or
            // changes memory, it only hints the cache.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch(words.as_ptr().add(i) as *const i8, _MM_HINT_T0);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (words, i);
    }
}

/// Number of set bits in the bit range `[start, end)`.
pub fn count_ones_range(words: &[u64], start: u64, end: u64) -> u64 {
    if start >= end {
        return 0;
    }
    let (sw, ew) = ((start / 64) as usize, ((end - 1) / 64) as usize);
    let lo_mask = !0u64 << (start % 64);
    let hi_mask = !0u64 >> (63 - (end - 1) % 64);
    if sw == ew {
        return u64::from((words[sw] & lo_mask & hi_mask).count_ones());
    }
    let mut n = u64::from((words[sw] & lo_mask).count_ones());
    n += words[sw + 1..ew]
        .iter()
        .map(|w| u64::from(w.count_ones()))
        .sum::<u64>();
    n + u64::from((words[ew] & hi_mask).count_ones())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item comes back exactly once, in arrival order, `D` pushes late or in the drain,
    /// whether there are fewer, as many or more items than the depth.
    #[test]
    fn pipeline_returns_items_in_order_d_late() {
        for n in [0usize, 1, 3, 4, 5, 17] {
            let mut p = Pipeline::<usize, 4>::default();
            let mut out = Vec::new();
            for i in 0..n {
                let due = p.push(i);
                assert_eq!(due, i.checked_sub(4), "n={n} i={i}");
                out.extend(due);
            }
            out.extend(p.drain());
            assert_eq!(out, (0..n).collect::<Vec<_>>(), "n={n}");
        }
    }

    #[test]
    fn zeroed_is_aligned_and_zero() {
        for len in [0usize, 1, 7, 8, 9, 1000, 200_000] {
            let w = Words::zeroed(len, u64::MAX).unwrap();
            assert_eq!(w.len(), len);
            assert!(w.as_slice().iter().all(|&x| x == 0));
            assert_eq!(w.as_slice().as_ptr() as usize % 64, 0);
        }
    }

    #[test]
    fn limit_refuses_before_allocating() {
        let e = Words::zeroed(1 << 40, 1 << 30).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }));
        let e = Words::zeroed(usize::MAX, u64::MAX).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }));
    }

    #[test]
    fn bits_roundtrip() {
        let mut w = Words::zeroed(4, u64::MAX).unwrap();
        assert!(set_bit(w.as_mut_slice(), 130));
        assert!(!set_bit(w.as_mut_slice(), 130));
        assert!(get_bit(w.as_slice(), 130));
        assert!(!get_bit(w.as_slice(), 129));
        assert_eq!(count_ones(w.as_slice()), 1);
        let mut bytes = Vec::new();
        w.write_le(|b| {
            bytes.extend_from_slice(b);
            Ok::<_, ()>(())
        })
        .unwrap();
        let back = Words::from_le_bytes(&bytes, u64::MAX).unwrap();
        assert_eq!(back, w);
    }

    /// What an allocator that defragments does with a heap buffer of `lines` cache lines:
    /// its bytes copied into a new allocation of the same layout, the old one freed.
    fn moving(
        lines: usize,
        calls: &mut usize,
    ) -> impl FnMut(std::ptr::NonNull<u8>) -> Option<std::ptr::NonNull<u8>> + '_ {
        move |p| {
            *calls += 1;
            let layout = std::alloc::Layout::from_size_align(lines * 64, 64).unwrap();
            // SAFETY: `p` is the live buffer of `lines` lines allocated with `layout` by the
            // global allocator (a `Vec<Line>` of that capacity); it is copied whole to a new
            // allocation of the same layout before it is freed.
            unsafe {
                let new = std::alloc::alloc(layout);
                let new = std::ptr::NonNull::new(new)?;
                std::ptr::copy_nonoverlapping(p.as_ptr(), new.as_ptr(), lines * 64);
                std::alloc::dealloc(p.as_ptr(), layout);
                Some(new)
            }
        }
    }

    /// Heap words move (once, to the mover's address, their words unchanged); words in an
    /// anonymous map or a file's map are never handed to the mover.
    #[test]
    fn relocate_moves_heap_words_only() {
        let mut w = Words::zeroed(1000, u64::MAX).unwrap();
        for (i, x) in w.as_mut_slice().iter_mut().enumerate() {
            *x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        let want = w.as_slice().to_vec();
        let (old, lines) = match &w.buf {
            Buf::Heap(v) => (v.as_ptr() as usize, v.capacity()),
            _ => panic!("small words are on the heap"),
        };
        let mut calls = 0;
        // SAFETY: the mover returns a copy in an allocation of the global allocator of the
        // buffer's layout and frees the old one; nothing else references the words.
        assert!(unsafe { w.relocate(&mut moving(lines, &mut calls)) });
        assert_eq!(calls, 1);
        assert_ne!(w.as_slice().as_ptr() as usize, old, "the words moved");
        assert_eq!(w.as_slice().as_ptr() as usize % 64, 0);
        assert_eq!(w.as_slice(), &want[..]);
        w.as_mut_slice()[3] = 7;
        assert_eq!(w.as_slice()[3], 7);

        let mut none = |_: std::ptr::NonNull<u8>| -> Option<std::ptr::NonNull<u8>> {
            panic!("mapped words must never reach the mover")
        };
        if cfg!(feature = "mmap") && !global_allocator_only() {
            let mut anon = Words::zeroed(ANON_THRESHOLD_BYTES / 8, u64::MAX).unwrap();
            assert!(matches!(anon.buf, Buf::Anon(_)));
            // SAFETY: the mover is never called.
            assert!(!unsafe { anon.relocate(&mut none) });
        } else {
            eprintln!("skipped the anonymous-map case: no memory maps in this build");
        }
        #[cfg(feature = "mmap")]
        {
            let mut file = tempfile::tempfile().unwrap();
            std::io::Write::write_all(&mut file, &[5u8; 4096]).unwrap();
            // SAFETY: the temporary file is this test's own; nothing truncates it while mapped.
            let map = Arc::new(unsafe { crate::map::Mmap::map(&file) }.unwrap());
            let mut mapped = Words::mapped(map, 64, 256, u64::MAX).unwrap();
            assert!(mapped.is_mapped());
            // SAFETY: the mover is never called.
            assert!(!unsafe { mapped.relocate(&mut none) });
            assert_eq!(mapped.as_slice()[0], u64::from_le_bytes([5; 8]));
        }
        #[cfg(not(feature = "mmap"))]
        eprintln!("skipped the file-map case: no memory maps in this build");
    }
}
