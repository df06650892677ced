//! Keys as bytes in memory, the layer under the key readers (`keys`, `arrow`): a key located
//! in memory ([`RawKey`]), the decimal text of integers (the library's `Key` encoding of
//! integer keys read from Python and Arrow), and keys cut from an arena of such texts.

/// Append the decimal digits of `v`.
#[inline]
pub fn push_u64(mut v: u64, buf: &mut Vec<u8>) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// Append the decimal text of `v` (a leading `-` when negative).
#[inline]
pub fn push_i64(v: i64, buf: &mut Vec<u8>) {
    if v < 0 {
        buf.push(b'-');
    }
    push_u64(v.unsigned_abs(), buf);
}

/// A key located in memory that its batch (`keys::Batch`) keeps alive and unchanged.
#[derive(Clone, Copy, Debug)]
pub struct RawKey {
    /// Where the key starts (set late by a batch whose keys are written into an arena that
    /// may still move while it grows).
    pub(crate) ptr: *const u8,
    pub(crate) len: usize,
}

impl RawKey {
    pub fn new(b: &[u8]) -> Self {
        Self {
            ptr: b.as_ptr(),
            len: b.len(),
        }
    }

    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: a RawKey only exists inside a Batch (keys.rs) (or a chunk it hands out), which keeps
        // the memory it points to alive and unchanged for as long as the keys are used.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl bloomery::Key for RawKey {
    #[inline(always)]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        f(self.bytes())
    }
}

/// Keys for consecutive arena entries ending at `ends`.
pub fn arena_keys(arena: &[u8], ends: &[usize], keys: &mut Vec<RawKey>) {
    let mut s = 0;
    for &e in ends {
        keys.push(RawKey::new(&arena[s..e]));
        s = e;
    }
}
