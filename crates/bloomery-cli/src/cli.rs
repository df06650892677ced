//! Command-line definitions (clap derive). Behaviour lives in `cmd/*`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::num::{parse_bytes, parse_count};

/// Bloom filters for people with lists: create, fill, query, merge and size filters, and
/// deduplicate streams in bounded memory.
#[derive(Debug, Parser)]
#[command(name = "bloomery", version, about, max_term_width = 100)]
#[command(
    after_help = "Exit status: 0 success (check: a line was printed), 1 check printed \
nothing, 2 error.\n\nExample:\n  bloomery create seen.bloom -n 10M -p 0.001\n  \
zcat urls.gz | bloomery add seen.bloom\n  bloomery check seen.bloom candidates.txt"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Largest filter the process may allocate (e.g. 512M, 8G); default: the machine's RAM.
    /// `create` holds nothing in memory: it is bounded by this flag when given and by the disk.
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_bytes)]
    pub max_memory: Option<u64>,
    /// No summaries or warnings on stderr (errors are still reported).
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create an empty filter file sized for N items at false-positive rate P.
    #[command(
        after_help = "Examples:\n  bloomery create seen.bloom -n 10M -p 0.001\n  \
bloomery create paper.bloom --kind classic --bits 48M --hashes 3 -n 1M\n  \
bloomery create grow.bloom --kind scalable -n 100k -p 0.01 --growth 2 --tightening 0.8\n\n\
Counting kinds (multisets: `add` increments, `count` estimates, `remove` where deletion exists):\n  \
bloomery create c.bloom --kind counting -n 1M -p 0.01 --counter-bits 8\n  \
bloomery create b.bloom --kind blocked-counting -n 1M -p 0.01\n  \
bloomery create d.bloom --kind dlcbf -n 1M -p 0.01\n  \
bloomery create s.bloom --kind spectral -n 1M -p 0.01 --method rm\n  \
bloomery create m.bloom --kind cms --width 2719 --depth 5   (or --epsilon 0.001 --delta 0.01)\n  \
bloomery create i.bloom --kind ibf -n 1M -p 0.01 --repeat-cap 100k\n  \
bloomery create x.bloom --kind scbf -n 1M -p 0.01 --groups 32\n\n\
URLs (multi-layer filter; add/check/dedup normalise each line as a URL):\n  \
bloomery create urls.bloom --kind mlbf --layers 4 -n 10M -p 1e-4\n  \
bloomery create paper.bloom --kind mlbf --layers 4 --bits 16829152 --hashes 3"
    )]
    Create(CreateArgs),
    /// Insert each line of the inputs (stdin when none or "-") into a filter file.
    #[command(
        after_help = "Examples:\n  bloomery add seen.bloom urls.txt more-urls.txt.gz\n  \
cut -f2 log.tsv | bloomery add seen.bloom\n  bloomery add seen.bloom -d , -f 3 data.csv\n  \
bloomery add seen.bloom --threads 2 big.txt.zst"
    )]
    Add(AddArgs),
    /// Print the lines that may be in the set (-v: the lines that are certainly not).
    #[command(
        after_help = "Exit status like grep: 0 if a line was printed (or the count is \
above 0), 1 if none, 2 on error.\n\nExamples:\n  bloomery check seen.bloom candidates.txt\n  \
bloomery check -v seen.bloom candidates.txt > new.txt\n  bloomery check -c seen.bloom candidates.txt\n  \
bloomery check --edit-distance 1 blocklist.bloom passwords.txt   (prints LINE<TAB>MATCH)"
    )]
    Check(CheckArgs),
    /// Print each line the first time it is seen, in order, in memory that grows with the
    /// distinct lines seen (or is fixed by N and P for a fixed kind).
    #[command(
        after_help = "Defaults: --kind scalable -n 1M -p 1e-4: a scalable filter that starts \
sized for 1M distinct lines (2.9 MiB) and adds a sub-filter twice as large each time the newest \
one is full, so memory follows the distinct lines seen (about 9 MiB for 1.7M, 53 MiB for 10M) \
and a distinct line is wrongly dropped with probability below 1e-4 however many lines go \
through. With a fixed kind (--kind blocked, classic, ...) the filter is sized for -n N at \
-p P up front, and past N distinct lines the rate climbs above P (a warning says so).\n\n\
Examples:\n  bloomery dedup urls.txt > unique.txt\n  \
bloomery dedup --kind blocked -n 100M -p 1e-6 huge.txt.zst > unique.txt\n  \
crawl | bloomery dedup --state seen.bloom | fetch"
    )]
    Dedup(DedupArgs),
    /// Show a filter's kind, shape, fill and false-positive rate.
    #[command(
        after_help = "Example:\n  bloomery info seen.bloom\n  bloomery info --json seen.bloom | jq .current_fpr"
    )]
    Info(InfoArgs),
    /// Write the union of filters of the same kind, shape and seed to OUT.
    #[command(after_help = "Example:\n  bloomery union all.bloom monday.bloom tuesday.bloom")]
    Union(MergeArgs),
    /// Write the intersection of filters of the same kind, shape and seed to OUT.
    #[command(after_help = "Example:\n  bloomery intersect both.bloom a.bloom b.bloom")]
    Intersect(MergeArgs),
    /// Halve a filter T times (classic and blocked filters with an even size).
    #[command(after_help = "Example:\n  bloomery fold big.bloom small.bloom --times 2")]
    Fold(FoldArgs),
    /// Estimate the items in a filter; with OTHER also |A∩B|, |A∪B| and Jaccard.
    #[command(after_help = "Example:\n  bloomery estimate a.bloom b.bloom --json")]
    Estimate(EstimateArgs),
    /// Size filters without creating one: m, k, FPR and the lower bound for every kind.
    #[command(after_help = "Examples:\n  bloomery calc -n 1M -p 0.01\n  \
bloomery calc -n 1M -m 48M -k 3 --json")]
    Calc(CalcArgs),
    /// Run the reproductions of the papers' figures (tables and plots into --out).
    #[command(
        after_help = "Examples:\n  bloomery lab --list\n  bloomery lab all --quick --out lab-out"
    )]
    Lab(LabArgs),
    /// Remove one occurrence of each line from a counting, blocked-counting, dlcbf or spectral
    /// (ms, rm) file.
    #[command(
        after_help = "An absent line (one of its counters is zero) is not removed: it is reported \
on stderr and the others go on. The file is saved atomically at the end.\n\nExit status: 0 all \
removed, 1 some lines were absent, 2 error (e.g. cms, ibf, scbf and spectral mi cannot delete).\n\n\
Example:\n  bloomery remove counts.bloom gone.txt"
    )]
    Remove(CountArgs),
    /// Print `estimate<TAB>line` for each line (set kinds: 1 if present, else 0).
    #[command(after_help = "Examples:\n  bloomery count counts.bloom keys.txt\n  \
cut -f1 log.tsv | bloomery count counts.bloom | sort -rn | head")]
    Count(CountArgs),
    /// Write a filter file of any kind in its compressed form (loads wherever a plain one does).
    #[command(
        after_help = "The compressed file keeps the common format (header, checksum); its payload is range-coded close to the entropy bound m·H(p). Every command reads it like a plain file; `add` writes it back compressed.\n\nExample:\n  bloomery compress seen.bloom seen.bloomz"
    )]
    Compress(PackArgs),
    /// Write the plain form of a compressed filter file (bit for bit the file that was compressed).
    #[command(after_help = "Example:\n  bloomery decompress seen.bloomz seen.bloom")]
    Decompress(PackArgs),
    /// Write the plain Bloom filter of a counting file: a bit set where a counter is non-zero.
    #[command(
        visible_alias = "summary",
        after_help = "The summary-cache protocol (Broder & Mitzenmacher §4): each node keeps a counting filter, \
which follows insertions and removals, and sends its peers the plain filter, which answers \
`check` exactly as the counting file does and is a quarter of its size (4-bit counters); \
`diff`/`patch` then carry the changes between versions. Only the classic-layout counting \
filter (`--kind counting`) has a plain counterpart; other kinds exit 2 with the reason.\n\n\
Example:\n  bloomery flatten proxy.counts proxy.bloom"
    )]
    Flatten(PackArgs),
    /// Write a delta from OLD to NEW (same kind, shape and seed): what a peer holding OLD needs.
    #[command(
        after_help = "The delta is the compressed XOR of the two bit arrays, tagged with the checksums of both versions, so `patch` refuses another base.\n\nExample:\n  bloomery diff monday.bloom tuesday.bloom tue.delta"
    )]
    Diff(DiffArgs),
    /// Apply a delta made by `diff` to OLD and write the new version to OUT.
    #[command(
        after_help = "Exit status 2 if OLD is not the delta's base, or the delta is damaged.\n\nExample:\n  bloomery patch monday.bloom tue.delta tuesday.bloom"
    )]
    Patch(PatchArgs),
    /// Print deterministic URL-like lines (for demos and benchmarks).
    #[command(hide = true)]
    GenUrls(GenArgs),
    /// Path filters over XML documents: Breadth (bbf) and Depth (dbf) Bloom filters.
    #[command(subcommand)]
    Xml(XmlCommand),
    /// Parquet files: check keys against their split-block Bloom filters, prune file lists,
    /// list filters, build filters where there are none.
    #[command(subcommand)]
    Parquet(ParquetCommand),
    /// One blocked filter sharded over a Redis/Valkey Cluster running the bloomery module:
    /// push a file, check and add keys, show its shards.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Write a filter in another system's format (sbbf: the raw Parquet split-block bitset).
    #[command(
        after_help = "--format sbbf writes the bitset of a split-block file (created with `--kind split-block`, Parquet's hashing): exactly the bytes a Parquet writer stores after the filter header (--header: with that header, as at the column chunk's bloom_filter_offset). OUT is written atomically; without OUT (or with -) the bytes go to stdout, never to a terminal.

Examples:
  bloomery export ids.bloom ids.sbbf --format sbbf
  bloomery export ids.bloom --format sbbf | xxd | head"
    )]
    Export(ExportArgs),
    /// Make a bloomery file from another system's filter (sbbf: a raw Parquet bitset;
    /// redisbloom: RedisBloom's SCANDUMP chunks).
    #[command(
        after_help = "--format sbbf reads a Parquet split-block bitset (a positive multiple of 32 bytes), or a filter header followed by its bitset (as stored in a Parquet file; recognised by its length), and writes a checksummed split-block file hashing as Parquet does. A bitset does not record how many keys went in: the file's item count is estimated from its fill (-n/-p record the sizing it was made for, if known).

--from redisbloom reads the SCANDUMP chunk files of one RedisBloom BF or CF key (as `scripts/migrate-redisbloom.py save` writes them). OUT keeps RedisBloom's hashing and layout (kind redisbloom-bf or redisbloom-cf), so `check` answers exactly as RedisBloom did and `add` grows it as RedisBloom would.

Examples:
  bloomery import --format sbbf ids.sbbf ids.bloom
  scripts/migrate-redisbloom.py save --from redis://old:6379 --dir chunks/
  bloomery import --from redisbloom chunks/00000000-seen.rbchunks seen.bloom
  bloomery check seen.bloom candidates.txt"
    )]
    Import(ImportArgs),
}

/// `bloomery parquet ...`
#[derive(Debug, Subcommand)]
pub enum ParquetCommand {
    /// Print which keys may be in which file and row group (FILE<TAB>ROW_GROUP<TAB>KEY).
    #[command(
        after_help = "PATHS are Parquet files, or directories read recursively (hidden and _-prefixed entries, *.crc and *.bloomery left out; files without Parquet magic skipped). Only footers and filter bytes are read, files in parallel. Keys are typed by the column's physical type (INT32/INT64 decimal, FLOAT/DOUBLE, BYTE_ARRAY bytes, FIXED_LEN_BYTE_ARRAY bytes or a UUID, DATE also YYYY-MM-DD; --hex: the plain encoding in hex), as the Parquet specification hashes them. A row group without a filter (in the file or a sidecar from `parquet index`) may hold any key: it is reported on stderr, never guessed; with -v no key is then certainly absent.

Exit status like grep: 0 if a line was printed (or a count is above 0), 1 if none, 2 if a file could not be read (the others are still answered).

Examples:
  bloomery parquet check lake/ --column user_id -k 42 -k 4711
  bloomery parquet check lake/ --column email --keys suspects.txt
  bloomery parquet check -c lake/ --column user_id --keys ids.txt
  bloomery parquet check -v lake/ --column user_id --keys ids.txt > certainly-new.txt"
    )]
    Check(ParquetCheckArgs),
    /// Print the files (--row-groups: FILE<TAB>ROW_GROUP) that may hold at least one key.
    #[command(
        after_help = "The list a query engine must scan: files and row groups whose filter admits a key, and every row group without a filter. Paths, keys and exit status as for `parquet check`.

Examples:
  bloomery parquet prune lake/ --column user_id --keys ids.txt
  bloomery parquet prune lake/ --column user_id -k 42 --row-groups --json"
    )]
    Prune(ParquetPruneArgs),
    /// List a file's row groups and columns: which have a filter, its size, fill, estimated
    /// distinct values and rate.
    #[command(after_help = "Examples:
  bloomery parquet info part-0.parquet
  bloomery parquet info part-0.parquet --column user_id --json")]
    Info(ParquetInfoArgs),
    /// Build filters for the row groups of COLUMN that have none: sidecar files beside the
    /// Parquet files, or (--rewrite OUT) a copy of one file with the filters embedded.
    #[command(
        after_help = "Reads the column's values (the only command that reads data pages). Sidecars (FILE.COLUMN.bloomery, bloomery's format, the least size for the rate) are used by `parquet check` and `prune` automatically, and ignored once the Parquet file changes. --rewrite writes a new Parquet file: column chunks, statistics, page index, key-value metadata and created_by copied unchanged, the existing filters kept, the new ones sized as arrow-rs and parquet-mr size theirs (a power of two of bytes); it is read back and checked before it replaces OUT.

Examples:
  bloomery parquet index lake/ --column user_id -p 0.01
  bloomery parquet index part-0.parquet --column user_id --rewrite part-0.bf.parquet"
    )]
    Index(ParquetIndexArgs),
}

/// The keys and column of a lake query.
#[derive(Debug, Args)]
pub struct ParquetKeys {
    /// The column: its dotted path (`a.b.c`) or a leaf name only one column has.
    #[arg(long, value_name = "COL")]
    pub column: String,
    /// A key (repeatable; may start with `-`, e.g. `-k -42`).
    #[arg(
        short = 'k',
        long = "key",
        value_name = "KEY",
        allow_hyphen_values = true
    )]
    pub keys: Vec<String>,
    /// Files of keys, one per line (gzip and zstd detected; "-" for stdin). Default: stdin,
    /// unless --key is given.
    #[arg(long = "keys", value_name = "FILE")]
    pub key_files: Vec<String>,
    #[command(flatten)]
    pub spec: KeyArgs,
    /// Do not use sidecar files for row groups without a filter.
    #[arg(long)]
    pub no_sidecars: bool,
}

#[derive(Debug, Args)]
pub struct ParquetCheckArgs {
    /// Parquet files and directories.
    #[arg(required = true, num_args = 1.., value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub q: ParquetKeys,
    /// Print the keys certainly in no row group.
    #[arg(short = 'v', long)]
    pub invert: bool,
    /// Print FILE<TAB>ROW_GROUP<TAB>COUNT: how many keys may be in each row group (`-` for a
    /// row group without a filter).
    #[arg(short, long, conflicts_with = "invert")]
    pub count: bool,
    /// Machine-readable output (fields documented in docs/CLI.md).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ParquetPruneArgs {
    /// Parquet files and directories.
    #[arg(required = true, num_args = 1.., value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub q: ParquetKeys,
    /// List row groups (FILE<TAB>ROW_GROUP) instead of files.
    #[arg(long)]
    pub row_groups: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ParquetInfoArgs {
    /// Parquet file.
    pub file: PathBuf,
    /// Only this column.
    #[arg(long, value_name = "COL")]
    pub column: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ParquetIndexArgs {
    /// Parquet files and directories.
    #[arg(required = true, num_args = 1.., value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
    /// The column to build filters for.
    #[arg(long, value_name = "COL")]
    pub column: String,
    /// False-positive rate of each row group's filter, in (0, 1).
    #[arg(short = 'p', long, value_name = "P", default_value_t = 0.01)]
    pub fpr: f64,
    /// Write a copy of the (one) input file with the filters embedded to OUT.
    #[arg(long, value_name = "OUT")]
    pub rewrite: Option<PathBuf>,
    /// Overwrite OUT if it exists and is not the input.
    #[arg(long)]
    pub force: bool,
}

/// Formats `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Parquet's split-block Bloom filter bitset.
    Sbbf,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Filter file.
    pub file: PathBuf,
    /// Output file; stdout when absent or "-".
    pub out: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Sbbf: put the Parquet filter header (Thrift) before the bitset.
    #[arg(long)]
    pub header: bool,
    /// Overwrite OUT if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Formats `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormat {
    /// A Parquet split-block Bloom filter bitset (optionally after its filter header).
    Sbbf,
    /// RedisBloom 2.x BF/CF values: the SCANDUMP chunk files of one key.
    Redisbloom,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The input's format (also spelled `--from`).
    #[arg(long, value_enum, alias = "from")]
    pub format: ImportFormat,
    /// Input files (sbbf: one bitset; redisbloom: the chunk files of one key, in order).
    #[arg(required = true, num_args = 1.., value_name = "INPUTS")]
    pub inputs: Vec<PathBuf>,
    /// Output filter file (written atomically).
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
    /// Distinct values the bitset was sized for, if known (recorded in the file).
    #[arg(short = 'n', long, value_name = "N", value_parser = parse_count)]
    pub capacity: Option<u64>,
    /// False-positive rate it was sized for, if known (recorded in the file).
    #[arg(short = 'p', long, value_name = "P")]
    pub fpr: Option<f64>,
    /// Overwrite OUT if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `bloomery xml ...`
#[derive(Debug, Subcommand)]
pub enum XmlCommand {
    /// Summarise the element paths of XML documents in one Breadth or Depth Bloom filter.
    #[command(
        after_help = "DOCS are XML files, or directories searched recursively for *.xml. All \
documents go into one filter (each document's root is a level-1 node). A malformed document is \
an error naming the file and position (status 2); nothing is written.\n\nExamples:\n  \
bloomery xml index cldr/ -o cldr.bbf --kind bbf\n  bloomery xml index a.xml b.xml -o docs.dbf \
--kind dbf -p 0.001"
    )]
    Index(XmlIndexArgs),
    /// Print each PATH query that may match the indexed documents.
    #[command(
        after_help = "PATH: a root path /a/b/c, a partial path a/b (anywhere), or with the \
ancestor-descendant axis a//b, /a//b/c.\n\nExit status like grep: 0 if a PATH was printed \
(may match), 1 if none, 2 on error (e.g. a malformed PATH).\n\nExamples:\n  \
bloomery xml query cldr.bbf /ldml/dates/calendars ldml//month\n  \
bloomery xml query -v cldr.dbf /ldml/numbers/foo     # print the paths certainly absent"
    )]
    Query(XmlQueryArgs),
}

/// Path filter kinds for `xml index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum XmlKindArg {
    /// Breadth Bloom filter: one filter per tree level plus one for every element.
    Bbf,
    /// Depth Bloom filter: one filter per path length, paths hashed whole.
    Dbf,
}

#[derive(Debug, Args)]
pub struct XmlIndexArgs {
    /// XML documents, or directories of them.
    #[arg(required = true, num_args = 1..)]
    pub docs: Vec<PathBuf>,
    /// Filter file to write (atomically).
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Filter kind.
    #[arg(long, value_enum, default_value_t = XmlKindArg::Bbf)]
    pub kind: XmlKindArg,
    /// False-positive rate of each level (bbf) or path-length (dbf) filter, in (0, 1).
    #[arg(
        short = 'p',
        long,
        value_name = "P",
        allow_negative_numbers = true,
        default_value_t = 0.01
    )]
    pub fpr: f64,
    /// Dbf: store paths of at most this many edges (default: every length).
    #[arg(long, value_name = "E")]
    pub max_path_length: Option<usize>,
    /// Hash seed.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Skip documents that are not well-formed XML (each is named in a warning and the
    /// summary counts them) instead of stopping at the first.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct XmlQueryArgs {
    /// Filter file written by `xml index` (bbf or dbf).
    pub file: PathBuf,
    /// Path queries.
    #[arg(required = true, num_args = 1..)]
    pub paths: Vec<String>,
    /// Print the paths that certainly do not match.
    #[arg(short = 'v', long)]
    pub invert: bool,
    /// Print only the number of printed paths.
    #[arg(short, long)]
    pub count: bool,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

/// A structure kind for `--kind`: the values and their help come from the library's kinds
/// table (the set kinds, the blocked filter's other layouts, then the counting kinds), so a
/// new kind needs no edit here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindArg(bloomery::Kind);

impl KindArg {
    /// The blocked filter: the fast default.
    pub const BLOCKED: KindArg = KindArg(bloomery::Kind::Blocked);
    /// The scalable filter: `dedup`'s default.
    pub const SCALABLE: KindArg = KindArg(bloomery::Kind::Scalable);
    /// The sliding-window filter: `dedup --window`.
    pub const WINDOW: KindArg = KindArg(bloomery::Kind::Window);

    pub fn kind(self) -> bloomery::Kind {
        self.0
    }
}

impl std::fmt::Display for KindArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

impl ValueEnum for KindArg {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::OnceLock<Vec<KindArg>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| {
            // the blocked filter's other layouts too (`blocked-sectors`, `blocked-salted`,
            // `blocked-salted256`): a file of a chosen layout, e.g. one the Redis module's
            // shards can hold
            let blocked_layouts = bloomery::Kind::ALL.iter().filter(|k| {
                k.rust_type() == bloomery::Kind::Blocked && **k != bloomery::Kind::Blocked
            });
            bloomery::Kind::SETS
                .iter()
                .chain(blocked_layouts)
                .chain(bloomery::Kind::COUNTERS)
                .map(|&k| KindArg(k))
                .collect()
        })
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name()).help(self.0.summary()))
    }
}

/// `create --kind window --layout`: how the window's slices lie in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WindowLayoutArg {
    /// Each slice contiguous (kind window): the least memory.
    Sliced,
    /// The slices' words interleaved in blocks (kind window-blocked): fewer cache lines.
    Blocked,
}

/// Spectral filter methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    /// Minimum Selection (never below the true count).
    Ms,
    /// Minimal Increase (more accurate, no deletion).
    Mi,
    /// Recurring Minimum (secondary filter).
    Rm,
}

impl MethodArg {
    pub fn method(self) -> bloomery::builders::SpectralMethod {
        match self {
            MethodArg::Ms => bloomery::builders::SpectralMethod::MinimumSelection,
            MethodArg::Mi => bloomery::builders::SpectralMethod::MinimalIncrease,
            MethodArg::Rm => bloomery::builders::SpectralMethod::RecurringMinimum,
        }
    }
}

/// Checksum verification of the filter files a command reads.
#[derive(Debug, Clone, Copy, Args)]
pub struct VerifyArgs {
    /// Skip the checksum pass over the filter file (instant on a file of any size). The header
    /// and every parameter are still validated; a damaged payload then gives wrong answers
    /// (false positives or negatives), never a crash. Without it every byte is checked once,
    /// streamed through a memory map (see docs/CLI.md, "Big filters").
    #[arg(long)]
    pub no_verify: bool,
}

impl VerifyArgs {
    pub fn verify(self) -> bool {
        !self.no_verify
    }
}

/// How lines become keys.
#[derive(Debug, Clone, Args)]
pub struct KeyArgs {
    /// Field separator for -f (default: tab). Escapes \t, \0 and \\ are understood.
    #[arg(short, long, value_name = "D")]
    pub delimiter: Option<String>,
    /// Use only field N (1-based) of each line as the key; lines without it are skipped.
    #[arg(short, long, value_name = "N")]
    pub field: Option<usize>,
    /// Keys are hex strings: decode them to bytes first.
    #[arg(long)]
    pub hex: bool,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Filter file to create.
    pub file: PathBuf,
    /// Expected number of distinct keys (accepts 10M, 1e6, 250_000); mlbf: distinct URLs.
    #[arg(short = 'n', long, value_name = "N", value_parser = parse_count)]
    pub capacity: Option<u64>,
    /// Target membership false-positive rate at capacity, in (0, 1): the rate at which a
    /// key never added is reported present (mlbf: see docs/CLI.md for which URLs).
    #[arg(short = 'p', long, value_name = "P", allow_negative_numbers = true)]
    pub fpr: Option<f64>,
    /// Ibf, scbf: expected adds, repeats included (default: -n, every key once); their fill
    /// grows with repeats as well as with distinct keys.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub occurrences: Option<u64>,
    /// Structure kind.
    #[arg(long, value_enum, default_value_t = KindArg::BLOCKED)]
    pub kind: KindArg,
    /// Hash seed (files with different seeds cannot be merged).
    #[arg(long, value_name = "S", conflicts_with = "keyed")]
    pub seed: Option<u64>,
    /// Keyed hashing (SipHash under a random secret stored in the file): resists chosen keys.
    #[arg(long)]
    pub keyed: bool,
    /// Exact number of bits, overriding the sizing.
    #[arg(long, value_name = "M", value_parser = parse_count)]
    pub bits: Option<u64>,
    /// Exact number of hash functions (bits set per key).
    #[arg(long, value_name = "K")]
    pub hashes: Option<u32>,
    /// Scalable: capacity multiplier per new sub-filter (default 2).
    #[arg(long, value_name = "S")]
    pub growth: Option<u32>,
    /// Scalable: error tightening ratio in (0, 1) (default 0.5).
    #[arg(long, value_name = "R")]
    pub tightening: Option<f64>,
    /// Scalable: refuse items past capacity instead of growing.
    #[arg(long)]
    pub no_scaling: bool,
    /// Counting and blocked-counting (1-32, default 4), spectral (default 16), dlcbf (1-31,
    /// default 2): bits per counter.
    #[arg(long, value_name = "W")]
    pub counter_bits: Option<u32>,
    /// Cms: counters per row (with --depth).
    #[arg(long, value_name = "W", value_parser = parse_count)]
    pub width: Option<u64>,
    /// Cms: rows (with --width).
    #[arg(long, value_name = "D")]
    pub depth: Option<u32>,
    /// Cms: error bound ε as a fraction of the total count (with --delta).
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    pub epsilon: Option<f64>,
    /// Cms: probability δ that the error exceeds ε (with --epsilon).
    #[arg(long, value_name = "D", allow_negative_numbers = true)]
    pub delta: Option<f64>,
    /// Cms: conservative update (Estan & Varghese).
    #[arg(long)]
    pub conservative: bool,
    /// Spectral: ms (Minimum Selection, default), mi (Minimal Increase), rm (Recurring
    /// Minimum).
    #[arg(long, value_enum)]
    pub method: Option<MethodArg>,
    /// Ibf: stop counting repeats after this many (default: no cap).
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub repeat_cap: Option<u64>,
    /// Scbf: groups of hash functions (default 32 in the library).
    #[arg(long, value_name = "L")]
    pub groups: Option<u32>,
    /// Mlbf: URL layers L in 1..=32 (default 4, the paper's); --bits/--hashes are per layer.
    #[arg(long, value_name = "L")]
    pub layers: Option<u32>,
    /// Window: a time window of this duration (10m, 30s, 2h, 7d, 500ms) instead of a count
    /// window; -n is then the lines per window it is first sized for. `add` and `check` use
    /// the time of day.
    #[arg(long, value_name = "DURATION", value_parser = crate::num::parse_duration)]
    pub window: Option<u64>,
    /// Window (count): the slices' layout. `blocked` keeps a key's bits in one block of k + l
    /// 64-bit words (a few cache lines per operation, a little more memory; file kind
    /// window-blocked); `sliced` (the default) keeps each slice contiguous.
    #[arg(long, value_enum, value_name = "LAYOUT")]
    pub layout: Option<WindowLayoutArg>,
    /// Split-block: size as Parquet writers (arrow-rs, parquet-mr) do for -n distinct values
    /// at rate -p: a power of two of bytes, so the bitset matches theirs.
    #[arg(long, conflicts_with = "bits")]
    pub parquet_sizing: bool,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// Filter file (created with `bloomery create`).
    pub file: PathBuf,
    /// Input files (gzip and zstd detected); stdin when none or "-".
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub keys: KeyArgs,
    /// Threads for inserting (blocked filters); 0 = all cores.
    #[arg(short = 't', long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// Mlbf: skip lines whose key is not a URL (no host, e.g. `https:////.git`) and count
    /// them in the summary on stderr, instead of stopping with an error at the first. Other
    /// kinds have no invalid keys.
    #[arg(long)]
    pub skip_invalid: bool,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Filter file.
    pub file: PathBuf,
    /// Input files (gzip and zstd detected); stdin when none or "-".
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub keys: KeyArgs,
    /// Print the lines that are certainly not in the set.
    #[arg(short = 'v', long)]
    pub invert: bool,
    /// Print only the number of matching lines.
    #[arg(short, long)]
    pub count: bool,
    /// 1: a line also matches when a string within edit distance 1 of its key may be in the
    /// set; matches print as `LINE<TAB>MATCH` (see docs/CLI.md). 0: exact keys only.
    #[arg(long, value_name = "D", default_value_t = 0,
          value_parser = clap::value_parser!(u8).range(0..=1))]
    pub edit_distance: u8,
    /// Bytes that substitutions and insertions use with --edit-distance 1 (default: the
    /// printable ASCII bytes, space to `~`).
    #[arg(long, value_name = "CHARS")]
    pub alphabet: Option<String>,
    /// Mlbf: skip lines whose key is not a URL (no host, e.g. `https:////.git`) and count
    /// them in the summary on stderr (never printed, even with --invert), instead of
    /// taking them as certainly absent. Other kinds have no invalid keys.
    #[arg(long)]
    pub skip_invalid: bool,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct DedupArgs {
    /// Input files (gzip and zstd detected); stdin when none or "-".
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub keys: KeyArgs,
    /// Distinct lines the filter is first sized for (scalable: it grows past them; fixed
    /// kinds: the capacity; a time window: lines per window at the expected rate) [default:
    /// 1M].
    #[arg(short = 'n', long, value_name = "N", value_parser = parse_count)]
    pub capacity: Option<u64>,
    /// Rate of distinct lines wrongly dropped as duplicates (scalable: at any size; fixed
    /// kinds: up to N distinct lines).
    #[arg(
        short = 'p',
        long,
        value_name = "P",
        allow_negative_numbers = true,
        default_value_t = 1e-4
    )]
    pub fpr: f64,
    /// Structure kind (scalable: grows with the input; blocked: fixed size, fastest).
    #[arg(long, value_enum, default_value_t = KindArg::SCALABLE)]
    pub kind: KindArg,
    /// Print a line unless it occurred among the previous N lines (a sliding window: memory
    /// fixed by N and -p however long the input; sets --kind window and -n N), or, with a
    /// unit (10m, 30s, 2h, 7d, 500ms), unless it occurred in that time before it (a time
    /// window: the time of arrival, or --time-field; memory follows the rate, -n is the lines
    /// per window it is first sized for).
    #[arg(long, value_name = "N|DURATION", value_parser = crate::num::parse_window, conflicts_with_all = ["kind", "layers"])]
    pub window: Option<crate::num::WindowArg>,
    /// With a time --window: take each line's time from field F (1-based, split on
    /// --delimiter, default tab), epoch seconds or RFC 3339, instead of its arrival.
    #[arg(long, value_name = "F", requires = "window")]
    pub time_field: Option<usize>,
    /// Hash seed.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Mlbf: URL layers L in 1..=32 (default 4).
    #[arg(long, value_name = "L")]
    pub layers: Option<u32>,
    /// Load the seen-set from FILE if it exists (then -n, -p, --kind are ignored) and save it
    /// there (atomically) at the end.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Mlbf: skip lines whose key is not a URL (no host, e.g. `https:////.git`) and count
    /// them in the summary on stderr (not printed), instead of stopping with an error at the
    /// first. Other kinds have no invalid keys.
    #[arg(long)]
    pub skip_invalid: bool,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Filter file.
    pub file: PathBuf,
    /// Machine-readable output (fields documented in docs/CLI.md).
    #[arg(long)]
    pub json: bool,
    /// From the header alone: no pass over the payload (no fill, rates now or estimates),
    /// instant on a file of any size.
    #[arg(long)]
    pub fast: bool,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct PackArgs {
    /// Input filter file (plain or compressed).
    pub input: PathBuf,
    /// Output file (written atomically).
    pub out: PathBuf,
    /// Overwrite OUT if it exists and is not the input.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The version the receiver holds (plain or compressed).
    pub old: PathBuf,
    /// The new version (plain or compressed).
    pub new: PathBuf,
    /// Output delta file (written atomically).
    pub out: PathBuf,
    /// Overwrite OUT if it exists and is not an input.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct PatchArgs {
    /// The delta's base (plain or compressed).
    pub old: PathBuf,
    /// Delta file made by `diff`.
    pub diff: PathBuf,
    /// Output filter file, plain (written atomically).
    pub out: PathBuf,
    /// Write OUT compressed.
    #[arg(long)]
    pub compress: bool,
    /// Overwrite OUT if it exists and is not an input.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Output filter file (written atomically).
    pub out: PathBuf,
    /// Input filter files.
    #[arg(required = true, num_args = 1..)]
    pub inputs: Vec<PathBuf>,
    /// Overwrite OUT if it exists and is not one of the inputs.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct FoldArgs {
    /// Input filter file.
    pub input: PathBuf,
    /// Output filter file (written atomically).
    pub out: PathBuf,
    /// How many times to halve.
    #[arg(long, default_value_t = 1, value_name = "T")]
    pub times: u32,
    /// Overwrite OUT if it exists and is not the input.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// Filter file.
    pub file: PathBuf,
    /// A second filter of the same kind and shape.
    pub other: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct CalcArgs {
    /// Number of items.
    #[arg(short = 'n', long, value_name = "N", value_parser = parse_count)]
    pub capacity: u64,
    /// Target false-positive rate.
    #[arg(
        short = 'p',
        long,
        value_name = "P",
        conflicts_with = "bits",
        required_unless_present = "bits"
    )]
    pub fpr: Option<f64>,
    /// Bits (instead of -p).
    #[arg(short = 'm', long, value_name = "BITS", value_parser = parse_count)]
    pub bits: Option<u64>,
    /// Hash functions (with -m; default: the best for each kind).
    #[arg(short = 'k', long, value_name = "K", requires = "bits")]
    pub hashes: Option<u32>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LabArgs {
    /// Experiment name, or "all".
    pub experiment: Option<String>,
    /// List the experiments.
    #[arg(long)]
    pub list: bool,
    /// Small sizes that run in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Output folder for tables and plots.
    #[arg(long, default_value = "lab-out", value_name = "DIR")]
    pub out: PathBuf,
    /// Base seed.
    #[arg(long, default_value_t = 1, value_name = "S")]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct CountArgs {
    /// Filter file.
    pub file: PathBuf,
    /// Input files (gzip and zstd detected); stdin when none or "-".
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub keys: KeyArgs,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// Lines to print.
    #[arg(long, value_parser = parse_count)]
    pub count: u64,
    /// Distinct URLs to draw from (default: 3/4 of count). Ignored with --sequential.
    #[arg(long, value_parser = parse_count)]
    pub distinct: Option<u64>,
    /// First URL id (ids offset..offset+distinct); disjoint ranges give disjoint URL sets.
    #[arg(long, default_value_t = 0, value_parser = parse_count)]
    pub offset: u64,
    /// Print ids offset, offset+1, ... in order (each URL once).
    #[arg(long)]
    pub sequential: bool,
    /// Seed of the draw.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// `bloomery cluster ...`
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Split a blocked filter file into S shards and load it into a Redis/Valkey Cluster
    /// running the bloomery module, as one logical filter named NAME.
    #[command(
        after_help = "The file must be a blocked filter (kind `blocked`, positions layout) \
sized with -n and -p, whose block count divides by S. Each shard is loaded with BF.LOADCHUNK \
under a new generation's key names; NAME (the descriptor) switches to them only when all are \
loaded, and the previous generation's shards are deleted after. Loading the same NAME from \
two places at once is not supported.\n\nExample:\n  bloomery cluster push leaked.bloom \
--nodes 10.0.0.1:6379,10.0.0.2:6379 --name leaked --shards 64"
    )]
    Push(PushArgs),
    /// Print the lines whose key may be in the sharded filter NAME (as `bloomery check`).
    #[command(
        after_help = "Exit status like grep: 0 if a line was printed (or a count is \
above 0), 1 if none, 2 on an error (a missing or mismatched shard is one, named)."
    )]
    Check(ClusterCheckArgs),
    /// Add the keys of the input lines to the sharded filter NAME.
    Add(ClusterAddArgs),
    /// Show a sharded filter's layout and each shard's node, bytes and items.
    Info(ClusterInfoArgs),
}

#[derive(Debug, Args)]
pub struct Nodes {
    /// Cluster nodes to start from, host:port[,host:port...] (one is enough).
    #[arg(
        long,
        value_name = "HOST:PORT,..",
        value_delimiter = ',',
        required = true
    )]
    pub nodes: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The blocked filter file; with --keys, key input files (gzip and zstd detected; stdin
    /// when none or "-").
    #[arg(value_name = "FILE|INPUT")]
    pub inputs: Vec<String>,
    /// Build the shards from the keys of the input lines (sized by -n and -p) instead of
    /// splitting a file.
    #[arg(long, requires_all = ["capacity", "fpr"])]
    pub keys: bool,
    /// With --keys: expected number of distinct keys of the whole filter.
    #[arg(short = 'n', long, value_name = "N", value_parser = crate::num::parse_count, requires = "keys")]
    pub capacity: Option<u64>,
    /// With --keys: the whole filter's target false-positive rate at N keys.
    #[arg(short = 'p', long, value_name = "P", requires = "keys")]
    pub fpr: Option<f64>,
    /// With --keys: hash seed.
    #[arg(long, value_name = "S", requires = "keys")]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub key_args: KeyArgs,
    #[command(flatten)]
    pub nodes: Nodes,
    /// Name of the logical filter (the descriptor's key).
    #[arg(long)]
    pub name: String,
    /// Number of shards S (1 to 16384; must divide the filter's block count).
    #[arg(long, value_name = "S")]
    pub shards: u32,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Args)]
pub struct ClusterCheckArgs {
    /// Name of the logical filter.
    pub name: String,
    /// Input files (gzip and zstd detected); stdin when none or "-".
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub nodes: Nodes,
    #[command(flatten)]
    pub keys: KeyArgs,
    /// Print the lines that are certainly not in the set.
    #[arg(short = 'v', long)]
    pub invert: bool,
    /// Print only the number of matching lines.
    #[arg(short, long)]
    pub count: bool,
}

#[derive(Debug, Args)]
pub struct ClusterAddArgs {
    /// Name of the logical filter.
    pub name: String,
    /// Input files (gzip and zstd detected); stdin when none or "-".
    pub inputs: Vec<String>,
    #[command(flatten)]
    pub nodes: Nodes,
    #[command(flatten)]
    pub keys: KeyArgs,
}

#[derive(Debug, Args)]
pub struct ClusterInfoArgs {
    /// Name of the logical filter.
    pub name: String,
    #[command(flatten)]
    pub nodes: Nodes,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}
