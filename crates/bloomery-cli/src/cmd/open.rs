//! Opening filter files: one type for a set structure or a counting one ([`Structure`]),
//! opened by every command the same way, with what it can do checked once by capability.
//!
//! Reading commands map the file ([`open_read`]): the words are used in place, so resident
//! memory is the pages the keys touch, and the checksum is verified by one streaming pass
//! (skipped with `--no-verify`: header and parameters are still validated). Updating commands
//! ([`open_update`]) copy the file beside it, map the copy writable, update it in place and
//! rename it over the original when done ([`bloomery::file::FileUpdate`]); a compressed file is
//! updated in memory and written back compressed.

use std::path::Path;

use anyhow::{Context, Result};
use bloomery::file::{FileUpdate, MappedFile, SaveOptions};
use bloomery::kinds::Capability;
use bloomery::{AnyCounter, AnyFilter, Hashed, KeyHasher, KeySet, Kind, Verify};

use crate::output::Progress;

/// A filter file's structure: a set kind or a counting kind.
pub enum Structure {
    Set(AnyFilter),
    Counter(AnyCounter),
}

impl Structure {
    pub fn from_mapped(file: &MappedFile) -> bloomery::Result<Self> {
        Ok(if file.header().kind.is_counter() {
            Structure::Counter(AnyCounter::from_mapped(file)?)
        } else {
            Structure::Set(AnyFilter::from_mapped(file)?)
        })
    }

    fn from_update(up: &FileUpdate) -> bloomery::Result<Self> {
        Ok(if up.header().kind.is_counter() {
            Structure::Counter(AnyCounter::from_update(up)?)
        } else {
            Structure::Set(AnyFilter::from_update(up)?)
        })
    }

    fn from_bytes(bytes: &[u8]) -> bloomery::Result<Self> {
        let kind = bloomery::file::peek_header_bytes(bytes)?.header.kind;
        Ok(if kind.is_counter() {
            Structure::Counter(AnyCounter::from_bytes(bytes)?)
        } else {
            Structure::Set(AnyFilter::from_bytes(bytes)?)
        })
    }

    pub fn kind(&self) -> Kind {
        match self {
            Structure::Set(f) => f.kind(),
            Structure::Counter(c) => c.kind(),
        }
    }

    pub fn hasher(&self) -> &KeyHasher {
        match self {
            Structure::Set(f) => f.hasher(),
            Structure::Counter(c) => c.hasher(),
        }
    }

    /// Keys go through the pre-hashed path (every kind but the URL filter).
    pub fn hashed(&self) -> bool {
        self.kind().capabilities().hashed
    }

    /// Membership of a key given as bytes (a counting structure: its count is above 0).
    pub fn contains_key(&self, key: &[u8]) -> bool {
        match self {
            Structure::Set(f) => f.contains_key(key),
            Structure::Counter(c) => c.contains_hashed(c.hasher().hash_bytes(key)),
        }
    }

    /// Membership of a key whose hash is known (kinds with the pre-hashed path).
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        match self {
            Structure::Set(f) => f.try_contains_hashed(h).unwrap_or(true),
            Structure::Counter(c) => c.contains_hashed(h),
        }
    }
}

/// How a file opened for an update is written back.
enum Commit {
    /// In place of a copy ([`FileUpdate`]).
    Mapped(FileUpdate),
    /// From memory: a compressed file, written back compressed (or plain when `plain`).
    Compressed { plain: bool },
}

/// A file opened for an update: its structure and how it is sealed.
pub struct Update {
    pub s: Structure,
    pub sealer: Sealer,
}

/// How an update is sealed, apart from its structure (so the structure can be borrowed while
/// the sealer drops touched pages).
pub struct Sealer {
    commit: Commit,
    path: std::path::PathBuf,
    /// Sweep in file order and drop pages behind (files large enough for it to matter).
    release: bool,
    /// A blocked filter's keys go into the pass that copies the file ([`AddPath::OnePass`]).
    one_pass: bool,
}

/// Files at least this large are updated by sweeps in file order that drop the pages behind
/// them (blocked filters), so the update's resident memory stays bounded.
const RELEASE_ABOVE: u64 = 64 << 20;

impl Sealer {
    /// Whether a blocked filter's keys go into the pass that copies the file, and the last
    /// batch into the pass that also seals it ([`Update::commit_with_keys`]).
    pub fn one_pass(&self) -> bool {
        self.one_pass && matches!(self.commit, Commit::Mapped(_))
    }

    /// Insert a batch of keys, sorted by block, into a blocked filter decoded from this
    /// update, when more batches follow: the first batch of a [`one_pass`](Self::one_pass)
    /// update in the pass that copies the file
    /// ([`bloomery::BlockedBloomFilter::insert_copying`]), later ones by a sweep of the copy
    /// (the pages dropped behind it). Returns the keys that were new.
    pub fn insert_batch(
        &self,
        b: &mut bloomery::BlockedBloomFilter,
        hashes: &mut [Hashed],
    ) -> bloomery::Result<u64> {
        if let Commit::Mapped(up) = &self.commit {
            if self.one_pass && up.copied() == 0 {
                let mut bar = Progress::bytes("updating", up.len());
                return b.insert_copying(up, hashes, &mut |n| bar.set(n));
            }
        }
        b.insert_sweep(
            hashes,
            |r| self.copy_through(r),
            |r| self.release_payload(r),
        )
    }

    /// Whether inserts should sweep the file in order, dropping its pages behind them (a
    /// mapped update of a file large enough for it to matter).
    pub fn sweeps(&self) -> bool {
        self.release && matches!(self.commit, Commit::Mapped(_))
    }

    /// Before a sweep touches a byte range of the structure's words (payload offsets): copy
    /// the file through its end, when the copy is made as the sweep advances
    /// ([`open_update_sweep`]).
    pub fn copy_through(&self, range: std::ops::Range<u64>) -> bloomery::Result<()> {
        match &self.commit {
            Commit::Mapped(up) => up.copy_through(range),
            Commit::Compressed { .. } => Ok(()),
        }
    }

    /// After a sweep: copy the rest of the file (and check its checksum when verifying), so
    /// the structure can be read whole.
    pub fn copy_rest(&self) -> bloomery::Result<()> {
        match &self.commit {
            Commit::Mapped(up) => up.copy_rest(),
            Commit::Compressed { .. } => Ok(()),
        }
    }

    /// Drop the pages of a byte range of the structure's words (payload offsets) from
    /// memory: what a sweep in file order leaves behind it. They stay in the page cache.
    pub fn release_payload(&self, range: std::ops::Range<u64>) {
        if let (true, Commit::Mapped(up)) = (self.release, &self.commit) {
            up.release_range(up.payload_offset() + range.start, range.end - range.start);
        }
    }
}

impl Update {
    /// [`commit`](Self::commit) of a set kind, returning its info: on a file updated in place
    /// counted inside the seal's checksum pass (no pass of its own:
    /// [`AnyFilter::commit_with_info`]).
    pub fn commit_with_info(self) -> Result<bloomery::kinds::FilterInfo> {
        match self {
            Update {
                s: Structure::Set(f),
                sealer:
                    Sealer {
                        commit: Commit::Mapped(up),
                        path,
                        ..
                    },
            } => {
                let mut bar = Progress::bytes("checksum", up.len());
                f.commit_with_info(up, &mut |n| bar.set(n))
                    .with_context(|| format!("cannot write `{}`", path.display()))
            }
            other => {
                let info = match &other.s {
                    Structure::Set(f) => f.info(),
                    Structure::Counter(c) => return Err(not_a_set(c.kind(), &other.sealer.path)),
                };
                other.commit()?;
                Ok(info)
            }
        }
    }

    /// Insert a last batch of keys into a set kind and seal the update, returning the
    /// filter's info: on a [`one_pass`](Sealer::one_pass) update whose copy has not started,
    /// in one pass over the file that copies it, inserts the keys and seals it
    /// ([`AnyFilter::commit_with_keys`]); else the keys are inserted into the copy and the
    /// seal's pass counts the info ([`commit_with_info`](Self::commit_with_info)).
    pub fn commit_with_keys(self, hashes: &mut [Hashed]) -> Result<bloomery::kinds::FilterInfo> {
        let Update { s, sealer } = self;
        let mut f = match s {
            Structure::Set(f) => f,
            Structure::Counter(c) => return Err(not_a_set(c.kind(), &sealer.path)),
        };
        match sealer.commit {
            Commit::Mapped(up) => {
                let mut bar = Progress::bytes("updating", up.len());
                f.commit_with_keys(up, hashes, &mut |n| bar.set(n))
                    .with_context(|| format!("cannot update `{}`", sealer.path.display()))
            }
            commit => {
                f.insert_hashed_batch(hashes).map_err(|(_, e)| e)?;
                Update {
                    s: Structure::Set(f),
                    sealer: Sealer { commit, ..sealer },
                }
                .commit_with_info()
            }
        }
    }

    /// Seal the update and replace the file (atomic).
    pub fn commit(self) -> Result<()> {
        let Sealer { commit, path, .. } = self.sealer;
        let ctx = || format!("cannot write `{}`", path.display());
        match commit {
            Commit::Mapped(up) => {
                let mut bar = Progress::bytes("checksum", up.len());
                let mut report = |n| bar.set(n);
                match self.s {
                    Structure::Set(f) => up.commit(f, &mut report),
                    Structure::Counter(c) => up.commit(c, &mut report),
                }
                .with_context(ctx)?;
            }
            Commit::Compressed { plain } => {
                let opts = || SaveOptions::new().compressed(!plain);
                match &self.s {
                    Structure::Set(f) => f.save_with(&path, opts()),
                    Structure::Counter(c) => c.save_with(&path, opts()),
                }
                .with_context(ctx)?;
            }
        }
        Ok(())
    }
}

pub fn load_ctx(path: &Path) -> String {
    format!("cannot load `{}`", path.display())
}

/// Map a filter file; verify its checksum in one streaming pass (a progress bar on a terminal
/// for a large file) unless `verify` is false.
pub fn map(path: &Path, verify: bool) -> Result<MappedFile> {
    let file = MappedFile::open(path).with_context(|| load_ctx(path))?;
    if verify {
        let mut bar = Progress::bytes("verifying", file.len());
        file.verify(&mut |n| bar.set(n))
            .with_context(|| load_ctx(path))?;
    }
    Ok(file)
}

/// Open a filter file of any kind for reading (see the [module docs](self)).
pub fn open_read(path: &Path, verify: bool) -> Result<Structure> {
    let file = map(path, verify)?;
    Structure::from_mapped(&file).with_context(|| load_ctx(path))
}

/// Open a set-kind file for reading.
pub fn open_set(path: &Path, verify: bool) -> Result<AnyFilter> {
    match open_read(path, verify)? {
        Structure::Set(f) => Ok(f),
        Structure::Counter(c) => Err(not_a_set(c.kind(), path)),
    }
}

/// The error for a counting file where a set kind is needed.
pub fn not_a_set(kind: Kind, path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "`{}` is a {} structure (a counting kind); this command needs a set kind ({})",
        path.display(),
        kind.name(),
        set_kind_names()
    )
}

/// The set kinds, as `--kind` spells them.
pub fn set_kind_names() -> String {
    Kind::SETS
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Check from the header alone, before any pass over the file, that its kind offers `cap`:
/// the library's message names the kinds that do.
pub fn require(path: &Path, cap: Capability, what: &str) -> Result<Kind> {
    let kind = bloomery::file::peek_file(path)
        .with_context(|| load_ctx(path))?
        .header
        .kind;
    kind.require(cap)
        .with_context(|| format!("cannot {what} `{}`", path.display()))?;
    Ok(kind)
}

/// Open a filter file of any kind for an update (see the [module docs](self)); a compressed
/// file is written back compressed.
pub fn open_update(path: &Path, verify: bool) -> Result<Update> {
    open_update_as(path, verify, false)
}

/// How `add` updates a plain blocked-filter file (`BLOOMERY_UPDATE=one-pass|sweep|auto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddPath {
    /// Copy the file (as the sweep advances, or first), sweep the keys into the copy in block
    /// order, then seal it with a checksum pass that reads the copy again: the fastest when
    /// the copy stays in the page cache until the seal reads it.
    Sweep,
    /// One pass that reads each piece of the file, inserts its blocks' keys and writes it to
    /// the copy with the new checksum ([`AnyFilter::commit_with_keys`]): the file is read from
    /// the disk once and the copy written once, what a file larger than the page cache needs.
    OnePass,
    /// [`OnePass`](Self::OnePass) for a file longer than half the page cache this process
    /// can use ([`crate::pagecache::budget`]; see [`one_pass_above`]): the source and the
    /// copy do not both fit; else [`Sweep`](Self::Sweep).
    Auto,
}

impl AddPath {
    /// From the environment variable `BLOOMERY_UPDATE` (unset or empty: `auto`).
    pub fn from_env() -> Result<Self> {
        match std::env::var("BLOOMERY_UPDATE") {
            Err(std::env::VarError::NotPresent) => Ok(AddPath::Auto),
            Ok(v) => match v.as_str() {
                "" | "auto" => Ok(AddPath::Auto),
                "sweep" => Ok(AddPath::Sweep),
                "one-pass" => Ok(AddPath::OnePass),
                other => anyhow::bail!(
                    "BLOOMERY_UPDATE is `{other}`: it must be one-pass, sweep or auto"
                ),
            },
            Err(e) => anyhow::bail!("BLOOMERY_UPDATE: {e}"),
        }
    }
}

/// The file length above which [`AddPath::Auto`] takes the one-pass update, given the page
/// cache this process can use (`budget`): half of it. The sweep's update reads the source,
/// writes the copy and its seal reads the copy back, so it is fast only while the source and
/// the copy both stay in the page cache; the one pass reads the source once and never reads
/// the copy. A 1.90 GB file (docs/BENCHMARKS.md, "A file larger than RAM") took, against
/// the durable copy, 8.06× by the sweep and 1.21× by the one pass in a 3 GiB memory cgroup
/// (the file cached), 14.06× and 1.57× in 2 GiB (uncached), and about the same by both in
/// 4 GiB (1.09× and 1.14×, uncached).
pub fn one_pass_above(budget: u64) -> u64 {
    budget / 2
}

/// [`open_update`] for `add`'s update of a blocked filter, by `how`
/// ([`AddPath`]). The one-pass update opens any plain blocked file with
/// [`bloomery::file::FileUpdate::open_sweep`], nothing copied yet ([`Sealer::one_pass`]). The sweep
/// opens a big plain file (over 64 MiB) the same way, copied as the sweep advances (the source
/// read once and the copy written once, in order), so the sweep's inserts land in pages just
/// written: the caller copies through each range before touching it
/// ([`Sealer::copy_through`]) and the rest before reading the structure whole
/// ([`Sealer::copy_rest`]). Other files open as [`open_update`] opens them.
pub fn open_update_sweep(path: &Path, verify: bool, how: AddPath) -> Result<Update> {
    let head = bloomery::file::peek_file(path).with_context(|| load_ctx(path))?;
    let kind = head.header.kind;
    if head.compressed
        || !matches!(
            kind,
            Kind::Blocked | Kind::BlockedSectors | Kind::BlockedSalted
        )
    {
        return open_update(path, verify);
    }
    let len = head.file_len;
    let one_pass = match how {
        AddPath::OnePass => true,
        AddPath::Sweep => false,
        AddPath::Auto => {
            len >= RELEASE_ABOVE
                && crate::pagecache::budget().is_some_and(|b| len > one_pass_above(b))
        }
    };
    if how != AddPath::Auto {
        crate::output::note(if one_pass {
            "BLOOMERY_UPDATE: the update is made in one pass"
        } else {
            "BLOOMERY_UPDATE: the update is made by the copy and sweep"
        });
    }
    // the sectors layout is swept after a copy made first (the copy as the sweep advances
    // serves the positions layout)
    if !one_pass && (len < RELEASE_ABOVE || kind != Kind::Blocked) {
        return open_update(path, verify);
    }
    let verify_mode = if verify {
        Verify::Checksum
    } else {
        Verify::HeaderOnly
    };
    let up = FileUpdate::open_sweep(path, verify_mode)
        .with_context(|| format!("cannot update `{}`", path.display()))?;
    let s = Structure::from_update(&up).with_context(|| load_ctx(path))?;
    Ok(Update {
        s,
        sealer: Sealer {
            commit: Commit::Mapped(up),
            path: path.to_path_buf(),
            release: true,
            one_pass,
        },
    })
}

/// [`open_update`], writing a compressed file back plain when `plain` (`dedup --state`).
pub fn open_update_as(path: &Path, verify: bool, plain: bool) -> Result<Update> {
    let head = bloomery::file::peek_file(path).with_context(|| load_ctx(path))?;
    let verify_mode = if verify {
        Verify::Checksum
    } else {
        Verify::HeaderOnly
    };
    if head.compressed {
        let file = map(path, false)?;
        let s = Structure::from_bytes(file.bytes()).with_context(|| load_ctx(path))?;
        return Ok(Update {
            s,
            sealer: Sealer {
                commit: Commit::Compressed { plain },
                path: path.to_path_buf(),
                release: false,
                one_pass: false,
            },
        });
    }
    let len = head.file_len;
    let mut bar = Progress::bytes("copying", len);
    let up = FileUpdate::open(path, verify_mode, &mut |n| bar.set(n))
        .with_context(|| format!("cannot update `{}`", path.display()))?;
    bar.finish();
    let s = Structure::from_update(&up).with_context(|| load_ctx(path))?;
    Ok(Update {
        s,
        sealer: Sealer {
            commit: Commit::Mapped(up),
            path: path.to_path_buf(),
            release: len >= RELEASE_ABOVE,
            one_pass: false,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::one_pass_above;

    /// The one pass is taken once the source and its copy do not both fit in the page cache:
    /// the 1.90 GB file of docs/BENCHMARKS.md takes it in 2 and 3 GiB, the sweep in 4 GiB.
    #[test]
    fn auto_takes_the_one_pass_when_the_file_and_its_copy_do_not_both_fit() {
        let file: u64 = 1_895_825_544;
        assert!(file > one_pass_above(2 << 30));
        assert!(file > one_pass_above(3 << 30));
        assert!(file <= one_pass_above(4 << 30));
        assert!(file <= one_pass_above(16 << 30));
    }
}
