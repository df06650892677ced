//! The experiments, one module each, and the registry `bloomery lab` runs.

use crate::Experiment;

pub mod blocked_model;
pub mod fpr_vs_bits;
pub mod partitioned_vs_classic;

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
];
