#!/usr/bin/env bash
# One key through `check`, `info` and `add` (and `estimate A B`, `union` where the kind has
# them) on a file of about 1 GiB of every kind, under `--max-memory 100M`: the peak resident
# memory of each command (`/usr/bin/time -f %M`: heap plus the file pages mapped at the peak).
# Prints a Markdown table for docs/BENCHMARKS.md ("One key, every kind, 1 GiB files").
#
#   benches/scripts/kinds-rss.sh [DIR]
#
# DIR: where the files go (default target/kinds-rss; needs about 3 GiB free: one file of a
# kind at a time, its update's copy, and a union's output). Each file is made empty by
# `create` (no --max-memory: a counting kind's empty structure is built in memory), used, and
# deleted before the next kind's.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-target/kinds-rss}
BIN=${BLOOMERY:-target/release/bloomery}
[ -x "$BIN" ] || cargo build --release -p bloomery-cli
mkdir -p "$DIR"
F="$DIR/kind.bloom"
OUT="$DIR/out.bloom"
trap 'rm -f "$F" "$OUT" "$DIR"/.bloomery-*' EXIT

# peak RSS (MiB) of one command, and its exit status (0/1 are answers; anything else is
# printed beside the figure)
measure() {
    local status=0
    /usr/bin/time -f '%M' -o "$DIR/time.txt" "$@" > /dev/null 2> "$DIR/err.txt" || status=$?
    local kib
    kib=$(tail -n 1 "$DIR/time.txt")
    if [ "$status" -le 1 ]; then
        awk -v k="$kib" 'BEGIN { printf "%.0f", k / 1024 }'
    else
        awk -v k="$kib" -v s="$status" 'BEGIN { printf "%.0f (exit %s)", k / 1024, s }'
        head -c 300 "$DIR/err.txt" >&2
    fi
}

LIMIT=(--max-memory 100M)
echo "machine: $(lscpu | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2; exit }'), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(uname -r); $(date -u '+%F %H:%M UTC'); commit $(git rev-parse --short HEAD)"
echo
echo '| kind | file | `check` | `info` | `add` | `estimate F F` | `union F F` |'
echo '|---|---|---|---|---|---|---|'
row() { # kind, then create's arguments
    local kind=$1; shift
    rm -f "$F" "$OUT"
    "$BIN" create "$F" --kind "$kind" "$@" --force > /dev/null
    local size check info add est union
    size=$(stat -c %s "$F" | awk '{ printf "%.2f GB", $1 / 1e9 }')
    check=$(measure sh -c "echo hello | '$BIN' ${LIMIT[*]} check '$F'")
    info=$(measure "$BIN" "${LIMIT[@]}" info "$F")
    add=$(measure sh -c "echo hello | '$BIN' ${LIMIT[*]} add '$F'")
    case $kind in
        classic|partitioned|blocked)
            est=$(measure "$BIN" "${LIMIT[@]}" estimate "$F" "$F") ;;
        *) est='—' ;;
    esac
    case $kind in
        classic|partitioned|blocked|split-block)
            union=$(measure "$BIN" "${LIMIT[@]}" union "$OUT" "$F" "$F")
            rm -f "$OUT" ;;
        *) union='—' ;;
    esac
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$kind" "$size" "$check" "$info" "$add" "$est" "$union"
    rm -f "$F"
}

G=8589934592 # bits in 1 GiB
row classic --bits "$G" --hashes 7
row partitioned --bits "$G" --hashes 7
row blocked --bits "$G" --hashes 8
row split-block --bits "$G"
row counting --bits $((G / 4)) --hashes 7
row blocked-counting --bits $((G / 4)) --hashes 7
row spectral --bits $((G / 16)) --hashes 7
row ibf --bits "$G" --hashes 7
row scbf --bits "$G" --hashes 7
row dlcbf -n 240000000 -p 0.01
row cms --width $((1 << 25)) --depth 4
