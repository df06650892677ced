//! Data and dictionary pages checked before the `parquet` crate decodes them. The crate's
//! column reader trusts what a page says of itself: a page of byte arrays declaring more
//! values than its bytes hold makes its plain decoder read a length prefix past the end (a
//! panic in `util/bit_util.rs`), a dictionary page declaring more values does the same, and
//! a dictionary-encoded page without a dictionary page trips an assertion. [`CheckedPages`]
//! sits between the crate's page reader and its column reader and refuses such a page with an
//! error for the column chunk: the page's levels are decoded here (repetition and definition
//! levels, RLE/bit-packed hybrid or the deprecated bit-packed form) to count the values it must
//! hold, and its value bytes are walked for the encodings whose decoders trust them (plain of
//! every physical type, dictionary indices, run-length booleans, byte-stream split). Pages
//! that pass are handed on unchanged; the crate's own checks still run after these.

use std::fs::File;

use parquet::basic::{Encoding, Type};
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::schema::types::ColumnDescPtr;

use super::file::read_exact_at;
use super::footer::check_page_header;
use super::thrift::{BoolElements, Reader, ThriftError, T_I32, T_STRUCT};
use crate::store::{check_size, max_bytes};

/// Bytes of a column chunk read at once to check a page header: doubled, up to
/// [`MAX_PAGE_HEADER`], while a header runs past them.
const PAGE_HEADER_READ: u64 = 64 << 10;

/// Longest page header read (its statistics hold a page's least and greatest values).
const MAX_PAGE_HEADER: u64 = 16 << 20;

/// Check the page headers of the column chunk of `len` bytes at `start` of `file` before the
/// `parquet` crate's page reader reads them: each one well-formed and of the types the crate
/// reads it by ([`check_page_header`]), no size or count negative, its page inside the chunk,
/// its uncompressed size (which the crate allocates before decompressing) within the memory
/// limit, and a format-v2 page's level lengths within it (the crate adds them as `i32`).
pub(crate) fn check_page_headers(file: &File, start: u64, len: u64) -> Result<(), String> {
    let end = start
        .checked_add(len)
        .ok_or("the column chunk ends past 2⁶⁴ bytes")?;
    let (mut at, mut page, mut buf) = (start, 0usize, Vec::new());
    while at < end {
        let remaining = end - at;
        let most = remaining.min(MAX_PAGE_HEADER);
        let mut want = remaining.min(PAGE_HEADER_READ);
        let header_len = loop {
            buf.resize(want as usize, 0);
            read_exact_at(file, &mut buf, at).map_err(|e| format!("page {page}: {e}"))?;
            match check_page_header(&buf) {
                Ok(n) => break n,
                Err(_) if want < most => want = (want * 2).min(most),
                Err(why) => {
                    return Err(format!(
                        "the header of page {page} (at offset {at}) is malformed: {why}"
                    ))
                }
            }
        };
        let (uncompressed, compressed, levels) = page_sizes(&buf[..header_len])
            .map_err(|e| format!("the header of page {page} (at offset {at}): {e}"))?;
        let left = remaining - header_len as u64;
        if compressed > left {
            return Err(format!(
                "page {page} ({compressed} bytes at offset {}) runs past its column chunk",
                at + header_len as u64
            ));
        }
        check_size(uncompressed, max_bytes()).map_err(|e| format!("page {page}: {e}"))?;
        if levels > uncompressed {
            return Err(format!(
                "page {page}: levels of {levels} bytes in a page of {uncompressed} bytes"
            ));
        }
        at += header_len as u64 + compressed;
        page += 1;
    }
    Ok(())
}

/// A checked page header's uncompressed and compressed sizes, and the bytes of a format-v2
/// page's levels (0 for other pages).
fn page_sizes(header: &[u8]) -> Result<(u64, u64, u64), ThriftError> {
    // as the crate reads an i32, and as the check refused negative ones
    let size = |c: &mut Reader<'_>| c.zigzag().map(|v| (v as i32).max(0) as u64);
    let mut c = Reader::new(header, 64, BoolElements::Refused);
    let (mut uncompressed, mut compressed, mut levels) = (0, 0, 0);
    let mut last = 0i16;
    while let Some((id, ty)) = c.field(&mut last)? {
        match (id, ty) {
            (2, T_I32) => uncompressed = size(&mut c)?,
            (3, T_I32) => compressed = size(&mut c)?,
            (8, T_STRUCT) => {
                let mut last = 0i16;
                while let Some((id, ty)) = c.field(&mut last)? {
                    match (id, ty) {
                        (5 | 6, T_I32) => levels += size(&mut c)?,
                        (_, ty) => c.skip_value(ty, 2)?,
                    }
                }
            }
            (_, ty) => c.skip_value(ty, 1)?,
        }
    }
    Ok((uncompressed, compressed, levels))
}

/// A page reader whose pages are checked (see the module's documentation).
pub(crate) struct CheckedPages<R> {
    inner: R,
    descr: ColumnDescPtr,
    /// Values of the chunk's dictionary page, once read.
    dictionary: Option<usize>,
}

impl<R: PageReader> CheckedPages<R> {
    pub(crate) fn new(inner: R, descr: ColumnDescPtr) -> Self {
        CheckedPages {
            inner,
            descr,
            dictionary: None,
        }
    }

    fn checked(&mut self, page: Option<Page>) -> Result<Option<Page>> {
        if let Some(p) = &page {
            self.check(p).map_err(ParquetError::General)?;
        }
        Ok(page)
    }

    fn check(&mut self, page: &Page) -> Result<(), String> {
        let max_def = self.descr.max_def_level().max(0) as u64;
        let max_rep = self.descr.max_rep_level().max(0) as u64;
        match page {
            Page::DictionaryPage {
                buf,
                num_values,
                encoding,
                ..
            } => {
                let n = *num_values as usize;
                // the crate decodes a dictionary page as plain values (other encodings it
                // refuses itself)
                if matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                    self.values(buf, Encoding::PLAIN, n)
                        .map_err(|why| format!("dictionary page of {n} values: {why}"))?;
                }
                self.dictionary = Some(n);
                Ok(())
            }
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                ..
            } => {
                let n = *num_values as usize;
                let mut at = 0;
                if max_rep > 0 {
                    at += v1_levels(buf, *rep_level_encoding, max_rep, n, "repetition")?.0;
                }
                let present = if max_def > 0 {
                    let (used, present) =
                        v1_levels(&buf[at..], *def_level_encoding, max_def, n, "definition")?;
                    at += used;
                    present
                } else {
                    n
                };
                self.values(&buf[at..], *encoding, present)
                    .map_err(|why| format!("data page of {n} values: {why}"))
            }
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                let n = *num_values as usize;
                let (r, d) = (*rep_levels_byte_len as usize, *def_levels_byte_len as usize);
                if r.saturating_add(d) > buf.len() {
                    return Err(format!(
                        "data page of {n} values: its levels ({r} + {d} bytes) are longer \
                         than the page ({} bytes)",
                        buf.len()
                    ));
                }
                if max_rep > 0 {
                    hybrid(&buf[..r], max_rep, n, "repetition levels")?;
                }
                let present = if max_def > 0 {
                    hybrid(&buf[r..r + d], max_def, n, "definition levels")?
                } else {
                    n
                };
                self.values(&buf[r + d..], *encoding, present)
                    .map_err(|why| format!("data page of {n} values: {why}"))
            }
        }
    }

    /// Check that `data` holds `count` values in `encoding`, where the crate's decoder would
    /// read them without checking.
    fn values(&self, data: &[u8], encoding: Encoding, count: usize) -> Result<(), String> {
        let physical = self.descr.physical_type();
        let width = match physical {
            Type::INT32 | Type::FLOAT => 4,
            Type::INT64 | Type::DOUBLE => 8,
            Type::INT96 => 12,
            Type::FIXED_LEN_BYTE_ARRAY => self.descr.type_length().max(0) as usize,
            Type::BOOLEAN | Type::BYTE_ARRAY => 0,
        };
        let short = |need: String| {
            format!(
                "its {encoding} values need {need}, the page holds {} bytes",
                data.len()
            )
        };
        match encoding {
            Encoding::PLAIN => match physical {
                Type::BOOLEAN => {
                    if count.div_ceil(8) > data.len() {
                        return Err(short(format!("{} bytes", count.div_ceil(8))));
                    }
                }
                Type::BYTE_ARRAY => {
                    let mut at = 0usize;
                    for i in 0..count {
                        let len = data.get(at..).and_then(le32);
                        match len {
                            Some(len) if len <= data.len() - at - 4 => at += 4 + len,
                            _ => {
                                return Err(format!(
                                    "its byte array {i} of {count} runs past the page's end \
                                     ({} bytes)",
                                    data.len()
                                ))
                            }
                        }
                    }
                }
                _ => {
                    if count.saturating_mul(width) > data.len() {
                        return Err(short(format!("{count} × {width} bytes")));
                    }
                }
            },
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
                let Some(dictionary) = self.dictionary else {
                    return Err("dictionary-encoded values without a dictionary page".into());
                };
                if count == 0 {
                    return Ok(());
                }
                let (&bit_width, indices) = data
                    .split_first()
                    .ok_or("dictionary indices without their bit width")?;
                if bit_width > 32 {
                    return Err(format!("dictionary indices of {bit_width} bits"));
                }
                if dictionary == 0 {
                    return Err("dictionary indices into an empty dictionary".into());
                }
                hybrid_width(
                    indices,
                    u32::from(bit_width),
                    dictionary as u64 - 1,
                    count,
                    "dictionary indices",
                )?;
            }
            Encoding::RLE if physical == Type::BOOLEAN => {
                let len = le32(data).ok_or("run-length booleans without their length")?;
                if len > data.len() - 4 {
                    return Err(short(format!("{len} + 4 bytes")));
                }
                hybrid(&data[4..4 + len], 1, count, "run-length booleans")?;
            }
            Encoding::BYTE_STREAM_SPLIT
                if width > 0 && count.saturating_mul(width) > data.len() =>
            {
                return Err(short(format!("{count} × {width} bytes")));
            }
            // the delta encodings carry their own counts, which their decoders check
            _ => {}
        }
        Ok(())
    }
}

/// A little-endian `u32` length at the start of `b`.
fn le32(b: &[u8]) -> Option<usize> {
    let b: [u8; 4] = b.get(..4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b) as usize)
}

/// Levels of a format-v1 data page at the start of `buf`: (bytes they take, how many of the
/// first `n` equal `max`).
fn v1_levels(
    buf: &[u8],
    encoding: Encoding,
    max: u64,
    n: usize,
    what: &str,
) -> Result<(usize, usize), String> {
    match encoding {
        Encoding::RLE => {
            let len = le32(buf).ok_or_else(|| format!("{what} levels without their length"))?;
            if len > buf.len() - 4 {
                return Err(format!(
                    "{what} levels of {len} bytes in a page of {} bytes",
                    buf.len()
                ));
            }
            let present = hybrid(&buf[4..4 + len], max, n, &format!("{what} levels"))?;
            Ok((4 + len, present))
        }
        #[allow(deprecated)]
        Encoding::BIT_PACKED => {
            let bits = bit_width(max);
            let len = (n as u64 * u64::from(bits)).div_ceil(8);
            if len > buf.len() as u64 {
                return Err(format!(
                    "{n} bit-packed {what} levels need {len} bytes, the page holds {}",
                    buf.len()
                ));
            }
            let mut present = 0;
            for i in 0..n as u64 {
                let mut v = 0u64;
                for j in i * u64::from(bits)..(i + 1) * u64::from(bits) {
                    v = (v << 1) | u64::from((buf[(j / 8) as usize] >> (7 - j % 8)) & 1);
                }
                if v > max {
                    return Err(format!("a {what} level of {v}, above the column's {max}"));
                }
                present += usize::from(v == max);
            }
            Ok((len as usize, present))
        }
        other => Err(format!("{what} levels in encoding {other}")),
    }
}

/// Bits of a level whose maximum is `max`.
fn bit_width(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// The first `n` values of an RLE/bit-packed hybrid stream of levels at most `max`: how many
/// equal `max`.
fn hybrid(b: &[u8], max: u64, n: usize, what: &str) -> Result<usize, String> {
    hybrid_width(b, bit_width(max), max, n, what)
}

/// [`hybrid`] with values of `bits` bits.
fn hybrid_width(b: &[u8], bits: u32, max: u64, n: usize, what: &str) -> Result<usize, String> {
    let (mut at, mut seen, mut hits) = (0usize, 0usize, 0usize);
    let ended = |seen: usize| format!("{what} end after {seen} of {n} values");
    let above = |v: u64| format!("{what}: a value of {v}, above the maximum {max}");
    let byte_width = bits.div_ceil(8) as usize;
    while seen < n {
        let header = varint(b, &mut at).ok_or_else(|| ended(seen))?;
        let want = n - seen;
        if header & 1 == 0 {
            let run = usize::try_from(header >> 1).unwrap_or(usize::MAX);
            let bytes = b.get(at..at + byte_width).ok_or_else(|| ended(seen))?;
            at += byte_width;
            let v = bytes
                .iter()
                .rev()
                .fold(0u64, |v, &byte| (v << 8) | u64::from(byte));
            if v > max {
                return Err(above(v));
            }
            let take = run.min(want);
            seen += take;
            if v == max {
                hits += take;
            }
        } else {
            let groups = header >> 1;
            let bytes = groups.saturating_mul(u64::from(bits));
            let avail = ((b.len() - at) as u64).min(bytes) as usize;
            let values = groups.saturating_mul(8).min(want as u64) as usize;
            if bits == 0 {
                seen += values;
                if max == 0 {
                    hits += values;
                }
                continue;
            }
            let in_bytes = (avail as u64 * 8 / u64::from(bits)) as usize;
            let take = values.min(in_bytes);
            let run = &b[at..at + avail];
            let mask = if bits == 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            };
            for i in 0..take {
                let bit = i * bits as usize;
                let mut window = 0u64;
                for (k, &byte) in run[bit / 8..].iter().take(8).enumerate() {
                    window |= u64::from(byte) << (8 * k);
                }
                let v = (window >> (bit % 8)) & mask;
                if v > max {
                    return Err(above(v));
                }
                hits += usize::from(v == max);
            }
            seen += take;
            at += avail;
            if take < values {
                return Err(ended(seen));
            }
        }
    }
    Ok(hits)
}

/// An unsigned LEB128 varint of at most 10 bytes.
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl<R: PageReader> Iterator for CheckedPages<R> {
    type Item = Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl<R: PageReader> PageReader for CheckedPages<R> {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        let page = self.inner.get_next_page()?;
        self.checked(page)
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.inner.skip_next_page()
    }

    fn supports_deferred_dictionary(&self) -> bool {
        self.inner.supports_deferred_dictionary()
    }

    fn take_deferred_dictionary(&mut self) -> Result<Option<Page>> {
        let page = self.inner.take_deferred_dictionary()?;
        self.checked(page)
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.inner.at_record_boundary()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::sync::{Arc, Once};

    use parquet::basic::Encoding;
    use parquet::column::page::{Page, PageMetadata, PageReader};
    use parquet::column::reader::{get_column_reader, ColumnReader};
    use parquet::data_type::ByteArray;
    use parquet::errors::Result;
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor};

    use super::CheckedPages;

    thread_local! {
        /// Panics on this thread, caught or not.
        static PANICS: Cell<usize> = const { Cell::new(0) };
    }

    /// Count every panic on the thread that raises it (the previous hook still runs).
    fn count_panics() {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                PANICS.with(|p| p.set(p.get() + 1));
                previous(info);
            }));
        });
    }

    /// Pages from a list.
    struct Pages(std::vec::IntoIter<Page>);

    impl Iterator for Pages {
        type Item = Result<Page>;
        fn next(&mut self) -> Option<Self::Item> {
            self.0.next().map(Ok)
        }
    }

    impl PageReader for Pages {
        fn get_next_page(&mut self) -> Result<Option<Page>> {
            Ok(self.0.next())
        }
        fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
            Ok(self.0.as_slice().first().map(|p| PageMetadata {
                num_rows: None,
                num_levels: Some(p.num_values() as usize),
                is_dict: matches!(p, Page::DictionaryPage { .. }),
            }))
        }
        fn skip_next_page(&mut self) -> Result<()> {
            self.0.next();
            Ok(())
        }
    }

    fn column(schema: &str) -> ColumnDescPtr {
        let t = parse_message_type(schema).unwrap();
        SchemaDescriptor::new(Arc::new(t)).column(0)
    }

    /// Plain byte arrays, length-prefixed.
    fn plain(values: &[&[u8]]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in values {
            b.extend_from_slice(&(v.len() as u32).to_le_bytes());
            b.extend_from_slice(v);
        }
        b
    }

    fn data_page(buf: Vec<u8>, num_values: u32, encoding: Encoding) -> Page {
        Page::DataPage {
            buf: buf.into(),
            num_values,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    }

    /// Read every value of a byte-array column from `pages`, checked or not: the values, or
    /// the error; and the panics raised on the way (caught here).
    fn read(
        descr: &ColumnDescPtr,
        pages: Vec<Page>,
        checked: bool,
    ) -> (Result<usize, String>, usize) {
        count_panics();
        let before = PANICS.with(Cell::get);
        let pages = Pages(pages.into_iter());
        let reader: Box<dyn PageReader> = if checked {
            Box::new(CheckedPages::new(pages, Arc::clone(descr)))
        } else {
            Box::new(pages)
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let ColumnReader::ByteArrayColumnReader(mut r) =
                get_column_reader(Arc::clone(descr), reader)
            else {
                panic!("not a byte-array column")
            };
            let (mut vals, mut def, mut rep) = (Vec::<ByteArray>::new(), Vec::new(), Vec::new());
            let mut total = 0;
            loop {
                vals.clear();
                let (records, _, levels) = r
                    .read_records(64, Some(&mut def), Some(&mut rep), &mut vals)
                    .map_err(|e| e.to_string())?;
                total += vals.len();
                if records == 0 && levels == 0 {
                    return Ok(total);
                }
            }
        }));
        let r = r.unwrap_or_else(|_| Err("panicked".to_string()));
        (r, PANICS.with(Cell::get) - before)
    }

    /// A page of plain byte arrays declaring more values than its bytes hold: the crate's
    /// plain decoder reads a length prefix past the end and panics; checked, it is an error
    /// before the crate decodes it, and no panic is raised.
    #[test]
    fn a_page_declaring_more_byte_arrays_than_it_holds_is_refused() {
        let descr = column("message m { required binary s; }");
        let page = || data_page(plain(&[b"ab", b"cde"]), 3, Encoding::PLAIN);
        let (r, panics) = read(&descr, vec![page()], false);
        assert!(
            r.is_err() && panics > 0,
            "the unchecked crate: {r:?}, {panics} panics"
        );
        let (r, panics) = read(&descr, vec![page()], true);
        let e = r.unwrap_err();
        assert!(e.contains("byte array 2 of 3 runs past"), "{e}");
        assert_eq!(panics, 0);
        // the same page declaring what it holds reads
        let ok = data_page(plain(&[b"ab", b"cde"]), 2, Encoding::PLAIN);
        assert_eq!(read(&descr, vec![ok], true), (Ok(2), 0));
        // a length prefix cut short
        let mut cut = plain(&[b"ab"]);
        cut.extend_from_slice(&[5, 0]);
        let (r, panics) = read(&descr, vec![data_page(cut, 2, Encoding::PLAIN)], true);
        assert!(r.is_err() && panics == 0, "{r:?}");
    }

    /// An optional column: the definition levels say how many values the page holds; a page
    /// whose levels claim more present values than it holds is refused, one whose levels
    /// are cut short or above the maximum too.
    #[test]
    fn definition_levels_count_the_values_a_page_must_hold() {
        let descr = column("message m { optional binary s; }");
        // 4 levels by an RLE run: 1, 1 (bit-packed: 1 group, levels 1,0,1,0,...) -> RLE runs
        let levels = |runs: &[(u8, u8)]| {
            let mut l = Vec::new();
            for &(n, v) in runs {
                l.extend_from_slice(&[n << 1, v]);
            }
            let mut b = (l.len() as u32).to_le_bytes().to_vec();
            b.extend_from_slice(&l);
            b
        };
        // two present, two null: two values
        let mut ok = levels(&[(2, 1), (2, 0)]);
        ok.extend_from_slice(&plain(&[b"x", b"y"]));
        assert_eq!(
            read(&descr, vec![data_page(ok, 4, Encoding::PLAIN)], true),
            (Ok(2), 0)
        );
        // three present, one value
        let mut short = levels(&[(3, 1), (1, 0)]);
        short.extend_from_slice(&plain(&[b"x"]));
        let (r, panics) = read(
            &descr,
            vec![data_page(short.clone(), 4, Encoding::PLAIN)],
            false,
        );
        assert!(r.is_err() && panics > 0, "the unchecked crate: {r:?}");
        let (r, panics) = read(&descr, vec![data_page(short, 4, Encoding::PLAIN)], true);
        assert!(r.unwrap_err().contains("runs past"));
        assert_eq!(panics, 0);
        // levels for 3 of 4 values
        let mut few = levels(&[(3, 1)]);
        few.extend_from_slice(&plain(&[b"x", b"y", b"z"]));
        let (r, _) = read(&descr, vec![data_page(few, 4, Encoding::PLAIN)], true);
        assert!(r.unwrap_err().contains("end after 3 of 4"));
        // a level of 2 in a column whose maximum is 1
        let mut high = levels(&[(1, 2)]);
        high.extend_from_slice(&plain(&[b"x"]));
        let (r, _) = read(&descr, vec![data_page(high, 1, Encoding::PLAIN)], true);
        assert!(r.unwrap_err().contains("above the maximum 1"));
        // a level length beyond the page
        let mut long = 100u32.to_le_bytes().to_vec();
        long.extend_from_slice(&[2, 1]);
        let (r, _) = read(&descr, vec![data_page(long, 1, Encoding::PLAIN)], true);
        assert!(r.unwrap_err().contains("definition levels of 100 bytes"));
    }

    /// Dictionary pages hold the values they declare; indices need a dictionary, fit its
    /// size, and are as many as the page's values.
    #[test]
    fn dictionaries_and_their_indices_are_checked() {
        let descr = column("message m { required binary s; }");
        let dict = |n: u32, values: &[&[u8]]| Page::DictionaryPage {
            buf: plain(values).into(),
            num_values: n,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        // indices: bit width 1, then a bit-packed group of 8: 0,1,0,1,...
        let indices = |n: u32| data_page(vec![1, 0x03, 0b1010_1010], n, Encoding::RLE_DICTIONARY);
        assert_eq!(
            read(&descr, vec![dict(2, &[b"a", b"b"]), indices(8)], true),
            (Ok(8), 0)
        );
        // a dictionary declaring three values, holding two
        let (r, panics) = read(&descr, vec![dict(3, &[b"a", b"b"]), indices(8)], false);
        assert!(r.is_err() && panics > 0, "the unchecked crate: {r:?}");
        let (r, panics) = read(&descr, vec![dict(3, &[b"a", b"b"]), indices(8)], true);
        assert!(r.unwrap_err().contains("dictionary page of 3 values"));
        assert_eq!(panics, 0);
        // index 1 into a dictionary of one value
        let (r, _) = read(&descr, vec![dict(1, &[b"a"]), indices(8)], true);
        assert!(r.unwrap_err().contains("above the maximum 0"));
        // more values than the indices hold
        let (r, _) = read(&descr, vec![dict(2, &[b"a", b"b"]), indices(9)], true);
        assert!(r.unwrap_err().contains("end after 8 of 9"));
        // indices without a dictionary page: an assertion in the crate
        let (r, panics) = read(&descr, vec![indices(8)], false);
        assert!(r.is_err() && panics > 0, "the unchecked crate: {r:?}");
        let (r, panics) = read(&descr, vec![indices(8)], true);
        assert!(r.unwrap_err().contains("without a dictionary page"));
        assert_eq!(panics, 0);
    }

    /// The hybrid decoder against levels written by hand: RLE runs, bit-packed groups
    /// (least significant bit first), cut short.
    #[test]
    fn hybrid_streams() {
        // RLE run of 5 ones, then a bit-packed group of 8 two-bit values 0..=3,0..=3
        let b = [5 << 1, 1, 0x03, 0b1110_0100, 0b1110_0100];
        assert_eq!(super::hybrid_width(&b, 2, 3, 13, "x"), Ok(2));
        assert_eq!(
            super::hybrid_width(&b, 2, 1, 13, "x").unwrap_err(),
            "x: a value of 2, above the maximum 1"
        );
        assert_eq!(
            super::hybrid_width(&b, 2, 3, 14, "x").unwrap_err(),
            "x end after 13 of 14 values"
        );
        assert_eq!(
            super::hybrid_width(&b[..4], 2, 3, 13, "x").unwrap_err(),
            "x end after 9 of 13 values"
        );
        // bit width 0: every value is 0
        assert_eq!(super::hybrid_width(&[0x03], 0, 0, 8, "x"), Ok(8));
        // the deprecated bit-packed levels are most significant bit first
        #[allow(deprecated)]
        let r = super::v1_levels(&[0b1011_0000], Encoding::BIT_PACKED, 1, 4, "d");
        assert_eq!(r, Ok((1, 3)));
    }

    /// A compact-protocol zigzag varint of `v`.
    fn zz(v: i64) -> Vec<u8> {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        let mut out = Vec::new();
        loop {
            let b = (z & 0x7f) as u8;
            z >>= 7;
            if z == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    /// A format-v1 data page header: sizes, then `num_values` in a `DataPageHeader`.
    fn v1_header(uncompressed: i64, compressed: i64) -> Vec<u8> {
        let mut h = vec![0x15, 0x00, 0x15];
        h.extend(zz(uncompressed));
        h.push(0x15);
        h.extend(zz(compressed));
        h.extend_from_slice(&[
            0x2c, 0x15, 0x08, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00,
        ]);
        h
    }

    /// Check the page headers of `chunk`, written to a file of its own.
    fn headers(chunk: &[u8]) -> Result<(), String> {
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, chunk).unwrap();
        super::check_page_headers(&f, 0, chunk.len() as u64)
    }

    /// Page headers are checked before the crate's page reader trusts them: pages inside the
    /// chunk, sizes not negative, a format-v2 page's level lengths (which the crate adds as
    /// `i32`) within its size, no container of booleans (which the crate's skip loops over).
    #[test]
    fn page_headers_are_checked_before_the_crate_reads_them() {
        let mut two = v1_header(4, 4);
        two.extend_from_slice(&[1, 2, 3, 4]);
        two.extend(v1_header(4, 4));
        two.extend_from_slice(&[5, 6, 7, 8]);
        assert_eq!(headers(&two), Ok(()));
        // a page past the chunk's end
        let mut long = v1_header(100, 100);
        long.extend_from_slice(&[0; 4]);
        let e = headers(&long).unwrap_err();
        assert!(
            e.contains("page 0 (100 bytes at offset 19) runs past"),
            "{e}"
        );
        // a negative compressed size
        let mut negative = v1_header(4, -1);
        negative.extend_from_slice(&[0; 4]);
        let e = headers(&negative).unwrap_err();
        assert!(
            e.contains("compressed_page_size (field 3) is negative"),
            "{e}"
        );
        // a v2 page whose level lengths add up past i32
        let mut v2 = vec![
            0x15, 0x06, 0x15, 0x14, 0x15, 0x14, 0x5c, 0x15, 0x02, 0x15, 0x00,
        ];
        v2.extend_from_slice(&[0x15, 0x02, 0x15, 0x00, 0x15]);
        v2.extend(zz(i64::from(i32::MAX)));
        v2.push(0x15);
        v2.extend(zz(i64::from(i32::MAX)));
        v2.extend_from_slice(&[0x00, 0x00]);
        v2.extend_from_slice(&[0; 10]);
        let e = headers(&v2).unwrap_err();
        assert!(
            e.contains("levels of 4294967294 bytes in a page of 10 bytes"),
            "{e}"
        );
        // a list of booleans in a field the crate skips (field 10, after field 3)
        let mut bools = v1_header(4, 4);
        let at = bools.len() - 12;
        bools.splice(at..at, [0x79, 0x21, 0x01, 0x01]);
        bools.extend_from_slice(&[0; 4]);
        let e = headers(&bools).unwrap_err();
        assert!(
            e.contains("header of page 0 (at offset 0) is malformed"),
            "{e}"
        );
        // a header cut short by the chunk's end
        let e = headers(&v1_header(4, 4)[..9]).unwrap_err();
        assert!(e.contains("malformed"), "{e}");
    }
}
