//! The experiments, one module each, and the registry `bloomery lab` runs.

use crate::Experiment;

pub mod blocked_model;
pub mod counting_overflow;
pub mod dictionaries;
pub mod differential_files;
pub mod fpr_vs_bits;
pub mod geographic_routing;
pub mod heavy_flows;
pub mod ibf_vs_cbf;
pub mod icarus_loops;
pub mod ip_traceback;
pub mod mlbf_urls;
pub mod multicast;
pub mod partitioned_vs_classic;
pub mod planetp;
pub mod resource_routing;
pub mod set_intersection;
pub mod set_reconciliation;
pub mod sketch_errors;
pub mod stochastic_fair_blue;
pub mod summary_cache;
pub mod window_baselines;
pub mod xml_cldr;

/// Every experiment, in the order `lab all` runs them.
pub static REGISTRY: &[Experiment] = &[
    Experiment {
        name: fpr_vs_bits::NAME,
        summary: "false-positive rate against bits per item for k = 4, 5, 7 and the optimal k: exact and asymptotic formula against the real classic filter",
        source: "Salman §2 (Fig. 2); Broder & Mitzenmacher §2.1",
        run: fpr_vs_bits::run,
    },
    Experiment {
        name: partitioned_vs_classic::NAME,
        summary: "the partitioned filter (k slices of m/k bits) against the classic one at equal m and k: formula and measurement",
        source: "Broder & Mitzenmacher §2.1",
        run: partitioned_vs_classic::run,
    },
    Experiment {
        name: blocked_model::NAME,
        summary: "requested against measured rate of the blocked, split-block and blocked counting filters for p = 1e-1..1e-6, with bits per item against the lower bound",
        source: "Broder & Mitzenmacher §2.1-2.2; Putze, Sanders & Singler (2007)",
        run: blocked_model::run,
    },
    Experiment {
        name: icarus_loops::NAME,
        summary: "loop detection with a small Bloom filter in the packet header: loops caught and false loop reports against header size, formula and simulation",
        source: "Broder & Mitzenmacher §7.1 (Icarus, Whitaker & Wetherall)",
        run: icarus_loops::run,
    },
    Experiment {
        name: multicast::NAME,
        summary: "multicast forwarding with a filter of group addresses per interface: extra forwards against filter size, and group leaves with counting filters",
        source: "Broder & Mitzenmacher §7.3 (Grönvall)",
        run: multicast::run,
    },
    Experiment {
        name: resource_routing::NAME,
        summary: "resource routing on a tree with unified (OR of children) and per-child filters: success, extra hops and backtracks against filter size",
        source: "Broder & Mitzenmacher §6.1 (Czerwinski et al.)",
        run: resource_routing::run,
    },
    Experiment {
        name: planetp::NAME,
        summary: "PlanetP keyword summaries: peers contacted per query (holders and false positives) against filter size, formula and measurement",
        source: "Broder & Mitzenmacher §5.1 (PlanetP)",
        run: planetp::run,
    },
    Experiment {
        name: counting_overflow::NAME,
        summary: "largest counter of a counting filter over many trials at nk/m = ln 2, against the bound P(max >= 16) <= 1.37e-15 m",
        source: "Broder & Mitzenmacher §2.5",
        run: counting_overflow::run,
    },
    Experiment {
        name: ibf_vs_cbf::NAME,
        summary: "Iterative against counting (Table 5 counters) and plain filters at equal memory: rate vs distinctness and vs inputs for three skews, IBF count estimate",
        source: "Matsumoto, Hazeyama & Kadobayashi §4 (Fig. 5, 6, Tables 4, 5)",
        run: ibf_vs_cbf::run,
    },
    Experiment {
        name: sketch_errors::NAME,
        summary: "spectral MS/MI/RM and count-min with and without conservative update: estimate errors on a Zipf stream and on real packet flows",
        source: "Broder & Mitzenmacher §9 (Cohen & Matias; Cormode & Muthukrishnan), §8.1",
        run: sketch_errors::run,
    },
    Experiment {
        name: heavy_flows::NAME,
        summary: "heavy flows by bytes with a multistage filter, plain and conservative update, on a real capture: false heavy flows against stage width",
        source: "Broder & Mitzenmacher §8.1 (Estan & Varghese)",
        run: heavy_flows::run,
    },
    Experiment {
        name: geographic_routing::NAME,
        summary: "geographic routing over a quad-tree of regions with per-level host filters: path stretch and misroutes against filter size",
        source: "Broder & Mitzenmacher §6.3 (Hsiao)",
        run: geographic_routing::run,
    },
    Experiment {
        name: mlbf_urls::NAME,
        summary: "multi-layer against classic filter on real npm repository URLs (k=3, m=16,829,152, L=4): false positives, insert and query time, and at equal memory",
        source: "Cen, Xu & Sun §V (Fig. 5-7)",
        run: mlbf_urls::run,
    },
    Experiment {
        name: xml_cldr::NAME,
        summary: "Breadth and Depth Bloom filters per CLDR XML document: path-query false-positive rate by query type against filter size",
        source: "Salman §6-7 (Koloniari & Pitoura)",
        run: xml_cldr::run,
    },
    Experiment {
        name: ip_traceback::NAME,
        summary: "SPIE traceback with per-window Iterative Bloom Filter digests: false branches against digest size, and per-packet counts",
        source: "Broder & Mitzenmacher §8.2 (Snoeren et al.); Matsumoto, Hazeyama & Kadobayashi (IBF)",
        run: ip_traceback::run,
    },
    Experiment {
        name: stochastic_fair_blue::NAME,
        summary: "Stochastic Fair Blue with a counting filter of queued flows: unresponsive flows limited, responsive ones punished by false positives, with and without rehashing",
        source: "Broder & Mitzenmacher §7.2 (Feng et al.)",
        run: stochastic_fair_blue::run,
    },
    Experiment {
        name: dictionaries::NAME,
        summary: "spell checking and a password blocklist with edit distance 1 over wamerican-insane: false positives against bits per word, formula, and an exact set",
        source: "Broder & Mitzenmacher §3.1; Salman §8",
        run: dictionaries::run,
    },
    Experiment {
        name: summary_cache::NAME,
        summary: "Summary Cache: proxies with LRU caches tracked by counting filters send compressed digests and deltas; false and missed hits and bytes against exact URL lists, by update period",
        source: "Broder & Mitzenmacher §4 (Fan et al.), §2.6; Salman §8.1",
        run: summary_cache::run,
    },
    Experiment {
        name: set_reconciliation::NAME,
        summary: "approximate set reconciliation: fraction of S_A - S_B recovered against bytes of B's filter (plain, compressed, compressed shape) and of S_B whole",
        source: "Broder & Mitzenmacher §5.2 (Byers et al.), §2.6",
        run: set_reconciliation::run,
    },
    Experiment {
        name: set_intersection::NAME,
        summary: "keyword-search intersection and the Bloom semi-join: bytes and false positives removed at the second step against the exact protocols; join size from two filters",
        source: "Broder & Mitzenmacher §5.3 (Reynolds & Vahdat), §3.2, §2.4",
        run: set_intersection::run,
    },
    Experiment {
        name: differential_files::NAME,
        summary: "a filter of changed records in front of a differential file: reads saved against filter size; delta updates of a shared filter: bytes per changed key",
        source: "Broder & Mitzenmacher §3.2, §4; Salman §8.1",
        run: differential_files::run,
    },
    Experiment {
        name: window_baselines::NAME,
        summary: "count and time windows against two rotated filters and a scalable filter recreated per period: bits per window item, worst-point rate, misses inside the window, insert/query ns",
        source: "Shtul, Baquero & Almeida §3-4; Rodrigues, Shtul, Baquero & Almeida",
        run: window_baselines::run,
    },
];
