//! The rates and counts the binary prints, against what the files then do: `-n`/`-p` per kind,
//! `add`'s warning past the target rate, `intersect`'s item count, `fold`, `dedup`'s summary.

use std::path::Path;

use tempfile::TempDir;

mod common;
use common::{bloomery_no_color as bloomery, create, info_json as info, key_lines as lines};

fn keys(range: std::ops::Range<u64>) -> String {
    lines(range.map(|i| format!("key-{i}")))
}

/// `add`, returning stderr.
fn add(p: &Path, input: String) -> String {
    let out = bloomery()
        .arg("add")
        .arg(p)
        .write_stdin(input)
        .assert()
        .success()
        .get_output()
        .clone();
    String::from_utf8(out.stderr).unwrap()
}

/// `check -c`: how many of the lines the file reports present.
fn present(p: &Path, input: String) -> u64 {
    let out = bloomery()
        .args(["check", "-c"])
        .arg(p)
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// 5 binomial standard deviations of a rate measured over `trials` queries.
fn tolerance(p: f64, trials: u64) -> f64 {
    5.0 * (p * (1.0 - p) / trials as f64).sqrt()
}

/// Absent keys reported present, as a rate.
fn measured(p: &Path, trials: u64) -> f64 {
    present(p, lines((0..trials).map(|i| format!("absent-{i}")))) as f64 / trials as f64
}

/// Every kind sized by -n/-p warns on `add` once it is past its target rate, and not
/// before; the scalable filter grows instead and never warns.
#[test]
fn add_warns_past_the_target_rate_for_every_kind() {
    let t = TempDir::new().unwrap();
    let url = |i: u64| format!("https://site{}.example/a/{i}", i % 7);
    for kind in [
        "blocked",
        "classic",
        "partitioned",
        "split-block",
        "counting",
        "blocked-counting",
        "dlcbf",
        "spectral",
        "ibf",
        "scbf",
        "mlbf",
        "scalable",
    ] {
        let f = create(
            t.path(),
            &format!("{kind}.bf"),
            &["--kind", kind, "-n", "1000", "-p", "0.01"],
        );
        let key = |i: u64| {
            if kind == "mlbf" {
                url(i)
            } else {
                format!("k{i}")
            }
        };
        let err = add(&f, lines((0..900).map(key)));
        assert!(!err.contains("warning"), "{kind} below capacity: {err}");
        // past capacity (1.5×: a d-left filter of this size has room for it)
        let err = add(&f, lines((900..1500).map(key)));
        if kind == "scalable" {
            assert!(!err.contains("warning"), "{kind}: {err}");
        } else {
            assert!(
                err.contains("warning") && err.contains("past its target"),
                "{kind}: {err}"
            );
        }
    }
}

/// The iterative filter: -n counts distinct keys, --occurrences the adds (repeats
/// included). Sized with both, a skewed stream of 20,000 adds of 5,000 keys stays at its
/// rate; sized by -n alone, the same stream overfills and `add` says so.
#[test]
fn ibf_sized_by_keys_and_occurrences() {
    let t = TempDir::new().unwrap();
    let (distinct, total, p) = (5_000u64, 20_000u64, 0.02);
    let h: f64 = (1..=distinct).map(|i| 1.0 / i as f64).sum();
    let mut stream = Vec::new();
    for i in 0..distinct {
        stream.push(format!("key-{i}"));
    }
    for i in 0..distinct {
        let c = ((total as f64 / h / (i + 1) as f64).round() as u64).max(1);
        for _ in 1..c {
            stream.push(format!("key-{i}"));
        }
    }
    let n = stream.len() as u64;
    let both = create(
        t.path(),
        "both.bf",
        &[
            "--kind",
            "ibf",
            "-n",
            &distinct.to_string(),
            "--occurrences",
            &n.to_string(),
            "-p",
            &p.to_string(),
        ],
    );
    let err = add(&both, lines(stream.clone()));
    assert!(!err.contains("warning"), "{err}");
    let trials = 20_000;
    let got = measured(&both, trials);
    assert!(got <= p + tolerance(p, trials), "{got}");
    let i = info(&both);
    let now = i["current_fpr"].as_f64().unwrap();
    assert!((now / p - 1.0).abs() < 0.1, "{i}");
    assert!((got / now - 1.0).abs() < 0.25, "{got} vs {now}");
    assert_eq!(i["capacity"], n);
    let keys_only = create(
        t.path(),
        "keys.bf",
        &["--kind", "ibf", "-n", &distinct.to_string(), "-p", "0.02"],
    );
    let err = add(&keys_only, lines(stream));
    assert!(
        err.contains("warning") && err.contains("--occurrences"),
        "{err}"
    );
    // --occurrences is for the kinds whose fill depends on it
    for args in [
        &[
            "--kind",
            "blocked",
            "-n",
            "100",
            "-p",
            "0.01",
            "--occurrences",
            "500",
        ][..],
        &[
            "--kind",
            "counting",
            "-n",
            "100",
            "-p",
            "0.01",
            "--occurrences",
            "500",
        ],
        &[
            "--kind",
            "ibf",
            "-n",
            "100",
            "-p",
            "0.01",
            "--occurrences",
            "50",
        ],
    ] {
        let out = bloomery()
            .arg("create")
            .arg(t.path().join("x.bf"))
            .args(args)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("occurrences"), "{args:?}: {err}");
    }
}

/// The space-code filter: -p is the membership rate of the whole structure, so at capacity
/// `info` and `check` both show about p (not l·p).
#[test]
fn scbf_fpr_is_the_membership_rate() {
    let t = TempDir::new().unwrap();
    let (n, p) = (4_000u64, 0.02);
    let f = create(
        t.path(),
        "s.bf",
        &["--kind", "scbf", "-n", &n.to_string(), "-p", &p.to_string()],
    );
    add(&f, keys(0..n));
    let now = info(&f)["current_fpr"].as_f64().unwrap();
    assert!((now / p - 1.0).abs() < 0.1, "{now}");
    let trials = 20_000;
    let got = measured(&f, trials);
    assert!((got - p).abs() <= tolerance(p, trials), "{got}");
}

/// Two filters sharing 1,500 of their 4,000 keys each: `intersect` reports the §2.4
/// estimate (not the inputs' counts), and `info` on the result agrees.
#[test]
fn intersect_reports_the_intersection_estimate() {
    let t = TempDir::new().unwrap();
    for kind in ["blocked", "classic", "partitioned", "split-block"] {
        let a = create(
            t.path(),
            &format!("a-{kind}"),
            &["--kind", kind, "-n", "5000", "-p", "0.01"],
        );
        let b = create(
            t.path(),
            &format!("b-{kind}"),
            &["--kind", kind, "-n", "5000", "-p", "0.01"],
        );
        add(&a, keys(0..4000));
        add(&b, keys(2500..6500));
        let out_file = t.path().join(format!("i-{kind}"));
        let out = bloomery()
            .arg("intersect")
            .arg(&out_file)
            .arg(&a)
            .arg(&b)
            .assert()
            .success()
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        let said: u64 = err
            .split("about ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .map(|s| s.replace(',', "").parse().unwrap())
            .unwrap_or_else(|| panic!("{kind}: {err}"));
        assert!(err.contains("in common"), "{kind}: {err}");
        assert!(said.abs_diff(1500) < 150, "{kind}: {said} vs 1500: {err}");
        assert_eq!(info(&out_file)["items"], said, "{kind}");
        // the estimate command says the same
        let est = bloomery()
            .args(["estimate", "--json"])
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        if est.status.success() {
            let j: serde_json::Value = serde_json::from_slice(&est.stdout).unwrap();
            let e = j["intersection"].as_f64().unwrap();
            assert!((e - said as f64).abs() <= 1.0, "{kind}: {e} vs {said}");
        }
    }
}

/// Classic and blocked filters sized by -n/-p fold; the rate printed for the folded filter
/// is the rate it then has; an odd size is refused with the reason.
#[test]
fn fold_sized_filters_and_measure_the_rate() {
    let t = TempDir::new().unwrap();
    for kind in ["blocked", "classic"] {
        let f = create(
            t.path(),
            &format!("{kind}.bf"),
            &["--kind", kind, "-n", "40000", "-p", "0.001"],
        );
        // a quarter of the capacity: folded twice it is at its capacity again
        add(&f, keys(0..10_000));
        let out_file = t.path().join(format!("{kind}-folded.bf"));
        let out = bloomery()
            .args(["fold", "--times", "2"])
            .arg(&f)
            .arg(&out_file)
            .assert()
            .success()
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        let printed: f64 = err
            .split("fpr now ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap_or_else(|| panic!("{err}"))
            .parse()
            .unwrap();
        assert_eq!(present(&out_file, keys(0..10_000)), 10_000, "{kind}");
        let i = info(&out_file);
        assert_eq!(i["capacity"], 10_000, "{kind}: {i}");
        let trials = 100_000;
        let got = measured(&out_file, trials);
        assert!(
            (got - printed).abs() <= tolerance(printed, trials),
            "{kind}: measured {got}, printed {printed}"
        );
        assert!(printed < 0.002, "{kind}: {printed}");
    }
    // odd sizes cannot be halved
    for (kind, bits, needle) in [
        ("blocked", "1536", "even block count"),
        ("classic", "1001", "even m"),
    ] {
        let f = create(
            t.path(),
            &format!("odd-{kind}"),
            &["--kind", kind, "--bits", bits, "--hashes", "4"],
        );
        let out = bloomery()
            .arg("fold")
            .arg(&f)
            .arg(t.path().join("x"))
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{kind}: {err}");
    }
}

/// `dedup` says how many lines it dropped, and bounds how many of them are distinct lines
/// wrongly dropped; the true number stays within that bound.
#[test]
fn dedup_summary_counts_drops_and_expected_false_drops() {
    // 30,000 lines of 10,000 distinct values into a fixed filter for 10,000 at 2%
    let stream: Vec<String> = (0..30_000u64)
        .map(|j| format!("v{}", (j * 7919) % 10_000))
        .collect();
    let out = bloomery()
        .args(["dedup", "--kind", "blocked", "-n", "10000", "-p", "0.02"])
        .write_stdin(lines(stream))
        .assert()
        .success()
        .get_output()
        .clone();
    let printed = String::from_utf8(out.stdout).unwrap().lines().count() as u64;
    let err = String::from_utf8(out.stderr).unwrap();
    let number = |after: &str| -> f64 {
        err.split(after)
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap_or_else(|| panic!("{after:?} in {err}"))
            .replace(',', "")
            .parse()
            .unwrap()
    };
    assert_eq!(number("lines read, ") as u64, printed, "{err}");
    assert_eq!(number("printed, ") as u64, 30_000 - printed, "{err}");
    assert!(err.contains("dropped (repeats, and an expected "), "{err}");
    let bound = number("repeats, and an expected ");
    let wrongly = 10_000 - printed;
    // the bound is p·distinct at most and at least the truth within noise
    assert!(bound <= 10_000.0 * 0.02 * 1.05, "{bound}");
    assert!(
        wrongly as f64 <= bound + 4.0 * bound.sqrt(),
        "{wrongly} wrongly dropped, bound {bound}: {err}"
    );
    assert!(!err.contains("dropped as seen"), "{err}");
}

/// Hierarchical URLs like a documentation crawl: hosts, repeated directory names, deep
/// paths (at least four segments, so a new last segment lands in the last layer).
fn crawl_urls(n: u64) -> Vec<String> {
    let dirs = ["docs", "api", "guide", "v2", "en", "src"];
    (0..n)
        .map(|i| {
            let z = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
            format!(
                "https://www.site{}.example/{}/{}/mod{}/page{i}.html",
                z % 50,
                dirs[(z % 6) as usize],
                dirs[((z / 6) % 6) as usize],
                (z / 36) % 500
            )
        })
        .collect()
}

/// The multi-layer URL filter sized with -n/-p keeps near misses (a known page with a new
/// last segment) at p, `info` reports that rate and says which queries it is for.
#[test]
fn mlbf_near_misses_at_the_target_and_reported() {
    let t = TempDir::new().unwrap();
    let (n, p) = (20_000u64, 0.02);
    let f = create(
        t.path(),
        "u.bloom",
        &["--kind", "mlbf", "-n", &n.to_string(), "-p", &p.to_string()],
    );
    let urls = crawl_urls(n);
    add(&f, lines(urls.clone()));
    let near: Vec<String> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| format!("{u}/id{i}"))
        .collect();
    let got = present(&f, lines(near)) as f64 / n as f64;
    assert!(got <= p + tolerance(p, n), "near misses {got} vs {p}");
    let i = info(&f);
    let now = i["current_fpr"].as_f64().unwrap();
    let by_layer = i["mlbf_rates"]["near_miss_by_layer"].as_array().unwrap();
    assert_eq!(by_layer.len(), 4);
    assert_eq!(by_layer[3].as_f64().unwrap(), now);
    // every query's new segment lands in the last layer: between the rate when no URL
    // shares its other segments and the bound `fpr now`
    let low = i["mlbf_rates"]["near_miss_unshared_by_layer"][3]
        .as_f64()
        .unwrap();
    assert!(now <= p * 1.02, "{now}");
    assert!(
        got <= now + tolerance(now, n) && got >= low - tolerance(low, n),
        "{got} outside [{low}, {now}]"
    );
    assert!(i["mlbf_rates"]["recombined"].as_f64().unwrap() > now);
    let out = bloomery().arg("info").arg(&f).assert().success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("near miss") && text.contains("recombined"),
        "{text}"
    );
}
