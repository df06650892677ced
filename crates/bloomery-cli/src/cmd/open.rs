//! Opening filter files: glue over the library's [`bloomery::file::Structure`] and
//! [`bloomery::file::Update`]. Every command maps each file once ([`map`]) and takes what it
//! needs from that one map: the kind checked by capability from its header ([`require`]), the
//! structure, or an update.
//!
//! Reading commands use the words in place, so resident memory is the pages the keys touch,
//! and the checksum is verified by one streaming pass (skipped with `--no-verify`: header and
//! parameters are still validated). Updating commands hand the map to the library's update
//! policy (`bloomery::file::Update::open`, whose module docs say how each file is updated):
//! the file is copied beside itself, the copy updated in place and renamed over the original
//! when done; a compressed file is updated in memory and written back compressed. What this
//! module adds is the command line's part: messages naming the file, progress bars, and
//! `BLOOMERY_UPDATE`.

use std::path::Path;

use anyhow::{Context, Result};
use bloomery::file::{MappedFile, Stage, UpdateOptions, UpdatePath};
pub use bloomery::file::{Structure, Update};
use bloomery::kinds::{Capability, FilterInfo};
use bloomery::{AnyFilter, Hashed, Kind, Verify};

use crate::output::Progress;

pub fn load_ctx(path: &Path) -> String {
    format!("cannot load `{}`", path.display())
}

/// `--no-verify` as the library's [`Verify`].
pub fn verify_mode(verify: bool) -> Verify {
    if verify {
        Verify::Checksum
    } else {
        Verify::HeaderOnly
    }
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

/// The structure of a mapped file, verified first unless `verify` is false.
pub fn read_mapped(file: &MappedFile, verify: bool) -> Result<Structure> {
    let path = file.path();
    if verify {
        let mut bar = Progress::bytes("verifying", file.len());
        file.verify(&mut |n| bar.set(n))
            .with_context(|| load_ctx(path))?;
    }
    Structure::from_mapped(file).with_context(|| load_ctx(path))
}

/// Open a filter file of any kind for reading (see the [module docs](self)).
pub fn open_read(path: &Path, verify: bool) -> Result<Structure> {
    let file = map(path, false)?;
    read_mapped(&file, verify)
}

/// Open a set-kind file for reading.
pub fn open_set(path: &Path, verify: bool) -> Result<AnyFilter> {
    into_set(open_read(path, verify)?, path)
}

/// The set kind of a structure, or the error naming the set kinds.
pub fn into_set(s: Structure, path: &Path) -> Result<AnyFilter> {
    match s {
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

/// Check from the map's header, before any pass over the file, that its kind offers `cap`:
/// the library's message names the kinds that do.
pub fn require(file: &MappedFile, cap: Capability, what: &str) -> Result<Kind> {
    let kind = file.header().kind;
    kind.require(cap)
        .with_context(|| format!("cannot {what} `{}`", file.path().display()))?;
    Ok(kind)
}

/// Progress bars for the stages of an update: one bar per stage, replaced when the stage
/// changes.
pub fn bars() -> impl FnMut(Stage, u64, u64) {
    let mut bar: Option<(Stage, Progress)> = None;
    move |stage, done, total| {
        if bar.as_ref().map(|(s, _)| *s) != Some(stage) {
            bar = None; // the last stage's bar ends before the next one starts
            bar = Some((stage, Progress::bytes(stage.name(), total)));
        }
        if let Some((_, b)) = &mut bar {
            b.set(done);
        }
    }
}

/// Open a mapped filter file for an update by the library's policy.
pub fn update_mapped(file: MappedFile, opts: UpdateOptions) -> Result<Update> {
    let path = file.path().to_path_buf();
    Update::open(file, opts, &mut bars())
        .with_context(|| format!("cannot update `{}`", path.display()))
}

/// Open a mapped filter file of any kind for an update (see the [module docs](self)); a
/// compressed file is written back compressed.
pub fn open_update(file: MappedFile, verify: bool) -> Result<Update> {
    update_mapped(file, UpdateOptions::default().verify(verify_mode(verify)))
}

/// `add`'s update of a file whose keys one thread inserts: a plain blocked filter is updated
/// by `how` (the library's [`UpdatePath`]; `BLOOMERY_UPDATE`), the page cache this process
/// can use measured by [`crate::pagecache::budget`]; any other file as [`open_update`]
/// opens it.
pub fn open_update_sweep(file: MappedFile, verify: bool, how: UpdatePath) -> Result<Update> {
    let opts = UpdateOptions::default()
        .verify(verify_mode(verify))
        .sweep(how)
        .page_cache(crate::pagecache::budget);
    let blocked = !file.is_compressed()
        && matches!(
            file.header().kind,
            Kind::Blocked | Kind::BlockedSectors | Kind::BlockedSalted | Kind::BlockedSalted256
        );
    let up = update_mapped(file, opts)?;
    if blocked && how != UpdatePath::Auto {
        crate::output::note(if up.sealer.one_pass() {
            "BLOOMERY_UPDATE: the update is made in one pass"
        } else {
            "BLOOMERY_UPDATE: the update is made by the copy and sweep"
        });
    }
    Ok(up)
}

/// How `add` updates a plain blocked-filter file, from the environment variable
/// `BLOOMERY_UPDATE` (`one-pass`, `sweep` or `auto`; unset or empty: `auto`).
pub fn update_path_from_env() -> Result<UpdatePath> {
    match std::env::var("BLOOMERY_UPDATE") {
        Err(std::env::VarError::NotPresent) => Ok(UpdatePath::Auto),
        Ok(v) => match v.as_str() {
            "" | "auto" => Ok(UpdatePath::Auto),
            "sweep" => Ok(UpdatePath::Sweep),
            "one-pass" => Ok(UpdatePath::OnePass),
            other => {
                anyhow::bail!("BLOOMERY_UPDATE is `{other}`: it must be one-pass, sweep or auto")
            }
        },
        Err(e) => anyhow::bail!("BLOOMERY_UPDATE: {e}"),
    }
}

/// Seal an update and replace the file (atomic).
pub fn commit(up: Update) -> Result<()> {
    let path = up.sealer.path().to_path_buf();
    up.commit(&mut bars())
        .with_context(|| format!("cannot write `{}`", path.display()))
}

/// [`commit`] of a set kind, returning its info (counted in the seal's checksum pass).
pub fn commit_with_info(up: Update) -> Result<FilterInfo> {
    let path = up.sealer.path().to_path_buf();
    if let Structure::Counter(c) = &up.structure {
        return Err(not_a_set(c.kind(), &path));
    }
    up.commit_with_info(&mut bars())
        .with_context(|| format!("cannot write `{}`", path.display()))
}

/// Insert a last batch of keys into a set kind and seal the update, returning its info.
pub fn commit_with_keys(up: Update, hashes: &mut [Hashed]) -> Result<FilterInfo> {
    let path = up.sealer.path().to_path_buf();
    if let Structure::Counter(c) = &up.structure {
        return Err(not_a_set(c.kind(), &path));
    }
    up.commit_with_keys(hashes, &mut bars())
        .with_context(|| format!("cannot update `{}`", path.display()))
}
