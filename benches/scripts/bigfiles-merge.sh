#!/usr/bin/env bash
# Big filters, combined: time and peak resident memory of `fold`, `union` and `intersect` on
# filter files of SIZE (default the 1.9 GB of `-n 1500000000 -p 0.01`), against reading one
# file (`cat > /dev/null`) and copying it durably (`cp` + `sync`). The commands are
# interleaved: each round runs every one once, in order; the median time and the largest
# peak RSS over the rounds are printed as a Markdown table for docs/BENCHMARKS.md.
#
#   benches/scripts/bigfiles-merge.sh [DIR] [N] [ROUNDS]
#
# DIR: where the big files go (default target/bigfiles; needs 3.5 x the file free);
# N: the capacity (default 1500000000, a 1.9 GB blocked filter at 1%); ROUNDS: rounds
# (default 3). BLOOMERY: the binary (default target/release/bloomery); BEFORE: a second
# binary timed in the same rounds (e.g. an older build), rows marked "before". The page cache
# is warm (the files were just written). Every file made is deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-target/bigfiles}
N=${2:-1500000000}
ROUNDS=${3:-3}
BIN=${BLOOMERY:-target/release/bloomery}
BEFORE=${BEFORE:-}
[ -x "$BIN" ] || cargo build --release -p bloomery-cli
mkdir -p "$DIR"
A="$DIR/a.bloom" B="$DIR/b.bloom" OUT="$DIR/out.bloom" COPY="$DIR/copy.bloom"
trap 'rm -f "$A" "$B" "$OUT" "$COPY" "$DIR"/keys-*.txt "$DIR"/.bloomery-*.tmp "$DIR/time.txt"' EXIT

"$BIN" create "$A" -n "$N" -p 0.01 --force
cp "$A" "$B"
"$BIN" gen-urls --count 1M --sequential --offset 5000000000 > "$DIR/keys-a.txt"
"$BIN" gen-urls --count 1M --sequential --offset 5000500000 > "$DIR/keys-b.txt"
"$BIN" add -q "$A" "$DIR/keys-a.txt"
"$BIN" add -q "$B" "$DIR/keys-b.txt"

labels=() cmds=()
add_row() { labels+=("$1"); cmds+=("$2"); }
add_row 'cat FILE > /dev/null' "cat '$A' > /dev/null"
add_row 'cp FILE COPY && sync COPY' "cp '$A' '$COPY' && sync '$COPY'; rm -f '$COPY'"
add_row 'fold FILE OUT' "'$BIN' fold --force '$A' '$OUT'; rm -f '$OUT'"
add_row 'fold --times 3 FILE OUT' "'$BIN' fold --force --times 3 '$A' '$OUT'; rm -f '$OUT'"
add_row 'union OUT A B' "'$BIN' union --force '$OUT' '$A' '$B'; rm -f '$OUT'"
add_row 'intersect OUT A B' "'$BIN' intersect --force '$OUT' '$A' '$B'; rm -f '$OUT'"
if [ -n "$BEFORE" ]; then
    add_row 'fold FILE OUT (before)' "'$BEFORE' fold --force '$A' '$OUT'; rm -f '$OUT'"
    add_row 'union OUT A B (before)' "'$BEFORE' union --force '$OUT' '$A' '$B'; rm -f '$OUT'"
fi

declare -A T R
for round in $(seq "$ROUNDS"); do
    for i in "${!cmds[@]}"; do
        /usr/bin/time -f '%e %M' -o "$DIR/time.txt" sh -c "${cmds[$i]}" > /dev/null 2>&1 || true
        read -r t r < <(tail -n 1 "$DIR/time.txt")
        T[$i]="${T[$i]:-} $t"
        R[$i]="${R[$i]:-} $r"
    done
done
echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(uname -r); $(date -u +%F); load $(cut -d' ' -f1-3 /proc/loadavg)"
ls -l "$A" | awk '{ printf "file: %.2f GB\n", $5 / 1e9 }'
echo
echo '| command | time (median) | peak RSS (max) |'
echo '|---|---|---|'
for i in "${!cmds[@]}"; do
    t=$(printf '%s\n' ${T[$i]} | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    r=$(printf '%s\n' ${R[$i]} | sort -n | tail -1 | awk '{ printf "%.0f", $1 / 1024 }')
    printf '| %s | %s s | %s MiB |\n' "${labels[$i]}" "$t" "$r"
done
