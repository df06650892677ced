//! Feed arbitrary bytes, as a Parquet file, to what `bloomery parquet index` runs: the filters
//! built for a column (`build_filters`, the sidecar path) and the rewrite with embedded
//! filters (`rewrite_with_filters`, which reads its output back and checks it before the
//! rename). Nothing may panic (a panic of the `parquet` crate must come back as an error for
//! the file); a rewrite that succeeds leaves a file that `verify_rewrite` accepts, and one that
//! fails leaves no output.
#![no_main]

use bloomery::parquet::{build_filters, rewrite_with_filters, verify_rewrite, ParquetFile, Sizing};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bloomery::tuning::set_max_bytes(16 << 20);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.parquet");
    std::fs::write(&input, data).unwrap();
    let Ok(pf) = ParquetFile::open(&input) else {
        return;
    };
    let columns = pf.column_paths();
    for (col, name) in columns.iter().enumerate().take(4) {
        let missing: Vec<usize> = (0..pf.row_groups())
            .filter(|&rg| pf.filter_location(rg, col).is_none())
            .collect();
        let _ = build_filters(&pf, col, &missing, 0.01, Sizing::Tight);
        let out = dir.path().join(format!("out-{col}.parquet"));
        match rewrite_with_filters(&input, &out, name, 0.01) {
            Ok(_) => verify_rewrite(&input, &out, name).unwrap(),
            Err(_) => assert!(!out.exists()),
        }
    }
});
