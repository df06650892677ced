//! The command line's input decoders, fed arbitrary bytes: the line reader (`for_each_line`:
//! plain, gzip or zstd input detected by magic bytes, `\n` and `\r\n` lines, a field cut by a
//! delimiter, hex keys), the block reader of `add --threads` (`blocks`), and the number
//! parsers of `-n` and `--max-memory`.
//!
//! Nothing may panic. For input the target wraps itself (plain, or gzip/zstd of the data), the
//! lines and keys must equal a naive reference; the block reader must give back
//! every byte and line exactly once. Compressed streams straight from the fuzzer (bad gzip or
//! zstd data) must end in an error or in lines, never a crash.
//!
//! The CLI is a binary crate, so its source files are compiled in here; `cli` and `output`
//! are small stand-ins for the two items `input.rs` takes from them.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/bloomery-cli/src/input.rs"]
mod input;
#[allow(dead_code)]
#[path = "../../crates/bloomery-cli/src/num.rs"]
mod num;

/// The key options of the CLI (`bloomery_cli::cli::KeyArgs`) without clap.
mod cli {
    #[derive(Debug, Default)]
    pub struct KeyArgs {
        pub delimiter: Option<String>,
        pub field: Option<usize>,
        pub hex: bool,
    }
}

/// No progress display under the fuzzer.
#[allow(dead_code)]
mod output {
    pub struct Progress;
    impl Progress {
        pub fn new(_what: &'static str) -> Self {
            Progress
        }
        pub fn set(&mut self, _n: u64) {}
        pub fn inc(&self, _n: u64) {}
        pub fn finish(&mut self) {}
    }
}

use std::io::Write;
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bloomery-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join("input")
}

/// Field `n` (1-based) of `line` split on `delim`, the naive way.
fn field_ref<'a>(line: &'a [u8], delim: &[u8], n: usize) -> Option<&'a [u8]> {
    let mut pieces = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i + delim.len() <= line.len() {
        if &line[i..i + delim.len()] == delim {
            pieces.push(&line[start..i]);
            i += delim.len();
            start = i;
        } else {
            i += 1;
        }
    }
    pieces.push(&line[start..]);
    pieces.get(n - 1).copied()
}

/// A line and the key taken from it (None: the line has no such field).
type LineKey = (Vec<u8>, Option<Vec<u8>>);

/// What `for_each_line` must report for `content`: (line, key) pairs up to the first bad hex
/// key, and whether it must fail (a bad key, or no lines at all).
fn reference(
    content: &[u8],
    delim: &[u8],
    field: Option<usize>,
    hex: bool,
) -> (Vec<LineKey>, bool) {
    let mut out = Vec::new();
    let mut pieces: Vec<&[u8]> = content.split(|&b| b == b'\n').collect();
    if pieces.last().is_some_and(|l| l.is_empty()) {
        pieces.pop();
    }
    for p in &pieces {
        let line = p.strip_suffix(b"\r").unwrap_or(p);
        let key = match field {
            None => Some(line),
            Some(n) => field_ref(line, delim, n),
        };
        let key = match key {
            Some(k) if hex => match hex::decode(k) {
                Ok(v) => Some(v),
                Err(_) => return (out, true),
            },
            Some(k) => Some(k.to_vec()),
            None => None,
        };
        out.push((line.to_vec(), key));
    }
    let empty = out.is_empty();
    (out, empty)
}

fn numbers(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    if let Ok(n) = num::parse_count(&s) {
        assert_eq!(num::parse_count(&n.to_string()), Ok(n));
    }
    if let Ok(b) = num::parse_bytes(&s) {
        assert!(b >= 1);
        assert_eq!(num::parse_bytes(&b.to_string()), Ok(b));
    }
    let _ = num::group(data.len() as u64);
}

fuzz_target!(|data: &[u8]| {
    numbers(data);
    if data.len() < 3 {
        return;
    }
    let (ctl, body) = data.split_at(3);
    let hex = ctl[0] & 1 == 1;
    let field = (ctl[0] & 2 == 2).then_some(usize::from(ctl[1] % 5) + 1);
    let delimiter = match (ctl[0] >> 2) & 3 {
        0 => None,
        1 => Some(",".to_string()),
        2 => Some("\\t".to_string()),
        _ => Some("::".to_string()),
    };
    let args = cli::KeyArgs {
        delimiter: delimiter.clone(),
        field,
        hex,
    };
    let Ok(spec) = input::KeySpec::new(&args) else {
        // the CLI refuses --delimiter without --field, and -f 0
        assert!(delimiter.is_some() && field.is_none());
        return;
    };
    let delim: Vec<u8> = match delimiter.as_deref() {
        None | Some("\\t") => b"\t".to_vec(),
        Some(d) => d.as_bytes().to_vec(),
    };
    // how the body is stored: as is, or wrapped in gzip or zstd by the target
    let wrap = ctl[2] & 3;
    let file = match wrap {
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(body).unwrap();
            e.finish().unwrap()
        }
        2 => zstd::stream::encode_all(body, 1).unwrap(),
        _ => body.to_vec(),
    };
    let path = scratch();
    std::fs::write(&path, &file).unwrap();
    let name = path.to_string_lossy().into_owned();
    // any body the target did not wrap itself (wrap 0 or 3) goes to the reader as is
    let raw_compressed = !matches!(wrap, 1 | 2)
        && (body.starts_with(&[0x1f, 0x8b]) || body.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]));

    let mut got: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
    let r = input::for_each_line(std::slice::from_ref(&name), &spec, |line, key| {
        got.push((line.to_vec(), key.map(<[u8]>::to_vec)));
        Ok(())
    });
    if raw_compressed {
        // a compressed stream from the fuzzer: any outcome but a crash
        return;
    }
    let (want, must_fail) = reference(body, &delim, field, hex);
    assert_eq!(got, want, "lines and keys differ from the reference");
    assert_eq!(r.is_err(), must_fail, "{r:?}");
    if let Ok(c) = r {
        assert_eq!(c.lines as usize, want.len());
        let skipped = want.iter().filter(|(_, k)| k.is_none()).count();
        assert_eq!(c.skipped as usize, skipped);
    }

    // add --threads: blocks of whole lines, every byte once, a terminator added at the end
    let block = usize::from(ctl[1]) * 7 + 1;
    let mut joined = Vec::new();
    for b in input::blocks(&name, block).unwrap() {
        let b = b.unwrap();
        assert_eq!(
            b.last(),
            Some(&b'\n'),
            "a block must end with a line terminator"
        );
        joined.extend_from_slice(&b);
    }
    let mut expect = body.to_vec();
    if !expect.is_empty() && expect.last() != Some(&b'\n') {
        expect.push(b'\n');
    }
    assert_eq!(joined, expect);
});
