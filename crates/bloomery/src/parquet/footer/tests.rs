//! Forged footers and page indexes against the checks and the two readers.

use super::check::MAX_SCHEMA_NESTING;
use super::*;

/// A forged footer of 84 bytes (found by the `parquet_footer` fuzz target) whose schema
/// element's child count is an over-long varint the `parquet` crate reads as billions: it
/// would reserve about 3 GB for them. Refused before the crate sees it.
#[test]
fn a_footer_claiming_more_children_than_elements_is_refused_before_the_crate() {
    let forged: [u8; 84] = [
        0x15, 0x02, 0x19, 0x3c, 0x48, 0x01, 0x6d, 0x15, 0x9d, 0x9d, 0x9d, 0x9d, 0x9d, 0xe8, 0x9d,
        0x9d, 0x9d, 0x9d, 0x04, 0x15, 0x02, 0x19, 0x3c, 0x48, 0x01, 0x6d, 0x15, 0x04, 0x00, 0x15,
        0x04, 0x25, 0x00, 0x18, 0x02, 0x69, 0x64, 0x00, 0x15, 0x0c, 0x25, 0x00, 0x18, 0x07, 0x70,
        0x61, 0x79, 0x6c, 0x6f, 0x61, 0x64, 0x25, 0x00, 0x00, 0x16, 0x80, 0xf1, 0x04, 0x19, 0x4c,
        0x19, 0x2c, 0x26, 0x00, 0x1c, 0x15, 0x04, 0x19, 0x35, 0x00, 0x06, 0x10, 0x19, 0x18, 0x02,
        0x69, 0x64, 0x15, 0x39, 0x18, 0x05, 0x72, 0x02, 0x6f,
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
        0x15, 0x02, 0x19, 0x3c, 0x48, 0x01, 0x6d, 0x15, 0x04, 0x00, 0x15, 0x04, 0x25, 0x00, 0x18,
        0x02, 0x69, 0x64, 0x00, 0x15, 0x0c, 0x25, 0x00, 0x18, 0x07, 0x28, 0x70, 0x61, 0x79, 0x6c,
        0x6f, 0x61, 0x64, 0x25, 0x00, 0x00, 0x16, 0x80, 0xf1, 0x04, 0x19, 0x4c, 0x19, 0x2c, 0x26,
        0x00, 0x1c, 0x15, 0x04, 0x19, 0x35, 0x15, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e,
        0x9e, 0x9e, 0x00, 0x16, 0x80, 0xf1, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0a, 0xfb,
        0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0x69, 0x64, 0x00, 0x15, 0x0c, 0x25, 0x00, 0x18, 0x07,
        0x28, 0x70, 0x61, 0x79, 0x6c, 0x6f, 0x61, 0x64, 0x25, 0x00, 0x00, 0x16, 0x80, 0xf1, 0x04,
        0x19, 0x4c, 0x19, 0x2c, 0x26, 0x00, 0x1c, 0x15, 0x04, 0x19, 0x35, 0x15, 0x9e, 0x9e, 0x9e,
        0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x9e, 0x00, 0x16, 0x80, 0xf1, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x01, 0x0a, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0xfb, 0x72, 0x71,
        0x65, 0x74, 0x2d, 0x72, 0x73, 0xbb, 0x20, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x20,
        0x36, 0x31, 0x2e, 0x31, 0x2e, 0x30, 0x19, 0x2c, 0x1c, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x1c, 0x00, 0xfe, 0xff, 0xff, 0xff, 0x00, 0x00,
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
            let mut b =
                Type::primitive_type_builder(&name, *physical).with_logical_type(Some(lt.clone()));
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
        0x05, 0x2e, 0x05, 0x2a, 0x2a, 0x2a, 0x2a, 0x2a, 0x2a, 0x2a, 0x15, 0x02, 0x19, 0x1c, 0x48,
        0x00, 0x3a, 0x2a, 0x2a, 0x2a, 0x2a, 0x51, 0x51, 0xbb, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf2, 0xff, 0xff, 0xa8, 0xff,
        0x00, 0x00, 0x00, 0x05, 0x51, 0x51, 0x51, 0x51, 0x2c, 0x51, 0x3f, 0x3f, 0x2a,
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
        0x15, 0x02, 0x19, 0x1c, 0x48, 0x01, 0x6d, 0x05, 0x04, 0x00, 0x00, 0x18, 0x02, 0x07, 0x00,
        0x00, 0x00, 0xff, 0xff, 0xff, 0x12, 0x98, 0x16, 0x15, 0x02, 0x19, 0x1c, 0x48, 0x01, 0x6d,
        0x05, 0x04, 0x00, 0x05, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0x3e, 0x46, 0x46, 0x46, 0x46, 0x46,
        0x46, 0x46, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9,
        0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xb9, 0xf1, 0xf1, 0xf3,
        0xf3, 0xfa, 0x04, 0x39,
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
        0x19, 0x21, 0x01, 0x00, 0x19, 0x28, 0x01, b'a', 0x01, b'b', 0x19, 0x28, 0x01, b'c', 0x01,
        b'd', 0x15, 0x00, 0x00,
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
                PageIndexPart::Column => drop(decode_column_index(&b, parquet::basic::Type::INT64)),
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
