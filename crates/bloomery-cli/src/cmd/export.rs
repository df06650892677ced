//! `bloomery export` and `bloomery import`: filters in other systems' formats. The formats are
//! value enums so another source or target is one more variant and one more arm.

use std::io::{self, IsTerminal, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use bloomery::{AnyFilter, Filter, KeyHasher, SplitBlockBloomFilter};

use crate::cli::{ExportArgs, ExportFormat, ImportArgs, ImportFormat};
use crate::num::{bytes, group, rate};
use crate::output::note;

pub fn export(a: ExportArgs) -> Result<u8> {
    let f = super::open::open_set(&a.file, true)?;
    let data = match a.format {
        ExportFormat::Sbbf => sbbf_bytes(&f, &a.file, a.header)?,
    };
    match a.out.as_deref() {
        None => write_stdout(&data)?,
        Some(p) if p == Path::new("-") => write_stdout(&data)?,
        Some(out) => {
            super::check_out(out, &[a.file.as_path()], a.force)?;
            bloomery::compress::save_bytes(out, &data)
                .with_context(|| format!("cannot write `{}`", out.display()))?;
            note(&format!(
                "wrote {}: {} ({} bytes)",
                out.display(),
                if a.header {
                    "Parquet filter header and bitset"
                } else {
                    "Parquet split-block bitset"
                },
                group(data.len() as u64)
            ));
        }
    }
    Ok(0)
}

fn write_stdout(data: &[u8]) -> Result<()> {
    let mut out = io::stdout().lock();
    if out.is_terminal() {
        bail!("refusing to write binary data to a terminal: give OUT or redirect stdout");
    }
    out.write_all(data)?;
    out.flush()?;
    Ok(())
}

/// The bitset of a split-block file hashing as Parquet does (with its Thrift header if asked).
fn sbbf_bytes(f: &AnyFilter, path: &Path, header: bool) -> Result<Vec<u8>> {
    let AnyFilter::SplitBlock(s) = f else {
        bail!(
            "`{}` is a {} filter: only split-block filters (--kind split-block) have the Parquet \
             bitset form",
            path.display(),
            f.kind().name()
        );
    };
    if s.hasher() != &KeyHasher::parquet() {
        bail!(
            "`{}` hashes with {} (seeded or keyed): Parquet readers hash with xxHash64, seed 0, \
             so its bitset would answer wrongly there",
            path.display(),
            s.hasher().algorithm().name()
        );
    }
    let bits = s.to_parquet_bitset();
    if !header {
        return Ok(bits);
    }
    let len = u32::try_from(bits.len()).context("bitset longer than a Parquet header allows")?;
    let mut out = bloomery::parquet::write_filter_header(len);
    out.extend_from_slice(&bits);
    Ok(out)
}

pub fn import(a: ImportArgs) -> Result<u8> {
    match a.format {
        ImportFormat::Sbbf => import_sbbf(&a),
        ImportFormat::Redisbloom => super::import_redisbloom::run(&a),
    }
}

fn import_sbbf(a: &ImportArgs) -> Result<u8> {
    let [input] = a.inputs.as_slice() else {
        bail!(
            "--format sbbf reads one bitset, got {} inputs",
            a.inputs.len()
        );
    };
    super::check_out(&a.out, &[input.as_path()], a.force)?;
    if let Some(p) = a.fpr {
        bloomery::params::check_fpr(p)?;
    }
    let data = bloomery::file::read_file(input)
        .with_context(|| format!("cannot read `{}`", input.display()))?;
    // a bitset is a multiple of 32 bytes; anything else must be a header and its bitset
    let bitset: &[u8] = if data.len() % 32 == 0 && !data.is_empty() {
        &data
    } else {
        let h = bloomery::parquet::read_filter_header(&data).map_err(|e| {
            anyhow::anyhow!(
                "`{}` ({} bytes) is neither a split-block bitset (a positive multiple of 32 \
                 bytes) nor a filter header and its bitset: {e}",
                input.display(),
                group(data.len() as u64)
            )
        })?;
        if h.header_len + h.num_bytes as usize != data.len() {
            bail!(
                "`{}`: the filter header declares a {}-byte bitset, {} bytes follow it",
                input.display(),
                group(u64::from(h.num_bytes)),
                group((data.len() - h.header_len) as u64)
            );
        }
        &data[h.header_len..]
    };
    let mut f = SplitBlockBloomFilter::from_parquet_bitset(bitset)
        .with_context(|| format!("cannot import `{}`", input.display()))?;
    f.set_imported_sizing(a.capacity.unwrap_or(0), a.fpr.unwrap_or(0.0))?;
    let f = AnyFilter::SplitBlock(f);
    super::save(&f, &a.out)?;
    let i = f.info();
    note(&format!(
        "imported {} into {}: split-block filter, {} ({} blocks), fill {:.4}, about {} \
         distinct keys (estimated from the fill), fpr now {}",
        input.display(),
        a.out.display(),
        bytes(i.bytes),
        group(i.bits / 256),
        i.fill_ratio,
        group(i.items),
        rate(i.current_fpr)
    ));
    Ok(0)
}
