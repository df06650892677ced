//! `bloomery parquet check|prune|info|index`, `export`/`import --format sbbf` and
//! `create --parquet-sizing`: the real binary on Parquet files written by the `parquet` crate
//! (arrow-rs) with Bloom filters; answers compared with arrow-rs' `Sbbf::check`.

#[path = "../../bloomery/tests/common/parquet_gen.rs"]
mod parquet_gen;

mod common;
use common::{bloomery_default_color as bloomery, stdout_line_set as stdout_lines};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::bloom_filter::Sbbf;
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::file::metadata::{
    ColumnChunkMetaDataBuilder, ParquetMetaDataReader, ParquetMetaDataWriter,
};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet_gen as gen;
use predicates::prelude::*;
use tempfile::TempDir;

const ROWS: u64 = 400;
const RGS: u64 = 3;

/// A lake: `lake/a.parquet` (file 0) and `lake/sub/b.parquet` (file 1), plus a non-Parquet
/// file and a `_SUCCESS` marker the walk must skip.
fn lake() -> (TempDir, PathBuf, Vec<PathBuf>) {
    let t = tempfile::tempdir().unwrap();
    let lake = t.path().join("lake");
    std::fs::create_dir_all(lake.join("sub")).unwrap();
    let a = lake.join("a.parquet");
    let b = lake.join("sub/b.parquet");
    gen::write(&a, 0, RGS, ROWS, 0.01);
    gen::write(&b, 1, RGS, ROWS, 0.01);
    std::fs::write(lake.join("README.txt"), b"not parquet\n").unwrap();
    std::fs::write(lake.join("_SUCCESS"), b"").unwrap();
    (t, lake, vec![a, b])
}

/// arrow-rs' filters of a file's column, per row group.
fn sbbfs(path: &Path, column: &str) -> Vec<Option<Sbbf>> {
    let file = std::fs::File::open(path).unwrap();
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .unwrap();
    let col = meta
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.name() == column)
        .unwrap();
    meta.row_groups()
        .iter()
        .map(|rg| Sbbf::read_from_column_chunk(rg.column(col), &file).unwrap())
        .collect()
}

/// Ids to ask for: every 7th id of both files, and as many that are in neither.
fn ids() -> Vec<i64> {
    let mut v = Vec::new();
    for file in 0..2 {
        for rg in 0..RGS {
            v.extend((0..ROWS).step_by(7).map(|i| gen::id(file, rg, i, ROWS)));
        }
    }
    v.extend((0..300).map(|i| gen::id(5, 0, i, ROWS)));
    v
}

#[test]
fn check_answers_as_arrow_rs_does_with_grep_exit_codes() {
    let (t, lake, files) = lake();
    let ids = ids();
    let keys = t.path().join("keys.txt");
    std::fs::write(
        &keys,
        ids.iter().map(|i| format!("{i}\n")).collect::<String>(),
    )
    .unwrap();
    let o = bloomery()
        .args(["parquet", "check"])
        .arg(&lake)
        .args(["--column", "id", "--keys"])
        .arg(&keys)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let got = stdout_lines(&o);
    // expected: every (file, row group, key) arrow-rs' Sbbf::check admits
    let mut want = BTreeSet::new();
    let mut absent_everywhere = Vec::new();
    let filters: Vec<_> = files.iter().map(|f| sbbfs(f, "id")).collect();
    for &id in &ids {
        let mut any = false;
        for (f, fs) in files.iter().zip(&filters) {
            for (rg, s) in fs.iter().enumerate() {
                if s.as_ref().unwrap().check(&id) {
                    want.insert(format!("{}\t{rg}\t{id}", f.display()));
                    any = true;
                }
            }
        }
        if !any {
            absent_everywhere.push(id);
        }
    }
    assert_eq!(got, want);
    // zero false negatives: every present id is listed with its own file and row group
    for (fi, f) in files.iter().enumerate() {
        for rg in 0..RGS {
            for i in (0..ROWS).step_by(7) {
                let id = gen::id(fi as u64, rg, i, ROWS);
                assert!(got.contains(&format!("{}\t{rg}\t{id}", f.display())));
            }
        }
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("2 files, 6 row groups (6 with a filter"),
        "{err}"
    );
    assert!(
        err.contains("1 files in the directories are not Parquet"),
        "{err}"
    );

    // -c: per row group counts, as arrow-rs counts
    let o = bloomery()
        .args(["parquet", "check", "-c"])
        .arg(&lake)
        .args(["--column", "id", "--keys"])
        .arg(&keys)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let mut want = BTreeSet::new();
    for (f, fs) in files.iter().zip(&filters) {
        for (rg, s) in fs.iter().enumerate() {
            let n = ids
                .iter()
                .filter(|&&i| s.as_ref().unwrap().check(&i))
                .count();
            want.insert(format!("{}\t{rg}\t{n}", f.display()));
        }
    }
    assert_eq!(stdout_lines(&o), want);

    // -v: the keys no filter admits
    let o = bloomery()
        .args(["parquet", "check", "-v"])
        .arg(&lake)
        .args(["--column", "id", "--keys"])
        .arg(&keys)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let want: BTreeSet<String> = absent_everywhere.iter().map(|i| i.to_string()).collect();
    assert!(want.len() > 250, "most absent ids are rejected at 1%");
    assert_eq!(stdout_lines(&o), want);

    // only keys no filter admits: nothing printed, status 1
    bloomery()
        .args(["parquet", "check"])
        .arg(&lake)
        .args(["--column", "id"])
        .args(
            absent_everywhere
                .iter()
                .take(20)
                .flat_map(|i| ["-k".to_string(), i.to_string()]),
        )
        .assert()
        .code(1)
        .stdout("");
}

/// `check --json` (keys, `-c`, `-v`, and a column without filters) says what the text output
/// says, which the test above compares with arrow-rs.
#[test]
fn check_json_says_what_the_text_says() {
    let (t, lake, _files) = lake();
    let ids = ids();
    let keys = t.path().join("keys.txt");
    std::fs::write(
        &keys,
        ids.iter().map(|i| format!("{i}\n")).collect::<String>(),
    )
    .unwrap();
    let run = |extra: &[&str], column: &str| {
        let o = bloomery()
            .args(["parquet", "check"])
            .args(extra)
            .arg(&lake)
            .args(["--column", column, "--keys"])
            .arg(&keys)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    };
    let str_of = |v: &serde_json::Value| v.as_str().unwrap().to_string();
    // keys: one line per (file, row group, key) in the text; `matches` in the JSON
    let text = stdout_lines(&run(&[], "id"));
    let j = common::json_of(&run(&["--json"], "id").stdout);
    assert_eq!(j["column"], "id");
    assert_eq!(j["keys"], ids.len());
    let mut got = BTreeSet::new();
    for f in j["files"].as_array().unwrap() {
        assert_eq!(f["type"], "INT64");
        assert_eq!(f["invalid_keys"], 0);
        let rgs = f["row_groups"].as_array().unwrap();
        assert_eq!(rgs.len() as u64, RGS);
        for rg in rgs {
            assert_eq!(rg["filter"], "parquet");
            assert_eq!(rg["rows"], ROWS);
            for k in rg["matches"].as_array().unwrap() {
                got.insert(format!(
                    "{}\t{}\t{}",
                    str_of(&f["file"]),
                    rg["row_group"],
                    str_of(k)
                ));
            }
        }
    }
    assert!(!got.is_empty());
    assert_eq!(got, text);
    // -c: a count per row group
    let text = stdout_lines(&run(&["-c"], "id"));
    let j = common::json_of(&run(&["-c", "--json"], "id").stdout);
    let mut got = BTreeSet::new();
    for f in j["files"].as_array().unwrap() {
        for rg in f["row_groups"].as_array().unwrap() {
            assert!(rg.get("matches").is_none());
            got.insert(format!(
                "{}\t{}\t{}",
                str_of(&f["file"]),
                rg["row_group"],
                rg["count"]
            ));
        }
    }
    assert_eq!(got.len() as u64, 2 * RGS);
    assert_eq!(got, text);
    // -v: the absent keys, certain since every row group has a filter
    let text = stdout_lines(&run(&["-v"], "id"));
    let j = common::json_of(&run(&["-v", "--json"], "id").stdout);
    assert_eq!(j["certain"], true);
    assert_eq!(j["keys"], ids.len());
    let got: BTreeSet<String> = j["absent"].as_array().unwrap().iter().map(str_of).collect();
    assert!(got.len() > 250, "most absent ids are rejected at 1%");
    assert_eq!(got, text);
    // no filters: row groups with a null filter; -v is not certain and lists nothing
    let o = bloomery()
        .args(["parquet", "check", "--json"])
        .arg(&lake)
        .args(["--column", "nofilter", "-k", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let j = common::json_of(&o.stdout);
    for f in j["files"].as_array().unwrap() {
        for rg in f["row_groups"].as_array().unwrap() {
            assert!(rg["filter"].is_null(), "{rg}");
            assert!(rg.get("matches").is_none(), "{rg}");
        }
    }
    let o = bloomery()
        .args(["parquet", "check", "-v", "--json"])
        .arg(&lake)
        .args(["--column", "nofilter", "-k", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let j = common::json_of(&o.stdout);
    assert_eq!(j["certain"], false);
    assert_eq!(j["absent"], serde_json::json!([]));
}

#[test]
fn keys_are_typed_by_the_column() {
    let (_t, lake, files) = lake();
    let id = gen::id(1, 2, 123, ROWS);
    let b = files[1].display().to_string();
    let cases = [
        ("name", gen::name(id)),
        ("small", gen::small(id).to_string()),
        ("d", gen::d(id).to_string()),
        ("f", gen::f(id).to_string()),
        ("u", gen::uuid_text(id)),
        ("opt", gen::opt(id)),
    ];
    for (col, key) in cases {
        let o = bloomery()
            .args(["parquet", "check"])
            .arg(&lake)
            .args(["--column", col, "-k", &key])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{col}");
        assert!(
            stdout_lines(&o).contains(&format!("{b}\t2\t{key}")),
            "{col} {key}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    // DATE takes YYYY-MM-DD as well as days; hex keys are plain encodings
    let days = gen::day(id);
    bloomery()
        .args(["parquet", "check"])
        .arg(&files[1])
        .args(["--column", "day", "-k", &days.to_string()])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(format!("\t2\t{days}\n")));
    let hex: String = id
        .to_le_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    bloomery()
        .args(["parquet", "check", "--hex"])
        .arg(&files[1])
        .args(["--column", "id", "-k", &hex])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(format!("\t2\t{hex}\n")));
    // a key that is no INT64 is certainly absent, and said so
    bloomery()
        .args(["parquet", "check"])
        .arg(&files[1])
        .args(["--column", "id", "-k", "forty-two"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot be values of the column"));
}

#[test]
fn unfiltered_row_groups_are_reported_never_guessed() {
    let (_t, lake, files) = lake();
    let key = gen::nofilter(gen::id(0, 0, 3, ROWS)).to_string();
    // check: nothing listed per key, a warning, status 1
    bloomery()
        .args(["parquet", "check"])
        .arg(&lake)
        .args(["--column", "nofilter", "-k", &key])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains(
            "6 row groups have no bloom filter for the column",
        ));
    // -c: a dash per row group
    let o = bloomery()
        .args(["parquet", "check", "-c"])
        .arg(&files[0])
        .args(["--column", "nofilter", "-k", &key])
        .output()
        .unwrap();
    let want: BTreeSet<String> = (0..RGS)
        .map(|rg| format!("{}\t{rg}\t-", files[0].display()))
        .collect();
    assert_eq!(stdout_lines(&o), want);
    // -v: no key is certainly absent
    bloomery()
        .args(["parquet", "check", "-v"])
        .arg(&lake)
        .args(["--column", "nofilter", "-k", "1"])
        .assert()
        .code(1)
        .stdout("")
        .stderr(predicate::str::contains("no key is certainly absent"));
    // prune lists them all
    let o = bloomery()
        .args(["parquet", "prune", "--row-groups"])
        .arg(&lake)
        .args(["--column", "nofilter", "-k", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout_lines(&o).len(), 6);
}

#[test]
fn prune_lists_files_and_row_groups() {
    let (_t, lake, files) = lake();
    let id = gen::id(1, 1, 9, ROWS);
    let filters = sbbfs(&files[0], "id");
    let in_a: Vec<usize> = (0..RGS as usize)
        .filter(|&rg| filters[rg].as_ref().unwrap().check(&id))
        .collect();
    let o = bloomery()
        .args(["parquet", "prune", "--row-groups"])
        .arg(&lake)
        .args(["--column", "id", "-k", &id.to_string()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let got = stdout_lines(&o);
    assert!(got.contains(&format!("{}\t1", files[1].display())));
    for rg in 0..RGS as usize {
        assert_eq!(
            got.contains(&format!("{}\t{rg}", files[0].display())),
            in_a.contains(&rg)
        );
    }
    let o = bloomery()
        .args(["parquet", "prune", "--json"])
        .arg(&lake)
        .args(["--column", "id", "-k", &id.to_string()])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["files_scanned"], 2);
    assert_eq!(j["row_groups_scanned"], 6);
    let listed: Vec<&str> = j["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert!(listed.contains(&files[1].to_str().unwrap()));
}

#[test]
fn prune_of_many_keys_answers_as_arrow_rs_up_to_the_last_key() {
    let (t, lake, files) = lake();
    let filters: Vec<Vec<Sbbf>> = files
        .iter()
        .map(|f| sbbfs(f, "id").into_iter().map(Option::unwrap).collect())
        .collect();
    // 20,000 ids no filter admits, then the only key some row groups admit, last, on a CRLF
    // line without a final line break
    let mut ids: Vec<i64> = (0..200_000)
        .map(|i| gen::id(9, 0, i, ROWS))
        .filter(|id| filters.iter().flatten().all(|s| !s.check(id)))
        .take(20_000)
        .collect();
    assert_eq!(ids.len(), 20_000);
    ids.push(gen::id(0, 2, 5, ROWS));
    let text = ids
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join("\r\n");
    let keys = t.path().join("keys.txt");
    std::fs::write(&keys, &text).unwrap();
    let want: BTreeSet<String> = files
        .iter()
        .zip(&filters)
        .flat_map(|(f, fs)| {
            fs.iter()
                .enumerate()
                .filter(|(_, s)| ids.iter().any(|id| s.check(id)))
                .map(move |(rg, _)| format!("{}\t{rg}", f.display()))
        })
        .collect();
    assert!(want.contains(&format!("{}\t2", files[0].display())));
    // from a file (read whole) and from stdin (read as a stream): the same list
    for from_stdin in [false, true] {
        let mut c = bloomery();
        c.args(["parquet", "prune", "--row-groups"])
            .arg(&lake)
            .args(["--column", "id", "--keys"]);
        if from_stdin {
            c.arg("-").write_stdin(text.clone());
        } else {
            c.arg(&keys);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        assert_eq!(stdout_lines(&o), want, "stdin: {from_stdin}");
    }

    // every row group matched by the first keys: the invalid key at the end is not examined,
    // and the warning says over how many keys it counted; check reads them all
    let mut text: String = (0..2)
        .flat_map(|f| (0..RGS).map(move |rg| format!("{}\n", gen::id(f, rg, 1, ROWS))))
        .collect();
    text.extend(ids[..20_000].iter().map(|id| format!("{id}\n")));
    text.push_str("abc\n");
    std::fs::write(&keys, &text).unwrap();
    let o = bloomery()
        .args(["parquet", "prune"])
        .arg(&lake)
        .args(["--column", "id", "--keys"])
        .arg(&keys)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout_lines(&o).len(), 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("cannot be values"), "{err}");
    let o = bloomery()
        .args(["parquet", "check", "-c"])
        .arg(&lake)
        .args(["--column", "id", "--keys"])
        .arg(&keys)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("up to 1 keys cannot be values"), "{err}");
    // an invalid key among those examined: counted, over the keys examined
    std::fs::write(&keys, format!("abc\n{text}")).unwrap();
    let o = bloomery()
        .args(["parquet", "prune"])
        .arg(&lake)
        .args(["--column", "id", "--keys"])
        .arg(&keys)
        .output()
        .unwrap();
    assert_eq!(stdout_lines(&o).len(), 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("up to 1 keys of the first "), "{err}");
}

#[test]
fn damaged_files_exit_2_with_a_message_and_the_others_are_answered() {
    let (_t, lake, files) = lake();
    let id = gen::id(1, 0, 0, ROWS).to_string();
    // a truncated footer
    let bytes = std::fs::read(&files[0]).unwrap();
    std::fs::write(&files[0], &bytes[..bytes.len() - 40]).unwrap();
    bloomery()
        .args(["parquet", "check"])
        .arg(&lake)
        .args(["--column", "id", "-k", &id])
        .assert()
        .code(2)
        .stdout(predicate::str::contains(format!(
            "{}\t0\t{id}",
            files[1].display()
        )))
        .stderr(predicate::str::contains(format!(
            "`{}`",
            files[0].display()
        )))
        .stderr(predicate::str::contains("panicked").not());
    // a footer whose length runs past the file
    let mut b = bytes.clone();
    let n = b.len();
    b[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&files[0], &b).unwrap();
    bloomery()
        .args(["parquet", "prune"])
        .arg(&files[0])
        .args(["--column", "id", "-k", &id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("truncated or damaged"));
    // a damaged filter header
    std::fs::write(&files[0], &bytes).unwrap();
    let file = std::fs::File::open(&files[0]).unwrap();
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .unwrap();
    let off = meta.row_group(1).column(0).bloom_filter_offset().unwrap() as usize;
    let mut b = bytes.clone();
    b[off] = 0xFF;
    std::fs::write(&files[0], &b).unwrap();
    bloomery()
        .args(["parquet", "check"])
        .arg(&files[0])
        .args(["--column", "id", "-k", &id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "row group 1, column `id`: bad bloom filter",
        ));
    // a file named on the command line must be Parquet; a missing column is an error
    bloomery()
        .args(["parquet", "check"])
        .arg(lake.join("README.txt"))
        .args(["--column", "id", "-k", &id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a Parquet file"));
    bloomery()
        .args(["parquet", "check"])
        .arg(&files[1])
        .args(["--column", "nope", "-k", &id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no single column `nope`"));
}

#[test]
fn index_builds_sidecars_that_check_uses_until_the_file_changes() {
    let (_t, lake, files) = lake();
    bloomery()
        .args(["parquet", "index"])
        .arg(&lake)
        .args(["--column", "nofilter", "-p", "0.01"])
        .assert()
        .success()
        .stderr(predicate::str::contains("2 sidecar files written"));
    let side = files[0].with_file_name("a.parquet.nofilter.bloomery");
    assert!(side.is_file());
    // every value is found, in its row group, from the sidecar
    let keys: Vec<String> = (0..ROWS)
        .step_by(5)
        .map(|i| gen::nofilter(gen::id(0, 2, i, ROWS)).to_string())
        .collect();
    let o = bloomery()
        .args(["parquet", "check"])
        .arg(&lake)
        .args(["--column", "nofilter"])
        .args(keys.iter().flat_map(|k| ["-k", k.as_str()]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let got = stdout_lines(&o);
    for k in &keys {
        assert!(
            got.contains(&format!("{}\t2\t{k}", files[0].display())),
            "{k}"
        );
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("6 from sidecars, 0 without"), "{err}");
    // info shows the sidecar's filters with the distinct values it recorded
    let o = bloomery()
        .args(["parquet", "info", "--json", "--column", "nofilter"])
        .arg(&files[0])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &j["row_groups"][0]["columns"][0];
    assert_eq!(c["filter"], "sidecar");
    assert_eq!(c["ndv"], ROWS);
    // another version of the file: the sidecar is ignored, with a warning
    gen::write(&files[0], 3, RGS, ROWS, 0.01);
    bloomery()
        .args(["parquet", "check"])
        .arg(&files[0])
        .args(["--column", "nofilter", "-k", &keys[0]])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "ignored: it was built for another version",
        ));
}

#[test]
fn rewrite_embeds_filters_that_arrow_rs_reads() {
    let (t, _lake, files) = lake();
    let out = t.path().join("with-filters.parquet");
    bloomery()
        .args(["parquet", "index"])
        .arg(&files[0])
        .args(["--column", "nofilter", "--rewrite"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("3 filters built"))
        .stderr(predicate::str::contains("verified"));
    let s = sbbfs(&out, "nofilter");
    for rg in 0..RGS {
        let f = s[rg as usize].as_ref().expect("embedded filter");
        for i in 0..ROWS {
            assert!(f.check(&gen::nofilter(gen::id(0, rg, i, ROWS))));
        }
    }
    // the other columns' filters are the same bitsets
    for col in gen::FILTERED {
        let (a, b) = (sbbfs(&files[0], col), sbbfs(&out, col));
        for (x, y) in a.iter().zip(&b) {
            let (mut bx, mut by) = (Vec::new(), Vec::new());
            x.as_ref().unwrap().write_bitset(&mut bx).unwrap();
            y.as_ref().unwrap().write_bitset(&mut by).unwrap();
            assert_eq!(bx, by, "{col}");
        }
    }
    let key = gen::nofilter(gen::id(0, 1, 17, ROWS)).to_string();
    bloomery()
        .args(["parquet", "check"])
        .arg(&out)
        .args(["--column", "nofilter", "-k", &key])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(format!("\t1\t{key}\n")));
    // refuses to overwrite without --force; needs exactly one input
    bloomery()
        .args(["parquet", "index"])
        .arg(&files[0])
        .args(["--column", "nofilter", "--rewrite"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
    bloomery()
        .args(["parquet", "index"])
        .args([&files[0], &files[1]])
        .args(["--column", "nofilter", "--rewrite"])
        .arg(t.path().join("x.parquet"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("one input file"));
}

#[test]
fn export_import_and_parquet_sizing_match_arrow_rs() {
    let t = tempfile::tempdir().unwrap();
    let bf = t.path().join("names.bloom");
    let names: Vec<String> = (0..ROWS as i64).map(gen::name).collect();
    let input = t.path().join("names.txt");
    std::fs::write(&input, names.join("\n") + "\n").unwrap();
    bloomery()
        .args(["create", "--kind", "split-block", "--parquet-sizing", "-n"])
        .arg(ROWS.to_string())
        .args(["-p", "0.01"])
        .arg(&bf)
        .assert()
        .success();
    bloomery()
        .arg("add")
        .arg(&bf)
        .arg(&input)
        .assert()
        .success();
    // the bitset equals arrow-rs' for the same values and sizing
    let mut theirs = Sbbf::new_with_ndv_fpp(ROWS, 0.01).unwrap();
    for n in &names {
        theirs.insert(n.as_str());
    }
    let mut want = Vec::new();
    theirs.write_bitset(&mut want).unwrap();
    let raw = t.path().join("names.sbbf");
    bloomery()
        .arg("export")
        .arg(&bf)
        .arg(&raw)
        .args(["--format", "sbbf"])
        .assert()
        .success();
    assert_eq!(std::fs::read(&raw).unwrap(), want);
    // info --json says where the bitset lies in the bloomery file
    let o = bloomery()
        .args(["info", "--json"])
        .arg(&bf)
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (off, len) = (
        j["payload_offset"].as_u64().unwrap() as usize,
        j["sbbf_bytes"].as_u64().unwrap() as usize,
    );
    assert_eq!(len, want.len());
    assert!(j["payload_bytes"].as_u64().unwrap() as usize >= len);
    assert_eq!(std::fs::read(&bf).unwrap()[off..off + len], want[..]);
    // with the header, arrow-rs reads it
    let with_header = t.path().join("names.sbbfh");
    bloomery()
        .arg("export")
        .arg(&bf)
        .arg(&with_header)
        .args(["--format", "sbbf", "--header"])
        .assert()
        .success();
    let back = Sbbf::from_bytes(&std::fs::read(&with_header).unwrap()).unwrap();
    for n in &names {
        assert!(back.check(n.as_str()));
    }
    // import both forms: the same answers as the original, for present and absent keys
    let probe = t.path().join("probe.txt");
    let probes: Vec<String> = (0..3000).map(gen::name).collect();
    std::fs::write(&probe, probes.join("\n") + "\n").unwrap();
    let expect = bloomery()
        .arg("check")
        .arg(&bf)
        .arg(&probe)
        .output()
        .unwrap();
    for (src, name) in [(&raw, "a.bloom"), (&with_header, "b.bloom")] {
        let imported = t.path().join(name);
        bloomery()
            .args(["import", "--format", "sbbf"])
            .arg(src)
            .arg(&imported)
            .args(["-n", "400", "-p", "0.01"])
            .assert()
            .success()
            .stderr(predicate::str::contains("estimated from the fill"));
        let got = bloomery()
            .arg("check")
            .arg(&imported)
            .arg(&probe)
            .output()
            .unwrap();
        assert_eq!(got.stdout, expect.stdout);
        let o = bloomery()
            .args(["info", "--json"])
            .arg(&imported)
            .output()
            .unwrap();
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(j["capacity"], 400);
        // the fill estimate of 400 distinct keys: within 10%
        let items = j["items"].as_u64().unwrap();
        assert!((360..=440).contains(&items), "{items}");
    }
    // refusals: other kinds, other hashing, bad bitsets, binary to a terminal is not tested
    let blocked = t.path().join("blocked.bloom");
    bloomery()
        .args(["create", "-n", "100", "-p", "0.01"])
        .arg(&blocked)
        .assert()
        .success();
    bloomery()
        .arg("export")
        .arg(&blocked)
        .arg(t.path().join("x"))
        .args(["--format", "sbbf"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("only split-block filters"));
    // `create` refuses --seed for split-block; the library can still make such a file
    let seeded = t.path().join("seeded.bloom");
    bloomery::Persist::save(
        &bloomery::SplitBlockBloomFilter::builder()
            .capacity(100)
            .fpr(0.01)
            .seed(3)
            .try_build()
            .unwrap(),
        &seeded,
    )
    .unwrap();
    bloomery()
        .arg("export")
        .arg(&seeded)
        .arg(t.path().join("y"))
        .args(["--format", "sbbf"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "Parquet readers hash with xxHash64",
        ));
    let junk = t.path().join("junk");
    std::fs::write(&junk, [7u8; 33]).unwrap();
    bloomery()
        .args(["import", "--format", "sbbf"])
        .arg(&junk)
        .arg(t.path().join("z.bloom"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("neither a split-block bitset"));
    bloomery()
        .args(["create", "--parquet-sizing", "-n", "100", "-p", "0.01"])
        .arg(t.path().join("w.bloom"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--kind split-block only"));
}

/// A bloomery-built filter embedded in a Parquet file (through the `parquet` crate's writer)
/// is read back by arrow-rs and by `bloomery parquet check` with the answers of the bloomery
/// file.
#[test]
fn bloomery_filters_embedded_in_parquet_answer_the_same() {
    let (t, _lake, files) = lake();
    // the names of row group 0 of file 0, into a split-block file sized as Parquet does
    let names: Vec<String> = (0..ROWS)
        .map(|i| gen::name(gen::id(0, 0, i, ROWS)))
        .collect();
    let input = t.path().join("names.txt");
    std::fs::write(&input, names.join("\n") + "\n").unwrap();
    let bf = t.path().join("names.bloom");
    bloomery()
        .args([
            "create",
            "--kind",
            "split-block",
            "--parquet-sizing",
            "-n",
            "400",
            "-p",
            "0.001",
        ])
        .arg(&bf)
        .assert()
        .success();
    bloomery()
        .arg("add")
        .arg(&bf)
        .arg(&input)
        .assert()
        .success();
    let exported = t.path().join("names.sbbfh");
    bloomery()
        .arg("export")
        .arg(&bf)
        .arg(&exported)
        .args(["--format", "sbbf", "--header"])
        .assert()
        .success();
    let ours = Sbbf::from_bytes(&std::fs::read(&exported).unwrap()).unwrap();

    // copy file 0 with our filter as row group 0's `name` filter (chunks copied unchanged)
    let out = t.path().join("embedded.parquet");
    let src = std::fs::File::open(&files[0]).unwrap();
    let meta = ParquetMetaDataReader::new().parse_and_finish(&src).unwrap();
    let schema = meta.file_metadata().schema_descr().root_schema_ptr();
    let mut w = SerializedFileWriter::new(
        std::fs::File::create(&out).unwrap(),
        schema,
        Arc::new(WriterProperties::builder().build()),
    )
    .unwrap();
    let mut ours = Some(ours);
    for rg in meta.row_groups() {
        let mut g = w.next_row_group().unwrap();
        for (c, cc) in rg.columns().iter().enumerate() {
            let bloom_filter = if c == 1 { ours.take() } else { None };
            g.append_column(
                &src,
                ColumnCloseResult {
                    bytes_written: cc.compressed_size() as u64,
                    rows_written: rg.num_rows() as u64,
                    metadata: cc.clone(),
                    bloom_filter,
                    column_index: None,
                    offset_index: None,
                },
            )
            .unwrap();
        }
        g.close().unwrap();
    }
    w.close().unwrap();

    // probes: the names of row group 0 and names of elsewhere
    let probes: Vec<String> = names
        .iter()
        .cloned()
        .chain((0..2000).map(|i| gen::name(gen::id(4, 0, i, ROWS))))
        .collect();
    let probe_file = t.path().join("probes.txt");
    std::fs::write(&probe_file, probes.join("\n") + "\n").unwrap();
    let theirs = sbbfs(&out, "name")[0].take().expect("the embedded filter");
    let want_arrow: BTreeSet<String> = probes
        .iter()
        .filter(|p| theirs.check(&ByteArray::from(p.as_str())))
        .cloned()
        .collect();
    assert!(names.iter().all(|n| want_arrow.contains(n)));
    // bloomery check on the bloomery file
    let o = bloomery()
        .arg("check")
        .arg(&bf)
        .arg(&probe_file)
        .output()
        .unwrap();
    assert_eq!(stdout_lines(&o), want_arrow);
    // bloomery parquet check on the Parquet file (row group 0 only has a filter)
    let o = bloomery()
        .args(["parquet", "check"])
        .arg(&out)
        .args(["--column", "name", "--keys"])
        .arg(&probe_file)
        .output()
        .unwrap();
    let got: BTreeSet<String> = stdout_lines(&o)
        .into_iter()
        .map(|l| {
            let mut f = l.splitn(3, '\t');
            assert_eq!(f.next().unwrap(), out.display().to_string());
            assert_eq!(f.next().unwrap(), "0");
            f.next().unwrap().to_string()
        })
        .collect();
    assert_eq!(got, want_arrow);
}

/// Re-encode the footer of `path` with the chunks of column `column` in row group 0 changed
/// by `forge` (the data before the footer is kept byte for byte).
fn forge_chunk(
    path: &Path,
    column: &str,
    forge: &dyn Fn(ColumnChunkMetaDataBuilder) -> ColumnChunkMetaDataBuilder,
) {
    let bytes = std::fs::read(path).unwrap();
    let meta_len = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap());
    let start = bytes.len() - 8 - meta_len as usize;
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&std::fs::File::open(path).unwrap())
        .unwrap();
    let col = meta
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.name() == column)
        .unwrap();
    let mut b = meta.into_builder();
    let mut rgs = b.take_row_groups();
    let mut rg = rgs.remove(0).into_builder();
    let mut cols = rg.take_columns();
    cols[col] = forge(cols[col].clone().into_builder()).build().unwrap();
    rgs.insert(0, rg.set_column_metadata(cols).build().unwrap());
    let meta = b.set_row_groups(rgs).build();
    let mut out = bytes[..start].to_vec();
    ParquetMetaDataWriter::new(&mut out, &meta)
        .finish()
        .unwrap();
    std::fs::write(path, out).unwrap();
}

/// A footer whose column chunk has a negative offset or size (one flipped bit of a zigzag
/// varint turns 4300 into -4301): `parquet index` reports the file and indexes the others,
/// `index --rewrite` refuses it; never a panic (the `parquet` crate asserts on such fields).
#[test]
fn negative_chunk_offsets_and_sizes_are_an_error_for_their_file() {
    type Forge = fn(ColumnChunkMetaDataBuilder) -> ColumnChunkMetaDataBuilder;
    let forged: [(&str, Forge); 4] = [
        ("dictionary_page_offset", |c| {
            c.set_dictionary_page_offset(Some(-4301))
        }),
        ("data_page_offset", |c| c.set_data_page_offset(-4301)),
        ("total_compressed_size", |c| {
            c.set_total_compressed_size(-4301)
        }),
        ("num_values", |c| c.set_num_values(-1)),
    ];
    for (field, forge) in forged {
        let (t, lake, files) = lake();
        for col in ["nofilter", "id"] {
            forge_chunk(&files[0], col, &forge);
        }
        let o = bloomery()
            .args(["parquet", "index"])
            .arg(&lake)
            .args(["--column", "nofilter"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{field}: {err}");
        assert!(!err.contains("panicked"), "{field}: {err}");
        assert!(
            err.contains(&format!("`{}`", files[0].display())) && err.contains(field),
            "{field}: {err}"
        );
        assert!(err.contains("1 sidecar files written"), "{field}: {err}");
        assert!(files[1]
            .with_file_name("b.parquet.nofilter.bloomery")
            .is_file());
        assert!(!files[0]
            .with_file_name("a.parquet.nofilter.bloomery")
            .exists());
        let out = t.path().join("rewritten.parquet");
        let o = bloomery()
            .args(["parquet", "index"])
            .arg(&files[0])
            .args(["--column", "nofilter", "--rewrite"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{field}: {err}");
        assert!(!err.contains("panicked"), "{field}: {err}");
        assert!(err.contains(&format!("`{}`", files[0].display())), "{err}");
        assert!(!out.exists());
    }
}
