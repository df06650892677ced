#!/usr/bin/env bash
# The main job, end to end, with no download and no server:
#   1. build the release CLI;
#   2. generate 1,000,000 URL-like lines with duplicates (deterministic: fixed seed);
#   3. `bloomery dedup` them and compare with `sort -u | wc -l`;
#   4. build a filter with `create` + `add`, then `check -c` known-present and known-absent
#      lines and compare the measured false-positive rate with the target;
#   5. `bloomery info` on the filter.
# Usage: bash scripts/demo.sh [LINES]
set -euo pipefail
cd "$(dirname "$0")/.."

N="${1:-1000000}"
echo "== building the release binary (cargo build --release -p bloomery-cli)"
cargo build --release -p bloomery-cli
B="$PWD/target/release/bloomery"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

echo
echo "== generating $N URL lines with duplicates (seed 42)"
"$B" gen-urls --count "$N" --seed 42 > "$W/urls.txt"
head -n 3 "$W/urls.txt"
echo "..."

echo
echo "== dedup: bloomery dedup -n 1M -p 1e-4 vs sort -u"
t0=$(now)
"$B" dedup -n 1M -p 1e-4 --state "$W/dedup.bloom" "$W/urls.txt" > "$W/unique.txt"
t1=$(now)
exact=$(LC_ALL=C sort -u "$W/urls.txt" | wc -l)
t2=$(now)
got=$(wc -l < "$W/unique.txt")
dups_printed=$(LC_ALL=C sort "$W/unique.txt" | uniq -d | wc -l)
printf '%-34s %12s\n' "input lines" "$N"
printf '%-34s %12s   (%s s)\n' "distinct lines (sort -u | wc -l)" "$exact" "$(secs "$t1" "$t2")"
printf '%-34s %12s   (%s s)\n' "lines printed by bloomery dedup" "$got" "$(secs "$t0" "$t1")"
final_fpr=$("$B" info "$W/dedup.bloom" | awk '/^fpr now/ { print $3 }')
printf '%-34s %12s   (false positives; expected at most about %s = distinct x final fpr %s)\n' \
  "distinct lines dropped" "$((exact - got))" \
  "$(awk -v n="$exact" -v p="$final_fpr" 'BEGIN { printf "%.1f", n * p }')" "$final_fpr"
printf '%-34s %12s\n' "lines printed twice" "$dups_printed"

echo
echo "== filter: create -n $exact -p 0.01, add the URLs, check present and absent lines"
"$B" create "$W/seen.bloom" -n "$exact" -p 0.01 --seed 7
"$B" add "$W/seen.bloom" "$W/urls.txt"
present=$("$B" check -c "$W/seen.bloom" "$W/unique.txt" || true)
"$B" gen-urls --count 1000000 --offset 1000000000 --sequential > "$W/absent.txt"
fp=$("$B" check -c "$W/seen.bloom" "$W/absent.txt" || true)
printf '%-34s %12s of %s (no false negatives: must be all)\n' "known-present lines found" "$present" "$got"
printf '%-34s %12s of 1000000\n' "known-absent lines matched" "$fp"
awk -v fp="$fp" 'BEGIN { printf "%-34s %12.5f   (target 0.01)\n", "measured false-positive rate", fp / 1000000 }'

echo
echo "== bloomery info"
"$B" info "$W/seen.bloom"
if [ "$present" != "$got" ] || [ "$dups_printed" != 0 ]; then
  echo "demo: FAILED (false negatives or duplicate output)" >&2
  exit 1
fi
echo
echo "demo: OK"
