#!/usr/bin/env bash
# Big filters: time and peak resident memory of the CLI on a filter file of SIZE (default the
# 1.9 GB of `-n 1500000000 -p 0.01`), against reading the file (`cat > /dev/null`) and
# copying it durably (`cp` + `sync`). Prints a Markdown table for docs/BENCHMARKS.md.
#
#   benches/scripts/bigfiles.sh [DIR] [N] [ROUNDS]
#
# DIR: where the big files go (default target/bigfiles; needs 2.5 x the file free);
# N: the capacity (default 1500000000, a 1.9 GB blocked filter at 1%); ROUNDS: repetitions
# of each timed command, alternated, the median reported (default 3). The page cache is warm
# (the file was just written or read), as in a shell loop over one file. Every file made is
# deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-target/bigfiles}
N=${2:-1500000000}
ROUNDS=${3:-3}
BIN=${BLOOMERY:-target/release/bloomery}
[ -x "$BIN" ] || cargo build --release -p bloomery-cli
mkdir -p "$DIR"
F="$DIR/big.bloom"
KEYS="$DIR/keys-1m.txt"
trap 'rm -f "$F" "$DIR/copy.bloom" "$KEYS" "$DIR"/.bloomery-*.tmp' EXIT

# seconds and peak RSS (MiB) of one command: "S MIB"
# (`check` exits 1 when it prints nothing: the status is not the point here)
measure() {
    /usr/bin/time -f '%e %M' -o "$DIR/time.txt" "$@" > /dev/null 2> /dev/null || true
    # the last line: GNU time puts "Command exited with non-zero status N" before it
    tail -n 1 "$DIR/time.txt" | awk '{ printf "%s %.0f\n", $1, $2 / 1024 }'
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

row() { # label, then the command
    local label=$1; shift
    local ts=() rs=()
    for _ in $(seq "$ROUNDS"); do
        read -r t r < <(measure "$@")
        ts+=("$t"); rs+=("$r")
    done
    printf '| %s | %s s | %s MiB |\n' "${label//|/\\|}" \
        "$(printf '%s\n' "${ts[@]}" | median)" "$(printf '%s\n' "${rs[@]}" | sort -n | tail -1)"
}

"$BIN" gen-urls --count 1M --sequential --offset 5000000000 > "$KEYS"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(uname -r); $(date -u +%F)"
echo
echo '| command | time (median) | peak RSS (max) |'
echo '|---|---|---|'
row "create -n $N -p 0.01" "$BIN" create "$F" -n "$N" -p 0.01 --force
ls -l "$F" | awk '{ printf "| (file: %.2f GB) | | |\n", $5 / 1e9 }'
row 'cat FILE > /dev/null' sh -c "cat '$F' > /dev/null"
row 'cp FILE COPY && sync COPY' sh -c "cp '$F' '$DIR/copy.bloom' && sync '$DIR/copy.bloom'"
rm -f "$DIR/copy.bloom"
row 'echo hello | check --no-verify' sh -c "echo hello | '$BIN' check --no-verify '$F'"
row 'echo hello | check' sh -c "echo hello | '$BIN' check '$F'"
row 'info --fast' "$BIN" info --fast "$F"
row 'info --no-verify' "$BIN" info --no-verify "$F"
row 'info' "$BIN" info "$F"
row 'check --no-verify -c (1M keys)' sh -c "'$BIN' check --no-verify -c '$F' '$KEYS'"
row 'add (1M keys)' "$BIN" add "$F" "$KEYS"
row 'add --no-verify (1M keys)' "$BIN" add --no-verify "$F" "$KEYS"
row 'add -q (1M keys)' "$BIN" add -q "$F" "$KEYS"
row 'echo hello | add' sh -c "echo hello | '$BIN' add '$F'"
