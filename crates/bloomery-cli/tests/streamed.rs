//! `fold`, `union` and `intersect` of plain classic and blocked files stream: the inputs are
//! read through their maps and OUT written as it is made, so a result larger than
//! `--max-memory` is made, byte for byte the in-memory one; a killed or failing run leaves OUT
//! as it was.

use std::process::Command as Std;

use bloomery::AnyFilter;
use rand::rngs::StdRng;
use rand::SeedableRng;

mod common;
use common::*;

/// A fold, a union and an intersection of files larger than `--max-memory` succeed, and each
/// is byte for byte the in-memory result saved (the library's `fold`, `union_with`,
/// `intersect_with`).
#[test]
fn results_larger_than_the_memory_limit_stream_and_equal_the_in_memory_ones() {
    let dir = tempfile::tempdir().unwrap();
    // 10 MB each (two 8 MiB pieces), over a 4 MB limit; 163,840 blocks fold 15 times
    let shapes: [&[&str]; 2] = [
        &["--kind", "blocked", "--bits", "83886080", "--hashes", "8"],
        &["--kind", "classic", "--bits", "80M", "--hashes", "5"],
    ];
    for (s, shape) in shapes.iter().enumerate() {
        let a = create(dir.path(), &format!("a{s}.bloom"), shape);
        let b = create(dir.path(), &format!("b{s}.bloom"), shape);
        add(&a, 0..20_000);
        add(&b, 10_000..30_000);
        let (fa, fb) = (AnyFilter::load(&a).unwrap(), AnyFilter::load(&b).unwrap());
        for times in [1u32, 3] {
            let out = dir.path().join(format!("fold{s}-{times}.bloom"));
            bloomery()
                .args(["--max-memory", "4M", "fold", "--times", &times.to_string()])
                .arg(&a)
                .arg(&out)
                .assert()
                .success();
            let want = (0..times).fold(fa.clone(), |f, _| f.fold().unwrap());
            assert!(
                std::fs::read(&out).unwrap() == want.to_bytes(),
                "{shape:?} {times}"
            );
        }
        for cmd in ["union", "intersect"] {
            let out = dir.path().join(format!("{cmd}{s}.bloom"));
            bloomery()
                .args(["--max-memory", "4M", cmd])
                .arg(&out)
                .arg(&a)
                .arg(&b)
                .assert()
                .success();
            let mut want = fa.clone();
            if cmd == "union" {
                want.union_with(&fb).unwrap();
            } else {
                want.intersect_with(&fb).unwrap();
            }
            assert!(
                std::fs::read(&out).unwrap() == want.to_bytes(),
                "{shape:?} {cmd}"
            );
        }
    }
    assert!(stale_temp_files(dir.path()).is_empty());
}

/// A damaged input is refused (status 2, "checksum") and OUT is not written.
#[test]
fn a_damaged_input_is_refused_and_out_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let a = create(dir.path(), "a.bloom", &["-n", "200k", "-p", "0.01"]);
    add(&a, 0..1000);
    let mut bytes = std::fs::read(&a).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    let bad = dir.path().join("bad.bloom");
    std::fs::write(&bad, &bytes).unwrap();
    let out = dir.path().join("out.bloom");
    for args in [
        vec!["fold".as_ref(), bad.as_os_str(), out.as_os_str()],
        vec![
            "union".as_ref(),
            out.as_os_str(),
            a.as_os_str(),
            bad.as_os_str(),
        ],
        vec![
            "intersect".as_ref(),
            out.as_os_str(),
            bad.as_os_str(),
            a.as_os_str(),
        ],
    ] {
        let o = bloomery().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("checksum"), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}");
        assert!(stale_temp_files(dir.path()).is_empty());
    }
}

/// A streamed fold or union whose writes fail (the process's file-size limit is below OUT's
/// size: an injected I/O error) ends with status 2 and leaves OUT as it was, and no temp file;
/// one killed at random points leaves OUT the old file or the completed new one.
#[test]
fn a_failed_or_killed_fold_or_union_leaves_out_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    // 12.5 MiB (204,800 blocks): the fold writes 6.25 MiB
    let shape = ["--kind", "blocked", "--bits", "104857600", "--hashes", "8"];
    let a = create(dir.path(), "a.bloom", &shape);
    let b = create(dir.path(), "b.bloom", &shape);
    add(&a, 0..5000);
    add(&b, 5000..10_000);
    let out = dir.path().join("out.bloom");
    let old = b"an older file".to_vec();
    let runs = [
        format!("fold --force {} {}", a.display(), out.display()),
        format!(
            "union --force {} {} {}",
            out.display(),
            a.display(),
            b.display()
        ),
    ];
    for run in &runs {
        std::fs::write(&out, &old).unwrap();
        // bash's `ulimit -f` counts 1024-byte blocks; SIGXFSZ ignored, so writes fail EFBIG
        let o = Std::new("bash")
            .arg("-c")
            .arg(format!("trap '' XFSZ; ulimit -f 1024; exec {BIN} {run}"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{run}: {err}");
        assert!(err.contains("File too large"), "{run}: {err}");
        assert_eq!(std::fs::read(&out).unwrap(), old, "{run}");
        assert!(stale_temp_files(dir.path()).is_empty(), "{run}");
    }
    let mut rng = StdRng::seed_from_u64(11);
    for run in &runs {
        // the completed result, and how long it takes
        std::fs::write(&out, &old).unwrap();
        let t0 = std::time::Instant::now();
        let args: Vec<&str> = run.split(' ').collect();
        bloomery().args(&args).assert().success();
        let whole = t0.elapsed();
        let new = std::fs::read(&out).unwrap();
        let mut saw_old = false;
        for round in 0..6 {
            std::fs::write(&out, &old).unwrap();
            let at = kill_at_random(Std::new(BIN).args(&args), whole, &mut rng);
            let now = std::fs::read(&out).unwrap();
            assert!(
                now == old || now == new,
                "{run}: round {round} (killed after {at:?} of {whole:?}): neither old nor new"
            );
            saw_old |= now == old;
            for t in stale_temp_files(dir.path()) {
                std::fs::remove_file(dir.path().join(t)).unwrap();
            }
        }
        assert!(saw_old, "{run}: no kill landed before the rename");
    }
}
