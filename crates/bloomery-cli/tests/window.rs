//! The sliding-window filter (Shtul, Baquero & Almeida) through the real binary: `dedup
//! --window`, and `create --kind window` with `add`, `check` and `info`.

use tempfile::TempDir;

mod common;
use common::{bloomery_no_color as bloomery, create, info_json, lines, stdout_lines};

/// A stream with repeats at every distance around the window: values of a fixed-seed LCG
/// below `range`.
fn stream(len: usize, range: u64) -> Vec<String> {
    let mut x = 0x5EED_u64;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            format!("line-{}", (x >> 33) % range)
        })
        .collect()
}

#[test]
fn dedup_window_drops_every_repeat_within_the_window() {
    let (window, p) = (500usize, 0.001);
    let input = stream(20_000, 3000);
    // the exact answer: a line is printed unless it occurred among the previous `window`
    let exact: Vec<&String> = (0..input.len())
        .filter(|&i| !input[i.saturating_sub(window)..i].contains(&input[i]))
        .map(|i| &input[i])
        .collect();
    let out = bloomery()
        .args(["dedup", "--window", "500", "-p", "0.001"])
        .write_stdin(common::key_lines(&input))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = stdout_lines(&out);
    // no false negative: every printed line is one the exact answer prints, in order (a false
    // positive can only drop a line)
    let mut e = exact.iter();
    for g in &got {
        assert!(
            e.any(|x| *x == g),
            "{g} printed but it occurred within the window"
        );
    }
    // lines dropped though new to the window: those seen between window and window + slack
    // lines ago may be (their keys fade out); the others only as false positives
    let slack = bloomery::AgePartitionedBloomFilter::try_new(window as u64, p)
        .unwrap()
        .slack() as usize;
    let printed: std::collections::BTreeSet<usize> = {
        let mut at = Vec::new();
        let mut j = 0;
        for (i, x) in input.iter().enumerate() {
            if j < got.len() && *x == got[j] && !input[i.saturating_sub(window)..i].contains(x) {
                at.push(i);
                j += 1;
            }
        }
        at.into_iter().collect()
    };
    let (mut fading, mut stranger) = (0usize, 0usize);
    let mut strangers = 0usize;
    for i in 0..input.len() {
        if input[i.saturating_sub(window)..i].contains(&input[i]) {
            continue;
        }
        let recent = input[i.saturating_sub(window + slack)..i].contains(&input[i]);
        strangers += usize::from(!recent);
        if !printed.contains(&i) {
            if recent {
                fading += 1;
            } else {
                stranger += 1;
            }
        }
    }
    let q = strangers as f64;
    let bound = q * p + 3.0 * (q * p * (1.0 - p)).sqrt();
    assert!(
        (stranger as f64) <= bound,
        "{stranger} of {q} new lines dropped (bound {bound})"
    );
    assert!(fading > 0, "keys fade between window and window + slack");
    // and a plain dedup prints far fewer: the window is what forgets
    assert!(got.len() > 3000, "{}", got.len());
}

#[test]
fn window_file_add_check_and_info() {
    let dir = TempDir::new().unwrap();
    let f = create(
        dir.path(),
        "w.bloom",
        &["--kind", "window", "-n", "1000", "-p", "0.01"],
    );
    // two runs of add: the file keeps its place in the stream
    common::add(&f, 0..700);
    common::add(&f, 700..3000);
    let v = info_json(&f);
    let w = &v["window"];
    assert_eq!(v["kind"], "window");
    assert_eq!(w["window"], 1000);
    let (k, l, g) = (
        w["k"].as_u64().unwrap(),
        w["l"].as_u64().unwrap(),
        w["generation"].as_u64().unwrap(),
    );
    assert!(l * g >= 1000);
    assert_eq!(w["position_in_generation"], 3000 % g);
    assert_eq!(w["generations_ended"], 3000 / g);
    assert_eq!(w["slack"], (k + l) * g - 1 - 1000);
    assert_eq!(
        w["slice_fill_newest_first"].as_array().unwrap().len() as u64,
        k + l
    );
    let now = w["model_fpr_now"].as_f64().unwrap();
    assert!(now > 0.0 && now <= w["model_fpr_worst"].as_f64().unwrap());
    assert!(w["model_fpr_worst"].as_f64().unwrap() <= 0.01);
    assert_eq!(v["current_fpr"].as_f64().unwrap(), now);

    // the last 1000 keys are all found
    let out = bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin(lines(2000..3000))
        .output()
        .unwrap();
    assert_eq!(stdout_lines(&out).len(), 1000);
    // keys followed by window + slack insertions answer as never-inserted keys
    let gone = 3000 - 1000 - w["slack"].as_u64().unwrap();
    let out = bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin(lines(0..gone as u32))
        .output()
        .unwrap();
    let found = stdout_lines(&out).len() as f64;
    let q = gone as f64;
    assert!(
        found <= q * 0.01 + 3.0 * (q * 0.01).sqrt(),
        "{found} of {q} old keys found"
    );

    // the text form shows the window's figures
    let out = bloomery().arg("info").arg(&f).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for row in [
        "window",
        "slices",
        "generation",
        "slice fill",
        "fpr (model)",
    ] {
        assert!(
            text.lines().any(|t| t.starts_with(row)),
            "{row} missing:\n{text}"
        );
    }
}

#[test]
fn dedup_window_refuses_other_kinds_and_files() {
    let dir = TempDir::new().unwrap();
    let out = bloomery()
        .args(["dedup", "--window", "10", "--kind", "blocked"])
        .write_stdin("a\n")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let plain = create(dir.path(), "b.bloom", &["-n", "100", "-p", "0.01"]);
    let out = bloomery()
        .args(["dedup", "--window", "10", "--state"])
        .arg(&plain)
        .write_stdin("a\n")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--window"));
    // a window state file carries the window across runs
    let state = dir.path().join("w.bloom");
    for (input, want) in [("a\nb\n", vec!["a", "b"]), ("b\nc\na\n", vec!["c"])] {
        let out = bloomery()
            .args(["dedup", "--window", "10", "--state"])
            .arg(&state)
            .write_stdin(input)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(stdout_lines(&out), want);
    }
}

/// The figure after "`label`" in a summary line, digits and thousands separators only.
fn figure_before(text: &str, label: &str) -> u64 {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} missing from {text}"));
    let digits: String = text[..at]
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '_')
        .filter(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().unwrap()
}

#[test]
fn dedup_window_summary_counts_the_lines_printed() {
    let input = stream(5000, 150);
    let out = bloomery()
        .args(["dedup", "--window", "200", "-p", "0.01"])
        .write_stdin(common::key_lines(&input))
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed = stdout_lines(&out).len() as u64;
    let err = String::from_utf8_lossy(&out.stderr);
    // every line enters the window, but only the printed ones were new to it
    assert!(printed < 5000 / 2, "{printed}");
    assert!(printed > 0);
    assert_eq!(figure_before(&err, " printed"), printed, "{err}");
    assert_eq!(
        figure_before(&err, " lines new to the window"),
        printed,
        "{err}"
    );
    assert_eq!(figure_before(&err, " dropped"), 5000 - printed, "{err}");
    assert!(err.contains("window of the last 200"), "{err}");
}
