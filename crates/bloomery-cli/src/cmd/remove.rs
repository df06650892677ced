//! `bloomery remove`: one occurrence of each line out of a structure that deletes (the
//! [`Capability::Remove`] kinds), updated in place of a copy and renamed over the original at
//! the end (the library's `bloomery::file::Update`).

use anyhow::{bail, Result};
use bloomery::kinds::Capability;
use bloomery::RemoveError;

use bloomery::file::UpdateOptions;

use super::open::{self, Structure};

use crate::cli::CountArgs;
use crate::input::{self, KeySpec};
use crate::num::group;
use crate::output::{note, warn};

pub fn run(a: &CountArgs) -> Result<u8> {
    let spec = KeySpec::new(&a.keys)?;
    let file = open::map(&a.file, false)?;
    open::require(&file, Capability::Remove, "remove from")?;
    let opts = UpdateOptions::default().verify(open::verify_mode(a.verify.verify()));
    let mut up = open::update_mapped(file, opts)?;
    let Structure::Counter(c) = &mut up.structure else {
        bail!("cannot remove from `{}`", a.file.display());
    };
    if let Some(e) = c.remove_unsupported() {
        bail!("cannot remove from `{}`: {e}", a.file.display());
    }
    let hasher = *c.hasher();
    let (mut removed, mut absent) = (0u64, 0u64);
    let mut results = Vec::new();
    let counts = input::for_each_batch(&a.inputs, &spec, &hasher, |batch| {
        c.remove_hashed_batch(&batch.hashes, &mut results);
        for ((number, line), r) in batch.keyed_lines().zip(&results) {
            match r {
                Ok(()) => removed += 1,
                Err(RemoveError::NotPresent) => {
                    absent += 1;
                    warn(&format!(
                        "line {number}: not present, not removed: {}",
                        String::from_utf8_lossy(line)
                    ));
                }
                Err(e) => bail!("line {number}: {e}"),
            }
        }
        Ok(())
    })?;
    open::commit(up)?;
    note(&format!(
        "{} read, {} removed, {} not present",
        crate::num::count(counts.lines, "line", "lines"),
        group(removed),
        group(absent)
    ));
    Ok(if absent > 0 { 1 } else { 0 })
}
