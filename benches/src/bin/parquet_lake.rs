//! The Parquet lake of the `parquet prune` benchmark (benches/scripts/parquet_bench.sh).
//!
//! `parquet_lake gen DIR FILES ROW_GROUPS ROWS` writes FILES Parquet files of ROW_GROUPS row
//! groups of ROWS rows (INT64 `id`, distinct across the lake: file f, row group g, row i has id
//! `(f·ROW_GROUPS + g)·ROWS + i`; a `payload` string column), with the `parquet` crate's
//! writer and a split-block filter on `id` sized for ROWS values at 1%.
//!
//! `parquet_lake seeds DIR` writes the seed files of the `parquet_scan` fuzz target
//! (fuzz/seeds/parquet_scan/): the same two columns, uncompressed, a few rows each, filters
//! on `id` larger than the rows need (a 4 KiB bitset: a scan reads single blocks of it for
//! one key) or no filters at all.
//!
//! `parquet_lake floor DIR [REPEATS]` measures the I/O floor of a lake query: per file, open it
//! and read the bytes of its footer and of every row group's `id` filter (one positioned
//! read each, offsets found beforehand), files in parallel on the rayon pool, best of
//! REPEATS. It prints the seconds, the bytes read, and the time to decode the footers too.
//!
//! `parquet_lake ranges DIR OUT` writes those offsets to OUT (one line per file: its path, then
//! offset and length of the footer and of each filter), and `parquet_lake read RANGES` makes
//! the same reads once and exits: the floor as a command, timed from outside the way the
//! `bloomery` commands are (a process started, its work, its exit).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::metadata::ParquetMetaDataReader;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

/// Write file number `f` of a lake: `rgs` row groups of `rows` rows (ids `(f·rgs + g)·rows + i`).
fn write_file(path: &Path, f: u64, rgs: u64, rows: u64, props: WriterProperties) {
    let schema = Arc::new(
        parse_message_type("message m { required int64 id; required binary payload (UTF8); }")
            .unwrap(),
    );
    let mut w =
        SerializedFileWriter::new(File::create(path).unwrap(), schema, Arc::new(props)).unwrap();
    for g in 0..rgs {
        let base = (f * rgs + g) * rows;
        let ids: Vec<i64> = (0..rows).map(|i| (base + i) as i64).collect();
        let mut rg = w.next_row_group().unwrap();
        let mut col = rg.next_column().unwrap().unwrap();
        col.typed::<Int64Type>()
            .write_batch(&ids, None, None)
            .unwrap();
        col.close().unwrap();
        let mut col = rg.next_column().unwrap().unwrap();
        let v: Vec<ByteArray> = ids
            .iter()
            .map(|i| format!("row {i}").as_str().into())
            .collect();
        col.typed::<ByteArrayType>()
            .write_batch(&v, None, None)
            .unwrap();
        col.close().unwrap();
        rg.close().unwrap();
    }
    w.close().unwrap();
}

fn gen(dir: &Path, files: u64, rgs: u64, rows: u64) {
    std::fs::create_dir_all(dir).unwrap();
    (0..files).into_par_iter().for_each(|f| {
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_column_bloom_filter_fpp(ColumnPath::from("id"), 0.01)
            .set_column_bloom_filter_max_ndv(ColumnPath::from("id"), rows)
            .build();
        write_file(
            &dir.join(format!("part-{f:05}.parquet")),
            f,
            rgs,
            rows,
            props,
        );
    });
}

/// A fuzz seed: its name, row groups, rows per row group, and the `id` filters' distinct
/// values and rate (None: no filters).
type Seed = (&'static str, u64, u64, Option<(u64, f64)>);

/// The fuzz seeds. arrow-rs sizes a filter for the distinct values, then folds it (halves it,
/// ORing block pairs) while its estimated rate stays below the one asked for: the tiny rates
/// keep a 4 KiB filter for 16 values (12 written) and 256 bytes for 40 (4 written).
const SEEDS: [Seed; 3] = [
    ("one-row-group-4k-filter", 1, 12, Some((16, 1e-19))),
    ("three-row-groups", 3, 4, Some((40, 1e-13))),
    ("no-filters", 2, 3, None),
];

fn seeds(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, rgs, rows, filter) in SEEDS {
        let mut props = WriterProperties::builder()
            .set_compression(Compression::UNCOMPRESSED)
            .set_dictionary_enabled(false)
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None);
        if let Some((ndv, fpp)) = filter {
            props = props
                .set_column_bloom_filter_fpp(ColumnPath::from("id"), fpp)
                .set_column_bloom_filter_max_ndv(ColumnPath::from("id"), ndv);
        }
        write_file(&dir.join(name), 0, rgs, rows, props.build());
    }
}

/// Per file: (footer range, filter ranges).
type Ranges = (PathBuf, (u64, u64), Vec<(u64, u64)>);

fn ranges(dir: &Path) -> Vec<Ranges> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    paths.sort();
    paths
        .into_par_iter()
        .map(|p| {
            let f = File::open(&p).unwrap();
            let len = f.metadata().unwrap().len();
            let meta = ParquetMetaDataReader::new().parse_and_finish(&f).unwrap();
            let mut tail = [0u8; 8];
            f.read_exact_at(&mut tail, len - 8).unwrap();
            let mlen = u64::from(u32::from_le_bytes(tail[..4].try_into().unwrap()));
            let filters = meta
                .row_groups()
                .iter()
                .map(|rg| {
                    let c = rg.column(0);
                    (
                        c.bloom_filter_offset().unwrap() as u64,
                        c.bloom_filter_length().unwrap() as u64,
                    )
                })
                .collect();
            (p, (len - 8 - mlen, mlen + 8), filters)
        })
        .collect()
}

fn floor(dir: &Path, repeats: usize) {
    let r = ranges(dir);
    let bytes: u64 = r
        .iter()
        .map(|(_, f, fs)| f.1 + fs.iter().map(|x| x.1).sum::<u64>())
        .sum();
    let mut best = f64::MAX;
    let mut best_decode = f64::MAX;
    for _ in 0..repeats {
        let t = Instant::now();
        r.par_iter().for_each(|(p, (fo, fl), fs)| {
            let f = File::open(p).unwrap();
            let mut buf = vec![0u8; *fl as usize];
            f.read_exact_at(&mut buf, *fo).unwrap();
            for &(o, l) in fs {
                let mut b = vec![0u8; l as usize];
                f.read_exact_at(&mut b, o).unwrap();
                std::hint::black_box(&b);
            }
            std::hint::black_box(&buf);
        });
        best = best.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        r.par_iter().for_each(|(p, (fo, fl), fs)| {
            let f = File::open(p).unwrap();
            let mut buf = vec![0u8; *fl as usize];
            f.read_exact_at(&mut buf, *fo).unwrap();
            let m = ParquetMetaDataReader::decode_metadata(&buf[..buf.len() - 8]).unwrap();
            std::hint::black_box(&m);
            for &(o, l) in fs {
                let mut b = vec![0u8; l as usize];
                f.read_exact_at(&mut b, o).unwrap();
                std::hint::black_box(&b);
            }
        });
        best_decode = best_decode.min(t.elapsed().as_secs_f64());
    }
    println!(
        "files {} row_groups {} bytes {} threads {} floor_read_s {best:.4} floor_read_decode_s {best_decode:.4}",
        r.len(),
        r.iter().map(|x| x.2.len()).sum::<usize>(),
        bytes,
        rayon::current_num_threads()
    );
}

fn write_ranges(dir: &Path, out: &Path) {
    let mut text = String::new();
    for (p, (fo, fl), fs) in ranges(dir) {
        text.push_str(&format!("{} {fo} {fl}", p.display()));
        for (o, l) in fs {
            text.push_str(&format!(" {o} {l}"));
        }
        text.push('\n');
    }
    std::fs::write(out, text).unwrap();
}

/// The reads of [`floor`], once, from a file [`write_ranges`] wrote.
fn read(ranges: &Path) {
    let text = std::fs::read_to_string(ranges).unwrap();
    let r: Vec<(&str, Vec<u64>)> = text
        .lines()
        .map(|l| {
            let mut w = l.split(' ');
            let p = w.next().unwrap();
            (p, w.map(|x| x.parse().unwrap()).collect())
        })
        .collect();
    r.par_iter().for_each(|(p, v)| {
        let f = File::open(p).unwrap();
        for ol in v.chunks_exact(2) {
            let mut b = vec![0u8; ol[1] as usize];
            f.read_exact_at(&mut b, ol[0]).unwrap();
            std::hint::black_box(&b);
        }
    });
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a.get(1).map(String::as_str) {
        Some("gen") if a.len() == 6 => gen(
            Path::new(&a[2]),
            a[3].parse().unwrap(),
            a[4].parse().unwrap(),
            a[5].parse().unwrap(),
        ),
        Some("seeds") if a.len() == 3 => seeds(Path::new(&a[2])),
        Some("floor") if a.len() >= 3 => {
            floor(Path::new(&a[2]), a.get(3).map_or(5, |r| r.parse().unwrap()))
        }
        Some("ranges") if a.len() == 4 => write_ranges(Path::new(&a[2]), Path::new(&a[3])),
        Some("read") if a.len() == 3 => read(Path::new(&a[2])),
        _ => {
            eprintln!(
                "usage: parquet_lake gen DIR FILES ROW_GROUPS ROWS | seeds DIR | floor DIR [REPEATS] \
                 | ranges DIR OUT | read RANGES"
            );
            std::process::exit(2);
        }
    }
}
