//! The experiments, one module each, and the registry `bloomery lab` runs.

use crate::Experiment;

pub mod blocked_model;
pub mod fpr_vs_bits;
pub mod icarus_loops;
pub mod multicast;
pub mod partitioned_vs_classic;
pub mod planetp;
pub mod resource_routing;

/// Every experiment, in the order `lab all` runs them.
pub static REGISTRY: &[Experiment] = &[
    Experiment {
        name: fpr_vs_bits::NAME,
        summary: "false-positive rate against bits per item for k = 4, 5, 7 and the optimal k: exact and asymptotic formula against the real classic filter",
        source: "000 §2 (Fig. 2); 002 §2.1",
        run: fpr_vs_bits::run,
    },
    Experiment {
        name: partitioned_vs_classic::NAME,
        summary: "the partitioned filter (k slices of m/k bits) against the classic one at equal m and k: formula and measurement",
        source: "002 §2.1",
        run: partitioned_vs_classic::run,
    },
    Experiment {
        name: blocked_model::NAME,
        summary: "requested against measured rate of the blocked and split-block filters for p = 1e-1..1e-6, with bits per item against the lower bound",
        source: "002 §2.1-2.2; Putze, Sanders & Singler (2007)",
        run: blocked_model::run,
    },
    Experiment {
        name: icarus_loops::NAME,
        summary: "loop detection with a small Bloom filter in the packet header: loops caught and false loop reports against header size, formula and simulation",
        source: "002 §7.1 (Icarus, Whitaker & Wetherall)",
        run: icarus_loops::run,
    },
    Experiment {
        name: multicast::NAME,
        summary: "multicast forwarding with a filter of group addresses per interface: extra forwards against filter size, and group leaves with counting filters",
        source: "002 §7.3 (Grönvall)",
        run: multicast::run,
    },
    Experiment {
        name: resource_routing::NAME,
        summary: "resource routing on a tree with unified (OR of children) and per-child filters: success, extra hops and backtracks against filter size",
        source: "002 §6.1 (Czerwinski et al.)",
        run: resource_routing::run,
    },
    Experiment {
        name: planetp::NAME,
        summary: "PlanetP keyword summaries: peers contacted per query (holders and false positives) against filter size, formula and measurement",
        source: "002 §5.1 (PlanetP)",
        run: planetp::run,
    },
];
