//! The `parquet` module against files written by the `parquet` crate (arrow-rs) with Bloom
//! filters: our reader gives arrow-rs' bitsets and answers (`Sbbf::check`), keys typed by the
//! column's physical type find every value (no false negatives), damaged footers and filter
//! headers are errors, and filters built here round-trip through Parquet files.

#[path = "common/parquet_gen.rs"]
mod parquet_gen;

use std::path::{Path, PathBuf};

use bloomery::parquet::{
    build_filters, read_filter_header, rewrite_with_filters, scan, verify_rewrite, ColumnType,
    FilterSource, Hits, KeyList, Mode, ParquetError, ParquetFile, ParquetSidecar, Query,
    SidecarFilter, SidecarState, Sizing,
};
use bloomery::{Persist, SplitBlockBits, SplitBlockBloomFilter, Stats};
use parquet::bloom_filter::Sbbf;
use parquet::data_type::{ByteArray, FixedLenByteArray};
use parquet_gen as gen;

const ROWS: u64 = 1500;
const RGS: u64 = 3;

fn lake_file(dir: &Path, n: u64) -> PathBuf {
    let p = dir.join(format!("part-{n}.parquet"));
    gen::write(&p, n, RGS, ROWS, 0.01);
    p
}

/// arrow-rs' own reader of a chunk's filter.
fn theirs(path: &Path, rg: usize, col: usize) -> Option<Sbbf> {
    let pf = ParquetFile::open(path).unwrap();
    let file = std::fs::File::open(path).unwrap();
    Sbbf::read_from_column_chunk(pf.metadata().row_group(rg).column(col), &file).unwrap()
}

/// Present keys of row group `rg` of file `file` for column `col`, as text, and each one's
/// value as arrow-rs' `Sbbf::check` takes it.
fn check_theirs(sbbf: &Sbbf, col: &str, id: i64) -> bool {
    match col {
        "id" => sbbf.check(&id),
        "name" => sbbf.check(&ByteArray::from(gen::name(id).as_str())),
        "small" => sbbf.check(&gen::small(id)),
        "d" => sbbf.check(&gen::d(id)),
        "f" => sbbf.check(&gen::f(id)),
        "u" => sbbf.check(&FixedLenByteArray::from(gen::uuid(id).to_vec())),
        "day" => sbbf.check(&gen::day(id)),
        "opt" => sbbf.check(&ByteArray::from(gen::opt(id).as_str())),
        "nofilter" => sbbf.check(&gen::nofilter(id)),
        _ => unreachable!(),
    }
}

fn key_text(col: &str, id: i64) -> String {
    match col {
        "id" => id.to_string(),
        "name" => gen::name(id),
        "small" => gen::small(id).to_string(),
        "d" => gen::d(id).to_string(),
        "f" => gen::f(id).to_string(),
        "u" => gen::uuid_text(id),
        "day" => {
            // as a date, to exercise the DATE text form
            let days = gen::day(id);
            let mut lo = 0i32;
            let mut y = 1970;
            loop {
                let len = if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 {
                    366
                } else {
                    365
                };
                if lo + len > days {
                    break;
                }
                lo += len;
                y += 1;
            }
            let mut m = 1;
            loop {
                let dd = format!("{y}-{m:02}-01");
                let next = if m == 12 {
                    format!("{}-01-01", y + 1)
                } else {
                    format!("{y}-{:02}-01", m + 1)
                };
                let end = bloomery::parquet::days_since_epoch(&next).unwrap();
                if days < end {
                    let start = bloomery::parquet::days_since_epoch(&dd).unwrap();
                    break format!("{y}-{m:02}-{:02}", days - start + 1);
                }
                m += 1;
            }
        }
        "opt" => gen::opt(id),
        "nofilter" => gen::nofilter(id).to_string(),
        _ => unreachable!(),
    }
}

#[test]
fn filters_read_as_arrow_rs_reads_them_and_answer_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = lake_file(dir.path(), 0);
    let pf = ParquetFile::open(&path).unwrap();
    assert_eq!(pf.row_groups(), RGS as usize);
    let mut buf = Vec::new();
    for &col_name in gen::FILTERED.iter().chain(["nofilter"].iter()) {
        let col = pf.find_column(col_name).unwrap();
        let ct: ColumnType = pf.column_type(col);
        for rg in 0..RGS {
            let ours = pf.read_filter(rg as usize, col).unwrap();
            let theirs = theirs(&path, rg as usize, col);
            if col_name == "nofilter" {
                assert!(ours.is_none() && theirs.is_none());
                continue;
            }
            let (ours, theirs) = (ours.unwrap(), theirs.unwrap());
            let mut bits = Vec::new();
            theirs.write_bitset(&mut bits).unwrap();
            assert_eq!(ours.to_parquet_bitset(), bits, "{col_name} rg {rg}");
            // present values: both say yes (no false negatives), typed from the key text
            for i in 0..ROWS {
                let id = gen::id(0, rg, i, ROWS);
                if col_name == "opt" && i % 3 == 2 {
                    continue; // null
                }
                let h = ct.hash(key_text(col_name, id).as_bytes(), false, &mut buf);
                let h = h.unwrap_or_else(|e| panic!("{col_name} {id}: {e}"));
                assert!(ours.contains_hash(h), "{col_name} rg {rg} id {id}");
                assert!(check_theirs(&theirs, col_name, id));
            }
            // values of other row groups and files: the same answers as arrow-rs
            let mut fp = 0u32;
            let trials = 4000;
            for i in 0..trials {
                let id = gen::id(7, rg, i, ROWS);
                let h = ct
                    .hash(key_text(col_name, id).as_bytes(), false, &mut buf)
                    .unwrap();
                let a = ours.contains_hash(h);
                assert_eq!(a, check_theirs(&theirs, col_name, id), "{col_name} {id}");
                fp += u32::from(a);
            }
            // the rate sized for is 1%; allow the contents' exact rate plus 5 sigma
            let p = ours.current_fpr();
            let sd = (p * (1.0 - p) * trials as f64).sqrt();
            if !matches!(col_name, "small" | "day" | "f") {
                // (small, day and f repeat values of the other files: not "absent")
                assert!(
                    (fp as f64) <= p * trials as f64 + 5.0 * sd + 1.0,
                    "{col_name}: {fp} false positives, rate {p}"
                );
            }
        }
    }
}

#[test]
fn scan_finds_every_present_key_and_reports_unfiltered_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("year=2024");
    std::fs::create_dir(&sub).unwrap();
    lake_file(dir.path(), 0);
    lake_file(&sub, 1);
    std::fs::write(dir.path().join("_SUCCESS"), b"").unwrap();
    let (files, errors) = bloomery::parquet::walk(&[dir.path().to_path_buf()]);
    assert!(errors.is_empty());
    let names: Vec<_> = files
        .iter()
        .map(|c| {
            c.path
                .strip_prefix(dir.path())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["part-0.parquet", "year=2024/part-1.parquet"]);
    let paths: Vec<PathBuf> = files.into_iter().map(|c| c.path).collect();

    // keys: every 10th id of both files, plus absent ids, plus one that is no INT64
    let mut keys = KeyList::new(false);
    let mut expect = Vec::new();
    for file in 0..2 {
        for rg in 0..RGS {
            for i in (0..ROWS).step_by(10) {
                let id = gen::id(file, rg, i, ROWS);
                expect.push((keys.len() as u32, file as usize, rg as usize));
                keys.push(id.to_string().as_bytes());
            }
        }
    }
    for i in 0..500 {
        keys.push(gen::id(9, 0, i, ROWS).to_string().as_bytes());
    }
    keys.push(b"not-a-number");
    let q = Query {
        column: "id",
        keys: &keys,
        mode: Mode::Keys,
        use_sidecars: true,
    };
    let mut answers = Vec::new();
    scan(&paths, &q, |_, a| {
        answers.push(a.unwrap());
        Ok::<_, ()>(())
    })
    .unwrap();
    assert_eq!(answers.len(), 2);
    for &(k, file, rg) in &expect {
        match &answers[file].row_groups[rg].hits {
            Hits::Keys(v) => assert!(v.binary_search(&k).is_ok(), "key {k} file {file} rg {rg}"),
            h => panic!("{h:?}"),
        }
    }
    assert_eq!(answers[0].invalid_keys, 1);
    assert_eq!(
        answers[0].invalid_example.as_ref().unwrap().0,
        keys.len() - 1
    );

    // the column without filters: unknown, never guessed
    let q = Query {
        column: "nofilter",
        mode: Mode::Any,
        ..q
    };
    scan(&paths, &q, |_, a| {
        let a = a.unwrap();
        assert!(a
            .row_groups
            .iter()
            .all(|r| r.source == FilterSource::None && r.hits == Hits::Unknown));
        assert_eq!(a.sidecar, SidecarState::Unused);
        Ok::<_, ()>(())
    })
    .unwrap();

    // a missing column is an error naming the file and the columns
    let q = Query {
        column: "nope",
        ..q
    };
    scan(&paths, &q, |p, a| {
        let e = a.unwrap_err();
        assert!(matches!(e, ParquetError::NoColumn { .. }));
        assert!(e.to_string().contains(&p.display().to_string()));
        assert!(e.to_string().contains("nofilter"), "{e}");
        Ok::<_, ()>(())
    })
    .unwrap();
}

#[test]
fn sidecars_serve_unfiltered_row_groups_until_the_file_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = lake_file(dir.path(), 3);
    let pf = ParquetFile::open(&path).unwrap();
    let col = pf.find_column("nofilter").unwrap();
    let built = build_filters(&pf, col, &[0, 1, 2], 0.01, Sizing::Tight).unwrap();
    for b in &built {
        assert_eq!(b.values, ROWS);
        assert_eq!(b.distinct, ROWS);
        assert_eq!(b.filter.capacity(), ROWS);
    }
    let rgs = built
        .into_iter()
        .map(|b| {
            Some(SidecarFilter {
                filter: b.filter,
                distinct: b.distinct,
                fpr: 0.01,
            })
        })
        .collect();
    let side = ParquetSidecar::new(
        pf.len(),
        pf.footer_hash(),
        "nofilter",
        pf.column_type(col),
        rgs,
    )
    .unwrap();
    let sp = ParquetSidecar::path_for(&path, "nofilter");
    assert_eq!(
        sp.file_name().unwrap().to_str().unwrap(),
        "part-3.parquet.nofilter.bloomery"
    );
    side.save(&sp).unwrap();
    assert_eq!(ParquetSidecar::load(&sp).unwrap(), side);

    let mut keys = KeyList::new(false);
    for rg in 0..RGS {
        for i in 0..ROWS {
            keys.push(
                gen::nofilter(gen::id(3, rg, i, ROWS))
                    .to_string()
                    .as_bytes(),
            );
        }
    }
    let q = Query {
        column: "nofilter",
        keys: &keys,
        mode: Mode::Count,
        use_sidecars: true,
    };
    let files = vec![path.clone()];
    scan(&files, &q, |_, a| {
        let a = a.unwrap();
        assert_eq!(a.sidecar, SidecarState::Used(sp.clone()));
        for r in &a.row_groups {
            assert_eq!(r.source, FilterSource::Sidecar);
            // its own ROWS keys, plus false positives from the other row groups' keys
            match r.hits {
                Hits::Count(n) => assert!((ROWS..ROWS + 200).contains(&n), "{n}"),
                ref h => panic!("{h:?}"),
            }
        }
        Ok::<_, ()>(())
    })
    .unwrap();

    // another version of the file: the sidecar is ignored, with the reason
    gen::write(&path, 4, RGS, ROWS, 0.01);
    scan(&files, &q, |_, a| {
        let a = a.unwrap();
        assert!(
            matches!(&a.sidecar, SidecarState::Ignored(p, why) if *p == sp && why.contains("another version")),
            "{:?}",
            a.sidecar
        );
        assert!(a.row_groups.iter().all(|r| r.hits == Hits::Unknown));
        Ok::<_, ()>(())
    })
    .unwrap();
}

#[test]
fn rewritten_files_carry_filters_arrow_rs_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = lake_file(dir.path(), 5);
    let out = dir.path().join("out.parquet");
    let r = rewrite_with_filters(&path, &out, "nofilter", 0.01).unwrap();
    assert_eq!(r.row_groups, RGS as usize);
    assert_eq!(r.built, RGS as usize);
    assert_eq!(r.kept, RGS as usize * gen::FILTERED.len());
    verify_rewrite(&path, &out, "nofilter").unwrap();

    let a = ParquetFile::open(&path).unwrap();
    let b = ParquetFile::open(&out).unwrap();
    assert_eq!(
        a.metadata().file_metadata().created_by(),
        b.metadata().file_metadata().created_by()
    );
    let col = b.find_column("nofilter").unwrap();
    for rg in 0..RGS as usize {
        let sbbf = theirs(&out, rg, col).expect("a filter in the rewritten file");
        let ours = b.read_filter(rg, col).unwrap().unwrap();
        // sized as arrow-rs and parquet-mr size it
        assert_eq!(
            ours.num_bytes(),
            bloomery::builders::parquet_num_bytes(ROWS, 0.01).unwrap()
        );
        for i in 0..ROWS {
            let id = gen::id(5, rg as u64, i, ROWS);
            assert!(sbbf.check(&gen::nofilter(id)), "rg {rg} id {id}");
        }
        let mut buf = Vec::new();
        let ct = b.column_type(col);
        for i in 0..3000 {
            let v = gen::nofilter(gen::id(8, 0, i, ROWS));
            let h = ct.hash(v.to_string().as_bytes(), false, &mut buf).unwrap();
            assert_eq!(ours.contains_hash(h), sbbf.check(&v));
        }
    }
    // the data reads back the same: every column chunk's values
    for c in 0..a.column_paths().len() {
        for rg in 0..RGS as usize {
            let fa = build_filters(&a, c, &[rg], 0.01, Sizing::Tight).unwrap();
            let fb = build_filters(&b, c, &[rg], 0.01, Sizing::Tight).unwrap();
            assert_eq!(fa[0].values, fb[0].values);
            assert_eq!(
                fa[0].filter.to_parquet_bitset(),
                fb[0].filter.to_parquet_bitset()
            );
        }
    }
}

#[test]
fn damaged_footers_and_filter_headers_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = lake_file(dir.path(), 6);
    let bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    let meta_len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    let bad = dir.path().join("bad.parquet");

    // truncations anywhere near the end, and a file of a few bytes
    for cut in [1usize, 4, 8, 9, 100, meta_len / 2, meta_len + 8, n - 5] {
        std::fs::write(&bad, &bytes[..n - cut]).unwrap();
        let e = ParquetFile::open(&bad).unwrap_err();
        assert!(
            matches!(
                e,
                ParquetError::NotParquet { .. } | ParquetError::Footer { .. }
            ),
            "cut {cut}: {e}"
        );
    }
    // a footer length beyond the file
    let mut b = bytes.clone();
    b[n - 8..n - 4].copy_from_slice(&(n as u32).to_le_bytes());
    std::fs::write(&bad, &b).unwrap();
    let e = ParquetFile::open(&bad).unwrap_err().to_string();
    assert!(e.contains("truncated or damaged"), "{e}");
    // bytes of the footer overwritten: an error or a readable footer, never a panic; every
    // filter it points at is then read or refused
    let start = n - 8 - meta_len;
    for (k, pos) in (start..n - 8).step_by(7).enumerate() {
        let mut b = bytes.clone();
        b[pos] ^= [0xFF, 0x80, 0x01, 0x55][k % 4];
        std::fs::write(&bad, &b).unwrap();
        if let Ok(pf) = ParquetFile::open(&bad) {
            for rg in 0..pf.row_groups() {
                for c in 0..pf.metadata().row_group(rg).num_columns() {
                    let _ = pf.read_filter(rg, c);
                }
            }
        }
    }

    // a damaged filter header: an error naming the row group and column
    let pf = ParquetFile::open(&path).unwrap();
    let col = pf.find_column("name").unwrap();
    let loc = pf.filter_location(1, col).unwrap();
    let mut b = bytes.clone();
    b[loc.offset as usize] = 0x16; // field 1 as an i64: the wrong type
    std::fs::write(&bad, &b).unwrap();
    let e = ParquetFile::open(&bad)
        .unwrap()
        .read_filter(1, col)
        .unwrap_err();
    assert!(
        matches!(e, ParquetError::Filter { row_group: 1, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("column `name`"), "{e}");
    // a header declaring another size than the footer's length
    let mut b = bytes.clone();
    b[loc.offset as usize + 1] ^= 0x40;
    std::fs::write(&bad, &b).unwrap();
    assert!(ParquetFile::open(&bad)
        .unwrap()
        .read_filter(1, col)
        .is_err());

    // what the header reader accepts at that offset, arrow-rs reads as the same size
    let h = read_filter_header(&bytes[loc.offset as usize..]).unwrap();
    assert_eq!(
        h.header_len as u64 + u64::from(h.num_bytes),
        loc.length.unwrap()
    );
}

#[test]
fn parquet_sizing_matches_arrow_rs() {
    for ndv in [
        0u64, 1, 10, 100, 1000, 1500, 4096, 10_000, 123_456, 1_000_000, 50_000_000,
    ] {
        for fpp in [0.5, 0.1, 0.05, 0.01, 0.001, 1e-5] {
            let want = Sbbf::new_with_ndv_fpp(ndv, fpp).unwrap();
            let mut bits = Vec::new();
            want.write_bitset(&mut bits).unwrap();
            let ours = bloomery::builders::parquet_num_bytes(ndv, fpp).unwrap();
            assert_eq!(ours, bits.len(), "ndv {ndv} fpp {fpp}");
            let f = SplitBlockBloomFilter::try_with_parquet_sizing(ndv, fpp).unwrap();
            assert_eq!(f.num_bytes(), ours);
        }
    }
    assert!(bloomery::builders::parquet_num_bytes(10, 0.0).is_err());
    assert!(bloomery::builders::parquet_num_bytes(10, 1.0).is_err());
}

#[test]
fn filter_headers_are_written_as_arrow_rs_writes_them() {
    for bytes in [32usize, 1024, 1 << 20, 128 << 20] {
        let sbbf = Sbbf::new_with_num_of_bytes(bytes);
        let mut theirs = Vec::new();
        sbbf.write(&mut theirs).unwrap();
        let ours = bloomery::parquet::write_filter_header(bytes as u32);
        assert_eq!(&theirs[..ours.len()], &ours[..], "{bytes}");
        assert_eq!(theirs.len(), ours.len() + bytes);
        let h = read_filter_header(&theirs).unwrap();
        assert_eq!((h.num_bytes as usize, h.header_len), (bytes, ours.len()));
        // and arrow-rs reads what we write
        let mut v = ours.clone();
        v.extend(std::iter::repeat_n(0u8, bytes));
        assert!(Sbbf::from_bytes(&v).is_ok());
    }
}

/// Row group answers of one file for `keys` in `mode`, with the keys examined and invalid.
fn answer(path: &Path, keys: &KeyList, mode: Mode) -> (Vec<Hits>, usize, u64) {
    try_answer(path, keys, mode).unwrap()
}

/// [`answer`], or the file's error.
fn try_answer(
    path: &Path,
    keys: &KeyList,
    mode: Mode,
) -> Result<(Vec<Hits>, usize, u64), ParquetError> {
    let q = Query {
        column: "id",
        keys,
        mode,
        use_sidecars: false,
    };
    let mut out = None;
    scan(&[path.to_path_buf()], &q, |_, a| {
        out = Some(a.map(|a| {
            (
                a.row_groups.into_iter().map(|r| r.hits).collect(),
                a.keys_examined,
                a.invalid_keys,
            )
        }));
        Ok::<_, ()>(())
    })
    .unwrap();
    out.unwrap()
}

#[test]
fn prune_stops_at_the_first_hit_with_the_answers_of_a_full_probe() {
    let dir = tempfile::tempdir().unwrap();
    let path = lake_file(dir.path(), 0);
    let sbbfs: Vec<Sbbf> = (0..RGS as usize)
        .map(|rg| theirs(&path, rg, 0).unwrap())
        .collect();
    // ids of another file that arrow-rs' filters all reject: they never hit
    let misses: Vec<i64> = (0..ROWS * RGS * 20)
        .map(|i| gen::id(9, 0, i, ROWS))
        .filter(|&id| sbbfs.iter().all(|s| !s.check(&id)))
        .take(40_000)
        .collect();
    assert_eq!(misses.len(), 40_000);
    // what arrow-rs says per row group: does any key pass its filter?
    let expect = |keys: &[i64]| -> Vec<Hits> {
        sbbfs
            .iter()
            .map(|s| Hits::Any(keys.iter().any(|k| s.check(k))))
            .collect()
    };

    // row group 1 is matched by the very last key only, several hash chunks in
    let last = gen::id(0, 1, 7, ROWS);
    let mut ids = misses.clone();
    ids.push(last);
    let mut keys = KeyList::new(false);
    for id in &ids {
        keys.push(id.to_string().as_bytes());
    }
    let (any, examined, invalid) = answer(&path, &keys, Mode::Any);
    assert_eq!(any, expect(&ids));
    assert_eq!(any[1], Hits::Any(true));
    // another row group stays unmatched, so every key was needed
    assert!(any.contains(&Hits::Any(false)));
    assert_eq!((examined, invalid), (keys.len(), 0));
    let (count, _, _) = answer(&path, &keys, Mode::Count);
    for (a, c) in any.iter().zip(&count) {
        assert_eq!(a.may_contain_any(), c.may_contain_any(), "{a:?} {c:?}");
    }

    // every row group matched by the first keys: the rest are not read, not even the
    // invalid one at the end, which counting does read
    let firsts: Vec<i64> = (0..RGS).map(|rg| gen::id(0, rg, 3, ROWS)).collect();
    let mut keys = KeyList::new(false);
    for id in firsts.iter().chain(&misses) {
        keys.push(id.to_string().as_bytes());
    }
    keys.push(b"not-a-number");
    let (any, examined, invalid) = answer(&path, &keys, Mode::Any);
    assert_eq!(any, vec![Hits::Any(true); RGS as usize]);
    assert!(
        examined >= firsts.len() && examined < keys.len(),
        "{examined}"
    );
    assert_eq!(invalid, 0);
    let (count, examined, invalid) = answer(&path, &keys, Mode::Count);
    assert!(count.iter().all(Hits::may_contain_any));
    assert_eq!((examined, invalid), (keys.len(), 1));
}

/// A page index that claims a list of two billion elements is refused, naming the row group,
/// column and index, before the `parquet` crate reads it; nothing is written.
#[test]
fn a_forged_page_index_is_refused_before_a_rewrite_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = lake_file(dir.path(), 0);
    let out = dir.path().join("out.parquet");
    // the file as written has a page index, and rewrites
    let pf = ParquetFile::open(&path).unwrap();
    let chunk = pf.metadata().row_group(1).column(0);
    let (offset, length) = (
        chunk.column_index_offset().unwrap() as usize,
        chunk.column_index_length().unwrap() as usize,
    );
    assert!(length >= 8, "{length}");
    rewrite_with_filters(&path, &out, "nofilter", 0.01).unwrap();
    std::fs::remove_file(&out).unwrap();
    // field 1 (null_pages): a list of 2³¹ − 1 booleans, in the index's own bytes
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offset..offset + 7].copy_from_slice(&[0x19, 0xF1, 0xFF, 0xFF, 0xFF, 0xFF, 0x07]);
    let forged = dir.path().join("forged.parquet");
    std::fs::write(&forged, &bytes).unwrap();
    let err = rewrite_with_filters(&forged, &out, "nofilter", 0.01).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ParquetError::Footer { .. }), "{msg}");
    assert!(
        msg.contains("row group 1, column id: its column index is malformed"),
        "{msg}"
    );
    assert!(!out.exists());
}

thread_local! {
    /// Panics raised on this thread, caught or not.
    static PANICS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Count every panic on the thread that raises it, from now on (the previous hook still runs).
fn count_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|p| p.set(p.get() + 1));
            previous(info);
        }));
    });
}

/// Files found by the `parquet_index` fuzz target, whose data pages the `parquet` crate's
/// decoders trusted into a panic (caught by `parquet index`, but a panic): a page of
/// dictionary indices in a chunk without a dictionary page ("Decoder for dict should have
/// been set"), refused by the page checks; and a page of plain byte arrays declaring more
/// values than its bytes hold (a length prefix read past the end, `util/bit_util.rs`), whose
/// header's compressed size is a 10-byte varint with bits past 64 (the crate drops them), so
/// that the header check refuses it before the page is read. Each is an error naming the row
/// group and column, no panic is raised at all, caught or not, and a rewrite fails and writes
/// nothing. (The page of byte arrays itself is refused by `pages.rs`'s own tests.)
#[test]
fn damaged_data_pages_are_refused_before_the_crate_decodes_them() {
    count_panics();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parquet");
    let dir = tempfile::tempdir().unwrap();
    for (name, why) in [
        (
            "index-dictionary-page-missing.parquet",
            "dictionary-encoded values without a dictionary page",
        ),
        (
            "index-byte-arrays-past-page-end.parquet",
            "the header of page 0 (at offset 801) is malformed",
        ),
    ] {
        let path = fixtures.join(name);
        let before = PANICS.with(|p| p.get());
        let pf = ParquetFile::open(&path).unwrap();
        let mut refused = Vec::new();
        for (col, column) in pf.column_paths().iter().enumerate() {
            let all: Vec<usize> = (0..pf.row_groups()).collect();
            if let Err(e) = build_filters(&pf, col, &all, 0.01, Sizing::Tight) {
                refused.push(e.to_string());
            }
            let out = dir.path().join(format!("{name}-{col}.out"));
            if let Err(e) = rewrite_with_filters(&path, &out, column, 0.01) {
                assert!(!out.exists(), "{name}: a failed rewrite left its output");
                refused.push(e.to_string());
            }
        }
        assert_eq!(
            PANICS.with(|p| p.get()),
            before,
            "{name}: a panic, caught or not"
        );
        assert!(
            refused
                .iter()
                .any(|e| e.contains(why) && e.contains("row group")),
            "{name}: {refused:#?}"
        );
    }
}

/// Rows per row group of [`wide_file`].
const WIDE_ROWS: u64 = 6000;

/// A file whose `id` filters are 64 KiB (6,000 values each at 1e-7): up to 16 keys are probed
/// one block read at a time.
fn wide_file(dir: &Path) -> PathBuf {
    let path = dir.join("wide.parquet");
    gen::write(&path, 0, RGS, WIDE_ROWS, 1e-7);
    path
}

/// The three ways to hold a list of keys: pushed one by one, a text split as it is read, and
/// a shared text (as a mapped key file is).
fn key_lists(ids: &[i64]) -> [KeyList; 3] {
    let mut pushed = KeyList::new(false);
    let mut text = Vec::new();
    for id in ids {
        pushed.push(id.to_string().as_bytes());
        text.extend_from_slice(format!("{id}\n").as_bytes());
    }
    [
        pushed,
        KeyList::from_lines(text.clone(), false),
        KeyList::from_shared_lines(std::sync::Arc::new(text), false),
    ]
}

/// A scan reads of a filter what its probes need: each key's block alone when the keys are
/// few against the bitset, a prune's parts growing from the bitset's start, the whole filter
/// for counts and key lists. Every way gives arrow-rs' answers, for every way of holding the
/// keys.
#[test]
fn every_way_of_reading_a_filter_answers_as_arrow_rs() {
    let dir = tempfile::tempdir().unwrap();
    let (path, rows) = (wide_file(dir.path()), WIDE_ROWS);
    let sbbfs: Vec<Sbbf> = (0..RGS as usize)
        .map(|rg| theirs(&path, rg, 0).unwrap())
        .collect();
    // 64 KiB bitsets: up to 16 keys are probed one block read each
    let len = ParquetFile::open(&path)
        .unwrap()
        .filter_location(0, 0)
        .and_then(|l| l.length)
        .unwrap();
    assert!(len > 64 << 10 && len < 65 << 10, "{len}");
    // a quarter of the keys present (any row group), the others from a file never written
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        (state >> 33) % n
    };
    for n in [1, 2, 3, 8, 16, 17, 40, 1_000, 20_000] {
        let ids: Vec<i64> = (0..n)
            .map(|_| {
                let (file, rg, row) = (next(4), next(RGS), next(rows));
                gen::id(if file == 0 { 0 } else { 5 }, rg, row, rows)
            })
            .collect();
        let hits = |s: &Sbbf| -> Vec<u32> {
            (0..ids.len() as u32)
                .filter(|&i| s.check(&ids[i as usize]))
                .collect()
        };
        let expect: Vec<Vec<u32>> = sbbfs.iter().map(hits).collect();
        for keys in key_lists(&ids) {
            let any = answer(&path, &keys, Mode::Any).0;
            let count = answer(&path, &keys, Mode::Count).0;
            let listed = answer(&path, &keys, Mode::Keys).0;
            for (rg, e) in expect.iter().enumerate() {
                assert_eq!(
                    any[rg],
                    Hits::Any(!e.is_empty()),
                    "{n} keys, row group {rg}"
                );
                assert_eq!(
                    count[rg],
                    Hits::Count(e.len() as u64),
                    "{n} keys, row group {rg}"
                );
                assert_eq!(
                    listed[rg],
                    Hits::Keys(e.clone()),
                    "{n} keys, row group {rg}"
                );
            }
        }
    }
    // a prune reads on until the one present key's block: wherever it lies in the bitset,
    // and at each edge of the parts it reads (the first ends near block 128, each later one
    // doubles the bytes read)
    let blocks = len / 32;
    let hasher = bloomery::KeyHasher::parquet();
    let block_of = |id: i64| SplitBlockBits::block_index(hasher.hash(&id).lo, blocks);
    let edges: Vec<u64> = [128u64, 256, 512, 1024]
        .iter()
        .flat_map(|&e| e - 4..e + 4)
        .chain([0, blocks - 1])
        .collect();
    let mut rows_at_edges: Vec<u64> = edges
        .iter()
        .filter_map(|&b| (0..rows).find(|&r| block_of(gen::id(0, 1, r, rows)) == b))
        .collect();
    assert!(rows_at_edges.len() >= 30, "{}", rows_at_edges.len());
    rows_at_edges.extend((0..rows).step_by(211));
    let absent: Vec<i64> = (0..200).map(|i| gen::id(7, 0, i, rows)).collect();
    for row in rows_at_edges {
        let present = gen::id(0, 1, row, rows);
        let mut ids = absent.clone();
        ids.insert((row % 200) as usize, present);
        let expect: Vec<Hits> = sbbfs
            .iter()
            .map(|s| Hits::Any(ids.iter().any(|k| s.check(k))))
            .collect();
        assert_eq!(expect[1], Hits::Any(true));
        for keys in key_lists(&ids) {
            assert_eq!(answer(&path, &keys, Mode::Any).0, expect, "row {row}");
        }
    }
}

/// Damaged filters — bytes changed at random (seeded) in headers and bitsets — never panic a
/// scan, and its ways of reading a filter agree on whatever the bytes now say: where a file is
/// answered in every mode, a prune passes a row group exactly when its count is positive and
/// its list of keys is not empty.
#[test]
fn damaged_filters_are_errors_or_read_alike_by_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let (path, rows) = (wide_file(dir.path()), WIDE_ROWS);
    let pf = ParquetFile::open(&path).unwrap();
    let filters: Vec<(usize, usize)> = (0..RGS as usize)
        .map(|rg| {
            let l = pf.filter_location(rg, 0).unwrap();
            (l.offset as usize, l.length.unwrap() as usize)
        })
        .collect();
    let clean = std::fs::read(&path).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    // 1 and 3 keys: one block read each; 600: a prune's parts, or the whole filter
    let lists: Vec<KeyList> = [1u64, 3, 600]
        .iter()
        .map(|&n| {
            let mut keys = KeyList::new(false);
            for i in 0..n {
                let file = if i % 2 == 0 { 0 } else { 3 };
                keys.push(
                    gen::id(file, i % RGS, (i * 37) % rows, rows)
                        .to_string()
                        .as_bytes(),
                );
            }
            keys
        })
        .collect();
    let damaged = dir.path().join("damaged.parquet");
    let (mut errors, mut answered) = (0, 0);
    for _ in 0..150 {
        let mut bytes = clean.clone();
        let (offset, length) = filters[next(RGS) as usize];
        for _ in 0..1 + next(4) {
            // a third of the changes in the header, the rest anywhere in the bitset
            let at = if next(3) == 0 {
                offset + next(20) as usize
            } else {
                offset + next(length as u64) as usize
            };
            bytes[at] = next(256) as u8;
        }
        std::fs::write(&damaged, &bytes).unwrap();
        for keys in &lists {
            let run = |mode| try_answer(&damaged, keys, mode).map(|a| a.0);
            match (run(Mode::Any), run(Mode::Count), run(Mode::Keys)) {
                (Ok(any), Ok(count), Ok(listed)) => {
                    answered += 1;
                    for ((a, c), k) in any.iter().zip(&count).zip(&listed) {
                        assert_eq!(a.may_contain_any(), c.may_contain_any(), "{a:?} {c:?}");
                        assert_eq!(a.may_contain_any(), k.may_contain_any(), "{a:?} {k:?}");
                        if let (Hits::Count(n), Hits::Keys(k)) = (c, k) {
                            assert_eq!(*n as usize, k.len());
                        }
                    }
                }
                (Err(_), Err(_), Err(_)) => errors += 1,
                (a, c, k) => panic!("modes disagree: {a:?} {c:?} {k:?}"),
            }
        }
    }
    // both kinds of outcome were met
    assert!(
        errors > 0 && answered > 0,
        "{errors} errors, {answered} answered"
    );
}

/// The footer's metadata bytes (without the 8-byte tail) of a Parquet file's bytes.
fn footer_of(bytes: &[u8]) -> &[u8] {
    let n = bytes.len();
    let meta_len = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    &bytes[n - 8 - meta_len..n - 8]
}

/// A file with nested groups, repeated and optional leaves, a leaf name used twice and the
/// physical types the lake file lacks (BOOLEAN, INT96, FIXED_LEN_BYTE_ARRAY without UUID),
/// a filter on the nested `a.b`, two row groups.
fn nested_file(path: &Path) {
    use parquet::data_type::{BoolType, ByteArrayType, FixedLenByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::ColumnPath;
    use std::sync::Arc;
    let schema = parse_message_type(
        "message m {
            required group a { required int64 b; optional group c { repeated binary b (UTF8); } }
            required boolean e;
            optional fixed_len_byte_array(4) g;
        }",
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_column_bloom_filter_enabled(ColumnPath::new(vec!["a".into(), "b".into()]), true)
        .set_column_bloom_filter_enabled(ColumnPath::from("e"), true)
        .build();
    let out = std::fs::File::create(path).unwrap();
    let mut w = SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props)).unwrap();
    for rg in 0..2i64 {
        let mut g = w.next_row_group().unwrap();
        let mut c = 0;
        while let Some(mut col) = g.next_column().unwrap() {
            match c {
                0 => {
                    col.typed::<Int64Type>()
                        .write_batch(&[rg, rg + 10, rg + 20], None, None)
                        .unwrap();
                }
                1 => {
                    let v: Vec<ByteArray> = vec!["x".into(), "y".into()];
                    col.typed::<ByteArrayType>()
                        .write_batch(&v, Some(&[2, 2, 0, 1]), Some(&[0, 1, 0, 0]))
                        .unwrap();
                }
                2 => {
                    col.typed::<BoolType>()
                        .write_batch(&[true, false, true], None, None)
                        .unwrap();
                }
                _ => {
                    let v = vec![FixedLenByteArray::from(vec![1, 2, 3, 4])];
                    col.typed::<FixedLenByteArrayType>()
                        .write_batch(&v, Some(&[1, 0, 0]), None)
                        .unwrap();
                }
            }
            col.close().unwrap();
            c += 1;
        }
        g.close().unwrap();
    }
    w.close().unwrap();
}

/// The scan's footer reader reads every file written here exactly as the `parquet` crate
/// does (it declines none of them, so a scan never falls back on them), and the scan answers
/// nested columns by their dotted path.
#[test]
fn the_scans_footer_reader_reads_every_test_file_as_the_parquet_crate() {
    use bloomery::parquet::{compare_footer_readers, FooterReaders};
    let dir = tempfile::tempdir().unwrap();
    let mut files = vec![lake_file(dir.path(), 0)];
    let one = dir.path().join("one.parquet");
    gen::write(&one, 1, 1, 10, 0.05);
    files.push(one);
    let nested = dir.path().join("nested.parquet");
    nested_file(&nested);
    files.push(nested.clone());
    let rewritten = dir.path().join("rewritten.parquet");
    rewrite_with_filters(&files[1], &rewritten, "nofilter", 0.01).unwrap();
    files.push(rewritten);
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert_eq!(
            compare_footer_readers(footer_of(&bytes)),
            FooterReaders::Agree,
            "{}",
            f.display()
        );
    }
    let pf = ParquetFile::open(&nested).unwrap();
    assert_eq!(pf.column_paths(), ["a.b", "a.c.b", "e", "g"]);
    // `b` names two leaves: ambiguous, in the scan as in the file
    let mut keys = KeyList::new(false);
    keys.push(b"10");
    let q = Query {
        column: "b",
        keys: &keys,
        mode: Mode::Any,
        use_sidecars: false,
    };
    let mut res = Vec::new();
    scan(std::slice::from_ref(&nested), &q, |_, a| {
        res.push(a.map(|a| a.row_groups.len()));
        Ok::<_, ()>(())
    })
    .unwrap();
    assert!(
        matches!(res[0], Err(ParquetError::NoColumn { .. })),
        "{res:?}"
    );
    let q = Query { column: "a.b", ..q };
    let mut res = Vec::new();
    scan(std::slice::from_ref(&nested), &q, |_, a| {
        res.push(
            a.unwrap()
                .row_groups
                .into_iter()
                .map(|r| r.hits)
                .collect::<Vec<_>>(),
        );
        Ok::<_, ()>(())
    })
    .unwrap();
    // 10 is in row group 0 (0, 10, 20): a filter never misses it
    assert_eq!(res[0][0], Hits::Any(true));
}

/// Damaged footers (every third truncation, 3,000 changed footers, fixed seed): the two
/// readers never read one differently. The scan's reader declines most of what the crate
/// refuses; what it reads although the crate refuses is damage inside fields it skips (e.g. a
/// required field missing from a page-encoding statistic), never in the fields it reads.
#[test]
fn damaged_footers_are_never_read_differently_by_the_two_readers() {
    use bloomery::parquet::{compare_footer_readers, FooterReaders};
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("nested.parquet");
    nested_file(&nested);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut agree, mut declined, mut only_skim) = (0, 0, 0);
    for path in [lake_file(dir.path(), 2), nested] {
        let bytes = std::fs::read(&path).unwrap();
        let meta = footer_of(&bytes).to_vec();
        let mut check = |m: &[u8]| match compare_footer_readers(m) {
            FooterReaders::Agree => agree += 1,
            FooterReaders::Declined | FooterReaders::BothRefused => declined += 1,
            FooterReaders::OnlySkimRead(_) => only_skim += 1,
            FooterReaders::Differ(d) => panic!("{d}"),
        };
        for cut in (0..meta.len()).step_by(3) {
            check(&meta[..cut]);
        }
        for _ in 0..1500 {
            let mut m = meta.clone();
            for _ in 0..1 + next() % 3 {
                let pos = (next() % m.len() as u64) as usize;
                m[pos] = match next() % 4 {
                    0 => m[pos] ^ (1 << (next() % 8)),
                    1 => 0,
                    2 => 0xFF,
                    _ => next() as u8,
                };
            }
            check(&m);
        }
    }
    // both outcomes occur: the damage reaches fields the scan reads and ones it skips
    assert!(
        agree > 100 && declined > 100,
        "{agree} {declined} {only_skim}"
    );
    // truncations are all declined: such cases are a minority of the damage
    assert!(only_skim < declined, "{agree} {declined} {only_skim}");
}
