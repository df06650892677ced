//! `bloomery compress`, `decompress`, `diff` and `patch`: compressed filter files and delta
//! updates (compressed Bloom filters, Broder & Mitzenmacher §2.6, Mitzenmacher; delta updates of a
//! shared filter, Salman §8.1). All the work is `bloomery::compress`; this is file glue.
//!
//! Every other command reads a compressed file wherever a plain one is expected (the library's
//! loaders decompress transparently). `add` writes a compressed file back compressed, so a file
//! keeps the form its owner chose; `union`, `intersect`, `fold` and `dedup --state` write plain
//! files (compress them afterwards if they are to be sent).

use std::path::Path;

use anyhow::{Context, Result};
use bloomery::compress::{self as c, PackedSizes};

use crate::cli::{DiffArgs, PackArgs, PatchArgs};
use crate::num::bytes;
use crate::output::note;

/// The file, mapped (not copied into memory): the functions below read it in place.
fn read(path: &Path) -> Result<bloomery::file::MappedFile> {
    bloomery::file::MappedFile::open(path)
        .with_context(|| format!("cannot read `{}`", path.display()))
}

fn write(path: &Path, data: &[u8]) -> Result<()> {
    c::save_bytes(path, data).with_context(|| format!("cannot write `{}`", path.display()))
}

fn sizes_note(out: &Path, s: &PackedSizes) {
    note(&format!(
        "wrote {}: {} compressed, {} plain ({:.1}% of it); payload {:.4}x the entropy bound m·H(p)",
        out.display(),
        bytes(s.compressed_bytes),
        bytes(s.plain_bytes),
        100.0 * s.compressed_bytes as f64 / s.plain_bytes as f64,
        s.ratio_to_entropy()
    ));
}

pub fn compress(a: PackArgs) -> Result<u8> {
    super::check_out(&a.out, &[&a.input], a.force)?;
    let data = read(&a.input)?;
    // written as it is coded: memory holds a piece of the stream, never the whole
    let s = c::compress_file_to(data.bytes(), &a.out)
        .with_context(|| format!("cannot compress `{}`", a.input.display()))?;
    sizes_note(&a.out, &s);
    Ok(0)
}

pub fn decompress(a: PackArgs) -> Result<u8> {
    super::check_out(&a.out, &[&a.input], a.force)?;
    let data = read(&a.input)?;
    let plain = c::decompress_file(data.bytes(), bloomery::tuning::max_bytes())
        .with_context(|| format!("cannot decompress `{}`", a.input.display()))?;
    write(&a.out, &plain)?;
    note(&format!(
        "wrote {}: {} ({} compressed)",
        a.out.display(),
        bytes(plain.len() as u64),
        bytes(data.len())
    ));
    Ok(0)
}

pub fn diff(a: DiffArgs) -> Result<u8> {
    super::check_out(&a.out, &[&a.old, &a.new], a.force)?;
    let old = read(&a.old)?;
    let new = read(&a.new)?;
    let len = c::diff_files_to(old.bytes(), new.bytes(), &a.out).with_context(|| {
        format!(
            "cannot diff `{}` against `{}`",
            a.new.display(),
            a.old.display()
        )
    })?;
    note(&format!(
        "wrote {}: a delta of {} (the new version is {} plain)",
        a.out.display(),
        bytes(len),
        bytes(
            // measured without decompressing a compressed input again
            c::packed_sizes(new.bytes(), false)
                .map(|p| p.plain_bytes)
                .unwrap_or(new.len())
        )
    ));
    Ok(0)
}

pub fn patch(a: PatchArgs) -> Result<u8> {
    super::check_out(&a.out, &[&a.old, &a.diff], a.force)?;
    let old = read(&a.old)?;
    let delta = read(&a.diff)?;
    let context = || {
        format!(
            "cannot apply `{}` to `{}`",
            a.diff.display(),
            a.old.display()
        )
    };
    // the result is written as it is made; with --compress, to a temporary plain file beside
    // OUT first, then coded from it (mapped) into OUT
    let len = if a.compress {
        c::patch_file_compressed_to(old.bytes(), delta.bytes(), &a.out)
            .with_context(context)?
            .compressed_bytes
    } else {
        c::patch_file_to(old.bytes(), delta.bytes(), &a.out).with_context(context)?
    };
    note(&format!("wrote {}: {}", a.out.display(), bytes(len)));
    Ok(0)
}
