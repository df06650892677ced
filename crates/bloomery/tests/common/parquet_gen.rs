//! Small Parquet files written by the `parquet` crate (arrow-rs's file writer) with Bloom
//! filters on every column but `nofilter`: several physical types, several row groups, nulls.
//! Shared by the library's and the CLI's tests.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{
    ByteArray, ByteArrayType, DoubleType, FixedLenByteArray, FixedLenByteArrayType, FloatType,
    Int32Type, Int64Type,
};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

pub const SCHEMA: &str = "message lake {
    required int64 id;
    required binary name (UTF8);
    required int32 small;
    required double d;
    required float f;
    required fixed_len_byte_array(16) u (UUID);
    required int32 day (DATE);
    required int64 nofilter;
    optional binary opt (UTF8);
}";

/// Columns with a filter, and the one without.
pub const FILTERED: [&str; 8] = ["id", "name", "small", "d", "f", "u", "day", "opt"];

/// The id of row `i` of row group `rg` of file `file`: distinct everywhere.
pub fn id(file: u64, rg: u64, i: u64, rows: u64) -> i64 {
    ((file * 1_000 + rg) * rows + i) as i64 * 7 + 1
}

pub fn name(id: i64) -> String {
    format!("name-{id}")
}

pub fn small(id: i64) -> i32 {
    (id % 1000) as i32 - 500
}

pub fn d(id: i64) -> f64 {
    id as f64 * 0.5
}

pub fn f(id: i64) -> f32 {
    (id % 100_000) as f32 + 0.25
}

pub fn uuid(id: i64) -> [u8; 16] {
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&id.to_be_bytes());
    u[8..].copy_from_slice(&(!id).to_be_bytes());
    u
}

/// The UUID's text form.
pub fn uuid_text(id: i64) -> String {
    let h: String = uuid(id).iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

pub fn day(id: i64) -> i32 {
    19_000 + (id % 365) as i32
}

pub fn nofilter(id: i64) -> i64 {
    id * 3
}

/// Row `i` has an `opt` value unless `i % 3 == 2`.
pub fn opt(id: i64) -> String {
    format!("opt-{id}")
}

/// Write file number `file` with `row_groups` row groups of `rows` rows at filter rate `fpp`.
pub fn write(path: &Path, file: u64, row_groups: u64, rows: u64, fpp: f64) {
    let schema = Arc::new(parse_message_type(SCHEMA).unwrap());
    // per column: a column's "disabled" falls back to the default, so none is enabled there
    let mut props = WriterProperties::builder().set_compression(Compression::SNAPPY);
    for c in FILTERED {
        props = props
            .set_column_bloom_filter_fpp(ColumnPath::from(c), fpp)
            .set_column_bloom_filter_max_ndv(ColumnPath::from(c), rows);
    }
    let props = props.build();
    let out = std::fs::File::create(path).unwrap();
    let mut w = SerializedFileWriter::new(out, schema, Arc::new(props)).unwrap();
    for rg in 0..row_groups {
        let ids: Vec<i64> = (0..rows).map(|i| id(file, rg, i, rows)).collect();
        let mut g = w.next_row_group().unwrap();
        let mut c = 0;
        while let Some(mut col) = g.next_column().unwrap() {
            match c {
                0 => {
                    col.typed::<Int64Type>()
                        .write_batch(&ids, None, None)
                        .unwrap();
                }
                1 => {
                    let v: Vec<ByteArray> = ids.iter().map(|&i| name(i).as_str().into()).collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&v, None, None)
                        .unwrap();
                }
                2 => {
                    let v: Vec<i32> = ids.iter().map(|&i| small(i)).collect();
                    col.typed::<Int32Type>()
                        .write_batch(&v, None, None)
                        .unwrap();
                }
                3 => {
                    let v: Vec<f64> = ids.iter().map(|&i| d(i)).collect();
                    col.typed::<DoubleType>()
                        .write_batch(&v, None, None)
                        .unwrap();
                }
                4 => {
                    let v: Vec<f32> = ids.iter().map(|&i| f(i)).collect();
                    col.typed::<FloatType>()
                        .write_batch(&v, None, None)
                        .unwrap();
                }
                5 => {
                    let v: Vec<FixedLenByteArray> = ids
                        .iter()
                        .map(|&i| FixedLenByteArray::from(uuid(i).to_vec()))
                        .collect();
                    col.typed::<FixedLenByteArrayType>()
                        .write_batch(&v, None, None)
                        .unwrap();
                }
                6 => {
                    let v: Vec<i32> = ids.iter().map(|&i| day(i)).collect();
                    col.typed::<Int32Type>()
                        .write_batch(&v, None, None)
                        .unwrap();
                }
                7 => {
                    let v: Vec<i64> = ids.iter().map(|&i| nofilter(i)).collect();
                    col.typed::<Int64Type>()
                        .write_batch(&v, None, None)
                        .unwrap();
                }
                8 => {
                    let def: Vec<i16> = (0..rows).map(|i| i16::from(i % 3 != 2)).collect();
                    let v: Vec<ByteArray> = ids
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| i % 3 != 2)
                        .map(|(_, &i)| opt(i).as_str().into())
                        .collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&v, Some(&def), None)
                        .unwrap();
                }
                _ => unreachable!(),
            }
            col.close().unwrap();
            c += 1;
        }
        g.close().unwrap();
    }
    w.close().unwrap();
}
