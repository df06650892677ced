#!/usr/bin/env bash
# `bloomery add`, `count` and `remove` (where it exists) of N keys on a fresh counting-family file (counting
# and blocked counting sized for 10N keys at 1%, count-min 4 × 2^20), two CLI binaries
# alternating PAIRS times: wall-clock seconds per command (file load and atomic save
# included).
# Usage: [KINDS="counting dlcbf …"] benches/scripts/cli_counting_ab.sh OLD_BINARY NEW_BINARY [N] [PAIRS]
#   (default kinds: counting blocked-counting cms; any counting kind sized by -n/-p works)
set -euo pipefail
old=$1 new=$2 n=${3:-1000000} pairs=${4:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
seq 1 "$n" | sed 's/^/key-/' >"$dir/keys.txt"
now() { date +%s.%N; }
for kind in ${KINDS:-counting blocked-counting cms}; do
  for _ in $(seq "$pairs"); do
    for v in old new; do
      b=${!v}
      f="$dir/$v.bf"
      rm -f "$f"
      if [ "$kind" = cms ]; then
        "$b" create "$f" --kind cms --width 1048576 --depth 4 >/dev/null 2>&1
      else
        "$b" create "$f" --kind "$kind" -n $((10 * n)) -p 0.01 >/dev/null 2>&1
      fi
      s=$(now)
      "$b" add "$f" "$dir/keys.txt" 2>/dev/null
      m=$(now)
      "$b" count "$f" "$dir/keys.txt" >/dev/null
      e=$(now)
      rm_s=–
      if [ "$kind" != cms ]; then
        "$b" remove "$f" "$dir/keys.txt" 2>/dev/null
        rm_s=$(printf "%.2f s" "$(echo "$(now) - $e" | bc)")
      fi
      printf "%s %s: add %.2f s, count %.2f s, remove %s\n" "$kind" "$v" \
        "$(echo "$m - $s" | bc)" "$(echo "$e - $m" | bc)" "$rm_s"
    done
  done
done
