//! Integration tests of `bloomery lab` on the real binary: the experiments with the `lab` feature
//! (on by default), and the clear refusal of a CLI built without it
//! (`cargo test -p bloomery-cli --no-default-features --test lab`).

mod common;
use common::bloomery_default_color as bloomery;

/// A failure with exit status 2 and one `bloomery: error:` line that mentions `needle`.
fn assert_error(a: assert_cmd::assert::Assert, needle: &str) {
    let out = a.code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("bloomery: error:"), "{err:?}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(
        err.contains(needle),
        "stderr {err:?} should mention {needle:?}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[cfg(not(feature = "lab"))]
#[test]
fn without_the_lab_feature_the_subcommand_says_so() {
    for args in [&["lab", "--list"][..], &["lab", "fpr-vs-bits", "--quick"]] {
        assert_error(
            bloomery().args(args).assert(),
            "built without the lab (the cargo feature `lab`",
        );
    }
}

#[cfg(feature = "lab")]
mod with_the_lab {
    use predicates::prelude::*;
    use tempfile::TempDir;

    use super::{assert_error, bloomery};

    fn tmp() -> TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn lab_help_lists_and_refuses_an_unknown_experiment() {
        bloomery()
            .args(["lab", "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Example"));
        bloomery().args(["lab", "--list"]).assert().success();
        assert_error(
            bloomery().args(["lab", "no-such-experiment"]).assert(),
            "no experiment named",
        );
    }

    #[test]
    fn lab_runs_an_experiment_when_registered() {
        let t = tmp();
        let out = bloomery().args(["lab", "--list"]).output().unwrap();
        let list = String::from_utf8(out.stdout).unwrap();
        let Some(first) = list
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().next())
        else {
            eprintln!("skipped: `bloomery lab --list` printed nothing");
            return;
        };
        if first == "no" {
            eprintln!("skipped: no experiments registered yet");
            return;
        }
        let dir = t.path().join("lab");
        bloomery()
            .args(["lab", first, "--quick", "--seed", "1", "--out"])
            .arg(&dir)
            .assert()
            .success();
        assert!(dir.exists());
    }

    /// Run a quick lab experiment with an empty data folder: it must say on stderr that it uses
    /// generated data instead.
    fn lab_falls_back_loudly(name: &str, instead: &str) {
        let empty = tmp();
        let out = tmp();
        bloomery()
            .env("BLOOMERY_DATA", empty.path())
            .args(["lab", name, "--quick", "--out"])
            .arg(out.path())
            .assert()
            .success()
            .stderr(predicate::str::contains(format!(
                "{name}: `{}",
                empty.path().display()
            )))
            .stderr(predicate::str::contains(format!(
                "was not found, so this run uses {instead}, not the real data"
            )));
    }

    #[test]
    fn the_lab_says_on_stderr_when_it_uses_generated_urls() {
        lab_falls_back_loudly("mlbf-urls", "generated repository-like URLs");
    }

    #[test]
    fn the_lab_says_on_stderr_when_it_uses_a_generated_word_list() {
        lab_falls_back_loudly("dictionaries", "a generated word list");
    }

    #[test]
    fn the_lab_seed_defaults_to_the_documented_one() {
        let out = tmp();
        let help = bloomery().args(["lab", "--help"]).output().unwrap();
        assert!(String::from_utf8_lossy(&help.stdout).contains("[default: 1]"));
        let run = |extra: &[&str]| {
            let o = bloomery()
                .args(["lab", "fpr-vs-bits", "--quick", "--out"])
                .arg(out.path())
                .args(extra)
                .output()
                .unwrap();
            assert!(o.status.success());
            o.stdout
        };
        assert_eq!(run(&[]), run(&["--seed", "1"]));
    }
}
