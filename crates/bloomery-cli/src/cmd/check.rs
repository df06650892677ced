//! `bloomery check`: grep semantics over a filter.

use std::io::{self, BufWriter, Write};

use anyhow::Result;
use bloomery::Filter;

use crate::cli::CheckArgs;
use crate::input::{self, KeySpec};

pub fn run(a: CheckArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let f = super::load(&a.file)?;
    let hasher = *f.hasher();
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut matched = 0u64;
    input::for_each_line(&a.inputs, &spec, |line, key| {
        // a line without the key field is certainly not in the set
        let hit = key.is_some_and(|k| f.contains_hashed(hasher.hash_bytes(k)));
        if hit != a.invert {
            matched += 1;
            if !a.count {
                out.write_all(line)?;
                out.write_all(b"\n")?;
            }
        }
        Ok(())
    })?;
    if a.count {
        writeln!(out, "{matched}")?;
    }
    out.flush()?;
    Ok(if matched > 0 { 0 } else { 1 })
}
