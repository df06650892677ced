//! `bloomery import --from redisbloom CHUNKS... OUT`: a RedisBloom BF or CF value, saved as
//! SCANDUMP chunk files by `scripts/migrate-redisbloom.py save`, becomes a bloomery file of
//! kind `redisbloom-bf` or `redisbloom-cf` — RedisBloom's hashing and layout kept, so every
//! command answers for it exactly as RedisBloom did.
//!
//! The chunk records of all CHUNKS files are taken in order (a key's chunks may be split over
//! several files, which must name the same key and type); they must be the key's complete
//! SCANDUMP sequence, header first, each byte once.

use std::path::Path;

use anyhow::{bail, Context, Result};
use bloomery::redisbloom::{RedisBloomChunkFile, RedisBloomValue};
use bloomery::AnyFilter;

use crate::cli::ImportArgs;
use crate::num::{bytes, group};
use crate::output::note;

pub fn run(a: &ImportArgs) -> Result<u8> {
    if a.capacity.is_some() || a.fpr.is_some() {
        bail!("-n/-p do not apply to --from redisbloom: the chunks carry the filter's sizing");
    }
    let (out, inputs) = (&a.out, &a.inputs);
    let ins: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
    super::check_out(out, &ins, a.force)?;
    let mut files = Vec::with_capacity(inputs.len());
    for p in inputs {
        let bytes = bloomery::file::read_file(p)
            .with_context(|| format!("cannot read `{}`", p.display()))?;
        let f = RedisBloomChunkFile::from_bytes(&bytes)
            .with_context(|| format!("cannot read `{}`", p.display()))?;
        files.push(f);
    }
    let first = &files[0];
    for (f, p) in files.iter().zip(inputs).skip(1) {
        if f.key != first.key || f.value_type != first.value_type {
            bail!(
                "`{}` holds chunks of another key than `{}`",
                p.display(),
                inputs[0].display()
            );
        }
    }
    let chunks = files
        .iter()
        .flat_map(|f| f.chunks.iter().map(|(it, c)| (*it, &c[..])));
    let value =
        RedisBloomValue::from_chunks(first.value_type, chunks, bloomery::tuning::max_bytes())
            .with_context(|| {
                format!(
                    "cannot rebuild RedisBloom key {:?} from {}",
                    String::from_utf8_lossy(&first.key),
                    inputs
                        .iter()
                        .map(|p| format!("`{}`", p.display()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
    let (filter, shape) = match value {
        RedisBloomValue::Bloom(f) => {
            let shape = format!(
                "{} link{}",
                f.links().len(),
                if f.links().len() == 1 { "" } else { "s" }
            );
            (AnyFilter::RedisBloomChain(f), shape)
        }
        RedisBloomValue::Cuckoo(f) => {
            let shape = format!(
                "{} sub-filter{} of bucket size {}",
                f.filters(),
                if f.filters() == 1 { "" } else { "s" },
                f.bucket_size()
            );
            (AnyFilter::RedisBloomCuckoo(f), shape)
        }
    };
    super::save(&filter, out)?;
    let i = filter.info();
    note(&format!(
        "wrote {}: {} ({}) from RedisBloom key {:?}, {} items, {}",
        out.display(),
        i.kind,
        shape,
        String::from_utf8_lossy(&first.key),
        group(i.items),
        bytes(i.bytes)
    ));
    Ok(0)
}
