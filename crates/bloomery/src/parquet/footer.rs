//! What a lake scan needs of a Parquet footer, read straight from its Thrift compact bytes
//! (parquet-format `parquet.thrift`, `FileMetaData`): the leaf columns (dotted path, name,
//! physical type, type length, DATE/UUID annotation), each row group's row count, and each
//! column chunk's `bloom_filter_offset` / `bloom_filter_length`. Everything else (statistics,
//! encodings, key-value metadata, page-index offsets) is skipped unread.
//!
//! The reader is conservative: any footer it is not sure to read exactly as the `parquet`
//! crate does (a missing required field, an unexpected type id, an encrypted column, an empty
//! group, a column count that disagrees with the schema, names that are not UTF-8, ...) gives
//! `None`, and the caller decodes the footer with the `parquet` crate instead, whose answer or
//! error message stands. Its output is checked against the crate's decode
//! ([`Footer::from_metadata`]) in the tests, on every file they write, and by a fuzz target.

use parquet::basic::{ConvertedType, LogicalType, Type};
use parquet::file::metadata::ParquetMetaData;

use super::keys::{ColumnType, PhysicalType, TextForm};

use super::header::{
    T_BINARY, T_BYTE, T_DOUBLE, T_FALSE, T_I16, T_I32, T_I64, T_LIST, T_MAP, T_SET, T_STRUCT,
    T_TRUE,
};

/// Deepest nesting of structs and containers skipped.
const MAX_DEPTH: usize = 32;

/// A Thrift compact-protocol reader over untrusted bytes that only accepts or declines (the
/// filter header's reader, which says why it refuses, is `header.rs`'s): every length is
/// checked against the bytes left, nesting is bounded.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

/// A container of booleans: one byte per element by the compact protocol, but no byte at all
/// when the `parquet` crate (60.x) skips one, so that the crate and this reader part ways
/// there; and the crate's skip then loops up to 2³¹ times on a list header of six bytes. No
/// field of a footer holds one, so the footer's readers refuse it wherever it appears.
const BOOL_CONTAINER: Option<()> = None;

impl Cursor<'_> {
    #[inline]
    fn byte(&mut self) -> Option<u8> {
        let v = *self.b.get(self.at)?;
        self.at += 1;
        Some(v)
    }

    #[inline]
    fn left(&self) -> usize {
        self.b.len() - self.at
    }

    #[inline]
    fn skip(&mut self, n: u64) -> Option<()> {
        if n > self.left() as u64 {
            return None;
        }
        self.at += n as usize;
        Some(())
    }

    /// An unsigned LEB128 varint of at most 10 bytes.
    #[inline]
    fn varint(&mut self) -> Option<u64> {
        // most varints of a footer take one byte
        if let Some(&b) = self.b.get(self.at) {
            if b < 0x80 {
                self.at += 1;
                return Some(u64::from(b));
            }
        }
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    #[inline]
    fn zigzag(&mut self) -> Option<i64> {
        let v = self.varint()?;
        Some(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// The next field header: `None` at the struct's stop byte (or when malformed: `ok`
    /// false), else (field id, type).
    #[inline]
    fn field(&mut self, last_id: &mut i16, ok: &mut bool) -> Option<(i16, u8)> {
        let Some(b) = self.byte() else {
            *ok = false;
            return None;
        };
        if b == 0 {
            return None;
        }
        let ty = b & 0x0f;
        let delta = b >> 4;
        let id = if delta == 0 {
            match self.zigzag().and_then(|id| i16::try_from(id).ok()) {
                Some(id) => id,
                None => {
                    *ok = false;
                    return None;
                }
            }
        } else {
            match last_id.checked_add(i16::from(delta)) {
                Some(id) => id,
                None => {
                    *ok = false;
                    return None;
                }
            }
        };
        *last_id = id;
        Some((id, ty))
    }

    /// Skip one value of type `ty`.
    fn skip_value(&mut self, ty: u8, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match ty {
            T_TRUE | T_FALSE => Some(()),
            T_BYTE => self.skip(1),
            T_I16 | T_I32 | T_I64 => self.varint().map(|_| ()),
            T_DOUBLE => self.skip(8),
            T_BINARY => {
                let n = self.varint()?;
                self.skip(n)
            }
            T_LIST | T_SET => {
                let (elem, n) = self.list()?;
                for _ in 0..n {
                    self.element(elem, depth)?;
                }
                Some(())
            }
            T_MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Some(());
                }
                let kv = self.byte()?;
                if n.saturating_mul(2) > self.left() as u64 {
                    return None;
                }
                for _ in 0..n {
                    self.element(kv >> 4, depth)?;
                    self.element(kv & 0x0f, depth)?;
                }
                Some(())
            }
            T_STRUCT => self.skip_struct(depth + 1),
            _ => None,
        }
    }

    /// One element of a container (booleans take a byte each there).
    #[inline]
    fn element(&mut self, ty: u8, depth: usize) -> Option<()> {
        match ty {
            T_TRUE | T_FALSE => BOOL_CONTAINER,
            t => self.skip_value(t, depth + 1),
        }
    }

    fn skip_struct(&mut self, depth: usize) -> Option<()> {
        let mut last = 0i16;
        let mut ok = true;
        while let Some((_, ty)) = self.field(&mut last, &mut ok) {
            self.skip_value(ty, depth)?;
        }
        ok.then_some(())
    }

    /// A list or set header: (element type, count), the count bounded by the bytes left
    /// (every element takes at least one byte).
    #[inline]
    fn list(&mut self) -> Option<(u8, usize)> {
        let h = self.byte()?;
        let n = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if n > self.left() as u64 {
            return None;
        }
        Some((h & 0x0f, n as usize))
    }

    /// A union whose members are structs: its one member's field id (the member skipped).
    fn union_member(&mut self) -> Option<i16> {
        let mut last = 0i16;
        let mut ok = true;
        let mut member = None;
        while let Some((id, ty)) = self.field(&mut last, &mut ok) {
            if ty != T_STRUCT || member.replace(id).is_some() {
                return None;
            }
            self.skip_struct(1)?;
        }
        if !ok {
            return None;
        }
        member
    }
}

/// A leaf column of the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Leaf {
    /// Dotted path from the root's children (`a.b.c`).
    pub(crate) path: String,
    /// Its last name.
    pub(crate) name: String,
    /// How its values are hashed.
    pub(crate) column_type: ColumnType,
}

/// Where a column chunk's filter lies: `bloom_filter_offset` and `bloom_filter_length`.
pub(crate) type FilterField = (Option<i64>, Option<i32>);

/// The footer fields a scan reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Footer {
    /// The leaf columns, in schema order.
    pub(crate) leaves: Vec<Leaf>,
    /// Rows of each row group.
    pub(crate) rows: Vec<i64>,
    /// Filter fields of row group `rg`, column `c` at `rg · leaves + c`.
    pub(crate) filters: Vec<FilterField>,
}

/// Deepest schema nesting read (deeper schemas go to the `parquet` crate).
const MAX_SCHEMA_DEPTH: usize = 64;

/// The column type of a leaf from its physical type id, type length and annotations (as
/// [`Footer::from_metadata`] derives it from the crate's schema).
fn column_type(
    physical: PhysicalType,
    type_length: Option<i32>,
    logical: Option<i16>,
    converted: Option<i32>,
) -> ColumnType {
    let type_length = if physical == PhysicalType::FixedLenByteArray {
        type_length.unwrap_or(-1).max(0) as u32
    } else {
        0
    };
    // LogicalType members: DATE 6, UUID 14; ConvertedType DATE 6
    let text = match (logical, converted) {
        (Some(6), _) | (None, Some(6)) => TextForm::Date,
        (Some(14), _) if type_length == 16 => TextForm::Uuid,
        _ => TextForm::Plain,
    };
    ColumnType {
        physical,
        type_length,
        text,
    }
}

/// One `SchemaElement`.
struct Element {
    physical: Option<i32>,
    type_length: Option<i32>,
    repetition: Option<i32>,
    name: String,
    children: Option<i32>,
    converted: Option<i32>,
    logical: Option<i16>,
}

fn i32_of(c: &mut Cursor<'_>) -> Option<i32> {
    i32::try_from(c.zigzag()?).ok()
}

fn element(c: &mut Cursor<'_>) -> Option<Element> {
    let mut e = Element {
        physical: None,
        type_length: None,
        repetition: None,
        name: String::new(),
        children: None,
        converted: None,
        logical: None,
    };
    let mut name = None;
    let mut last = 0i16;
    let mut ok = true;
    while let Some((id, ty)) = c.field(&mut last, &mut ok) {
        match (id, ty) {
            (1, T_I32) => e.physical = Some(i32_of(c)?),
            (2, T_I32) => e.type_length = Some(i32_of(c)?),
            (3, T_I32) => e.repetition = Some(i32_of(c)?),
            (4, T_BINARY) => {
                let n = c.varint()?;
                let start = c.at;
                c.skip(n)?;
                name = Some(std::str::from_utf8(&c.b[start..c.at]).ok()?.to_string());
            }
            (5, T_I32) => e.children = Some(i32_of(c)?),
            (6, T_I32) => e.converted = Some(i32_of(c)?),
            (10, T_STRUCT) => e.logical = Some(c.union_member()?),
            (1..=6 | 10, _) => return None,
            (_, ty) => c.skip_value(ty, 1)?,
        }
    }
    if !ok {
        return None;
    }
    e.name = name?;
    Some(e)
}

/// The leaves under the group `elements[at - 1]` with `children` children, from
/// `elements[at]` on; returns where the group's last descendant ends.
fn leaves(
    elements: &[Element],
    mut at: usize,
    children: i32,
    prefix: &str,
    depth: usize,
    out: &mut Vec<Leaf>,
) -> Option<usize> {
    if depth > MAX_SCHEMA_DEPTH || children < 0 {
        return None;
    }
    for _ in 0..children {
        let e = elements.get(at)?;
        at += 1;
        // a repetition is required below the root (the crate refuses a leaf without one)
        if !matches!(e.repetition, Some(0..=2)) {
            return None;
        }
        let path = if prefix.is_empty() {
            e.name.clone()
        } else {
            format!("{prefix}.{}", e.name)
        };
        match e.children {
            Some(n) if n > 0 => {
                if e.physical.is_some() {
                    return None;
                }
                at = leaves(elements, at, n, &path, depth + 1, out)?;
            }
            _ => {
                // a leaf (parquet-cpp writes num_children = 0 for some); one without a type
                // would be an empty group: left to the crate
                let physical = u32::try_from(e.physical?)
                    .ok()
                    .and_then(PhysicalType::from_id)?;
                if let Some(ct) = e.converted {
                    // ConvertedType runs from UTF8 (0) to INTERVAL (21)
                    if !(0..=21).contains(&ct) {
                        return None;
                    }
                }
                let t = column_type(physical, e.type_length, e.logical, e.converted);
                // annotations the crate checks against the physical type: DATE is an INT32,
                // UUID a 16-byte FIXED_LEN_BYTE_ARRAY
                if t.text == TextForm::Date && physical != PhysicalType::Int32 {
                    return None;
                }
                if e.logical == Some(14) && t.text != TextForm::Uuid {
                    return None;
                }
                if physical == PhysicalType::FixedLenByteArray && e.type_length.unwrap_or(-1) < 0 {
                    return None;
                }
                out.push(Leaf {
                    path,
                    name: e.name.clone(),
                    column_type: t,
                });
            }
        }
    }
    Some(at)
}

/// One `ColumnChunk`: (physical type id of its metadata, filter fields).
fn column_chunk(c: &mut Cursor<'_>) -> Option<(i32, FilterField)> {
    let mut file_offset = false;
    let mut meta = None;
    let mut last = 0i16;
    let mut ok = true;
    while let Some((id, ty)) = c.field(&mut last, &mut ok) {
        match (id, ty) {
            (2, T_I64) => {
                c.zigzag()?;
                file_offset = true;
            }
            (3, T_STRUCT) => meta = Some(column_meta(c)?),
            // encrypted columns: left to the crate
            (8 | 9, _) => return None,
            (2 | 3, _) => return None,
            (_, ty) => c.skip_value(ty, 1)?,
        }
    }
    if !ok {
        return None;
    }
    if !file_offset {
        return None;
    }
    meta
}

/// One `ColumnMetaData`: its physical type id and filter fields, every required field present.
fn column_meta(c: &mut Cursor<'_>) -> Option<(i32, FilterField)> {
    let mut ty_id = None;
    let (mut offset, mut length) = (None, None);
    // required fields: type 1, encodings 2, path_in_schema 3, codec 4, num_values 5,
    // total_uncompressed_size 6, total_compressed_size 7, data_page_offset 9
    let mut seen = 0u32;
    let mut last = 0i16;
    let mut ok = true;
    while let Some((id, ty)) = c.field(&mut last, &mut ok) {
        match (id, ty) {
            (1, T_I32) => ty_id = Some(i32_of(c)?),
            (4, T_I32) => {
                i32_of(c)?;
            }
            (5 | 6 | 7 | 9, T_I64) => {
                c.zigzag()?;
            }
            (2 | 3, T_LIST) => c.skip_value(T_LIST, 1)?,
            (14, T_I64) => offset = Some(c.zigzag()?),
            (15, T_I32) => length = Some(i32_of(c)?),
            (1..=7 | 9 | 14 | 15, _) => return None,
            (_, ty) => {
                c.skip_value(ty, 1)?;
                continue;
            }
        }
        seen |= 1 << id;
    }
    if !ok {
        return None;
    }
    const REQUIRED: u32 = 0b10_1111_1110;
    if seen & REQUIRED != REQUIRED {
        return None;
    }
    Some((ty_id?, (offset, length)))
}

/// One `RowGroup`: its rows, appending its chunks' filter fields; the physical type ids of its
/// chunks must be the leaves'.
fn row_group(
    c: &mut Cursor<'_>,
    leaves: &[Leaf],
    types: &[i32],
    filters: &mut Vec<FilterField>,
) -> Option<i64> {
    let (mut columns, mut total, mut rows) = (false, false, None);
    let mut last = 0i16;
    let mut ok = true;
    while let Some((id, ty)) = c.field(&mut last, &mut ok) {
        match (id, ty) {
            (1, T_LIST) => {
                if columns {
                    return None;
                }
                let (et, n) = c.list()?;
                if et != T_STRUCT || n != leaves.len() {
                    return None;
                }
                for &want in types {
                    let (t, f) = column_chunk(c)?;
                    if t != want {
                        return None;
                    }
                    filters.push(f);
                }
                columns = true;
            }
            (2, T_I64) => {
                c.zigzag()?;
                total = true;
            }
            (3, T_I64) => rows = Some(c.zigzag()?),
            (1..=3, _) => return None,
            (_, ty) => c.skip_value(ty, 1)?,
        }
    }
    if !ok {
        return None;
    }
    if !(columns && total) {
        return None;
    }
    rows
}

impl Footer {
    /// Read the footer's Thrift bytes (`FileMetaData`, without the 8-byte tail). None when
    /// the bytes are anything but a footer this reader is sure to read as the `parquet` crate
    /// does.
    pub(crate) fn skim(bytes: &[u8]) -> Option<Footer> {
        let mut c = Cursor { b: bytes, at: 0 };
        let mut out = Footer {
            leaves: Vec::new(),
            rows: Vec::new(),
            filters: Vec::new(),
        };
        let (mut version, mut schema, mut num_rows, mut groups) = (false, false, false, false);
        let mut types = Vec::new();
        let mut last = 0i16;
        let mut ok = true;
        while let Some((id, ty)) = c.field(&mut last, &mut ok) {
            match (id, ty) {
                (1, T_I32) => {
                    i32_of(&mut c)?;
                    version = true;
                }
                (2, T_LIST) => {
                    if schema {
                        return None;
                    }
                    let (et, n) = c.list()?;
                    if et != T_STRUCT || n == 0 {
                        return None;
                    }
                    let mut elements = Vec::with_capacity(n);
                    for _ in 0..n {
                        elements.push(element(&mut c)?);
                    }
                    // the root: a group with children, every element under it
                    let root = &elements[0];
                    let children = root.children.filter(|&n| n > 0)?;
                    if root.physical.is_some() {
                        return None;
                    }
                    let end = leaves(&elements, 1, children, "", 0, &mut out.leaves)?;
                    if end != elements.len() {
                        return None;
                    }
                    types = out
                        .leaves
                        .iter()
                        .map(|l| l.column_type.physical.id() as i32)
                        .collect();
                    schema = true;
                }
                (3, T_I64) => {
                    c.zigzag()?;
                    num_rows = true;
                }
                (4, T_LIST) => {
                    // the row groups refer to the schema's leaves: it must come first
                    if !schema || groups {
                        return None;
                    }
                    let (et, n) = c.list()?;
                    if et != T_STRUCT {
                        return None;
                    }
                    out.rows.reserve(n);
                    out.filters.reserve(n * out.leaves.len());
                    for _ in 0..n {
                        let rows = row_group(&mut c, &out.leaves, &types, &mut out.filters)?;
                        out.rows.push(rows);
                    }
                    groups = true;
                }
                // an encrypted file's footer: left to the crate
                (8 | 9, _) => return None,
                (1..=4, _) => return None,
                (_, ty) => c.skip_value(ty, 1)?,
            }
        }
        if !ok {
            return None;
        }
        (version && schema && num_rows && groups).then_some(out)
    }

    /// The same fields from the `parquet` crate's decode.
    pub(crate) fn from_metadata(meta: &ParquetMetaData) -> Footer {
        let schema = meta.file_metadata().schema_descr();
        let leaves: Vec<Leaf> = schema
            .columns()
            .iter()
            .map(|c| {
                let physical = match c.physical_type() {
                    Type::BOOLEAN => PhysicalType::Boolean,
                    Type::INT32 => PhysicalType::Int32,
                    Type::INT64 => PhysicalType::Int64,
                    Type::INT96 => PhysicalType::Int96,
                    Type::FLOAT => PhysicalType::Float,
                    Type::DOUBLE => PhysicalType::Double,
                    Type::BYTE_ARRAY => PhysicalType::ByteArray,
                    Type::FIXED_LEN_BYTE_ARRAY => PhysicalType::FixedLenByteArray,
                };
                let type_length = if physical == PhysicalType::FixedLenByteArray {
                    c.type_length().max(0) as u32
                } else {
                    0
                };
                let text = match (c.logical_type_ref(), c.converted_type()) {
                    (Some(LogicalType::Date), _) | (None, ConvertedType::DATE) => TextForm::Date,
                    (Some(LogicalType::Uuid), _) if type_length == 16 => TextForm::Uuid,
                    _ => TextForm::Plain,
                };
                Leaf {
                    path: c.path().string(),
                    name: c.name().to_string(),
                    column_type: ColumnType {
                        physical,
                        type_length,
                        text,
                    },
                }
            })
            .collect();
        let mut rows = Vec::with_capacity(meta.num_row_groups());
        let mut filters = Vec::with_capacity(meta.num_row_groups() * leaves.len());
        for rg in meta.row_groups() {
            rows.push(rg.num_rows());
            for cc in rg.columns() {
                filters.push((cc.bloom_filter_offset(), cc.bloom_filter_length()));
            }
        }
        Footer {
            leaves,
            rows,
            filters,
        }
    }
}

/// A field's type as the `parquet` crate (60.x) reads it. The crate reads a field it knows by
/// the type the format gives that field, whatever type the bytes announce, so footer bytes
/// whose types disagree with the format are read one way by a generic Thrift walk and
/// another way by the crate, which may then find a child count, a list length or a list of
/// booleans (see [`BOOL_CONTAINER`]) that the walk never saw. [`check_counts`] refuses them.
#[derive(Clone, Copy)]
enum Shape {
    /// A value of this compact type (an enum is an `i32`).
    Is(u8),
    /// An `i32` or `i64` the crate uses as a file offset, a size or a count (named here):
    /// a negative one is refused, as the crate asserts on some (`byte_range`) or casts them
    /// to unsigned offsets.
    NonNegative(u8, &'static str),
    /// A boolean (its value is the field's type: true or false).
    Bool,
    /// A struct or union whose known fields have these shapes (others the crate skips by
    /// their own type, as this walk does).
    Struct(&'static [(i16, Shape)]),
    /// A list of values of this shape.
    List(&'static Shape),
}

const I32: Shape = Shape::Is(T_I32);
const I64: Shape = Shape::Is(T_I64);
/// An `i64` offset, size or count (see [`Shape::NonNegative`]).
const fn offset64(name: &'static str) -> Shape {
    Shape::NonNegative(T_I64, name)
}
/// An `i32` size (see [`Shape::NonNegative`]).
const fn size32(name: &'static str) -> Shape {
    Shape::NonNegative(T_I32, name)
}
const BINARY: Shape = Shape::Is(T_BINARY);
const EMPTY: Shape = Shape::Struct(&[]);
const TIME_UNIT: Shape = Shape::Struct(&[(1, EMPTY), (2, EMPTY), (3, EMPTY)]);
const TIME: Shape = Shape::Struct(&[(1, Shape::Bool), (2, TIME_UNIT)]);
/// parquet-format `LogicalType`.
const LOGICAL_TYPE: Shape = Shape::Struct(&[
    (1, EMPTY),
    (2, EMPTY),
    (3, EMPTY),
    (4, EMPTY),
    (5, Shape::Struct(&[(1, I32), (2, I32)])),
    (6, EMPTY),
    (7, TIME),
    (8, TIME),
    (
        10,
        Shape::Struct(&[(1, Shape::Is(T_BYTE)), (2, Shape::Bool)]),
    ),
    (11, EMPTY),
    (12, EMPTY),
    (13, EMPTY),
    (14, EMPTY),
    (15, EMPTY),
    (16, Shape::Struct(&[(1, Shape::Is(T_BYTE))])),
    (17, Shape::Struct(&[(1, BINARY)])),
    (18, Shape::Struct(&[(1, BINARY), (2, I32)])),
    (19, EMPTY),
]);
/// parquet-format `SchemaElement`.
const SCHEMA_ELEMENT: &[(i16, Shape)] = &[
    (1, I32),
    (2, I32),
    (3, I32),
    (4, BINARY),
    (5, I32),
    (6, I32),
    (7, I32),
    (8, I32),
    (9, I32),
    (10, LOGICAL_TYPE),
];
/// parquet-format `KeyValue`.
const KEY_VALUE: Shape = Shape::Struct(&[(1, BINARY), (2, BINARY)]);
/// parquet-format `Statistics`.
const STATISTICS: Shape = Shape::Struct(&[
    (1, BINARY),
    (2, BINARY),
    (3, I64),
    (4, I64),
    (5, BINARY),
    (6, BINARY),
    (7, Shape::Bool),
    (8, Shape::Bool),
    (9, I64),
]);
const DOUBLE: Shape = Shape::Is(T_DOUBLE);
/// parquet-format `ColumnMetaData`, the fields the crate reads (3 and 8 it skips).
const COLUMN_META_DATA: Shape = Shape::Struct(&[
    (1, I32),
    (2, Shape::List(&I32)),
    (4, I32),
    (5, offset64("num_values")),
    (6, offset64("total_uncompressed_size")),
    (7, offset64("total_compressed_size")),
    (9, offset64("data_page_offset")),
    (10, offset64("index_page_offset")),
    (11, offset64("dictionary_page_offset")),
    (12, STATISTICS),
    // PageEncodingStats
    (
        13,
        Shape::List(&Shape::Struct(&[(1, I32), (2, I32), (3, I32)])),
    ),
    (14, offset64("bloom_filter_offset")),
    (15, size32("bloom_filter_length")),
    // SizeStatistics
    (
        16,
        Shape::Struct(&[(1, I64), (2, Shape::List(&I64)), (3, Shape::List(&I64))]),
    ),
    // GeospatialStatistics { BoundingBox, list<i32> }
    (
        17,
        Shape::Struct(&[
            (
                1,
                Shape::Struct(&[
                    (1, DOUBLE),
                    (2, DOUBLE),
                    (3, DOUBLE),
                    (4, DOUBLE),
                    (5, DOUBLE),
                    (6, DOUBLE),
                    (7, DOUBLE),
                    (8, DOUBLE),
                ]),
            ),
            (2, Shape::List(&I32)),
        ]),
    ),
]);
/// parquet-format `ColumnChunk` (8 and 9, encryption, the crate skips: it is built without
/// its `encryption` feature).
const COLUMN_CHUNK: Shape = Shape::Struct(&[
    (1, BINARY),
    (2, offset64("file_offset")),
    (3, COLUMN_META_DATA),
    (4, offset64("offset_index_offset")),
    (5, size32("offset_index_length")),
    (6, offset64("column_index_offset")),
    (7, size32("column_index_length")),
]);
/// parquet-format `RowGroup` (6 the crate skips).
const ROW_GROUP: Shape = Shape::Struct(&[
    (1, Shape::List(&COLUMN_CHUNK)),
    (2, offset64("total_byte_size")),
    (3, offset64("num_rows")),
    // SortingColumn
    (
        4,
        Shape::List(&Shape::Struct(&[
            (1, I32),
            (2, Shape::Bool),
            (3, Shape::Bool),
        ])),
    ),
    (5, offset64("file_offset")),
    (7, Shape::Is(T_I16)),
]);
/// parquet-format `FileMetaData` but its schema (field 2, walked by [`check_counts`]);
/// 8 and 9, encryption, the crate skips.
const FILE_META_DATA: &[(i16, Shape)] = &[
    (1, I32),
    (3, offset64("num_rows")),
    (4, Shape::List(&ROW_GROUP)),
    (5, Shape::List(&KEY_VALUE)),
    (6, BINARY),
    // ColumnOrder, a union of empty structs
    (
        7,
        Shape::List(&Shape::Struct(&[(1, EMPTY), (2, EMPTY), (3, EMPTY)])),
    ),
];
/// `SchemaElement.num_children`.
const NUM_CHILDREN: i16 = 5;

/// Deepest nesting of groups in a schema the `parquet` crate is given: it builds the schema
/// tree by recursion, one stack frame per level, so a forged footer of a few hundred KB could
/// otherwise overflow the stack. Real schemas nest a few levels per list or map.
const MAX_SCHEMA_NESTING: usize = 256;

/// Why bytes are refused when they are not well-formed Thrift (a list longer than its bytes
/// among them).
const NOT_THRIFT: &str = "not well-formed Thrift (or a list longer than its bytes)";

/// Walk one struct of shape `fields`, refusing a known field whose type is not the format's;
/// `i32` fields of the outermost struct are handed to `seen` as (field id, value).
fn typed_struct(
    c: &mut Cursor<'_>,
    fields: &[(i16, Shape)],
    depth: usize,
    seen: &mut dyn FnMut(i16, i64) -> Result<(), String>,
) -> Result<(), String> {
    let mut last = 0i16;
    let mut ok = true;
    while let Some((id, ty)) = c.field(&mut last, &mut ok) {
        let shape = fields.iter().find(|(known, _)| *known == id).map(|f| f.1);
        match shape {
            Some(Shape::Is(T_I32)) if ty == T_I32 => {
                let v = c.zigzag().ok_or(NOT_THRIFT)?;
                seen(id, v)?;
            }
            Some(shape) => typed_value(c, shape, id, ty, depth)?,
            None => c.skip_value(ty, depth).ok_or(NOT_THRIFT)?,
        }
    }
    if ok {
        Ok(())
    } else {
        Err(NOT_THRIFT.to_string())
    }
}

/// Walk the value of field `id`, of shape `shape`, announced as of type `ty`.
fn typed_value(
    c: &mut Cursor<'_>,
    shape: Shape,
    id: i16,
    ty: u8,
    depth: usize,
) -> Result<(), String> {
    let wrong =
        || format!("field {id} has Thrift type {ty}, not the type the Parquet format gives it");
    if depth > MAX_DEPTH {
        return Err(NOT_THRIFT.to_string());
    }
    match shape {
        Shape::Bool if matches!(ty, T_TRUE | T_FALSE) => Ok(()),
        Shape::Is(t) if t == ty => c
            .skip_value(ty, depth)
            .ok_or_else(|| NOT_THRIFT.to_string()),
        Shape::NonNegative(t, name) if t == ty => {
            let v = c.zigzag().ok_or(NOT_THRIFT)?;
            // the crate truncates an i32 field's varint to 32 bits
            let v = if t == T_I32 { i64::from(v as i32) } else { v };
            if v < 0 {
                return Err(format!("{name} (field {id}) is negative ({v})"));
            }
            Ok(())
        }
        Shape::Struct(inner) if ty == T_STRUCT => {
            typed_struct(c, inner, depth + 1, &mut |_, _| Ok(()))
        }
        Shape::List(elem) if ty == T_LIST => {
            let (et, n) = c.list().ok_or(NOT_THRIFT)?;
            let want = match *elem {
                Shape::Is(t) | Shape::NonNegative(t, _) => t,
                Shape::Struct(_) => T_STRUCT,
                Shape::Bool => {
                    // one byte each, read as such by the crate where it knows the field
                    if !matches!(et, T_TRUE | T_FALSE) && n > 0 {
                        return Err(wrong());
                    }
                    return c.skip(n as u64).ok_or_else(|| NOT_THRIFT.to_string());
                }
                Shape::List(_) => return Err(wrong()),
            };
            if et != want && n > 0 {
                return Err(wrong());
            }
            for _ in 0..n {
                typed_value(c, *elem, id, want, depth + 1)?;
            }
            Ok(())
        }
        _ => Err(wrong()),
    }
}

/// Check footer bytes (the Thrift `FileMetaData`) before the `parquet` crate decodes them: the
/// crate reserves memory by counts it reads (a schema element's `num_children`, a list's
/// length), so a forged footer of a few bytes could ask for gigabytes. Refused here: bytes
/// that are not well-formed compact Thrift within [`MAX_DEPTH`] levels, a list claiming more
/// elements than bytes left, a schema element claiming more children than the schema has
/// elements, or nesting groups more than [`MAX_SCHEMA_NESTING`] deep. What passes costs the
/// crate memory in proportion to the footer's size, and bounded stack.
///
/// The crate reads the footer the way this check does only if the types in the bytes are the
/// format's, so they must be: every field the crate reads, at every level, must have the
/// type the format gives it (see [`Shape`]).
pub(crate) fn check_counts(bytes: &[u8]) -> Result<(), String> {
    walk_footer(bytes).map_err(|why| format!("malformed footer: {why}"))
}

/// [`check_counts`]' walk; why it refuses.
fn walk_footer(bytes: &[u8]) -> Result<(), String> {
    let mut c = Cursor { b: bytes, at: 0 };
    let malformed = || NOT_THRIFT.to_string();
    let mut last = 0i16;
    let mut ok = true;
    let mut schema_read = false;
    while let Some((id, ty)) = c.field(&mut last, &mut ok) {
        if id != 2 || schema_read {
            // a second schema the crate skips by its type, as this walk does
            match FILE_META_DATA.iter().find(|(known, _)| *known == id) {
                Some(&(_, shape)) if id != 2 => typed_value(&mut c, shape, id, ty, 1)?,
                _ => c.skip_value(ty, 1).ok_or_else(malformed)?,
            }
            continue;
        }
        if ty != T_LIST {
            return Err("the schema is not a Thrift list".to_string());
        }
        let (et, n) = c.list().ok_or_else(malformed)?;
        if et != T_STRUCT && n > 0 {
            return Err("the schema is not a list of structs".to_string());
        }
        // children still to come of each group open above the element read next
        let mut open: Vec<i64> = Vec::new();
        for _ in 0..n {
            let mut children = 0;
            typed_struct(&mut c, SCHEMA_ELEMENT, 2, &mut |field, v| {
                if field == NUM_CHILDREN {
                    if !(0..=n as i64).contains(&v) {
                        return Err(format!(
                            "a schema element claims {v} children, the schema has {n} elements"
                        ));
                    }
                    children = v; // the crate keeps the last
                }
                Ok(())
            })?;
            if let Some(left) = open.last_mut() {
                *left -= 1;
            }
            if children > 0 {
                open.push(children);
                if open.len() > MAX_SCHEMA_NESTING {
                    return Err(format!(
                        "the schema nests groups more than {MAX_SCHEMA_NESTING} deep"
                    ));
                }
            }
            while open.last() == Some(&0) {
                open.pop();
            }
        }
        schema_read = true;
    }
    if !ok {
        return Err(malformed());
    }
    Ok(())
}

/// The `parquet` crate's decode of footer bytes, after [`check_counts`].
pub(crate) fn decode_metadata(
    bytes: &[u8],
) -> Result<parquet::file::metadata::ParquetMetaData, String> {
    check_counts(bytes)?;
    // a panic in the crate's decoder is an error for this footer, as its errors are
    std::panic::catch_unwind(|| {
        parquet::file::metadata::ParquetMetaDataReader::decode_metadata(bytes)
            .map_err(|e| e.to_string())
    })
    .unwrap_or_else(|p| {
        Err(format!(
            "the parquet crate failed: {}",
            super::panic_message(&*p)
        ))
    })
}

/// parquet-format `ColumnIndex`, as the crate reads it.
const COLUMN_INDEX: &[(i16, Shape)] = &[
    (1, Shape::List(&Shape::Bool)),
    (2, Shape::List(&BINARY)),
    (3, Shape::List(&BINARY)),
    (4, I32),
    (5, Shape::List(&I64)),
    (6, Shape::List(&I64)),
    (7, Shape::List(&I64)),
    (8, Shape::List(&I64)),
];
/// parquet-format `OffsetIndex` (a list of `PageLocation`), as the crate reads it.
const OFFSET_INDEX: &[(i16, Shape)] = &[
    (
        1,
        Shape::List(&Shape::Struct(&[
            (1, offset64("offset")),
            (2, size32("compressed_page_size")),
            (3, offset64("first_row_index")),
        ])),
    ),
    (2, Shape::List(&I64)),
];

/// Which structure of a page index [`check_struct`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageIndexPart {
    /// A `ColumnIndex`.
    Column,
    /// An `OffsetIndex`.
    Offset,
}

/// Check that `bytes` start with one well-formed Thrift compact struct (a page index's
/// `ColumnIndex` or `OffsetIndex`) whose lists claim no more elements than there are bytes
/// left, every field the `parquet` crate reads of the type the format gives it (as
/// [`check_counts`] checks a footer), before the crate decodes it.
pub(crate) fn check_struct(bytes: &[u8], part: PageIndexPart) -> Result<(), String> {
    let mut c = Cursor { b: bytes, at: 0 };
    let fields = match part {
        PageIndexPart::Column => COLUMN_INDEX,
        PageIndexPart::Offset => OFFSET_INDEX,
    };
    typed_struct(&mut c, fields, 1, &mut |_, _| Ok(()))
}

/// How the scan's footer reader and the `parquet` crate read the same footer bytes.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FooterReaders {
    /// Both read it, to the same columns, types, row counts and filter offsets.
    Agree,
    /// The scan's reader declined it (the crate's answer stands, as a scan uses it).
    Declined,
    /// The crate refused it, and the scan's reader declined it too.
    BothRefused,
    /// The crate refused it but the scan's reader read it (the crate's error: a footer the
    /// scan would read while the rest of the library refuses it).
    OnlySkimRead(String),
    /// Both read it, differently (a bug).
    Differ(String),
}

/// Read footer bytes (the Thrift `FileMetaData`, without the 8-byte tail) with both readers
/// and compare: for the tests and the fuzz target.
#[doc(hidden)]
pub fn compare_footer_readers(meta: &[u8]) -> FooterReaders {
    let skim = Footer::skim(meta);
    match (skim, decode_metadata(meta)) {
        (Some(s), Ok(m)) => {
            let theirs = Footer::from_metadata(&m);
            if s == theirs {
                FooterReaders::Agree
            } else {
                FooterReaders::Differ(format!("skim {s:?}\ncrate {theirs:?}"))
            }
        }
        (None, Ok(_)) => FooterReaders::Declined,
        (None, Err(_)) => FooterReaders::BothRefused,
        (Some(_), Err(e)) => FooterReaders::OnlySkimRead(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A forged footer of 84 bytes (found by the `parquet_footer` fuzz target) whose schema
    /// element's child count is an over-long varint the `parquet` crate reads as billions: it
    /// would reserve about 3 GB for them. Refused before the crate sees it.
    #[test]
    fn a_footer_claiming_more_children_than_elements_is_refused_before_the_crate() {
        let forged: [u8; 84] = [
            0x15, 0x02, 0x19, 0x3c, 0x48, 0x01, 0x6d, 0x15, 0x9d, 0x9d, 0x9d, 0x9d, 0x9d, 0xe8,
            0x9d, 0x9d, 0x9d, 0x9d, 0x04, 0x15, 0x02, 0x19, 0x3c, 0x48, 0x01, 0x6d, 0x15, 0x04,
            0x00, 0x15, 0x04, 0x25, 0x00, 0x18, 0x02, 0x69, 0x64, 0x00, 0x15, 0x0c, 0x25, 0x00,
            0x18, 0x07, 0x70, 0x61, 0x79, 0x6c, 0x6f, 0x61, 0x64, 0x25, 0x00, 0x00, 0x16, 0x80,
            0xf1, 0x04, 0x19, 0x4c, 0x19, 0x2c, 0x26, 0x00, 0x1c, 0x15, 0x04, 0x19, 0x35, 0x00,
            0x06, 0x10, 0x19, 0x18, 0x02, 0x69, 0x64, 0x15, 0x39, 0x18, 0x05, 0x72, 0x02, 0x6f,
        ];
        assert!(check_counts(&forged).is_err());
        assert!(decode_metadata(&forged).is_err());
        assert_eq!(compare_footer_readers(&forged), FooterReaders::BothRefused);
    }

    /// A forged footer of 192 bytes (found by the `parquet_footer` fuzz target) whose third
    /// schema element has a `logicalType` field (id 10) typed as an `i16`. The crate reads that
    /// field as a struct anyway, then reads the bytes after it as more fields of the element,
    /// one of them a child count it would reserve about 4 GB for. Refused before the crate
    /// sees it, by the field's type.
    #[test]
    fn a_footer_whose_schema_field_types_disagree_with_the_format_is_refused() {
        let forged: [u8; 192] = [
            0x15, 0x02, 0x19, 0x3c, 0x48, 0x01, 0x6d, 0x15, 0x04, 0x00, 0x15, 0x04, 0x25, 0x00,
            0x18, 0x02, 0x69, 0x64, 0x00, 0x15, 0x0c, 0x25, 0x00, 0x18, 0x07, 0x28, 0x70, 0x61,
            0x79, 0x6c, 0x6f, 0x61, 0x64, 0x25, 0x00, 0x00, 0x16, 0x80, 0xf1, 0x04, 0x19, 0x4c,
            0x19, 0x2c, 0x26, 0x00, 0x1c, 0x15, 0x04, 0x19, 0x35, 0x15, 0x9e, 0x9e, 0x9e, 0x9e,
            0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x00, 0x16, 0x80, 0xf1, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x01, 0x0a, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0x69, 0x64, 0x00,
            0x15, 0x0c, 0x25, 0x00, 0x18, 0x07, 0x28, 0x70, 0x61, 0x79, 0x6c, 0x6f, 0x61, 0x64,
            0x25, 0x00, 0x00, 0x16, 0x80, 0xf1, 0x04, 0x19, 0x4c, 0x19, 0x2c, 0x26, 0x00, 0x1c,
            0x15, 0x04, 0x19, 0x35, 0x15, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e,
            0x9e, 0x00, 0x16, 0x80, 0xf1, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0a, 0xfb,
            0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0x72, 0x71, 0x65, 0x74, 0x2d, 0x72,
            0x73, 0xbb, 0x20, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x20, 0x36, 0x31, 0x2e,
            0x31, 0x2e, 0x30, 0x19, 0x2c, 0x1c, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x1c, 0x00, 0xfe, 0xff, 0xff, 0xff, 0x00, 0x00,
        ];
        let why = check_counts(&forged).unwrap_err();
        assert!(why.contains("field 10"), "{why}");
        assert!(decode_metadata(&forged).is_err());
        assert_eq!(compare_footer_readers(&forged), FooterReaders::BothRefused);
    }

    /// Footers the format allows pass the check whatever the logical types, and the crate
    /// decodes them: the types the check requires are the format's.
    #[test]
    fn footers_of_every_logical_type_pass_the_check() {
        use parquet::basic::{LogicalType, TimeUnit, Type as Physical};
        use parquet::file::writer::SerializedFileWriter;
        use parquet::schema::types::Type;
        use std::sync::Arc;
        let logical = [
            (Physical::BYTE_ARRAY, LogicalType::String),
            (Physical::BYTE_ARRAY, LogicalType::Json),
            (Physical::BYTE_ARRAY, LogicalType::Bson),
            (Physical::BYTE_ARRAY, LogicalType::Enum),
            (Physical::INT32, LogicalType::Date),
            (Physical::INT32, LogicalType::integer(16, false)),
            (Physical::INT64, LogicalType::decimal(2, 12)),
            (Physical::INT64, LogicalType::time(true, TimeUnit::MICROS)),
            (
                Physical::INT64,
                LogicalType::timestamp(false, TimeUnit::NANOS),
            ),
            (
                Physical::INT64,
                LogicalType::timestamp(true, TimeUnit::MILLIS),
            ),
        ];
        let fields = logical
            .iter()
            .enumerate()
            .map(|(i, (physical, lt))| {
                let name = format!("c{i}");
                let mut b = Type::primitive_type_builder(&name, *physical)
                    .with_logical_type(Some(lt.clone()));
                if let LogicalType::Decimal { .. } = lt {
                    b = b.with_precision(12).with_scale(2);
                }
                Arc::new(b.build().unwrap())
            })
            .collect();
        let schema = Type::group_type_builder("m")
            .with_fields(fields)
            .build()
            .unwrap();
        let mut out = Vec::new();
        SerializedFileWriter::new(&mut out, Arc::new(schema), Default::default())
            .unwrap()
            .close()
            .unwrap();
        let meta_len = u32::from_le_bytes(out[out.len() - 8..out.len() - 4].try_into().unwrap());
        let meta = &out[out.len() - 8 - meta_len as usize..out.len() - 8];
        check_counts(meta).unwrap();
        assert_eq!(
            decode_metadata(meta)
                .unwrap()
                .file_metadata()
                .schema_descr()
                .num_columns(),
            10
        );
    }

    /// A schema nested [`MAX_SCHEMA_NESTING`] groups deep is decoded by the crate (on a test
    /// thread's 2 MiB stack); one level more is refused before the crate recurses into it.
    #[test]
    fn schema_nesting_is_bounded() {
        // FileMetaData { 1: version 1, 2: schema [root{4: "r", 5: 1}, g{3: 0, 4: "g", 5: 1} × (d - 1),
        // leaf{1: 1, 3: 0, 4: "x"}] }
        let footer = |d: usize| {
            let mut b = vec![0x15, 0x02, 0x19, 0xfc];
            let n = d + 1;
            b.extend_from_slice(&[n as u8 | 0x80, (n >> 7) as u8]);
            b.extend_from_slice(&[0x48, 0x01, b'r', 0x15, 0x02, 0x00]);
            for _ in 1..d {
                b.extend_from_slice(&[0x35, 0x00, 0x18, 0x01, b'g', 0x15, 0x02, 0x00]);
            }
            b.extend_from_slice(&[0x15, 0x02, 0x25, 0x00, 0x18, 0x01, b'x', 0x00]);
            b.extend_from_slice(&[0x16, 0x00, 0x19, 0x0c, 0x00]); // num_rows 0, no row groups
            b
        };
        let ok = footer(MAX_SCHEMA_NESTING);
        check_counts(&ok).unwrap();
        let meta = decode_metadata(&ok).unwrap();
        assert_eq!(
            meta.file_metadata()
                .schema_descr()
                .column(0)
                .path()
                .parts()
                .len(),
            MAX_SCHEMA_NESTING
        );
        let why = check_counts(&footer(MAX_SCHEMA_NESTING + 1)).unwrap_err();
        assert!(why.contains("nests groups"), "{why}");
    }

    /// A forged footer of 58 bytes (found by the `parquet_footer` fuzz target) holding lists
    /// of booleans in fields the crate skips: the crate skips a boolean element without
    /// reading its byte, so it reads what follows differently, down to a list header claiming
    /// hundreds of millions of booleans that it then loops over for seconds. Refused by the
    /// check, before the crate.
    #[test]
    fn a_footer_holding_lists_of_booleans_is_refused() {
        let forged: [u8; 58] = [
            0x05, 0x2e, 0x05, 0x2a, 0x2a, 0x2a, 0x2a, 0x2a, 0x2a, 0x2a, 0x15, 0x02, 0x19, 0x1c,
            0x48, 0x00, 0x3a, 0x2a, 0x2a, 0x2a, 0x2a, 0x51, 0x51, 0xbb, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf2, 0xff,
            0xff, 0xa8, 0xff, 0x00, 0x00, 0x00, 0x05, 0x51, 0x51, 0x51, 0x51, 0x2c, 0x51, 0x3f,
            0x3f, 0x2a,
        ];
        assert!(check_counts(&forged).is_err());
        assert_eq!(compare_footer_readers(&forged), FooterReaders::BothRefused);
        // FileMetaData { 15: a list of 2 booleans } is refused even with its bytes all there;
        // a list of 2 i32 in its place is not
        assert!(check_counts(&[0xf9, 0x21, 0x01, 0x02, 0x00]).is_err());
        assert!(check_counts(&[0xf9, 0x25, 0x01, 0x02, 0x00]).is_ok());
    }

    /// A forged footer of 79 bytes (found by the `parquet_footer` fuzz target) whose
    /// `num_rows` (field 3) is typed as a binary: a generic walk skips the binary, the crate
    /// reads a varint and then the rest differently, into a list of booleans it loops over for
    /// seconds. Refused by the field's type, wherever in the footer it is.
    #[test]
    fn a_footer_field_typed_unlike_the_format_is_refused_anywhere() {
        let forged: [u8; 79] = [
            0x15, 0x02, 0x19, 0x1c, 0x48, 0x01, 0x6d, 0x05, 0x04, 0x00, 0x00, 0x18, 0x02, 0x07,
            0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0x12, 0x98, 0x16, 0x15, 0x02, 0x19, 0x1c, 0x48,
            0x01, 0x6d, 0x05, 0x04, 0x00, 0x05, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0x3e, 0x46, 0x46,
            0x46, 0x46, 0x46, 0x46, 0x46, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9,
            0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9,
            0xb9, 0xb9, 0xf1, 0xf1, 0xf3, 0xf3, 0xfa, 0x04, 0x39,
        ];
        let why = check_counts(&forged).unwrap_err();
        assert!(why.contains("field 3"), "{why}");
        assert_eq!(compare_footer_readers(&forged), FooterReaders::BothRefused);
    }

    /// A page index is checked as a footer is: its known fields must have the format's types
    /// (the crate reads them by it), and its one container of booleans is `null_pages`.
    #[test]
    fn page_indexes_are_checked_by_the_types_the_crate_reads() {
        // ColumnIndex { 1: [true, false], 2: ["a", "b"], 3: ["c", "d"], 4: 0 }
        let column = [
            0x19, 0x21, 0x01, 0x00, 0x19, 0x28, 0x01, b'a', 0x01, b'b', 0x19, 0x28, 0x01, b'c',
            0x01, b'd', 0x15, 0x00, 0x00,
        ];
        check_struct(&column, PageIndexPart::Column).unwrap();
        // min_values typed as an i32
        let mut wrong = column[..4].to_vec();
        wrong.extend_from_slice(&[0x15, 0x02, 0x00]);
        let why = check_struct(&wrong, PageIndexPart::Column).unwrap_err();
        assert!(why.contains("field 2"), "{why}");
        // a list of booleans in a field the crate skips
        let mut stray = column[..column.len() - 1].to_vec();
        stray.extend_from_slice(&[0x59, 0x21, 0x01, 0x00, 0x00]);
        assert!(check_struct(&stray, PageIndexPart::Column).is_err());
        // OffsetIndex { 1: [PageLocation { 1: 4, 2: 8, 3: 0 }] }
        let offset = [0x19, 0x1c, 0x16, 0x08, 0x15, 0x10, 0x16, 0x00, 0x00, 0x00];
        check_struct(&offset, PageIndexPart::Offset).unwrap();
        // compressed_page_size typed as an i64
        let mut wrong = offset;
        wrong[4] = 0x16;
        assert!(check_struct(&wrong, PageIndexPart::Offset).is_err());
        // the column index's bytes are not an offset index
        assert!(check_struct(&column, PageIndexPart::Offset).is_err());
        // a negative page offset (zigzag 9: -5) or size (zigzag 0x11: -9) is refused
        let mut negative = offset;
        negative[3] = 0x09;
        let why = check_struct(&negative, PageIndexPart::Offset).unwrap_err();
        assert!(why.contains("offset (field 1) is negative (-5)"), "{why}");
        let mut negative = offset;
        negative[5] = 0x11;
        let why = check_struct(&negative, PageIndexPart::Offset).unwrap_err();
        assert!(
            why.contains("compressed_page_size (field 2) is negative"),
            "{why}"
        );
    }

    /// Page indexes changed at random (seeded) are refused by the check or decoded by the
    /// crate without a panic; a share of them (well-formed, well-typed) reaches the crate.
    /// Random changes rarely retype a field, so the typed refusals are tested by
    /// `page_indexes_are_checked_by_the_types_the_crate_reads`.
    #[test]
    fn mutated_page_indexes_are_refused_or_decoded() {
        use parquet::data_type::Int64Type;
        use parquet::file::page_index::index_reader::{decode_column_index, decode_offset_index};
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        use parquet::schema::parser::parse_message_type;
        use std::sync::Arc;
        // one INT64 column in pages of 100 values: a page index of three pages
        let schema = Arc::new(parse_message_type("message m { required int64 id; }").unwrap());
        let props = WriterProperties::builder()
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(100)
            .build();
        let mut out = Vec::new();
        let mut w = SerializedFileWriter::new(&mut out, schema, Arc::new(props)).unwrap();
        let mut rg = w.next_row_group().unwrap();
        let mut col = rg.next_column().unwrap().unwrap();
        let values: Vec<i64> = (0..300).collect();
        col.typed::<Int64Type>()
            .write_batch(&values, None, None)
            .unwrap();
        col.close().unwrap();
        rg.close().unwrap();
        w.close().unwrap();
        let meta_len = u32::from_le_bytes(out[out.len() - 8..out.len() - 4].try_into().unwrap());
        let meta = decode_metadata(&out[out.len() - 8 - meta_len as usize..out.len() - 8]).unwrap();
        let chunk = meta.row_group(0).column(0);
        let range = |o: Option<i64>, l: Option<i32>| {
            let (o, l) = (o.unwrap() as usize, l.unwrap() as usize);
            out[o..o + l].to_vec()
        };
        let column = range(chunk.column_index_offset(), chunk.column_index_length());
        let offset = range(chunk.offset_index_offset(), chunk.offset_index_length());
        check_struct(&column, PageIndexPart::Column).unwrap();
        check_struct(&offset, PageIndexPart::Offset).unwrap();
        assert_eq!(
            decode_offset_index(&offset).unwrap().page_locations().len(),
            3
        );
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let mut passed = [0usize; 2];
        for i in 0..4000 {
            let (mut b, part) = if i % 2 == 0 {
                (column.clone(), PageIndexPart::Column)
            } else {
                (offset.clone(), PageIndexPart::Offset)
            };
            for _ in 0..1 + next(3) {
                let at = next(b.len());
                match next(4) {
                    0 => b[at] = next(256) as u8,
                    1 => b[at] ^= 1 << next(8),
                    2 => b.truncate(at),
                    _ => b.insert(at, next(256) as u8),
                }
                if b.is_empty() {
                    b.push(0);
                }
            }
            if check_struct(&b, part).is_ok() {
                passed[i % 2] += 1;
                match part {
                    PageIndexPart::Column => {
                        drop(decode_column_index(&b, parquet::basic::Type::INT64))
                    }
                    PageIndexPart::Offset => drop(decode_offset_index(&b)),
                }
            }
        }
        // the mutations reach the crate: many keep the struct well-formed
        assert!(passed.iter().all(|&n| n > 100), "{passed:?}");
    }

    /// Counts are checked in proportion to the bytes: a list claiming more elements than bytes
    /// left is refused, and so is a child count just over the schema's size; a count equal to
    /// the rest of the schema passes the check.
    #[test]
    fn counts_are_bounded_by_the_footer() {
        // FileMetaData { 2: schema list of 2 structs { 5: num_children = c } }
        let schema = |c: i64| {
            let zz = ((c << 1) ^ (c >> 63)) as u8;
            vec![0x29, 0x2c, 0x55, zz, 0x00, 0x55, 0x00, 0x00, 0x00]
        };
        assert!(check_counts(&schema(1)).is_ok());
        assert!(check_counts(&schema(2)).is_ok());
        assert!(check_counts(&schema(3)).unwrap_err().contains("3 children"));
        assert!(check_counts(&schema(-1)).is_err());
        // a list header claiming 15 + 100 structs in a few bytes
        assert!(check_counts(&[0x29, 0xfc, 0x64, 0x00, 0x00]).is_err());
    }
}
