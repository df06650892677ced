//! Structures over structured keys or with structured answers.
//!
//! URLs split into layers ([`mlbf`]); paths in trees such as XML documents ([`tree_path`],
//! [`breadth`], [`depth`], and [`xml`] to turn documents into paths); routing by hop distance
//! ([`attenuated`]); static key → value maps ([`bloomier`], built by hypergraph peeling (`crate::peel`),
//! which the xor filter shares); and approximate queries ([`edit`]: the edit-distance-1
//! variants of a key).

pub(crate) mod attenuated;
pub(crate) mod bloomier;
pub(crate) mod breadth;
pub(crate) mod depth;
pub(crate) mod edit;
pub(crate) mod mlbf;
pub(crate) mod tree_path;
#[cfg(feature = "xml")]
pub mod xml;
