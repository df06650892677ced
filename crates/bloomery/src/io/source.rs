//! Where a decoded structure's words come from ([`Source`]): borrowed bytes, a map of a file,
//! an update's writable copy, or a reader read front to back ([`Persist::read_from`]).
//!
//! Read front to back, the header comes first, then each of the structure's arrays is read
//! straight into its own allocation as the decoder asks for it, in file order, so that
//! nothing holds the file's bytes beside the structure (a load needs the structure's memory,
//! not twice it). The checksum is computed as the bytes pass and checked against the trailer
//! at the end; when the decoder refuses the payload, the rest is still read, so that damaged
//! bytes are reported as a checksum mismatch, as [`Persist::from_bytes`] reports them.
//!
//! [`Persist::read_from`]: crate::io::format::Persist::read_from
//! [`Persist::from_bytes`]: crate::io::format::Persist::from_bytes

use std::cell::RefCell;
use std::io::{self, Read};
use std::sync::Arc;

use crate::error::{inconsistent, Error, FormatError, Result};
use crate::io::header::{peek, Decoded, StreamHash, FIXED_HEADER, MAX_HEADER, TRAILER};
use crate::store::Words;

/// Bytes read at a time between two arrays (skipped padding, the trailer).
const STEP: usize = 64 << 10;

/// Where a decoded structure's words come from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// Copy out of borrowed bytes.
    Bytes(&'a [u8]),
    /// Map in place (zero-copy).
    Mapped(&'a Arc<crate::map::Mmap>),
    /// Map in place, writable: a copy of a file being updated ([`crate::file::FileUpdate`]).
    Shared(&'a Arc<crate::store::SharedMap>),
    /// Read front to back from a reader, each array into its own allocation
    /// ([`Persist::read_from`]): arrays must be asked for in file order.
    Stream(&'a StreamIn<'a>),
}

impl Source<'_> {
    /// All bytes (none for a stream, whose bytes pass once).
    pub fn bytes(&self) -> &[u8] {
        match self {
            Source::Bytes(b) => b,
            Source::Mapped(m) => m,
            // SAFETY: the whole map is readable; while a structure is decoded from it nothing
            // writes it (the update hands the map to one decoder at a time, before any write).
            Source::Shared(m) => unsafe { std::slice::from_raw_parts(m.ptr(), m.len()) },
            Source::Stream(_) => &[],
        }
    }

    /// Whether [`words`](Self::words) copies the payload into the heap (where the memory
    /// limit bounds it), rather than viewing a file's pages in place (which it does not).
    pub(crate) fn copies(&self) -> bool {
        matches!(self, Source::Bytes(_) | Source::Stream(_))
    }

    /// The `words` words at byte `offset`, copied or mapped.
    pub fn words(&self, offset: usize, words: usize, limit: u64) -> Result<Words> {
        match self {
            Source::Bytes(b) => {
                let end = offset
                    .checked_add(words.saturating_mul(8))
                    .filter(|&e| e <= b.len())
                    .ok_or_else(|| inconsistent("words beyond end of payload"))?;
                Words::from_le_bytes(&b[offset..end], limit)
            }
            Source::Mapped(m) => Words::mapped(Arc::clone(m), offset, words, limit),
            Source::Shared(m) => Words::shared(m, offset, words, limit),
            Source::Stream(s) => s.words(offset, words, limit),
        }
    }
}

/// The payload of a file being read front to back (see the module docs): what
/// [`Source::Stream`](crate::io::format::Source::Stream) reads the arrays from.
pub struct StreamIn<'r> {
    state: RefCell<State<'r>>,
}

struct State<'r> {
    read: &'r mut dyn Read,
    /// File offset of the next byte.
    pos: u64,
    /// Bytes before the trailer.
    body: u64,
    hash: StreamHash,
}

/// A short read is a truncated file; other errors are the reader's.
fn read_error(e: io::Error, needed: u64, have: u64) -> Error {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        FormatError::Truncated { needed, have }.into()
    } else {
        e.into()
    }
}

impl State<'_> {
    /// Read exactly `buf.len()` bytes, hashing them when `hash` (all but the trailer).
    fn fill(&mut self, buf: &mut [u8], hash: bool) -> Result<()> {
        let end = self.pos + buf.len() as u64;
        self.read
            .read_exact(buf)
            .map_err(|e| read_error(e, self.body + TRAILER as u64, self.pos))?;
        if hash {
            self.hash.update(buf);
        }
        self.pos = end;
        Ok(())
    }

    /// Read and hash the bytes up to file offset `to`.
    fn skip_to(&mut self, to: u64) -> Result<()> {
        let mut buf = vec![0u8; STEP.min(to.saturating_sub(self.pos) as usize)];
        while self.pos < to {
            let n = STEP.min((to - self.pos) as usize);
            self.fill(&mut buf[..n], true)?;
        }
        Ok(())
    }
}

impl StreamIn<'_> {
    /// The `words` words at file offset `offset`, read into a new array; offsets must come
    /// in file order, within the payload.
    pub(crate) fn words(&self, offset: usize, words: usize, limit: u64) -> Result<Words> {
        let mut s = self.state.borrow_mut();
        let offset = offset as u64;
        let end = (words as u64)
            .checked_mul(8)
            .and_then(|n| n.checked_add(offset))
            .filter(|&e| e <= s.body)
            .ok_or_else(|| inconsistent("words beyond end of payload"))?;
        if offset < s.pos {
            return Err(inconsistent("a payload array read out of file order"));
        }
        s.skip_to(offset)?;
        let mut w = Words::zeroed(words, limit)?;
        s.fill(bytemuck::cast_slice_mut(w.as_mut_slice()), true)?;
        if cfg!(target_endian = "big") {
            for x in w.as_mut_slice() {
                *x = u64::from_le(*x);
            }
        }
        debug_assert_eq!(s.pos, end);
        Ok(w)
    }

    /// Read the rest of the payload and the trailer, and check the checksum.
    fn finish(&self) -> Result<()> {
        let mut s = self.state.borrow_mut();
        let body = s.body;
        s.skip_to(body)?;
        let mut trailer = [0u8; TRAILER];
        s.fill(&mut trailer, false)?;
        let (stored, computed) = (u64::from_le_bytes(trailer), s.hash.digest());
        if stored != computed {
            return Err(FormatError::ChecksumMismatch { stored, computed }.into());
        }
        Ok(())
    }
}

/// A file's header, read from the front of `r`: exactly its header's bytes.
fn read_head(r: &mut dyn Read) -> Result<Vec<u8>> {
    let mut head = vec![0u8; FIXED_HEADER];
    let mut got = 0;
    while got < FIXED_HEADER {
        match r.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    head.truncate(got);
    let h = head
        .get(12..16)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    // the rest of a header of a valid length (`peek` refuses any other)
    if got == FIXED_HEADER && h.is_multiple_of(64) && (FIXED_HEADER..=MAX_HEADER).contains(&h) {
        head.resize(h, 0);
        r.read_exact(&mut head[FIXED_HEADER..])
            .map_err(|e| read_error(e, h as u64, FIXED_HEADER as u64))?;
    }
    Ok(head)
}

/// Read a file front to back from `r` and decode it with `decode` (see the module docs).
/// A compressed or delta file, which cannot be decoded in one pass, is read whole and given
/// to `whole` instead. Reads exactly the file's bytes from `r`.
pub(crate) fn read_stream<T>(
    r: impl Read,
    decode: impl FnOnce(&Decoded, Source<'_>) -> Result<T>,
    whole: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<T> {
    read_stream_of(r, None, decode, whole)
}

/// [`read_stream`] of a file of `len` bytes, when known: a truncated file, or one with bytes
/// after its trailer, is refused before its payload is read.
pub(crate) fn read_stream_of<T>(
    mut r: impl Read,
    len: Option<u64>,
    decode: impl FnOnce(&Decoded, Source<'_>) -> Result<T>,
    whole: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<T> {
    let head = read_head(&mut r)?;
    let file = peek(&head)?;
    match len {
        Some(have) if have < file.file_len => {
            let needed = file.file_len;
            return Err(FormatError::Truncated { needed, have }.into());
        }
        Some(have) if have > file.file_len => {
            let extra = have - file.file_len;
            return Err(FormatError::TrailingData { extra }.into());
        }
        _ => {}
    }
    if file.compressed || file.delta {
        let mut all = head;
        let rest = file.file_len - file.header_len;
        r.take(rest).read_to_end(&mut all)?;
        return whole(&all);
    }
    let d = Decoded {
        header: file.header,
        payload_offset: file.header_len as usize,
        payload_len: usize::try_from(file.payload_len)
            .map_err(|_| inconsistent("payload too large for this platform"))?,
    };
    let mut hash = StreamHash::new();
    hash.update(&head);
    let stream = StreamIn {
        state: RefCell::new(State {
            read: &mut r,
            pos: file.header_len,
            body: file.file_len - TRAILER as u64,
            hash,
        }),
    };
    let decoded = decode(&d, Source::Stream(&stream));
    // the checksum first: damaged bytes are a mismatch, whatever the decoder made of them
    match (stream.finish(), decoded) {
        (Err(e @ Error::Format(FormatError::ChecksumMismatch { .. })), _) => Err(e),
        (_, Err(e)) => Err(e),
        (Err(e), Ok(_)) => Err(e),
        (Ok(()), Ok(v)) => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use crate::error::{Error, FormatError};
    use crate::{AnyFilter, CuckooFilter, Filter, Persist, ScalableBloomFilter};

    fn scalable() -> ScalableBloomFilter {
        let mut f = ScalableBloomFilter::try_new(100, 0.01).unwrap();
        for i in 0..1000u32 {
            f.insert(&i);
        }
        assert!(f.filters().len() > 2, "several arrays");
        f
    }

    #[test]
    fn reads_exactly_the_file_and_answers_as_from_bytes() {
        let f = scalable();
        let mut bytes = f.to_bytes();
        let len = bytes.len() as u64;
        bytes.extend_from_slice(b"next");
        let mut r = Cursor::new(&bytes);
        let back = ScalableBloomFilter::read_from(&mut r).unwrap();
        assert_eq!(back, f);
        assert_eq!(
            r.position(),
            len,
            "the bytes after the file are left unread"
        );
        let any = AnyFilter::read_from(&bytes[..len as usize]).unwrap();
        assert_eq!(any, AnyFilter::from_bytes(&bytes[..len as usize]).unwrap());
    }

    #[test]
    fn a_truncated_file_is_refused_wherever_it_ends() {
        let bytes = scalable().to_bytes();
        for cut in (0..bytes.len()).step_by(97).chain([bytes.len() - 1]) {
            let e = ScalableBloomFilter::read_from(&bytes[..cut]).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Format(FormatError::Truncated { .. } | FormatError::BadMagic)
                ),
                "{cut}: {e}"
            );
        }
    }

    #[test]
    fn a_damaged_byte_is_a_checksum_mismatch() {
        let bytes = scalable().to_bytes();
        let h = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        // in the payload, including where the decoder reads its own fields
        for at in (h..bytes.len() - 8).step_by(61) {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            let e = ScalableBloomFilter::read_from(&bad[..]).unwrap_err();
            assert!(
                matches!(e, Error::Format(FormatError::ChecksumMismatch { .. })),
                "{at}: {e}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_pipe_loads_as_a_stream() {
        let bytes = scalable().to_bytes();
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            println!("skipped: mkfifo is not available");
            return;
        }
        let writer = {
            let (fifo, bytes) = (fifo.clone(), bytes.clone());
            std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
        };
        assert_eq!(ScalableBloomFilter::load(&fifo).unwrap(), scalable());
        writer.join().unwrap();
    }

    #[test]
    fn another_kind_and_a_compressed_file() {
        let mut c = CuckooFilter::try_new(1000).unwrap();
        c.insert("a").unwrap();
        let bytes = c.to_bytes();
        assert!(ScalableBloomFilter::read_from(&bytes[..]).is_err());
        assert_eq!(CuckooFilter::read_from(&bytes[..]).unwrap(), c);
        let packed = crate::compress::compress_file(&scalable().to_bytes()).unwrap();
        assert_eq!(
            ScalableBloomFilter::read_from(&packed[..]).unwrap(),
            scalable()
        );
    }
}
