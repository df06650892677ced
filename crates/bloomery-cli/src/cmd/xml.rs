//! `bloomery xml index|query`: Breadth and Depth Bloom filters over XML documents (Salman
//! §6, Koloniari & Pitoura). Parsing is the library's `xml` module (roxmltree); the filters
//! are saved in the common file format (kinds `bbf` and `dbf`).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use bloomery::keys::PathQuery;
use bloomery::{BreadthBloomFilter, DepthBloomFilter, KeyHasher, Kind, Persist};

use crate::cli::{XmlCommand, XmlIndexArgs, XmlKindArg, XmlQueryArgs};
use crate::num::{bytes, group, rate};
use crate::output::note;

pub fn run(c: XmlCommand) -> Result<u8> {
    match c {
        XmlCommand::Index(a) => index(a),
        XmlCommand::Query(a) => query(a),
    }
}

/// The XML files named by `docs`: files as given, directories searched recursively for
/// `*.xml` (sorted, so the filter does not depend on directory order).
fn documents(docs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for d in docs {
        if d.is_dir() {
            let before = out.len();
            walk(d, &mut out)?;
            out[before..].sort();
            if out.len() == before {
                bail!("no *.xml file under `{}`", d.display());
            }
        } else {
            out.push(d.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read `{}`", dir.display()))?;
    for e in entries {
        let p = e
            .with_context(|| format!("cannot read `{}`", dir.display()))?
            .path();
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("xml")) {
            out.push(p);
        }
    }
    Ok(())
}

fn index(a: XmlIndexArgs) -> Result<u8> {
    if a.out.exists() && !a.force {
        bail!(
            "`{}` already exists (use --force to overwrite it)",
            a.out.display()
        );
    }
    bloomery::params::check_fpr(a.fpr).context("invalid -p/--fpr")?;
    if a.max_path_length.is_some() && a.kind == XmlKindArg::Bbf {
        bail!("--max-path-length applies to --kind dbf only");
    }
    let docs = documents(&a.docs)?;
    let mut paths: Vec<Vec<String>> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let (mut elements, mut depth) = (0u64, 0usize);
    let mut invalid = 0u64;
    for d in &docs {
        let bytes = std::fs::read(d).with_context(|| format!("cannot read `{}`", d.display()))?;
        let dp = match bloomery::keys::xml::document_paths(&bytes) {
            Ok(dp) => dp,
            Err(e) if a.skip_invalid => {
                invalid += 1;
                crate::output::warn(&format!(
                    "skipped `{}`: not well-formed XML: {e}",
                    d.display()
                ));
                continue;
            }
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!(
                    "`{}` is not well-formed XML (--skip-invalid skips such documents)",
                    d.display()
                )))
            }
        };
        elements += dp.elements;
        depth = depth.max(dp.depth);
        for p in dp.paths {
            if seen.insert(p.clone()) {
                paths.push(p);
            }
        }
    }
    if invalid == docs.len() as u64 {
        bail!(
            "no well-formed XML among the {} given: nothing to index",
            crate::num::count(invalid, "document", "documents")
        );
    }
    let hasher = a.seed.map_or_else(KeyHasher::new, KeyHasher::with_seed);
    let max = bloomery::tuning::max_bytes();
    let (bits, filters, kind) = match a.kind {
        XmlKindArg::Bbf => {
            let f = BreadthBloomFilter::builder()
                .fpr(a.fpr)
                .hasher(hasher)
                .max_bytes(max)
                .try_build(&paths)?;
            f.save(&a.out)
                .with_context(|| format!("cannot write `{}`", a.out.display()))?;
            (f.bit_len(), f.filters().len(), "bbf")
        }
        XmlKindArg::Dbf => {
            let mut b = DepthBloomFilter::builder()
                .fpr(a.fpr)
                .hasher(hasher)
                .max_bytes(max);
            if let Some(l) = a.max_path_length {
                b = b.max_path_length(l);
            }
            let f = b.try_build(&paths)?;
            f.save(&a.out)
                .with_context(|| format!("cannot write `{}`", a.out.display()))?;
            (f.bit_len(), f.filters().len(), "dbf")
        }
    };
    let skipped = if invalid > 0 {
        format!(
            " ({} skipped as not well-formed XML)",
            crate::num::count(invalid, "document", "documents")
        )
    } else {
        String::new()
    };
    note(&format!(
        "indexed {}{skipped}: {} elements, {}, depth {}; \
         wrote {}: {kind}, {} sub-filters, {} bits ({}), rate {} per sub-filter",
        crate::num::count(docs.len() as u64 - invalid, "document", "documents"),
        group(elements),
        crate::num::count(
            paths.len() as u64,
            "distinct root-to-leaf path",
            "distinct root-to-leaf paths"
        ),
        depth,
        a.out.display(),
        filters,
        group(bits),
        bytes(bits / 8),
        rate(a.fpr)
    ));
    Ok(0)
}

/// A loaded path filter.
enum PathFilter {
    Breadth(BreadthBloomFilter),
    Depth(DepthBloomFilter),
}

impl PathFilter {
    /// Map the file (its checksum verified in one streaming pass unless `verify` is false).
    fn load(p: &Path, verify: bool) -> Result<Self> {
        let ctx = || format!("cannot load `{}`", p.display());
        let file = super::open::map(p, verify)?;
        Ok(match file.header().kind {
            Kind::Breadth => PathFilter::Breadth(file.decode().with_context(ctx)?),
            Kind::Depth => PathFilter::Depth(file.decode().with_context(ctx)?),
            k => bail!(
                "`{}` is a {} file; `xml query` needs a bbf or dbf file (from `xml index`)",
                p.display(),
                k.name()
            ),
        })
    }

    fn matches(&self, q: &PathQuery) -> bool {
        match self {
            PathFilter::Breadth(f) => f.matches_query(q),
            PathFilter::Depth(f) => f.matches_query(q),
        }
    }
}

fn query(a: XmlQueryArgs) -> Result<u8> {
    let f = PathFilter::load(&a.file, a.verify.verify())?;
    // parse every query first: a malformed one is an error before anything is printed
    let queries = a
        .paths
        .iter()
        .map(|p| PathQuery::parse(p).with_context(|| format!("bad path query {p:?}")))
        .collect::<Result<Vec<_>>>()?;
    let mut out = BufWriter::new(crate::output::stdout());
    let mut printed = 0u64;
    for (text, q) in a.paths.iter().zip(&queries) {
        if f.matches(q) != a.invert {
            printed += 1;
            if !a.count {
                writeln!(out, "{text}")?;
            }
        }
    }
    if a.count {
        writeln!(out, "{printed}")?;
    }
    out.flush()?;
    Ok(if printed > 0 { 0 } else { 1 })
}
