//! Reading lines as bytes: files or stdin, gzip and zstd detected by their magic bytes, a
//! field taken from each line, hex keys decoded. One reused buffer, no per-line allocation.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

use anyhow::{bail, Context, Result};

use crate::cli::KeyArgs;
use crate::output::Progress;

const BUF: usize = 1 << 20;
const PAGE: usize = 4096;

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

/// The library's parallel insert takes keys by these rules.
impl bloomery::lines::LineKeys for KeySpec {
    #[inline]
    fn key<'a>(
        &self,
        line: &'a [u8],
        scratch: &'a mut Vec<u8>,
    ) -> Result<Option<&'a [u8]>, String> {
        key_of(line, self, scratch)
    }
}

pub fn unescape(d: &str) -> Result<Vec<u8>> {
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

/// Lines read a batch at a time by [`for_each_batch`]: their text, whether each has a key,
/// and the hashes of the keys (in line order, one per line that has a key).
#[derive(Default)]
pub struct Batch {
    /// The hashes of the keyed lines, in order.
    pub hashes: Vec<bloomery::Hashed>,
    /// 1-based number, in the whole input, of the batch's first line.
    pub first: u64,
    /// The lines, each followed by `\n`.
    text: Vec<u8>,
    /// Where each line ends in `text` (the index of its `\n`).
    ends: Vec<usize>,
    keyed: Vec<bool>,
}

impl Batch {
    /// Lines in the batch.
    pub fn len(&self) -> usize {
        self.keyed.len()
    }

    /// Line `i` of the batch, without its terminator (empty when the batch keeps no text:
    /// [`for_each_hash_batch`]).
    pub fn line(&self, i: usize) -> &[u8] {
        self.lines_nl(i, i + 1).split_last().map_or(&[], |(_, l)| l)
    }

    /// Lines `i..j` of the batch, each followed by `\n` (one write for a run of lines).
    pub fn lines_nl(&self, i: usize, j: usize) -> &[u8] {
        if i >= j || j > self.ends.len() {
            return &[];
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] + 1 };
        &self.text[start..=self.ends[j - 1]]
    }

    /// Whether line `i` has a key (and so a hash in [`hashes`](Self::hashes)).
    pub fn has_key(&self, i: usize) -> bool {
        self.keyed[i]
    }

    /// The lines with a key, as (1-based number in the whole input, line), in the order of
    /// [`hashes`](Self::hashes).
    pub fn keyed_lines(&self) -> impl Iterator<Item = (u64, &[u8])> {
        (0..self.len())
            .filter(|&i| self.keyed[i])
            .map(|i| (self.first + i as u64, self.line(i)))
    }

    fn clear(&mut self) {
        self.hashes.clear();
        self.text.clear();
        self.ends.clear();
        self.keyed.clear();
    }
}

/// Lines per batch of [`for_each_batch`].
pub const BATCH: usize = 1024;

/// [`for_each_line`] a batch of [`BATCH`] lines at a time, their keys hashed with `hasher`:
/// for the library's batched calls, which prefetch each key's memory ahead of its use.
pub fn for_each_batch(
    inputs: &[String],
    spec: &KeySpec,
    hasher: &bloomery::KeyHasher,
    f: impl FnMut(&Batch) -> Result<()>,
) -> Result<Counts> {
    batches(inputs, spec, hasher, true, f)
}

/// [`for_each_batch`] for callers that need only the hashes and the line numbers (inserts):
/// the lines' text is not kept ([`Batch::line`] is empty).
pub fn for_each_hash_batch(
    inputs: &[String],
    spec: &KeySpec,
    hasher: &bloomery::KeyHasher,
    f: impl FnMut(&Batch) -> Result<()>,
) -> Result<Counts> {
    batches(inputs, spec, hasher, false, f)
}

fn batches(
    inputs: &[String],
    spec: &KeySpec,
    hasher: &bloomery::KeyHasher,
    text: bool,
    mut f: impl FnMut(&Batch) -> Result<()>,
) -> Result<Counts> {
    let mut batch = Batch {
        first: 1,
        ..Batch::default()
    };
    let mut read = 0u64;
    let counts = for_each_line(inputs, spec, |line, key| {
        read += 1;
        if text {
            batch.text.extend_from_slice(line);
            batch.ends.push(batch.text.len());
            batch.text.push(b'\n');
        }
        batch.keyed.push(key.is_some());
        if let Some(k) = key {
            batch.hashes.push(hasher.hash_bytes(k));
        }
        if batch.len() == BATCH {
            f(&batch)?;
            batch.clear();
            batch.first = read + 1;
        }
        Ok(())
    })?;
    if batch.len() > 0 {
        f(&batch)?;
    }
    Ok(counts)
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

/// The blocks of whole lines of one input (each ends with a line terminator; the input's
/// unterminated last line gets one), about `block` bytes each, read straight from the input
/// with no per-line work: the library's parallel insert splits the lines on its threads
/// ([`bloomery::lines::LineSource::Blocks`]).
pub struct Blocks {
    r: Box<dyn BufRead + Send>,
    name: String,
    block: usize,
    buf: Vec<u8>,
    done: bool,
}

/// The blocks of whole lines of input `name` (see [`Blocks`]).
pub fn blocks(name: &str, block: usize) -> Result<Blocks> {
    Ok(Blocks {
        r: open(name)?,
        name: name.to_string(),
        block,
        buf: Vec::with_capacity(block + BUF),
        done: false,
    })
}

impl Iterator for Blocks {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<io::Result<Vec<u8>>> {
        while !self.done {
            // read straight into the block (no intermediate buffer copy)
            let want = self.block.saturating_sub(self.buf.len()).max(BUF) as u64;
            let n = match (&mut self.r).take(want).read_to_end(&mut self.buf) {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(io::Error::new(
                        e.kind(),
                        format!("`{}`: {e}", self.name),
                    )));
                }
            };
            if n == 0 {
                self.done = true;
                break;
            }
            if self.buf.len() >= self.block {
                // hand over everything up to the last line terminator; keep the partial line
                if let Some(i) = memchr::memrchr(b'\n', &self.buf) {
                    let rest = self.buf.split_off(i + 1);
                    let out = std::mem::replace(&mut self.buf, rest);
                    self.buf.reserve(self.block + BUF);
                    return Some(Ok(out));
                }
            }
        }
        // an input's last line ends at the end of that input, terminated or not
        if self.buf.is_empty() {
            return None;
        }
        if self.buf.last() != Some(&b'\n') {
            self.buf.push(b'\n');
        }
        Some(Ok(std::mem::take(&mut self.buf)))
    }
}

/// Open `name` for reading by byte ranges ([`bloomery::lines::LineSource::File`]): returns the file
/// and its length when it is a regular, non-empty, uncompressed file. Returns `Ok(None)` when
/// `name` is stdin, not a regular file, empty by its metadata (`/proc` files) or compressed:
/// the caller then reads it as a stream ([`blocks`]).
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
    let mut head = Vec::with_capacity(4);
    (&file)
        .take(4)
        .read_to_end(&mut head)
        .with_context(|| format!("cannot read `{name}`"))?;
    if is_compressed(&head) {
        return Ok(None);
    }
    Ok(Some((file, len)))
}

fn is_compressed(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b]) || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
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
