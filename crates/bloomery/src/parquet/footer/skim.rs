//! The footer fields a scan reads, straight from the footer's Thrift bytes ([`Footer::skim`]),
//! and the same fields from the `parquet` crate's decode ([`Footer::from_metadata`]).

use parquet::basic::{ConvertedType, LogicalType, Type};
use parquet::file::metadata::ParquetMetaData;

use super::MAX_DEPTH;
use crate::parquet::keys::{ColumnType, PhysicalType, TextForm};
use crate::parquet::thrift::{BoolElements, Reader, T_BINARY, T_I32, T_I64, T_LIST, T_STRUCT};

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

fn i32_of(c: &mut Reader<'_>) -> Option<i32> {
    i32::try_from(c.zigzag().ok()?).ok()
}

fn element(c: &mut Reader<'_>) -> Option<Element> {
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
    while let Some((id, ty)) = c.field(&mut last).ok()? {
        match (id, ty) {
            (1, T_I32) => e.physical = Some(i32_of(c)?),
            (2, T_I32) => e.type_length = Some(i32_of(c)?),
            (3, T_I32) => e.repetition = Some(i32_of(c)?),
            (4, T_BINARY) => {
                name = Some(std::str::from_utf8(c.binary().ok()?).ok()?.to_string());
            }
            (5, T_I32) => e.children = Some(i32_of(c)?),
            (6, T_I32) => e.converted = Some(i32_of(c)?),
            (10, T_STRUCT) => e.logical = Some(c.union_member().ok()?),
            (1..=6 | 10, _) => return None,
            (_, ty) => c.skip_value(ty, 1).ok()?,
        }
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
fn column_chunk(c: &mut Reader<'_>) -> Option<(i32, FilterField)> {
    let mut file_offset = false;
    let mut meta = None;
    let mut last = 0i16;
    while let Some((id, ty)) = c.field(&mut last).ok()? {
        match (id, ty) {
            (2, T_I64) => {
                c.zigzag().ok()?;
                file_offset = true;
            }
            (3, T_STRUCT) => meta = Some(column_meta(c)?),
            // encrypted columns: left to the crate
            (8 | 9, _) => return None,
            (2 | 3, _) => return None,
            (_, ty) => c.skip_value(ty, 1).ok()?,
        }
    }
    if !file_offset {
        return None;
    }
    meta
}

/// One `ColumnMetaData`: its physical type id and filter fields, every required field present.
fn column_meta(c: &mut Reader<'_>) -> Option<(i32, FilterField)> {
    let mut ty_id = None;
    let (mut offset, mut length) = (None, None);
    // required fields: type 1, encodings 2, path_in_schema 3, codec 4, num_values 5,
    // total_uncompressed_size 6, total_compressed_size 7, data_page_offset 9
    let mut seen = 0u32;
    let mut last = 0i16;
    while let Some((id, ty)) = c.field(&mut last).ok()? {
        match (id, ty) {
            (1, T_I32) => ty_id = Some(i32_of(c)?),
            (4, T_I32) => {
                i32_of(c)?;
            }
            (5 | 6 | 7 | 9, T_I64) => {
                c.zigzag().ok()?;
            }
            (2 | 3, T_LIST) => c.skip_value(T_LIST, 1).ok()?,
            (14, T_I64) => offset = Some(c.zigzag().ok()?),
            (15, T_I32) => length = Some(i32_of(c)?),
            (1..=7 | 9 | 14 | 15, _) => return None,
            (_, ty) => {
                c.skip_value(ty, 1).ok()?;
                continue;
            }
        }
        seen |= 1 << id;
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
    c: &mut Reader<'_>,
    leaves: &[Leaf],
    types: &[i32],
    filters: &mut Vec<FilterField>,
) -> Option<i64> {
    let (mut columns, mut total, mut rows) = (false, false, None);
    let mut last = 0i16;
    while let Some((id, ty)) = c.field(&mut last).ok()? {
        match (id, ty) {
            (1, T_LIST) => {
                if columns {
                    return None;
                }
                let (et, n) = c.list().ok()?;
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
                c.zigzag().ok()?;
                total = true;
            }
            (3, T_I64) => rows = Some(c.zigzag().ok()?),
            (1..=3, _) => return None,
            (_, ty) => c.skip_value(ty, 1).ok()?,
        }
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
        let mut c = Reader::new(bytes, MAX_DEPTH, BoolElements::Refused);
        let mut out = Footer {
            leaves: Vec::new(),
            rows: Vec::new(),
            filters: Vec::new(),
        };
        let (mut version, mut schema, mut num_rows, mut groups) = (false, false, false, false);
        let mut types = Vec::new();
        let mut last = 0i16;
        while let Some((id, ty)) = c.field(&mut last).ok()? {
            match (id, ty) {
                (1, T_I32) => {
                    i32_of(&mut c)?;
                    version = true;
                }
                (2, T_LIST) => {
                    if schema {
                        return None;
                    }
                    let (et, n) = c.list().ok()?;
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
                    c.zigzag().ok()?;
                    num_rows = true;
                }
                (4, T_LIST) => {
                    // the row groups refer to the schema's leaves: it must come first
                    if !schema || groups {
                        return None;
                    }
                    let (et, n) = c.list().ok()?;
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
                (_, ty) => c.skip_value(ty, 1).ok()?,
            }
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
