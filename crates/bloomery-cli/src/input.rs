//! Reading lines as bytes: files or stdin, gzip and zstd detected by their magic bytes, a
//! field taken from each line, hex keys decoded. One reused buffer, no per-line allocation.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

use anyhow::{bail, Context, Result};

use crate::cli::KeyArgs;
use crate::output::Progress;

const BUF: usize = 1 << 20;

/// How a line becomes its key.
#[derive(Debug, Clone)]
pub struct KeySpec {
    delimiter: Vec<u8>,
    field: Option<usize>,
    hex: bool,
}

impl KeySpec {
    pub fn new(a: &KeyArgs) -> Result<Self> {
        let delimiter = match &a.delimiter {
            None => b"\t".to_vec(),
            Some(d) => unescape(d)?,
        };
        if delimiter.is_empty() {
            bail!("the delimiter must not be empty");
        }
        if a.field == Some(0) {
            bail!("fields are numbered from 1 (-f 1 is the first field)");
        }
        if a.delimiter.is_some() && a.field.is_none() {
            bail!("--delimiter needs --field N to say which field is the key");
        }
        Ok(Self {
            delimiter,
            field: a.field,
            hex: a.hex,
        })
    }
}

fn unescape(d: &str) -> Result<Vec<u8>> {
    Ok(match d {
        "\\t" | "tab" => b"\t".to_vec(),
        "\\0" => b"\0".to_vec(),
        "\\\\" => b"\\".to_vec(),
        s => s.as_bytes().to_vec(),
    })
}

/// Counters from one pass over the inputs.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Lines read.
    pub lines: u64,
    /// Lines without the requested field.
    pub skipped: u64,
}

/// Open one input ("-" is stdin), decompressing gzip or zstd when the magic bytes say so.
pub fn open(name: &str) -> Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = if name == "-" {
        Box::new(io::stdin())
    } else {
        let f = File::open(name).with_context(|| format!("cannot open `{name}`"))?;
        if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            bail!("`{name}` is a directory");
        }
        Box::new(f)
    };
    let mut r = AlignedReader::new(raw);
    let head = r
        .fill_buf()
        .with_context(|| format!("cannot read `{name}`"))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::with_capacity(
            BUF,
            flate2::bufread::MultiGzDecoder::new(r),
        )))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        let d = zstd::stream::read::Decoder::with_buffer(r)
            .with_context(|| format!("cannot read zstd input `{name}`"))?;
        Ok(Box::new(BufReader::with_capacity(BUF, d)))
    } else {
        Ok(Box::new(r))
    }
}

/// One page of a read buffer (see [`AlignedReader`]).
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(4096))]
struct Page([u8; PAGE]);

/// A buffered reader whose buffer starts on a page boundary and is refilled from its start.
/// The kernel copies page-cache pages into a buffer at the same offset within a page much
/// faster than into one that is not (a heap buffer of 1 MiB is its own map and starts 16 bytes
/// into a page: `add` spent 2-3 times as long in `read` there), and a file read from offset 0
/// in whole-buffer steps keeps both aligned.
struct AlignedReader<R> {
    inner: R,
    buf: Box<[Page]>,
    pos: usize,
    filled: usize,
}

impl<R: Read> AlignedReader<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            buf: vec![Page([0; PAGE]); BUF / PAGE].into_boxed_slice(),
            pos: 0,
            filled: 0,
        }
    }
}

impl<R: Read> Read for AlignedReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.filled && out.len() >= BUF {
            // nothing buffered and a large read: straight into the caller's buffer
            return self.inner.read(out);
        }
        let n = {
            let avail = self.fill_buf()?;
            let n = avail.len().min(out.len());
            out[..n].copy_from_slice(&avail[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for AlignedReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.filled {
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut self.buf);
            self.filled = loop {
                match self.inner.read(bytes) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => break r?,
                }
            };
            self.pos = 0;
        }
        let bytes: &[u8] = bytemuck::cast_slice(&self.buf);
        Ok(&bytes[self.pos..self.filled])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.filled);
    }
}

/// The input names, with stdin when none were given.
pub fn names(inputs: &[String]) -> Vec<String> {
    if inputs.is_empty() {
        vec!["-".to_string()]
    } else {
        inputs.to_vec()
    }
}

/// Call `f(line, key)` for every line of every input, in order. `line` excludes the line
/// terminator (`\n` or `\r\n`); `key` is `None` when the line lacks the requested field.
/// Fails on an empty input (no lines at all), an unreadable input or an invalid hex key.
pub fn for_each_line(
    inputs: &[String],
    spec: &KeySpec,
    mut f: impl FnMut(&[u8], Option<&[u8]>) -> Result<()>,
) -> Result<Counts> {
    let mut counts = Counts::default();
    let mut carry = Vec::with_capacity(4096);
    let mut hexbuf = Vec::new();
    let mut progress = Progress::new("lines");
    for name in names(inputs) {
        let mut r = open(&name)?;
        let mut one = |line: &[u8], counts: &mut Counts| -> Result<()> {
            counts.lines += 1;
            let line = trim_eol(line);
            let key = match key_of(line, spec, &mut hexbuf) {
                Ok(k) => k,
                Err(e) => bail!("{name}: line {}: {e}", counts.lines),
            };
            if key.is_none() {
                counts.skipped += 1;
            }
            f(line, key)?;
            if counts.lines & 0xFFFF == 0 {
                progress.set(counts.lines);
            }
            Ok(())
        };
        // Lines are handed out straight from the reader's buffer; only a line that straddles
        // two buffer fills is copied (into `carry`).
        loop {
            let avail = r
                .fill_buf()
                .with_context(|| format!("cannot read `{name}`"))?;
            let len = avail.len();
            if len == 0 {
                if !carry.is_empty() {
                    one(&carry, &mut counts)?;
                    carry.clear();
                }
                break;
            }
            let mut start = 0;
            if !carry.is_empty() {
                match memchr::memchr(b'\n', avail) {
                    Some(i) => {
                        carry.extend_from_slice(&avail[..=i]);
                        one(&carry, &mut counts)?;
                        carry.clear();
                        start = i + 1;
                    }
                    None => {
                        carry.extend_from_slice(avail);
                        r.consume(len);
                        continue;
                    }
                }
            }
            let base = start;
            for end in memchr::memchr_iter(b'\n', &avail[base..]) {
                let stop = base + end + 1;
                one(&avail[start..stop], &mut counts)?;
                start = stop;
            }
            carry.extend_from_slice(&avail[start..]);
            r.consume(len);
        }
    }
    progress.finish();
    if counts.lines == 0 {
        bail!("the input is empty: no lines to read");
    }
    Ok(counts)
}

/// Call `f` with blocks of whole lines of one input (each block ends with a line terminator;
/// the input's unterminated last line gets one), about `block` bytes each, read straight from
/// the input with no per-line work: the caller splits lines, which lets several threads share
/// that work. Returns the bytes read (0 for an empty input); fails on an unreadable input.
pub fn for_each_block(
    name: &str,
    block: usize,
    mut f: impl FnMut(Vec<u8>) -> Result<()>,
) -> Result<u64> {
    let mut total = 0u64;
    let mut buf: Vec<u8> = Vec::with_capacity(block + BUF);
    {
        let mut r = open(name)?;
        loop {
            // read straight into the block (no intermediate buffer copy)
            let want = block.saturating_sub(buf.len()).max(BUF) as u64;
            let n = (&mut r)
                .take(want)
                .read_to_end(&mut buf)
                .with_context(|| format!("cannot read `{name}`"))?;
            if n == 0 {
                break;
            }
            total += n as u64;
            if buf.len() >= block {
                // hand over everything up to the last line terminator; keep the partial line
                if let Some(i) = memchr::memrchr(b'\n', &buf) {
                    let rest = buf.split_off(i + 1);
                    f(std::mem::replace(&mut buf, rest))?;
                    buf.reserve(block + BUF);
                }
            }
        }
        // an input's last line ends at the end of that input, terminated or not
        if !buf.is_empty() {
            if buf.last() != Some(&b'\n') {
                buf.push(b'\n');
            }
            f(std::mem::take(&mut buf))?;
        }
    }
    Ok(total)
}

/// Open `name` for reading by byte ranges ([`for_each_line_at`]): returns the file and its
/// length when it is a regular, non-empty, uncompressed file. Returns `Ok(None)` when `name` is
/// stdin, not a regular file, empty by its metadata (`/proc` files) or compressed: the caller
/// then reads it as a stream ([`for_each_block`]).
pub fn open_plain(name: &str) -> Result<Option<(File, u64)>> {
    if name == "-" {
        return Ok(None);
    }
    let file = File::open(name).with_context(|| format!("cannot open `{name}`"))?;
    let meta = file
        .metadata()
        .with_context(|| format!("cannot read `{name}`"))?;
    if meta.is_dir() {
        bail!("`{name}` is a directory");
    }
    let len = meta.len();
    if !meta.is_file() || len == 0 {
        return Ok(None);
    }
    let mut head = [0u8; 4];
    let n = read_at(&file, &mut head, 0).with_context(|| format!("cannot read `{name}`"))?;
    if is_compressed(&head[..n]) {
        return Ok(None);
    }
    Ok(Some((file, len)))
}

/// Read at `off` until `buf` is full or the file ends; returns the bytes read.
pub fn read_at(file: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], off + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Bytes read at a time by [`for_each_line_at`] (small enough to stay in a core's L2 cache
/// between the copy from the page cache and the line splitting).
pub const RANGE_CHUNK: usize = 128 << 10;

const PAGE: usize = 4096;

/// The reusable read buffer of [`for_each_line_at`]: whole pages, starting on a page boundary.
#[derive(Default)]
pub struct RangeBuf(Vec<Page>);

impl RangeBuf {
    fn bytes(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.0)
    }

    /// Grow to at least `bytes` (keeping the contents).
    fn grow_to(&mut self, bytes: usize) {
        if self.0.len() * PAGE < bytes {
            self.0.resize(bytes.div_ceil(PAGE), Page([0; PAGE]));
        }
    }
}

/// Call `f` with each line of `file` (of length `len`; bytes past it are ignored) that *begins*
/// in the byte range `start..end`, in order, the line terminator included (the file's last line
/// may lack one). Lines are read with positional reads into `buf` (reused; grown only for a line
/// longer than it), so several threads can read disjoint ranges of one file at once, and
/// consecutive ranges together yield every line exactly once. Stops early when `f` returns
/// false.
///
/// Every read lands at the same offset within a page of `buf` as its file offset has within a
/// page of the file (see [`AlignedReader`] for why): the buffer's first byte stays at a
/// page-aligned file offset.
pub fn for_each_line_at(
    file: &File,
    len: u64,
    start: u64,
    end: u64,
    rb: &mut RangeBuf,
    mut f: impl FnMut(&[u8]) -> bool,
) -> io::Result<()> {
    let end = end.min(len);
    if start >= end {
        return Ok(());
    }
    rb.grow_to(RANGE_CHUNK);
    let mut buf = rb.bytes();
    // A line begins at 0 or after a '\n': from `start - 1` on, skip to the first line start.
    let mut owned = start == 0;
    let first = start.saturating_sub(1);
    let mut base = first - first % PAGE as u64; // file offset of buf[0], page-aligned
    let mut pos = base; // file offset of the next read: always base + hi
                        // unprocessed bytes: buf[lo..hi] (lo may start past hi, inside the first read)
    let (mut lo, mut hi) = ((first - base) as usize, 0usize);
    while pos < len {
        if lo >= PAGE && lo <= hi {
            // drop the processed pages, keeping the page offset of what is left
            let drop = lo - lo % PAGE;
            buf.copy_within(drop..hi, 0);
            base += drop as u64;
            lo -= drop;
            hi -= drop;
        }
        if hi == buf.len() {
            // a line longer than the buffer
            let grown = buf.len() * 2;
            rb.grow_to(grown);
            buf = rb.bytes();
        }
        let want = (buf.len() - hi).min(usize::try_from(len - pos).unwrap_or(usize::MAX));
        let n = read_at(file, &mut buf[hi..hi + want], pos)?;
        if n == 0 {
            break; // the file shrank
        }
        pos += n as u64;
        hi += n;
        if lo >= hi {
            continue;
        }
        if !owned {
            match memchr::memchr(b'\n', &buf[lo..hi]) {
                Some(i) => {
                    lo += i + 1;
                    owned = true;
                    if base + lo as u64 >= end {
                        return Ok(());
                    }
                }
                None => {
                    lo = hi;
                    continue;
                }
            }
        }
        let from = lo;
        for i in memchr::memchr_iter(b'\n', &buf[from..hi]) {
            let stop = from + i + 1;
            if !f(&buf[lo..stop]) {
                return Ok(());
            }
            lo = stop;
            if base + lo as u64 >= end {
                return Ok(());
            }
        }
    }
    // the file's last line, without a terminator
    if owned && lo < hi {
        f(&buf[lo..hi]);
    }
    Ok(())
}

fn is_compressed(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b]) || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// Call `f` with each line of `block` in order, the terminator included (the last line may
/// lack one); stops early when `f` returns false.
pub fn for_each_line_in(block: &[u8], mut f: impl FnMut(&[u8]) -> bool) {
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', block) {
        if !f(&block[start..=end]) {
            return;
        }
        start = end + 1;
    }
    if start < block.len() {
        f(&block[start..]);
    }
}

#[inline]
pub fn trim_eol(buf: &[u8]) -> &[u8] {
    let mut l = buf;
    if let [rest @ .., b'\n'] = l {
        l = rest;
    }
    if let [rest @ .., b'\r'] = l {
        l = rest;
    }
    l
}

/// The key of a line under `spec`; `hexbuf` holds decoded hex keys.
#[inline(always)]
pub fn key_of<'a>(
    line: &'a [u8],
    spec: &KeySpec,
    hexbuf: &'a mut Vec<u8>,
) -> Result<Option<&'a [u8]>, String> {
    if spec.field.is_none() && !spec.hex {
        // the whole line (the common case, kept inline in the callers' loops)
        return Ok(Some(line));
    }
    field_key_of(line, spec, hexbuf)
}

/// [`key_of`] with a field or hex decoding.
#[inline(never)]
fn field_key_of<'a>(
    line: &'a [u8],
    spec: &KeySpec,
    hexbuf: &'a mut Vec<u8>,
) -> Result<Option<&'a [u8]>, String> {
    let key = match spec.field {
        None => line,
        Some(n) => match field(line, &spec.delimiter, n) {
            Some(k) => k,
            None => return Ok(None),
        },
    };
    if !spec.hex {
        return Ok(Some(key));
    }
    if key.len() % 2 != 0 {
        return Err("invalid hex key: odd number of digits".into());
    }
    hexbuf.clear();
    hexbuf.resize(key.len() / 2, 0);
    hex::decode_to_slice(key, hexbuf).map_err(|e| format!("invalid hex key: {e}"))?;
    Ok(Some(hexbuf.as_slice()))
}

/// Field `n` (1-based) of `line`, split on `delim`.
fn field<'a>(line: &'a [u8], delim: &[u8], n: usize) -> Option<&'a [u8]> {
    let mut rest = line;
    let mut i = 1;
    loop {
        let end = find(rest, delim);
        if i == n {
            return Some(&rest[..end.unwrap_or(rest.len())]);
        }
        rest = &rest[end? + delim.len()..];
        i += 1;
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() == 1 {
        hay.iter().position(|b| *b == needle[0])
    } else {
        hay.windows(needle.len()).position(|w| w == needle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every split of a file into consecutive ranges yields each line once, in order.
    #[test]
    fn ranges_yield_every_line_once() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for case in 0..200 {
            // lines of 0..40 bytes, some far longer than the read buffer; with or without a
            // final terminator
            let mut data = Vec::new();
            // some files of thousands of lines: many buffer refills, lines across them
            let lines = if case % 5 == 0 {
                2_000 + next(20_000)
            } else {
                next(60)
            };
            for i in 0..lines {
                let n = if next(20) == 0 && lines < 100 {
                    RANGE_CHUNK as u64 + next(3000)
                } else {
                    next(40)
                };
                data.extend((0..n).map(|j| b'a' + ((i + j) % 26) as u8));
                data.push(b'\n');
            }
            if case % 3 == 0 {
                data.extend_from_slice(b"tail");
            }
            let mut tmp = tempfile::NamedTempFile::new().unwrap();
            std::io::Write::write_all(&mut tmp, &data).unwrap();
            let len = data.len() as u64;
            let mut cuts: Vec<u64> = (0..next(6)).map(|_| next(len + 1)).collect();
            cuts.extend([0, len]);
            cuts.sort_unstable();
            let mut got = Vec::new();
            let mut buf = RangeBuf::default();
            for w in cuts.windows(2) {
                for_each_line_at(tmp.as_file(), len, w[0], w[1], &mut buf, |l| {
                    // one line per call
                    assert!(!l.is_empty() && !l[..l.len() - 1].contains(&b'\n'));
                    got.extend_from_slice(l);
                    true
                })
                .unwrap();
            }
            assert_eq!(got, data, "case {case}, cuts {cuts:?}");
        }
    }

    #[test]
    fn fields() {
        assert_eq!(field(b"a,b,c", b",", 1), Some(&b"a"[..]));
        assert_eq!(field(b"a,b,c", b",", 3), Some(&b"c"[..]));
        assert_eq!(field(b"a,b,c", b",", 4), None);
        assert_eq!(field(b"a::b", b"::", 2), Some(&b"b"[..]));
        assert_eq!(field(b"", b",", 1), Some(&b""[..]));
        assert_eq!(trim_eol(b"x\r\n"), b"x");
        assert_eq!(trim_eol(b"x"), b"x");
    }
}
