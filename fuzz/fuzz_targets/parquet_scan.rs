//! Feed arbitrary bytes, as a whole Parquet file, to the lake scan (`bloomery::parquet::scan`,
//! what `bloomery parquet check` and `prune` run) and to the file reader of `parquet info`
//! (`ParquetFile`): the tail (magic, footer length), the footer, filter offsets and lengths
//! pointing anywhere, filter headers and bitsets read in parts, and the sidecar beside the
//! file. Nothing may panic, loop or allocate by a declared length, and the scan's ways of
//! reading a filter must read it alike:
//!
//! - one key list of 1 key (one 32-byte block read per key when the filter is 4 KiB or
//!   more), 5 keys, and 3,000 keys (a prune reads the header with a first part of the bitset,
//!   then doubles what it read; counting and listing read the whole filter), each a prefix of
//!   the next;
//! - for each list, the three modes (prune: `Mode::Any`; `check -c`: `Mode::Count`; `check`:
//!   `Mode::Keys`) answer the file alike: all with the same error, or with the same row
//!   groups, sources and sidecar, a prune passing a row group exactly when its count is
//!   positive and its list of keys is not empty, the count that list's length;
//! - the lists agree with each other: the same error, or the keys a shorter list finds are
//!   the longer list's finds among its first keys;
//! - where the `parquet` crate decodes the footer too (`ParquetFile::open`), the scan answers
//!   as a whole-filter read of that file does (`ParquetFile::read_filter`, whose bitset must be
//!   the input's bytes after the header at the footer's offset): the same first error, or
//!   every row group's keys exactly those its filter (or the sidecar's) holds.
//!
//! When the crate opens the file and the column has row groups without a filter, a sidecar is
//! planted beside it first: current (it holds one key for each such row group) for inputs of
//! even length, stale (another footer hash: the scan must ignore it) for odd ones.
//!
//! The scans run on one thread of their own, whose filter buffer (reused from file to file)
//! is filled with set bits before every prune: a prune that probed bytes of a bitset it did
//! not read would pass row groups their counts say hold no key.
#![no_main]

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use bloomery::parquet::{
    read_filter_header, scan, ColumnType, FileAnswer, FilterSource, Hits, KeyList, Mode,
    ParquetFile, ParquetSidecar, Query, SidecarFilter, SidecarState,
};
use bloomery::{Persist, SplitBlockBloomFilter, Stats};
use libfuzzer_sys::fuzz_target;

/// The column queried: the seeds' INT64 column.
const COLUMN: &str = "id";

/// The first keys: small integers, so that they are values of most column types (integers,
/// floats, byte arrays; `1` and `0` of booleans too). The seeds hold 1, 7, 10 and 0.
const FIRST_KEYS: [&str; 5] = ["1", "7", "-3", "10", "0"];

/// Keys of the longest list: with 3,000 keys no filter of a file of a few KiB is read one
/// block per key, and a prune's first part of a 4 KiB bitset is 704 bytes.
const MANY: usize = 3000;

const MODES: [Mode; 3] = [Mode::Any, Mode::Count, Mode::Keys];

struct Fixture {
    /// A directory of this process, removed at its exit.
    dir: PathBuf,
    /// The file the input is written to.
    file: PathBuf,
    /// A seed whose 4 KiB filter is all ones, read whole before every prune (see [`poison`]).
    poison: PathBuf,
    /// The one thread the scans run on, so that they share its filter buffer.
    pool: rayon::ThreadPool,
    /// Every key, as text.
    keys: Vec<Vec<u8>>,
    /// Lists of the first 1, 5 and [`MANY`] keys.
    lists: Vec<KeyList>,
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();

extern "C" {
    /// The C library's: `f` runs when the process exits (libFuzzer ends a run with `exit`).
    fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
}

extern "C" fn remove_dir() {
    if let Some(fx) = FIXTURE.get() {
        let _ = std::fs::remove_dir_all(&fx.dir);
    }
}

fn fixture() -> &'static Fixture {
    FIXTURE.get_or_init(|| {
        bloomery::tuning::set_max_bytes(common::LIMIT);
        // one directory per process (libFuzzer's -jobs run several), removed at its exit
        let dir =
            std::env::temp_dir().join(format!("bloomery-fuzz-parquet-scan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        // SAFETY: `atexit` is the C library's own, and `remove_dir` takes no arguments and
        // does not unwind (it ignores the only error it can meet)
        unsafe { atexit(remove_dir) };
        let mut keys: Vec<Vec<u8>> = FIRST_KEYS.iter().map(|k| k.as_bytes().to_vec()).collect();
        keys.extend(
            (0..MANY - FIRST_KEYS.len()).map(|i| (1_000_003 + 17 * i).to_string().into_bytes()),
        );
        let pushed = |n: usize| {
            let mut l = KeyList::new(false);
            for k in &keys[..n] {
                l.push(k);
            }
            l
        };
        // the long list as a text of lines, split as far as a scan reads it
        let text: Vec<u8> = keys
            .iter()
            .flat_map(|k| k.iter().chain(b"\n"))
            .copied()
            .collect();
        let lists = vec![
            pushed(1),
            pushed(FIRST_KEYS.len()),
            KeyList::from_lines(text, false),
        ];
        // the seed with the 4 KiB filter, its bitset's bytes all set
        let poison = dir.join("poison.parquet");
        let mut bytes = include_bytes!("../seeds/parquet_scan/one-row-group-4k-filter").to_vec();
        std::fs::write(&poison, &bytes).expect("the poison file written");
        let pf = ParquetFile::open(&poison).expect("the seed opens");
        let loc = pf
            .filter_location(0, pf.find_column(COLUMN).expect("`id`"))
            .expect("a filter");
        let h = read_filter_header(&bytes[loc.offset as usize..]).expect("a filter header");
        let at = loc.offset as usize + h.header_len;
        bytes[at..at + h.num_bytes as usize].fill(0xFF);
        std::fs::write(&poison, &bytes).expect("the poison file written");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("a thread for the scans");
        Fixture {
            file: dir.join("input.parquet"),
            dir,
            poison,
            pool,
            keys,
            lists,
        }
    })
}

/// Fill the scan thread's filter buffer with set bits: the poison file's filter read whole
/// (two keys: too many for single block reads of 4 KiB). A prune that probed bytes of a
/// bitset it did not read (stale bytes of the previous file's filter) would then pass row
/// groups their counts say hold no key; left as the previous input's bytes, they would
/// mostly be the right ones (the same seed mutated), and such a defect would not show.
fn poison(fx: &Fixture) {
    let mut keys = KeyList::new(false);
    keys.push(b"1");
    keys.push(b"7");
    let a = run(&fx.poison, &keys, Mode::Count).expect("the poison file scans");
    assert_eq!(a.row_groups[0].hits, Hits::Count(2));
}

/// The scan of `file`: its answer or its error's message.
fn run(file: &PathBuf, keys: &KeyList, mode: Mode) -> Result<FileAnswer, String> {
    let q = Query {
        column: COLUMN,
        keys,
        mode,
        use_sidecars: true,
    };
    let mut out = None;
    let _ = scan(std::slice::from_ref(file), &q, |_, a| -> Result<(), ()> {
        out = Some(a.map_err(|e| e.to_string()));
        Ok(())
    });
    out.expect("a scan answers every file")
}

/// A row group as a whole-filter read of the file sees it.
enum Group {
    Filter(SplitBlockBloomFilter),
    Sidecar(SplitBlockBloomFilter),
    None,
}

/// What the scans must answer, from the `parquet` crate's reading of the footer.
struct Expected {
    column: String,
    column_type: ColumnType,
    rows: Vec<i64>,
    groups: Vec<Group>,
    sidecar: SidecarState,
}

/// The `parquet info` reading of the file: every filter of every column read whole (the ones
/// of [`COLUMN`] checked against the input's bytes), a sidecar planted for [`COLUMN`]'s row
/// groups without a filter, and what a scan must answer (None: the crate does not decode the
/// footer, so there is nothing to compare with; Err: the error a scan must report).
fn expected(fx: &Fixture, data: &[u8]) -> Option<Result<Expected, String>> {
    let pf = ParquetFile::open(&fx.file).ok()?;
    for c in 0..pf.column_paths().len() {
        for rg in 0..pf.row_groups() {
            if let Ok(Some(f)) = pf.read_filter(rg, c) {
                let fill = f.fill_ratio();
                assert!((0.0..=1.0).contains(&fill), "fill {fill}");
                let _ = (f.estimated_len(), f.current_fpr());
            }
        }
    }
    let col = match pf.find_column(COLUMN) {
        Ok(c) => c,
        Err(e) => return Some(Err(e.to_string())),
    };
    let column = pf.column_path(col);
    let column_type = pf.column_type(col);
    let mut groups = Vec::with_capacity(pf.row_groups());
    for rg in 0..pf.row_groups() {
        match pf.read_filter(rg, col) {
            Err(e) => return Some(Err(e.to_string())),
            Ok(None) => groups.push(Group::None),
            Ok(Some(f)) => {
                // the bitset read is the input's, after the header at the footer's offset
                let loc = pf
                    .filter_location(rg, col)
                    .expect("a filter has a location");
                let at = loc.offset as usize;
                let h = read_filter_header(&data[at..]).expect("a header read from the file");
                let bits = &data[at + h.header_len..][..h.num_bytes as usize];
                assert_eq!(f.to_parquet_bitset(), bits, "row group {rg}");
                groups.push(Group::Filter(f));
            }
        }
    }
    let mut sidecar = SidecarState::Unused;
    if groups.iter().any(|g| matches!(g, Group::None)) {
        // one key in each row group's sidecar filter
        let mut buf = Vec::new();
        let filters: Vec<Option<SidecarFilter>> = groups
            .iter()
            .enumerate()
            .map(|(rg, g)| {
                matches!(g, Group::None).then(|| {
                    let mut filter = SplitBlockBloomFilter::try_with_bytes(64).expect("64 bytes");
                    let key = &fx.keys[rg % FIRST_KEYS.len()];
                    if let Ok(h) = column_type.hash(key, false, &mut buf) {
                        filter.insert_hash(h);
                    }
                    SidecarFilter {
                        filter,
                        distinct: 1,
                        fpr: 0.01,
                    }
                })
            })
            .collect();
        let current = data.len().is_multiple_of(2);
        let hash = pf.footer_hash() ^ u64::from(!current);
        // too many row groups or too long a column path for a sidecar: none planted
        if let Ok(s) = ParquetSidecar::new(pf.len(), hash, &column, column_type, filters.clone()) {
            let path = ParquetSidecar::path_for(&fx.file, &column);
            // a name too long for the file system: none planted
            if std::fs::write(&path, s.to_bytes()).is_ok() {
                if current {
                    for (g, f) in groups.iter_mut().zip(filters) {
                        if let Some(f) = f {
                            *g = Group::Sidecar(f.filter);
                        }
                    }
                    sidecar = SidecarState::Used(path);
                } else {
                    sidecar = SidecarState::Ignored(path, String::new());
                }
            }
        }
    }
    Some(Ok(Expected {
        column,
        column_type,
        rows: (0..pf.row_groups()).map(|rg| pf.rows(rg)).collect(),
        groups,
        sidecar,
    }))
}

/// The indices of the keys (hashed by the column's type; None: not a value of it) that `f`
/// may hold.
fn held(hashes: &[Option<u64>], f: &SplitBlockBloomFilter) -> Vec<u32> {
    (0..hashes.len())
        .filter(|&i| hashes[i].is_some_and(|h| f.contains_hash(h)))
        .map(|i| i as u32)
        .collect()
}

fn same_sidecar(a: &SidecarState, b: &SidecarState) -> bool {
    match (a, b) {
        (SidecarState::Ignored(p, _), SidecarState::Ignored(q, _)) => p == q,
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let fx = fixture();
    std::fs::write(&fx.file, data).expect("the input written");
    let want = expected(fx, data);
    // answers[list][mode]
    let answers: Vec<Vec<Result<FileAnswer, String>>> = fx.pool.install(|| {
        fx.lists
            .iter()
            .map(|keys| {
                MODES
                    .iter()
                    .map(|&m| {
                        if m == Mode::Any {
                            poison(fx);
                        }
                        run(&fx.file, keys, m)
                    })
                    .collect()
            })
            .collect()
    });
    if let Some(Ok(w)) = &want {
        if let SidecarState::Used(p) | SidecarState::Ignored(p, _) = &w.sidecar {
            let _ = std::fs::remove_file(p);
        }
    }
    let _ = std::fs::remove_file(&fx.file);

    // every list, every mode: the same error, or the same file
    let first = &answers[0][0];
    for (l, list) in answers.iter().enumerate() {
        for (m, a) in list.iter().enumerate() {
            let at = format!("list of {} keys, {:?}", fx.lists[l].len(), MODES[m]);
            match (first, a) {
                (Err(e), Err(f)) => assert_eq!(e, f, "{at}"),
                (Ok(x), Ok(y)) => {
                    assert_eq!(x.column, y.column, "{at}");
                    assert_eq!(x.column_type, y.column_type, "{at}");
                    assert!(
                        same_sidecar(&x.sidecar, &y.sidecar),
                        "{at}: {:?} {:?}",
                        x.sidecar,
                        y.sidecar
                    );
                    let rows = |a: &FileAnswer| -> Vec<(usize, i64, FilterSource)> {
                        a.row_groups
                            .iter()
                            .map(|r| (r.index, r.rows, r.source))
                            .collect()
                    };
                    assert_eq!(rows(x), rows(y), "{at}");
                }
                (x, y) => panic!("{at}: {x:?} but {y:?}"),
            }
        }
    }
    if first.is_ok() {
        // the row groups by the longest list: keys found, by index
        let long: Vec<Vec<u32>> = match &answers[2][2] {
            Ok(a) => a
                .row_groups
                .iter()
                .map(|r| match &r.hits {
                    Hits::Keys(k) => k.clone(),
                    Hits::Unknown => Vec::new(),
                    other => panic!("a list of keys answered {other:?}"),
                })
                .collect(),
            Err(e) => panic!("{e}"),
        };
        for (l, list) in answers.iter().enumerate() {
            let n = fx.lists[l].len();
            let [Ok(any), Ok(count), Ok(keys)] = &list[..] else {
                unreachable!("checked above")
            };
            for (rg, r) in keys.row_groups.iter().enumerate() {
                let at = format!("list of {n} keys, row group {rg}");
                let (a, c) = (&any.row_groups[rg].hits, &count.row_groups[rg].hits);
                if r.source == FilterSource::None {
                    assert_eq!([a, c, &r.hits], [&Hits::Unknown; 3], "{at}");
                    continue;
                }
                let Hits::Keys(k) = &r.hits else {
                    panic!("{at}: {:?}", r.hits)
                };
                assert!(k.windows(2).all(|w| w[0] < w[1]), "{at}: {k:?}");
                assert_eq!(c, &Hits::Count(k.len() as u64), "{at}");
                assert_eq!(a, &Hits::Any(!k.is_empty()), "{at}");
                let prefix: Vec<u32> = long[rg]
                    .iter()
                    .copied()
                    .filter(|&i| (i as usize) < n)
                    .collect();
                assert_eq!(k, &prefix, "{at}: the longest list found {:?}", long[rg]);
            }
            for a in [count, keys] {
                assert_eq!(a.keys_examined, n);
            }
            assert!(any.keys_examined <= n);
        }
    }

    // against the whole-filter reading of the `parquet` crate's footer
    match (&want, first) {
        (None, _) => {}
        (Some(Err(e)), Err(f)) => assert_eq!(e, f),
        (Some(Err(e)), Ok(_)) => panic!("the scan answers, the file reader says: {e}"),
        (Some(Ok(_)), Err(f)) => panic!("the file reader reads the file, the scan says: {f}"),
        (Some(Ok(w)), Ok(a)) => {
            assert_eq!(a.column, w.column);
            assert_eq!(a.column_type, w.column_type);
            assert!(
                same_sidecar(&a.sidecar, &w.sidecar),
                "{:?} {:?}",
                a.sidecar,
                w.sidecar
            );
            let rows: Vec<i64> = a.row_groups.iter().map(|r| r.rows).collect();
            assert_eq!(rows, w.rows);
            let mut buf = Vec::new();
            let hashes: Vec<Option<u64>> = fx
                .keys
                .iter()
                .map(|k| w.column_type.hash(k, false, &mut buf).ok())
                .collect();
            // the longest list's answers; the shorter lists' are their prefixes (checked above)
            let Ok(keys) = &answers[2][2] else {
                unreachable!("checked above")
            };
            for (rg, (r, g)) in keys.row_groups.iter().zip(&w.groups).enumerate() {
                let (source, hits) = match g {
                    Group::Filter(f) => (FilterSource::Parquet, Hits::Keys(held(&hashes, f))),
                    Group::Sidecar(f) => (FilterSource::Sidecar, Hits::Keys(held(&hashes, f))),
                    Group::None => (FilterSource::None, Hits::Unknown),
                };
                assert_eq!((r.source, &r.hits), (source, &hits), "row group {rg}");
            }
        }
    }
});
