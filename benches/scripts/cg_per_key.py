#!/usr/bin/env python3
"""Instructions per key of each function in a cachegrind profile (deterministic, unlike time).

    valgrind --tool=cachegrind --cache-sim=no --demangle=no \
        --cachegrind-out-file=cg.out target/release/line_probe lib 100000 1 [P]
    python3 benches/scripts/cg_per_key.py cg.out 100000

Prints the executed instructions (Ir) of each function divided by the number of keys, largest
first. `line_probe lib` runs each phase (classic insert / contains, blocked counting insert /
count / remove) in its own function once over the keys, so a phase's instructions per key are
its function's row plus the rows of the library functions it calls (`avx2::*`,
`nibbles::*`, `insert_many_hashed` when not inlined). `--demangle=no` keeps the names of
generic instances apart; the hash suffix is dropped here.
"""
import re
import sys


def main() -> None:
    path, keys = sys.argv[1], int(sys.argv[2])
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 14
    per_fn: dict[str, int] = {}
    current = None
    with open(path) as f:
        for line in f:
            if line.startswith("fn="):
                current = line[3:].strip()
            elif current and line[:1].isdigit():
                parts = line.split()
                if len(parts) >= 2:
                    per_fn[current] = per_fn.get(current, 0) + int(parts[1])
    for name, ir in sorted(per_fn.items(), key=lambda x: -x[1])[:top]:
        print(f"{ir / keys:8.1f}  {re.sub(r'17h[0-9a-f]{16}E$', '', name)}")


if __name__ == "__main__":
    main()
