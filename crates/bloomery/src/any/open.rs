//! A filter file of any kind, opened once: [`Structure`] (a set kind or a counting kind,
//! decoded from one map) and [`Update`], the policy that updates a file in place of a copy.
//!
//! How an update is decided is written on [`Update`].
//!
//! Every way in maps the file once and reads its header once: the copy is made from the
//! descriptor the map was made from ([`FileUpdate::copy_mapped`],
//! [`FileUpdate::sweep_mapped`]).

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::any::counter::AnyCounter;
use crate::any::filter::{AnyFilter, FilterInfo};
use crate::error::{Error, Result};
use crate::filter::KeySet;
use crate::hash::{Hashed, KeyHasher};
use crate::io::format::SaveOptions;
use crate::io::header::Verify;
use crate::io::mapped::{FileUpdate, MappedFile};
use crate::kind::Kind;
use crate::sets::blocked::BlockedBloomFilter;

/// A filter file's structure: a set kind or a counting kind, learnt from its header.
#[derive(Debug)]
pub enum Structure {
    /// A set kind.
    Set(AnyFilter),
    /// A counting kind.
    Counter(AnyCounter),
}

impl Structure {
    /// The structure of a mapped file, its words used in place (a compressed file: decoded
    /// into memory, its checksum verified).
    pub fn from_mapped(file: &MappedFile) -> Result<Self> {
        Ok(if file.header().kind.is_counter() {
            Structure::Counter(AnyCounter::from_mapped(file)?)
        } else {
            Structure::Set(AnyFilter::from_mapped(file)?)
        })
    }

    /// The structure of a file being updated, its words the copy's.
    pub fn from_update(up: &FileUpdate) -> Result<Self> {
        Ok(if up.header().kind.is_counter() {
            Structure::Counter(AnyCounter::from_update(up)?)
        } else {
            Structure::Set(AnyFilter::from_update(up)?)
        })
    }

    /// The structure's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Structure::Set(f) => f.kind(),
            Structure::Counter(c) => c.kind(),
        }
    }

    /// The structure's key hasher.
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

    /// Membership of a key whose hash is known (kinds with the pre-hashed path; a kind
    /// without it answers true, never a false negative).
    pub fn contains_hashed(&self, h: Hashed) -> bool {
        match self {
            Structure::Set(f) => f.try_contains_hashed(h).unwrap_or(true),
            Structure::Counter(c) => c.contains_hashed(h),
        }
    }
}

/// How a plain blocked-filter file takes a batch of keys inserted by one thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdatePath {
    /// Copy the file (as the sweep advances, or first), sweep the keys into the copy in block
    /// order, then seal it with a checksum pass that reads the copy again: the fastest when
    /// the copy stays in the page cache until the seal reads it.
    Sweep,
    /// One pass that reads each piece of the file, inserts its blocks' keys and writes it to
    /// the copy with the new checksum ([`AnyFilter::commit_with_keys`]): the file is read from
    /// the disk once and the copy written once, what a file larger than the page cache needs.
    OnePass,
    /// [`OnePass`](Self::OnePass) for a file of [`RELEASE_ABOVE`] bytes or more that is
    /// longer than [`one_pass_above`] of the page cache the process can use
    /// ([`UpdateOptions::page_cache`]): the source and the copy do not both fit; else
    /// [`Sweep`](Self::Sweep).
    Auto,
}

/// Files at least this large are updated by sweeps in file order that drop the pages behind
/// them (blocked filters), so the update's resident memory stays bounded.
pub const RELEASE_ABOVE: u64 = 64 << 20;

/// The file length above which [`UpdatePath::Auto`] takes the one-pass update, given the page
/// cache the process can use (`budget`): half of it. The sweep's update reads the source,
/// writes the copy and its seal reads the copy back, so it is fast only while the source and
/// the copy both stay in the page cache; the one pass reads the source once and never reads
/// the copy. A 1.90 GB file (docs/BENCHMARKS.md, "A file larger than RAM") took, against
/// the durable copy, 8.06× by the sweep and 1.21× by the one pass in a 3 GiB memory cgroup
/// (the file cached), 14.06× and 1.57× in 2 GiB (uncached), and about the same by both in
/// 4 GiB (1.09× and 1.14×, uncached).
pub fn one_pass_above(budget: u64) -> u64 {
    budget / 2
}

/// How [`Update::open`] opens a file.
#[derive(Clone, Copy, Debug)]
pub struct UpdateOptions {
    verify: Verify,
    write_plain: bool,
    sweep: Option<UpdatePath>,
    page_cache: fn() -> Option<u64>,
}

impl Default for UpdateOptions {
    fn default() -> Self {
        Self {
            verify: Verify::Checksum,
            write_plain: false,
            sweep: None,
            page_cache: || None,
        }
    }
}

impl UpdateOptions {
    /// Verify the file's checksum as it is copied (the default) or trust its payload
    /// ([`Verify::HeaderOnly`]: the kernel copies it).
    pub fn verify(mut self, verify: Verify) -> Self {
        self.verify = verify;
        self
    }

    /// Write a compressed file back plain (else it keeps its compressed form).
    pub fn write_plain(mut self, plain: bool) -> Self {
        self.write_plain = plain;
        self
    }

    /// A plain blocked filter's keys are inserted by one thread, by `path`
    /// ([`Sealer::insert_batch`], [`Update::commit_with_keys`]).
    pub fn sweep(mut self, path: UpdatePath) -> Self {
        self.sweep = Some(path);
        self
    }

    /// The bytes of page cache the process can use, asked by [`UpdatePath::Auto`] for a big
    /// file (`None`: unknown, the sweep is taken).
    pub fn page_cache(mut self, budget: fn() -> Option<u64>) -> Self {
        self.page_cache = budget;
        self
    }
}

/// The stages of an update that report progress, each with the bytes done of a total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The file copied beside itself.
    Copying,
    /// Keys inserted in a pass that copies the file.
    Updating,
    /// The checksum pass that seals the copy.
    Checksum,
}

impl Stage {
    /// The stage in one word, for a progress bar.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Copying => "copying",
            Stage::Updating => "updating",
            Stage::Checksum => "checksum",
        }
    }
}

/// Progress of an update: `(stage, bytes done, bytes in all)`.
pub type StageProgress<'a> = &'a mut dyn FnMut(Stage, u64, u64);

/// How a file opened for an update is written back.
#[derive(Debug)]
enum Commit {
    /// In place of a copy ([`FileUpdate`]).
    Mapped(FileUpdate),
    /// From memory: a compressed file, written back compressed (or plain when `plain`).
    InMemory { plain: bool },
}

/// A file opened for an update: its structure and how it is sealed.
///
/// An update is decided from the one header the map has read ([`Update::open`]):
/// - a compressed file is decoded into memory (its checksum verified) and written back whole,
///   compressed (or plain with [`UpdateOptions::write_plain`]);
/// - a plain file is copied beside itself and the copy mapped writable
///   ([`FileUpdate`]); files of [`RELEASE_ABOVE`] bytes or more drop the pages a blocked
///   filter's sweep leaves behind ([`Sealer::release_payload`]);
/// - a plain blocked filter whose keys are inserted by one thread ([`UpdateOptions::sweep`])
///   takes one of two paths ([`UpdatePath`]): the copy made as a sweep in file order advances
///   (big files of the positions layout), or one pass that copies the file, inserts the keys
///   and seals it — what a file larger than the page cache needs (the page-cache rule:
///   [`one_pass_above`]).
///
/// The structure and its sealer are apart so the structure can be borrowed mutably while the
/// sealer copies ahead of a sweep and drops the pages behind it.
///
/// ```
/// use bloomery::file::{MappedFile, Structure, Update, UpdateOptions};
/// use bloomery::{AnyFilter, BlockedBloomFilter, Filter, Persist};
///
/// # #[cfg(not(feature = "mmap"))] fn main() {} // without the `mmap` feature: Error::Unsupported
/// # #[cfg(feature = "mmap")]
/// # fn main() -> bloomery::Result<()> {
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("seen.bloom");
/// BlockedBloomFilter::try_new(1000, 0.01)?.save(&path)?;
///
/// let file = MappedFile::open(&path)?; // the one open and the one header read
/// let mut up = Update::open(file, UpdateOptions::default(), &mut |_, _, _| {})?;
/// if let Structure::Set(f) = &mut up.structure {
///     f.insert("alice")?;
/// }
/// up.commit(&mut |_, _, _| {})?;
/// assert!(AnyFilter::load(&path)?.contains("alice"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Update {
    /// The structure, decoded from the copy (or into memory for a compressed file).
    pub structure: Structure,
    /// How it is sealed.
    pub sealer: Sealer,
}

/// How an [`Update`] is sealed, apart from its structure.
#[derive(Debug)]
pub struct Sealer {
    commit: Commit,
    path: PathBuf,
    /// Sweep in file order and drop pages behind (files large enough for it to matter).
    release: bool,
    /// A blocked filter's keys go into the pass that copies the file ([`UpdatePath::OnePass`]).
    one_pass: bool,
}

impl Sealer {
    /// The file updated.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a blocked filter's keys go into the pass that copies the file, and the last
    /// batch into the pass that also seals it ([`Update::commit_with_keys`]).
    pub fn one_pass(&self) -> bool {
        self.one_pass && matches!(self.commit, Commit::Mapped(_))
    }

    /// Whether inserts should sweep the file in order, dropping its pages behind them (a
    /// plain file large enough for it to matter).
    pub fn sweeps(&self) -> bool {
        self.release && matches!(self.commit, Commit::Mapped(_))
    }

    /// Whether the file is updated in memory and written back whole (a compressed file).
    pub fn in_memory(&self) -> bool {
        matches!(self.commit, Commit::InMemory { .. })
    }

    /// Insert a batch of keys, sorted by block, into a blocked filter decoded from this
    /// update, when more batches follow: the first batch of a [`one_pass`](Self::one_pass)
    /// update in the pass that copies the file ([`BlockedBloomFilter::insert_copying`],
    /// reported as [`Stage::Updating`]), later ones by a sweep of the copy (the pages dropped
    /// behind it). Returns the keys that were new.
    pub fn insert_batch(
        &self,
        b: &mut BlockedBloomFilter,
        hashes: &mut [Hashed],
        progress: StageProgress<'_>,
    ) -> Result<u64> {
        if let Commit::Mapped(up) = &self.commit {
            if self.one_pass && up.copied() == 0 {
                let len = up.len();
                return b.insert_copying(up, hashes, &mut |n| progress(Stage::Updating, n, len));
            }
        }
        b.insert_sweep(
            hashes,
            |r| self.copy_through(r),
            |r| self.release_payload(r),
        )
    }

    /// Before a sweep touches a byte range of the structure's words (payload offsets): copy
    /// the file through its end, when the copy is made as the sweep advances.
    pub fn copy_through(&self, range: Range<u64>) -> Result<()> {
        match &self.commit {
            Commit::Mapped(up) => up.copy_through(range),
            Commit::InMemory { .. } => Ok(()),
        }
    }

    /// After a sweep: copy the rest of the file (and check its checksum when verifying), so
    /// the structure can be read whole.
    pub fn copy_rest(&self) -> Result<()> {
        match &self.commit {
            Commit::Mapped(up) => up.copy_rest(),
            Commit::InMemory { .. } => Ok(()),
        }
    }

    /// Drop the pages of a byte range of the structure's words (payload offsets) from
    /// memory: what a sweep in file order leaves behind it. They stay in the page cache.
    pub fn release_payload(&self, range: Range<u64>) {
        if let (true, Commit::Mapped(up)) = (self.release, &self.commit) {
            up.release_range(up.payload_offset() + range.start, range.end - range.start);
        }
    }
}

fn not_a_set(kind: Kind) -> Error {
    Error::Unsupported(format!(
        "this needs a set kind; the file holds a {} structure (a counting kind)",
        kind.name()
    ))
}

impl Update {
    /// Open the mapped `file` for an update by the policy above ([`Update`]), decided
    /// from the header the map has read; the file is not opened again.
    pub fn open(
        file: MappedFile,
        opts: UpdateOptions,
        progress: StageProgress<'_>,
    ) -> Result<Self> {
        let path = file.path().to_path_buf();
        if file.is_compressed() {
            let structure = Structure::from_mapped(&file)?;
            return Ok(Update {
                structure,
                sealer: Sealer {
                    commit: Commit::InMemory {
                        plain: opts.write_plain,
                    },
                    path,
                    release: false,
                    one_pass: false,
                },
            });
        }
        let kind = file.header().kind;
        let len = file.len();
        if let (
            Some(how),
            Kind::Blocked | Kind::BlockedSectors | Kind::BlockedSalted | Kind::BlockedSalted256,
        ) = (opts.sweep, kind)
        {
            let one_pass = match how {
                UpdatePath::OnePass => true,
                UpdatePath::Sweep => false,
                UpdatePath::Auto => {
                    len >= RELEASE_ABOVE
                        && (opts.page_cache)().is_some_and(|b| len > one_pass_above(b))
                }
            };
            // the sectors layout is swept after a copy made first (the copy as the sweep
            // advances serves the positions layout)
            if one_pass || (len >= RELEASE_ABOVE && kind == Kind::Blocked) {
                let up = FileUpdate::sweep_mapped(file, opts.verify)?;
                return Self::mapped(up, path, true, one_pass);
            }
        }
        progress(Stage::Copying, 0, len);
        let up = FileUpdate::copy_mapped(file, &path, opts.verify, &mut |n| {
            progress(Stage::Copying, n, len)
        })?;
        Self::mapped(up, path, len >= RELEASE_ABOVE, false)
    }

    fn mapped(up: FileUpdate, path: PathBuf, release: bool, one_pass: bool) -> Result<Self> {
        let structure = Structure::from_update(&up)?;
        Ok(Update {
            structure,
            sealer: Sealer {
                commit: Commit::Mapped(up),
                path,
                release,
                one_pass,
            },
        })
    }

    /// [`commit`](Self::commit) of a set kind, returning its info: on a file updated in place
    /// counted inside the seal's checksum pass (no pass of its own:
    /// [`AnyFilter::commit_with_info`]).
    pub fn commit_with_info(self, progress: StageProgress<'_>) -> Result<FilterInfo> {
        match self {
            Update {
                structure: Structure::Set(f),
                sealer:
                    Sealer {
                        commit: Commit::Mapped(up),
                        ..
                    },
            } => {
                let len = up.len();
                f.commit_with_info(up, &mut |n| progress(Stage::Checksum, n, len))
            }
            other => {
                let info = match &other.structure {
                    Structure::Set(f) => f.info(),
                    Structure::Counter(c) => return Err(not_a_set(c.kind())),
                };
                other.commit(progress)?;
                Ok(info)
            }
        }
    }

    /// Insert a last batch of keys into a set kind and seal the update, returning the
    /// filter's info: on a [`one_pass`](Sealer::one_pass) update whose copy has not started,
    /// in one pass over the file that copies it, inserts the keys and seals it
    /// ([`AnyFilter::commit_with_keys`], reported as [`Stage::Updating`]); else the keys are
    /// inserted into the copy and the seal's pass counts the info
    /// ([`commit_with_info`](Self::commit_with_info)).
    pub fn commit_with_keys(
        self,
        hashes: &mut [Hashed],
        progress: StageProgress<'_>,
    ) -> Result<FilterInfo> {
        let Update { structure, sealer } = self;
        let mut f = match structure {
            Structure::Set(f) => f,
            Structure::Counter(c) => return Err(not_a_set(c.kind())),
        };
        match sealer.commit {
            Commit::Mapped(up) => {
                let len = up.len();
                f.commit_with_keys(up, hashes, &mut |n| progress(Stage::Updating, n, len))
            }
            commit => {
                f.insert_hashed_batch(hashes).map_err(|(_, e)| e)?;
                Update {
                    structure: Structure::Set(f),
                    sealer: Sealer { commit, ..sealer },
                }
                .commit_with_info(progress)
            }
        }
    }

    /// Seal the update and replace the file (atomic).
    pub fn commit(self, progress: StageProgress<'_>) -> Result<()> {
        match self.sealer.commit {
            Commit::Mapped(up) => {
                let len = up.len();
                let mut report = |n| progress(Stage::Checksum, n, len);
                match self.structure {
                    Structure::Set(f) => up.commit(f, &mut report),
                    Structure::Counter(c) => up.commit(c, &mut report),
                }
            }
            Commit::InMemory { plain } => {
                let opts = || SaveOptions::new().compressed(!plain);
                let path = &self.sealer.path;
                match &self.structure {
                    Structure::Set(f) => f.save_with(path, opts()),
                    Structure::Counter(c) => c.save_with(path, opts()),
                }
            }
        }
    }
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
