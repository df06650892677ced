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

// ---------------------------------------------------------------------------------------------
// The time window (Rodrigues, Shtul, Baquero & Almeida)
// ---------------------------------------------------------------------------------------------

/// Lines `seconds<TAB>key`: keys below `range` from a fixed-seed LCG, times rising by 0–2 s,
/// with a gap of `gap` seconds every 2000 lines.
fn timed_stream(len: usize, range: u64, gap: u64) -> Vec<(u64, String)> {
    let mut x = 0x7157_u64;
    let mut t = 1_700_000_000u64;
    (0..len)
        .map(|i| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            t += (x >> 60) % 3;
            if i % 2000 == 1999 {
                t += gap;
            }
            (t, format!("key-{}", (x >> 33) % range))
        })
        .collect()
}

fn dedup_timed(lines: &str, extra: &[&str]) -> (Vec<String>, String) {
    let out = bloomery()
        .args(["dedup", "--window", "10m", "-f", "2", "--time-field", "1"])
        .args(extra)
        .write_stdin(lines.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        stdout_lines(&out),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn dedup_time_window_drops_every_repeat_within_ten_minutes() {
    let (window, p) = (600u64, 0.01);
    let input = timed_stream(20_000, 2000, 3600);
    let text: String = input.iter().map(|(t, k)| format!("{t}\t{k}\n")).collect();
    let (got, err) = dedup_timed(&text, &["-n", "1000", "-p", "0.01"]);
    // the previous occurrence of each line's key, in seconds before it
    let mut last: std::collections::HashMap<&str, u64> = Default::default();
    let ago: Vec<Option<u64>> = input
        .iter()
        .map(|(t, k)| last.insert(k.as_str(), *t).map(|p| t - p))
        .collect();
    // no false negative: every printed line is one whose key did not occur in the window
    let mut printed_at = Vec::new();
    let mut j = 0;
    for (i, (t, k)) in input.iter().enumerate() {
        let line = format!("{t}\t{k}");
        if j < got.len() && got[j] == line {
            assert!(
                ago[i].is_none_or(|a| a > window),
                "{line} printed, its key came {:?} s before",
                ago[i]
            );
            printed_at.push(i);
            j += 1;
        }
    }
    assert_eq!(
        j,
        got.len(),
        "every printed line is an input line, in order"
    );
    // keys last seen more than window + slack before (k periods of ⌈600/l⌉ s, read from a
    // file of the same sizing): dropped only as false positives
    let dir = TempDir::new().unwrap();
    let same = create(
        dir.path(),
        "same.bloom",
        &[
            "--kind", "window", "-n", "1000", "-p", "0.01", "--window", "10m",
        ],
    );
    let slack = info_json(&same)["time_window"]["slack_ms"]
        .as_u64()
        .unwrap()
        / 1000
        + 1;
    let fresh: Vec<usize> = (0..input.len())
        .filter(|&i| ago[i].is_none_or(|a| a > window + slack))
        .collect();
    let printed: std::collections::HashSet<usize> = printed_at.into_iter().collect();
    let wrongly = fresh.iter().filter(|i| !printed.contains(i)).count() as f64;
    let q = fresh.len() as f64;
    assert!(q > 2000.0, "{q}");
    assert!(
        wrongly <= q * p + 3.0 * (q * p * (1.0 - p)).sqrt(),
        "{wrongly} of {q} fresh keys dropped"
    );
    assert_eq!(
        err.split(" printed")
            .next()
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap(),
        crate_group(got.len() as u64),
        "{err}"
    );
    // the same stream with RFC 3339 times answers alike
    let rfc: String = input
        .iter()
        .map(|(t, k)| {
            let (days, secs) = (t / 86_400, t % 86_400);
            format!(
                "{}T{:02}:{:02}:{:02}Z\t{k}\n",
                civil(days),
                secs / 3600,
                secs / 60 % 60,
                secs % 60
            )
        })
        .collect();
    let (again, _) = dedup_timed(&rfc, &["-n", "1000", "-p", "0.01"]);
    assert_eq!(again.len(), got.len());
    for (a, b) in again.iter().zip(&got) {
        assert_eq!(a.split('\t').nth(1), b.split('\t').nth(1));
    }
}

/// A count with thousands separators, as the summaries print it.
fn crate_group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `YYYY-MM-DD` of a day count since 1970-01-01 (proleptic Gregorian).
fn civil(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[test]
fn dedup_time_window_state_carries_across_runs_and_refuses_bad_times() {
    let dir = TempDir::new().unwrap();
    let state = dir.path().join("t.bloom");
    for (input, want) in [
        ("100\ta\n200\tb\n", vec!["100\ta", "200\tb"]),
        // "a" 600 s after it came: inside the window; "b" 601 s after: still inside the
        // slack, so found or not; "c" is new
        ("700\ta\n750\tc\n", vec!["750\tc"]),
    ] {
        let out = bloomery()
            .args([
                "dedup",
                "--window",
                "10m",
                "-f",
                "2",
                "--time-field",
                "1",
                "--state",
            ])
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
    // a different window, a count-window state, a time that is not one: clear errors
    for (args, input) in [
        (
            vec![
                "dedup",
                "--window",
                "5m",
                "-f",
                "2",
                "--time-field",
                "1",
                "--state",
            ],
            "1\ta\n",
        ),
        (
            vec!["dedup", "--window", "10m", "-f", "2", "--time-field", "1"],
            "soon\ta\n",
        ),
        (
            vec!["dedup", "--window", "10m", "-f", "2", "--time-field", "3"],
            "1\ta\n",
        ),
        (
            vec!["dedup", "--window", "100", "--time-field", "1"],
            "1\ta\n",
        ),
    ] {
        let mut c = bloomery();
        c.args(&args);
        if args.last() == Some(&"--state") {
            c.arg(&state);
        }
        let out = c.write_stdin(input).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(!out.stderr.is_empty());
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}

#[test]
fn time_window_file_create_add_check_info() {
    let dir = TempDir::new().unwrap();
    let f = create(
        dir.path(),
        "t.bloom",
        &[
            "--kind", "window", "-n", "1000", "-p", "0.01", "--window", "1h",
        ],
    );
    common::add(&f, 0..500);
    common::add(&f, 500..800);
    // added moments ago: all inside the hour
    let out = bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin(lines(0..800))
        .output()
        .unwrap();
    assert_eq!(stdout_lines(&out).len(), 800);
    let out = bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin(lines(10_000..12_000))
        .output()
        .unwrap();
    let found = stdout_lines(&out).len() as f64;
    assert!(
        found <= 2000.0 * 0.01 + 3.0 * (2000.0f64 * 0.01).sqrt(),
        "{found}"
    );
    let v = info_json(&f);
    let w = &v["time_window"];
    assert_eq!(v["kind"], "time-window");
    assert_eq!(v["items"], 800);
    assert_eq!(w["window_ms"], 3_600_000);
    assert_eq!(w["insertions_last_window"], 800);
    let (k, l) = (w["k"].as_u64().unwrap(), w["l"].as_u64().unwrap());
    assert_eq!(w["period_ms"], 3_600_000u64.div_ceil(l));
    assert_eq!(w["slack_ms"], k * 3_600_000u64.div_ceil(l));
    let age = w["oldest_slice_age_ms"].as_u64().unwrap();
    assert!(age < 600_000, "{age}");
    let now = w["model_fpr_now"].as_f64().unwrap();
    assert!(now > 0.0 && now <= 0.01, "{now}");
    assert!(w["model_fpr_design"].as_f64().unwrap() <= 0.01);
    assert_eq!(
        w["slice_fill_newest_first"].as_array().unwrap().len() as u64,
        w["slices"].as_u64().unwrap()
    );
    let out = bloomery().arg("info").arg(&f).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for row in [
        "window",
        "slack",
        "slices",
        "slice fill",
        "oldest slice",
        "rate",
        "fpr (model)",
    ] {
        assert!(
            text.lines().any(|t| t.starts_with(row)),
            "{row} missing:\n{text}"
        );
    }
    // --window is a duration, on a window file
    for bad in [
        vec![
            "--kind", "window", "-n", "10", "-p", "0.01", "--window", "100",
        ],
        vec![
            "--kind", "blocked", "-n", "10", "-p", "0.01", "--window", "1h",
        ],
    ] {
        let out = bloomery()
            .arg("create")
            .arg(dir.path().join("x.bloom"))
            .args(&bad)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad:?}");
    }
}

#[test]
fn a_short_time_window_forgets_on_the_wall_clock() {
    let dir = TempDir::new().unwrap();
    let f = create(
        dir.path(),
        "t.bloom",
        &[
            "--kind", "window", "-n", "100", "-p", "0.01", "--window", "200ms",
        ],
    );
    common::add(&f, 0..100);
    let slack = info_json(&f)["time_window"]["slack_ms"].as_u64().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200 + slack + 50));
    let out = bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin(lines(0..100))
        .output()
        .unwrap();
    // forgotten: found only as false positives
    assert!(stdout_lines(&out).len() <= 5, "{:?}", stdout_lines(&out));
    let v = info_json(&f);
    assert_eq!(v["time_window"]["insertions_last_window"], 0);
    assert!(v["time_window"]["oldest_slice_age_ms"].is_null());
}

#[test]
fn blocked_window_file_add_check_and_info() {
    let dir = TempDir::new().unwrap();
    let f = create(
        dir.path(),
        "wb.bloom",
        &[
            "--kind", "window", "--layout", "blocked", "-n", "1000", "-p", "0.01",
        ],
    );
    common::add(&f, 0..1500);
    common::add(&f, 1500..3000);
    let v = info_json(&f);
    let w = &v["window"];
    assert_eq!(v["kind"], "window");
    assert_eq!(v["layout"], "blocked");
    let (k, l, g, blocks) = (
        w["k"].as_u64().unwrap(),
        w["l"].as_u64().unwrap(),
        w["generation"].as_u64().unwrap(),
        w["blocks"].as_u64().unwrap(),
    );
    assert!(blocks > 0);
    assert_eq!(w["slice_bits"].as_u64().unwrap(), 64 * blocks);
    assert_eq!(v["bits"].as_u64().unwrap(), 64 * blocks * (k + l));
    assert_eq!(w["position_in_generation"], 3000 % g);
    assert_eq!(w["generations_ended"], 3000 / g);
    assert!(w["model_fpr_worst"].as_f64().unwrap() <= 0.01);
    // the file's kind is the blocked layout's (id 30)
    let bytes = std::fs::read(&f).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 30);

    // the last 1000 keys are all found
    let out = bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin(lines(2000..3000))
        .output()
        .unwrap();
    assert_eq!(stdout_lines(&out).len(), 1000);
    // keys never inserted: at most the target within three standard deviations
    let out = bloomery()
        .arg("check")
        .arg(&f)
        .write_stdin(lines(100_000..120_000))
        .output()
        .unwrap();
    let found = stdout_lines(&out).len() as f64;
    let q = 20_000.0f64;
    assert!(
        found <= q * 0.01 + 3.0 * (q * 0.01).sqrt(),
        "{found} of {q} fresh keys found"
    );

    let out = bloomery().arg("info").arg(&f).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("blocked layout"), "{text}");
    assert!(
        text.contains(&format!("as {blocks} blocks of {} 64-bit words", k + l)),
        "{text}"
    );
}

#[test]
fn layout_applies_to_count_windows_only() {
    let dir = TempDir::new().unwrap();
    for (args, says) in [
        (
            vec!["--kind", "blocked", "--layout", "blocked"],
            "--kind window only",
        ),
        (
            vec!["--kind", "window", "--layout", "blocked", "--window", "10m"],
            "count window",
        ),
    ] {
        let out = bloomery()
            .arg("create")
            .arg(dir.path().join("x.bloom"))
            .args(["-n", "1000", "-p", "0.01"])
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!dir.path().join("x.bloom").exists());
    }
}
