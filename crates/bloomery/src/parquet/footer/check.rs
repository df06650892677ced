//! The checks footer bytes and page indexes pass before the `parquet` crate decodes them
//! ([`check_counts`], [`check_struct`]): the types of the fields the crate reads, by the
//! format ([`Shape`]), and the counts it reserves memory by.

use super::MAX_DEPTH;
use crate::parquet::thrift::{
    BoolElements, Reader, T_BINARY, T_BYTE, T_DOUBLE, T_FALSE, T_I16, T_I32, T_I64, T_LIST,
    T_STRUCT, T_TRUE,
};

/// A field's type as the `parquet` crate (60.x) reads it. The crate reads a field it knows by
/// the type the format gives that field, whatever type the bytes announce, so footer bytes
/// whose types disagree with the format are read one way by a generic Thrift walk and
/// another way by the crate, which may then find a child count, a list length or a list of
/// booleans (see [`BoolElements::Refused`]) that the walk never saw. [`check_counts`] refuses them.
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
pub(super) const MAX_SCHEMA_NESTING: usize = 256;

/// Why bytes are refused when they are not well-formed Thrift (a list longer than its bytes
/// among them).
const NOT_THRIFT: &str = "not well-formed Thrift (or a list longer than its bytes)";

/// Walk one struct of shape `fields`, refusing a known field whose type is not the format's;
/// `i32` fields of the outermost struct are handed to `seen` as (field id, value).
fn typed_struct(
    c: &mut Reader<'_>,
    fields: &[(i16, Shape)],
    depth: usize,
    seen: &mut dyn FnMut(i16, i64) -> Result<(), String>,
) -> Result<(), String> {
    let mut last = 0i16;
    while let Some((id, ty)) = c.field(&mut last).map_err(|_| NOT_THRIFT)? {
        let shape = fields.iter().find(|(known, _)| *known == id).map(|f| f.1);
        match shape {
            Some(Shape::Is(T_I32)) if ty == T_I32 => {
                let v = c.zigzag().map_err(|_| NOT_THRIFT)?;
                seen(id, v)?;
            }
            Some(shape) => typed_value(c, shape, id, ty, depth)?,
            None => c.skip_value(ty, depth).map_err(|_| NOT_THRIFT)?,
        }
    }
    Ok(())
}

/// Walk the value of field `id`, of shape `shape`, announced as of type `ty`.
fn typed_value(
    c: &mut Reader<'_>,
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
        Shape::Is(t) if t == ty => c.skip_value(ty, depth).map_err(|_| NOT_THRIFT.to_string()),
        Shape::NonNegative(t, name) if t == ty => {
            let v = c.zigzag().map_err(|_| NOT_THRIFT)?;
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
            let (et, n) = c.list().map_err(|_| NOT_THRIFT)?;
            let want = match *elem {
                Shape::Is(t) | Shape::NonNegative(t, _) => t,
                Shape::Struct(_) => T_STRUCT,
                Shape::Bool => {
                    // one byte each, read as such by the crate where it knows the field
                    if !matches!(et, T_TRUE | T_FALSE) && n > 0 {
                        return Err(wrong());
                    }
                    return c.skip(n as u64).map_err(|_| NOT_THRIFT.to_string());
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
    let mut c = Reader::new(bytes, MAX_DEPTH, BoolElements::Refused);
    let malformed = || NOT_THRIFT.to_string();
    let mut last = 0i16;
    let mut schema_read = false;
    while let Some((id, ty)) = c.field(&mut last).map_err(|_| NOT_THRIFT)? {
        if id != 2 || schema_read {
            // a second schema the crate skips by its type, as this walk does
            match FILE_META_DATA.iter().find(|(known, _)| *known == id) {
                Some(&(_, shape)) if id != 2 => typed_value(&mut c, shape, id, ty, 1)?,
                _ => c.skip_value(ty, 1).map_err(|_| malformed())?,
            }
            continue;
        }
        if ty != T_LIST {
            return Err("the schema is not a Thrift list".to_string());
        }
        let (et, n) = c.list().map_err(|_| malformed())?;
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
            crate::parquet::panic_message(&*p)
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
    let mut c = Reader::new(bytes, MAX_DEPTH, BoolElements::Refused);
    let fields = match part {
        PageIndexPart::Column => COLUMN_INDEX,
        PageIndexPart::Offset => OFFSET_INDEX,
    };
    typed_struct(&mut c, fields, 1, &mut |_, _| Ok(()))
}

/// parquet-format `PageHeader`, as the crate reads it: the sizes and counts it trusts must not
/// be negative.
const PAGE_HEADER: &[(i16, Shape)] = &[
    (1, I32),
    (2, size32("uncompressed_page_size")),
    (3, size32("compressed_page_size")),
    (4, I32),
    // DataPageHeader
    (
        5,
        Shape::Struct(&[
            (1, size32("num_values")),
            (2, I32),
            (3, I32),
            (4, I32),
            (5, STATISTICS),
        ]),
    ),
    // IndexPageHeader
    (6, EMPTY),
    // DictionaryPageHeader
    (
        7,
        Shape::Struct(&[(1, size32("num_values")), (2, I32), (3, Shape::Bool)]),
    ),
    // DataPageHeaderV2
    (
        8,
        Shape::Struct(&[
            (1, size32("num_values")),
            (2, size32("num_nulls")),
            (3, size32("num_rows")),
            (4, I32),
            (5, size32("definition_levels_byte_length")),
            (6, size32("repetition_levels_byte_length")),
            (7, Shape::Bool),
            (8, STATISTICS),
        ]),
    ),
];

/// Check that `bytes` start with a page header the `parquet` crate reads as this walk does
/// (well-formed, every known field of the format's type, no negative size or count, no
/// container of booleans); the bytes it takes.
pub(crate) fn check_page_header(bytes: &[u8]) -> Result<usize, String> {
    let mut c = Reader::new(bytes, MAX_DEPTH, BoolElements::Refused);
    typed_struct(&mut c, PAGE_HEADER, 1, &mut |_, _| Ok(()))?;
    Ok(c.position())
}
