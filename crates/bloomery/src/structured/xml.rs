//! XML documents as root-to-node element paths, the input of the tree-path filters
//! ([`crate::BreadthBloomFilter`], [`crate::DepthBloomFilter`]; Salman §6, Koloniari &
//! Pitoura, who summarise XML documents by their element trees).
//!
//! Enabled by the `xml` feature (the library's only XML dependency, the well-kept `roxmltree`
//! parser, stays out of builds that do not need it; the CLI and the lab turn it on). The
//! structures themselves take plain paths ([`crate::keys::PathQuery`] for queries), so they need no parser.
//!
//! What a document becomes:
//! - only **elements** count; attributes, text, comments and processing instructions are
//!   ignored, as in the paper's trees;
//! - an element's name is its name as written: `prefix:local` for a prefixed element (the
//!   prefix bound in the document), else the local name;
//! - the result is the set of **distinct root-to-leaf paths** (a leaf is an element without
//!   element children); every prefix of such a path is a node too, which is all the filters
//!   need (siblings with equal names collapse, which changes no path query);
//! - the document must be **well-formed UTF-8** (a BOM is allowed); a DOCTYPE is accepted and
//!   its internal entities expanded, external ones are not fetched (a reference to one is an
//!   error). Any error names the line and column.

use std::collections::HashSet;

use crate::error::{invalid, Result};
use crate::structured::tree_path::MAX_DEPTH;

/// The element paths of one document.
///
/// ```
/// # fn main() -> bloomery::Result<()> {
/// let doc = bloomery::keys::xml::parse_str("<library><book><title/></book><dvd/></library>")?;
/// assert_eq!(doc.paths, [vec!["library", "book", "title"], vec!["library", "dvd"]]);
/// assert_eq!((doc.elements, doc.depth), (4, 3));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DocumentPaths {
    /// Distinct root-to-leaf element paths, in document order of their first leaf.
    pub paths: Vec<Vec<String>>,
    /// Elements in the document (all of them, repeated siblings included).
    pub elements: u64,
    /// Depth of the deepest element (the root is 1).
    pub depth: usize,
}

/// Parse an XML document (bytes, UTF-8) into its element paths (see the [module docs](self)).
pub fn document_paths(bytes: &[u8]) -> Result<DocumentPaths> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|e| {
        invalid(
            "xml",
            format!(
                "not UTF-8 at byte {} (only UTF-8 documents are supported)",
                e.valid_up_to()
            ),
        )
    })?;
    parse_str(text)
}

/// [`document_paths`] of a string.
pub fn parse_str(text: &str) -> Result<DocumentPaths> {
    let opt = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opt)
        .map_err(|e| invalid("xml", e.to_string()))?;
    let mut out = DocumentPaths::default();
    let mut seen: HashSet<Vec<String>> = HashSet::new();
    // names of the current element's ancestors, maintained along a document-order walk
    let mut stack: Vec<(roxmltree::NodeId, String)> = Vec::new();
    for node in doc.root_element().descendants().filter(|n| n.is_element()) {
        let parent = node.parent_element().map(|p| p.id());
        while stack.last().is_some_and(|(id, _)| Some(*id) != parent) {
            stack.pop();
        }
        stack.push((node.id(), name_of(&node)));
        if stack.len() > MAX_DEPTH {
            return Err(invalid(
                "xml",
                format!("elements nested deeper than {MAX_DEPTH}"),
            ));
        }
        out.elements += 1;
        out.depth = out.depth.max(stack.len());
        if !node.children().any(|c| c.is_element()) {
            let path: Vec<String> = stack.iter().map(|(_, n)| n.clone()).collect();
            if seen.insert(path.clone()) {
                out.paths.push(path);
            }
        }
    }
    Ok(out)
}

fn name_of(node: &roxmltree::Node<'_, '_>) -> String {
    let t = node.tag_name();
    match t.namespace().and_then(|ns| node.lookup_prefix(ns)) {
        Some(p) if !p.is_empty() => format!("{p}:{}", t.name()),
        _ => t.name().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structured::breadth::BreadthBloomFilter;
    use crate::structured::depth::DepthBloomFilter;

    fn paths(x: &str) -> Vec<Vec<String>> {
        parse_str(x).unwrap().paths
    }
    fn v(p: &[&[&str]]) -> Vec<Vec<String>> {
        p.iter()
            .map(|q| q.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn elements_become_distinct_root_to_leaf_paths() {
        let d = parse_str(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE A SYSTEM \"a.dtd\">\n<!-- c -->\
             <A x=\"1\"><B><D>text</D></B><C><E/></C><B><D/><D/></B><?pi x?></A>",
        )
        .unwrap();
        assert_eq!(d.paths, v(&[&["A", "B", "D"], &["A", "C", "E"]]));
        assert_eq!((d.elements, d.depth), (8, 3));
        assert_eq!(paths("<r/>"), v(&[&["r"]]));
        // prefixes as written; default namespaces give the local name
        assert_eq!(
            paths("<a:r xmlns:a=\"u\" xmlns=\"v\"><x><a:y/></x></a:r>"),
            v(&[&["a:r", "x", "a:y"]])
        );
        // BOM, internal entities
        let d = document_paths(b"\xEF\xBB\xBF<!DOCTYPE r [<!ENTITY e \"<q/>\">]><r><p>&e;</p></r>")
            .unwrap();
        assert_eq!(d.paths, v(&[&["r", "p", "q"]]));
    }

    #[test]
    fn malformed_documents_are_errors_with_a_position() {
        for bad in [
            "",
            "<a>",
            "<a></b>",
            "<a/><b/>",
            "text",
            "<a><b></a></b>",
            "<a>&unknown;</a>",
            "<a x=1/>",
        ] {
            let e = parse_str(bad).unwrap_err().to_string();
            assert!(e.contains("xml"), "{bad:?}: {e}");
        }
        let e = parse_str("<a>\n<b></c></a>").unwrap_err().to_string();
        assert!(e.contains("2:"), "{e}");
        assert!(document_paths(b"<a>\xFF</a>").is_err());
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        assert!(parse_str(&deep).is_err());
    }

    #[test]
    fn paper_tree_through_the_parser() {
        // Salman §7: the BBF accepts /A/C/D, the DBF rejects it.
        let p = paths("<A><B><D/></B><C><E/></C></A>");
        let b = BreadthBloomFilter::try_from_paths(&p, 1e-6).unwrap();
        let d = DepthBloomFilter::try_from_paths(&p, 1e-6).unwrap();
        assert!(b.matches("/A/C/D").unwrap() && !d.matches("/A/C/D").unwrap());
        for q in ["/A/B/D", "C/E", "A//E", "//D"] {
            assert!(b.matches(q).unwrap() && d.matches(q).unwrap(), "{q}");
        }
    }
}
