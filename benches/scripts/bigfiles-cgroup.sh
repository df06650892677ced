#!/usr/bin/env bash
# A filter file larger than its memory: `add` of K keys to a blocked filter file, the update
# forced to the one pass, the copy and sweep, or left to `auto`, each command run in a memory
# cgroup whose limit stands for the machine's RAM (the page cache of the files a process
# reads and writes is charged to its cgroup), against the durable copy of the same file
# (`cp FILE COPY && sync COPY`) in the same cgroup. Prints a Markdown table for
# docs/BENCHMARKS.md ("A file larger than RAM").
#
#   sudo benches/scripts/bigfiles-cgroup.sh [DIR]
#   sudo LIMIT="2G 1G 512M" N=1500000000 MODES="one-pass sweep auto" benches/scripts/bigfiles-cgroup.sh
#
# Environment (all optional):
#   N           capacity of the filter, `create FILE -n N -p P` (the blocked kind's default
#               layout); default 6000000000, a 7.58 GB file at P = 0.01
#   SIZE_BYTES  instead of N: the file's size (bytes, or with a suffix: 300M = 300e6,
#               7.58G = 7.58e9, 300Mi = 300 MiB); N is derived from a small filter's size
#   P           false-positive rate at capacity (default 0.01)
#   KEYS        keys added, `seq -f 'k%.0f' 1 KEYS` (default 1000000)
#   LIMIT       the cgroup's memory limit (cgroup notation: 2G = 2 GiB); several, space
#               separated, give one group of rows per limit (default 2G)
#   MODES       `add` runs, from one-pass, sweep, auto (BLOOMERY_UPDATE) and cat (`cat FILE >
#               /dev/null`); default "one-pass sweep". The durable copy is always run.
#   REPEATS     rounds (default 3); each runs every command once at every limit, the order
#               of the commands rotated by one from round to round; the median time is printed
#   PREREAD     1: read the file once (`cat`) in the same cgroup before each timed command,
#               after the page cache is dropped (default 0: the file starts uncached)
#   KEEP        1: keep the filter file (as created), its pristine link and the key file in DIR
#   BLOOMERY    the binary (default: `cargo build --release -p bloomery-cli`, then
#               target/release/bloomery)
#   CGROUP_PARENT  the cgroup directory the benchmark's cgroup is made in (default the root of
#               the memory hierarchy: /sys/fs/cgroup/memory on cgroup v1, /sys/fs/cgroup on v2)
# DIR: where the files go (default target/bigfiles-cgroup; needs 2.1 x the file free).
#
# Needs root: it makes memory cgroups (v1: memory.limit_in_bytes; v2: memory.max) and drops
# the page cache (`sync; echo 3 > /proc/sys/vm/drop_caches`) before every timed command, for
# the whole machine. Each timed command runs in a fresh cgroup (a child of one made for the
# run) and is timed with GNU time (`/usr/bin/time`; the `time` package is installed if
# missing): wall time, peak RSS, and the cgroup's peak charge (v1
# memory.max_usage_in_bytes, v2 memory.peak: page cache included, so at most the limit).
# Before every command the filter file is restored: it is a hard link to a pristine copy
# (`add` writes a new file and renames it over FILE, so the pristine one is never written;
# the script checks this), so every `add` starts from the same file. The cgroups are removed
# at the end, and the files unless KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "bigfiles-cgroup.sh: $*" >&2; exit 1; }

DIR=${1:-target/bigfiles-cgroup}
P=${P:-0.01}
KEYS=${KEYS:-1000000}
LIMIT=${LIMIT:-2G}
MODES=${MODES:-one-pass sweep}
REPEATS=${REPEATS:-3}
PREREAD=${PREREAD:-0}
KEEP=${KEEP:-0}
SIZE_BYTES=${SIZE_BYTES:-}
N=${N:-}
[ -n "$N" ] && [ -n "$SIZE_BYTES" ] && die "give N or SIZE_BYTES, not both"
[ -z "$N" ] && [ -z "$SIZE_BYTES" ] && N=6000000000

# ---- checks before anything is written
[ "$(id -u)" -eq 0 ] || die "must run as root (it makes memory cgroups and drops the page cache)"
[ -w /proc/sys/vm/drop_caches ] || die "/proc/sys/vm/drop_caches is not writable (a container without it?)"
case "$REPEATS" in '' | *[!0-9]* | 0) die "REPEATS must be a positive integer, not '$REPEATS'" ;; esac
case "$KEYS" in '' | *[!0-9]* | 0) die "KEYS must be a positive integer, not '$KEYS'" ;; esac
read -ra modes <<< "$MODES"
[ "${#modes[@]}" -gt 0 ] || die "MODES is empty"
for m in "${modes[@]}"; do
    case "$m" in one-pass | sweep | auto | cat) ;; *) die "MODES: '$m' is not one-pass, sweep, auto or cat" ;; esac
done
read -ra limit_args <<< "$LIMIT"
[ "${#limit_args[@]}" -gt 0 ] || die "LIMIT is empty"
limits=()
for l in "${limit_args[@]}"; do
    b=$(numfmt --from=iec "$l" 2> /dev/null) || die "LIMIT: '$l' is not a size (e.g. 2G, 512M)"
    [ "$b" -ge $((16 << 20)) ] || die "LIMIT: '$l' is under 16 MiB"
    limits+=("$b")
done

if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CGV=2
    CGROOT=/sys/fs/cgroup
    grep -qw memory "$CGROOT/cgroup.controllers" || die "cgroup v2 without the memory controller ($CGROOT/cgroup.controllers)"
elif [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    CGV=1
    CGROOT=/sys/fs/cgroup/memory
else
    die "no memory cgroup controller: neither cgroup v2 (/sys/fs/cgroup/cgroup.controllers) nor v1 (/sys/fs/cgroup/memory)"
fi
CGPARENT=${CGROUP_PARENT:-$CGROOT}
[ -d "$CGPARENT" ] || die "CGROUP_PARENT $CGPARENT is not a directory"
if [ "$CGV" = 2 ] && ! grep -qw memory "$CGPARENT/cgroup.subtree_control"; then
    echo +memory > "$CGPARENT/cgroup.subtree_control" 2> /dev/null ||
        die "cannot enable the memory controller for the children of $CGPARENT (cgroup.subtree_control)"
fi

if [ ! -x /usr/bin/time ]; then
    command -v apt-get > /dev/null || die "GNU time (/usr/bin/time) is missing and apt-get is not here to install it"
    apt-get install -y time > /dev/null || die "could not install GNU time (apt-get install -y time)"
fi

if [ -n "${BLOOMERY:-}" ]; then
    BIN=$BLOOMERY
    [ -x "$BIN" ] || die "BLOOMERY=$BIN is not an executable"
else
    cargo build --release -p bloomery-cli
    BIN=target/release/bloomery
fi

mkdir -p "$DIR"
F="$DIR/big.bloom"              # the file each command works on
PRISTINE="$DIR/big.pristine.bloom" # a second link to the file as created
COPY="$DIR/copy.bloom"          # the durable copy's target
KEYFILE="$DIR/keys.txt"
TIMES="$DIR/time.txt"
LOG="$DIR/run.log"
CG="$CGPARENT/bloomery-bench-$$"

cg_remove() { # a cgroup directory and its children; processes left in them (an interrupted run) are ended
    local d=$1 pid
    [ -d "$d" ] || return 0
    for sub in "$d"/*/; do
        [ -d "$sub" ] && cg_remove "${sub%/}"
    done
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        rmdir "$d" 2> /dev/null && return 0
        while read -r pid; do kill "$pid" 2> /dev/null || true; done < "$d/cgroup.procs"
        sleep 0.2
    done
    echo "bigfiles-cgroup.sh: could not remove the cgroup $d" >&2
}
cleanup() {
    cg_remove "$CG"
    rm -f "$COPY" "$TIMES" "$LOG" "$DIR"/.bloomery-*.tmp "$DIR"/.bloomery-*.sums "$DIR/probe.bloom"
    if [ "$KEEP" = 1 ]; then
        if [ -e "$PRISTINE" ]; then
            restore
            echo "kept: $F (as created) $PRISTINE $KEYFILE" >&2
        fi
    else
        rm -f "$F" "$PRISTINE" "$KEYFILE"
        rmdir "$DIR" 2> /dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$CG"
[ "$CGV" = 2 ] && echo +memory > "$CG/cgroup.subtree_control"

# a cgroup under $CG limited to $2 bytes (swap included where the kernel accounts it), named $1
cg_make() {
    local d="$CG/$1"
    mkdir "$d"
    if [ "$CGV" = 1 ]; then
        echo "$2" > "$d/memory.limit_in_bytes"
        [ -f "$d/memory.memsw.limit_in_bytes" ] && { echo "$2" > "$d/memory.memsw.limit_in_bytes" 2> /dev/null || true; }
    else
        echo "$2" > "$d/memory.max"
        [ -f "$d/memory.swap.max" ] && echo 0 > "$d/memory.swap.max"
        echo +memory > "$d/cgroup.subtree_control"
    fi
    mkdir "$d/pre" "$d/cmd"
}
cg_peak() { # the peak charge of a cgroup in MiB, or n/a
    local f
    if [ "$CGV" = 1 ]; then f="$1/memory.max_usage_in_bytes"; else f="$1/memory.peak"; fi
    if [ -r "$f" ]; then awk '{ printf "%.0f\n", $1 / 1048576 }' "$f"; else echo n/a; fi
}
# run a command in the cgroup $1: the shell moves itself in, then becomes the command
in_cg() { local procs="$1/cgroup.procs"; shift; sh -c 'echo $$ > "$0" && exec "$@"' "$procs" "$@"; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
ino() { stat -c %i "$1"; }
restore() { # FILE back to the file as created, nothing else beside it
    rm -f "$COPY" "$DIR"/.bloomery-*.tmp "$DIR"/.bloomery-*.sums
    if [ ! -e "$F" ] || [ "$(ino "$F")" != "$(ino "$PRISTINE")" ]; then
        rm -f "$F"
        ln "$PRISTINE" "$F"
    fi
}

# ---- the files
# a filter for 10M keys gives the bytes a key takes at P
"$BIN" create -q "$DIR/probe.bloom" -n 10000000 -p "$P" --force
per_key=$(awk -v s="$(stat -c %s "$DIR/probe.bloom")" 'BEGIN { printf "%.6f\n", s / 10000000 }')
rm -f "$DIR/probe.bloom"
if [ -n "$SIZE_BYTES" ]; then
    want=$(numfmt --from=auto "$SIZE_BYTES" 2> /dev/null) || die "SIZE_BYTES: '$SIZE_BYTES' is not a size"
    N=$(awk -v w="$want" -v k="$per_key" 'BEGIN { printf "%.0f\n", w / k }')
    [ "$N" -ge 1 ] || die "SIZE_BYTES: '$SIZE_BYTES' is too small"
fi
# the file and the update's copy (or the durable copy) are on the disk at once
need=$(awk -v n="$N" -v k="$per_key" 'BEGIN { printf "%.0f\n", n * k * 2.1 + 64e6 }')
avail=$(df --output=avail -B1 "$DIR" | tail -n 1)
[ "$avail" -gt "$need" ] || die "$DIR has $avail bytes free; a file for N=$N and its copy need about $need"
rm -f "$F" "$PRISTINE"
"$BIN" create -q "$F" -n "$N" -p "$P"
ln "$F" "$PRISTINE"
size=$(stat -c %s "$F")
pristine_stamp=$(stat -c '%s %Y' "$PRISTINE")
seq -f 'k%.0f' 1 "$KEYS" > "$KEYFILE"

# ---- the runs
cmds=(cp "${modes[@]}")
label() {
    case "$1" in
        cp) echo 'cp FILE COPY && sync COPY' ;;
        cat) echo 'cat FILE > /dev/null' ;;
        *) echo "BLOOMERY_UPDATE=$1 add FILE < KEYS" ;;
    esac
}
declare -A T R C # "limit index|command" -> the times, peak RSS and cgroup peaks of the rounds
run=0
start=$(date -u '+%F %H:%M')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$REPEATS"); do
    for li in "${!limits[@]}"; do
        k=${#cmds[@]}
        for j in $(seq 0 $((k - 1))); do
            cmd=${cmds[$(((j + round - 1) % k))]}
            run=$((run + 1))
            restore
            drop_caches
            cg_make "r$run" "${limits[$li]}"
            d="$CG/r$run"
            if [ "$PREREAD" = 1 ]; then
                in_cg "$d/pre" cat "$F" > /dev/null
                [ "$CGV" = 1 ] && echo 0 > "$d/cmd/memory.max_usage_in_bytes"
            fi
            status=0
            # shellcheck disable=SC2016 # the inner shell expands its arguments
            case "$cmd" in
                cp) in_cg "$d/cmd" /usr/bin/time -f '%e %M' -o "$TIMES" \
                    sh -c 'cp "$0" "$1" && sync "$1"' "$F" "$COPY" > /dev/null 2> "$LOG" || status=$? ;;
                cat) in_cg "$d/cmd" /usr/bin/time -f '%e %M' -o "$TIMES" \
                    cat "$F" > /dev/null 2> "$LOG" || status=$? ;;
                *) in_cg "$d/cmd" /usr/bin/time -f '%e %M' -o "$TIMES" \
                    env BLOOMERY_UPDATE="$cmd" "$BIN" add "$F" < "$KEYFILE" > /dev/null 2> "$LOG" || status=$? ;;
            esac
            if [ "$status" != 0 ]; then
                cat "$LOG" >&2
                die "'$(label "$cmd")' failed (status $status) in a cgroup of ${limit_args[$li]}, round $round"
            fi
            read -r t r < <(tail -n 1 "$TIMES")
            c=$(cg_peak "$d/cmd")
            cg_remove "$d"
            case "$cmd" in
                one-pass | sweep | auto)
                    [ "$(stat -c '%s %Y' "$PRISTINE")" = "$pristine_stamp" ] || die "the pristine file was written by '$(label "$cmd")'"
                    [ "$(ino "$F")" != "$(ino "$PRISTINE")" ] || die "'$(label "$cmd")' did not replace FILE"
                    # the keys are distinct and the file was empty: all of them are new, but
                    # for a key whose bits the earlier ones happened to set
                    items=$("$BIN" info --fast "$F" | awk '$1 == "items" { gsub(",", "", $2); print $2 }')
                    awk -v i="${items:-0}" -v k="$KEYS" 'BEGIN { exit !(i <= k && i >= 0.99 * k) }' ||
                        die "'$(label "$cmd")' left ${items:-no} items in FILE, not $KEYS"
                    ;;
            esac
            T[$li|$cmd]="${T[$li|$cmd]:-} $t"
            R[$li|$cmd]="${R[$li|$cmd]:-} $r"
            C[$li|$cmd]="${C[$li|$cmd]:-} $c"
            echo "round $round, limit ${limit_args[$li]}: $(label "$cmd"): $t s, $((r / 1024)) MiB, cgroup peak $c MiB" >&2
        done
    done
done
end=$(date -u '+%H:%M')

# ---- the table
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
largest() { tr ' ' '\n' | grep . | sort -n | tail -n 1; }
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit (with uncommitted changes)"
echo
echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)," \
    "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) MemTotal, Linux $(uname -r)"
echo "date: $start–$end UTC; commit $commit; load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "file: $(awk -v s="$size" 'BEGIN { printf "%.2f GB", s / 1e9 }') ($size bytes), \`create FILE -n $N -p $P\`;" \
    "keys: $KEYS (\`seq -f 'k%.0f' 1 $KEYS\`); memory cgroup v$CGV, limit ${LIMIT}; rounds: $REPEATS;" \
    "page cache dropped before each command$([ "$PREREAD" = 1 ] && echo ', then the file read once in the cgroup')"
echo
echo "| cgroup limit (file / limit) | command | time (median) | × durable copy | peak RSS (max) | cgroup peak (max) | times |"
echo '|---|---|---|---|---|---|---|'
for li in "${!limits[@]}"; do
    ratio=$(awk -v s="$size" -v l="${limits[$li]}" 'BEGIN { printf "%.2f", s / l }')
    base=$(median <<< "${T[$li|cp]}")
    for cmd in "${cmds[@]}"; do
        t=$(median <<< "${T[$li|$cmd]}")
        x=$(awk -v t="$t" -v b="$base" 'BEGIN { if (b > 0) printf "%.2f×", t / b; else print "n/a" }')
        r=$(largest <<< "${R[$li|$cmd]}")
        c=$(largest <<< "${C[$li|$cmd]}")
        all=$(tr ' ' '\n' <<< "${T[$li|$cmd]}" | grep . | awk '{ printf "%s%s s", (NR > 1 ? ", " : ""), $1 }')
        l=$(label "$cmd")
        printf '| %s (%s) | %s | %s s | %s | %.0f MiB | %s MiB | %s |\n' "${limit_args[$li]}" "$ratio" \
            "${l//|/\\|}" "$t" "$x" "$(awk -v r="$r" 'BEGIN { print r / 1024 }')" "$c" "$all"
    done
done
