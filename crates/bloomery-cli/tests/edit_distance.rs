//! `bloomery check --edit-distance 1` on the real binary: which lines match, which variant is
//! printed, the alphabet, hex keys, fields, -v/-c and the errors.

use std::path::PathBuf;

use tempfile::TempDir;

mod common;
use common::bloomery;

/// A filter of a few weak passwords at p = 1e-9, so that none of the ~2,000 variants of a test
/// line is a false positive (probability below 1e-5 over the whole file).
fn blocklist(dir: &TempDir) -> PathBuf {
    let f = dir.path().join("weak.bloom");
    bloomery()
        .arg("create")
        .arg(&f)
        .args([
            "-n", "1000", "-p", "1e-9", "--kind", "classic", "--seed", "7",
        ])
        .assert()
        .success();
    let words = dir.path().join("words.txt");
    std::fs::write(&words, "password\ndragon\nletmein\nqwerty\nü1\n").unwrap();
    bloomery()
        .arg("-q")
        .arg("add")
        .arg(&f)
        .arg(&words)
        .assert()
        .success();
    f
}

fn check(f: &PathBuf, args: &[&str], stdin: &str) -> (i32, String) {
    let out = bloomery()
        .arg("check")
        .args(args)
        .arg(f)
        .write_stdin(stdin)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn every_kind_of_edit_matches_and_prints_its_variant() {
    let dir = tempfile::tempdir().unwrap();
    let f = blocklist(&dir);
    let input = "password\npasword\npassswordd\npassword1\npassqord\napssword\ndargon\nletmien\nhunter2\nqwertyuiop\n\n";
    let (code, out) = check(&f, &["--edit-distance", "1"], input);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "password\tpassword\n\
         pasword\tpassword\n\
         password1\tpassword\n\
         passqord\tpassword\n\
         apssword\tpassword\n\
         dargon\tdragon\n\
         letmien\tletmein\n"
    );
    // without the option only the exact line matches, without a tab
    let (code, out) = check(&f, &[], input);
    assert_eq!((code, out.as_str()), (0, "password\n"));
}

#[test]
fn count_invert_and_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let f = blocklist(&dir);
    let input = "pasword\nhunter2\ndragons\ncorrect horse\n";
    let (code, out) = check(&f, &["--edit-distance", "1", "-c"], input);
    assert_eq!((code, out.as_str()), (0, "2\n"));
    let (code, out) = check(&f, &["--edit-distance", "1", "-v"], input);
    assert_eq!((code, out.as_str()), (0, "hunter2\ncorrect horse\n"));
    // nothing within distance 1: status 1, no output
    let (code, out) = check(&f, &["--edit-distance", "1"], "hunter2\nabc\n");
    assert_eq!((code, out.as_str()), (1, ""));
}

#[test]
fn the_alphabet_limits_substitutions_and_insertions_only() {
    let dir = tempfile::tempdir().unwrap();
    let f = blocklist(&dir);
    // 'o' replaced by '0': the way back needs 'o' in the alphabet
    let (code, out) = check(&f, &["--edit-distance", "1"], "passw0rd\n");
    assert_eq!((code, out.as_str()), (0, "passw0rd\tpassword\n"));
    let digits = ["--edit-distance", "1", "--alphabet", "0123456789"];
    let (code, out) = check(&f, &digits, "passw0rd\n");
    assert_eq!((code, out.as_str()), (1, ""));
    // deletions and transpositions need no alphabet
    let (_, out) = check(&f, &digits, "passwordx\napssword\npasswrd\n");
    assert_eq!(out, "passwordx\tpassword\napssword\tpassword\n");
    // insertions and substitutions use the alphabet: a-z has 'y' and 'o'
    let az = [
        "--edit-distance",
        "1",
        "--alphabet",
        "abcdefghijklmnopqrstuvwxyz",
    ];
    let (_, out) = check(&f, &az, "passw0rd\nqwert\n");
    assert_eq!(out, "passw0rd\tpassword\nqwert\tqwerty\n");
    let (code, _) = check(&f, &digits, "qwert\n");
    assert_eq!(code, 1);
}

#[test]
fn edits_are_on_bytes_with_hex_and_fields() {
    let dir = tempfile::tempdir().unwrap();
    let f = blocklist(&dir);
    // "ü1" is three bytes (c3 bc 31): "ü" alone is one deletion away, "u1" is not (two bytes
    // differ from "ü")
    let (_, out) = check(&f, &["--edit-distance", "1"], "ü\nu1\nü12\n");
    assert_eq!(out, "ü\tü1\nü12\tü1\n");
    // hex keys are edited as bytes and the variant printed in hex
    let (_, out) = check(&f, &["--edit-distance", "1", "--hex"], "647261676f6e73\n");
    assert_eq!(out, "647261676f6e73\t647261676f6e\n");
    // with -f the key field is edited and the whole line printed before the tab
    let (_, out) = check(
        &f,
        &["--edit-distance", "1", "-f", "2"],
        "alice\tdragn\nbob\tsecret\ncarol\n",
    );
    assert_eq!(out, "alice\tdragn\tdragon\n");
}

#[test]
fn a_thousand_long_lines_finish_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let f = blocklist(&dir);
    // 1,000 lines of 16 bytes: about 3 million lookups, none a hit
    let input: String = (0..1000).map(|i| format!("zz{i:014}\n")).collect();
    let t = std::time::Instant::now();
    let (code, out) = check(&f, &["--edit-distance", "1", "-c"], &input);
    assert_eq!((code, out.as_str()), (1, "0\n"));
    // generous for a debug build on a busy machine; a per-variant allocation or re-hash of
    // the whole line set would blow it
    assert!(t.elapsed().as_secs() < 30, "{:?}", t.elapsed());
}

#[test]
fn bad_options_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let f = blocklist(&dir);
    for args in [
        &["--edit-distance", "2"][..],
        &["--edit-distance", "-1"],
        &["--edit-distance", "x"],
        &["--edit-distance", "1", "--alphabet", ""],
        &["--alphabet", "abc"],
    ] {
        let out = bloomery()
            .arg("check")
            .args(args)
            .arg(&f)
            .write_stdin("password\n")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty());
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}
