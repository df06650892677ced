"""Cross-engine checks of `bloomery parquet` (run by scripts/test-parquet-engines.sh).

1. Files written by pyarrow (bloom_filter_options) and by DuckDB (its default filters on
   dictionary-encoded columns): `bloomery parquet check --json` answers, per row group, exactly
   what DuckDB's `parquet_bloom_probe` answers, for present and absent values of INT64, INT32
   and string columns.
2. Files without filters, rewritten by `bloomery parquet index --rewrite`: pyarrow and DuckDB
   read the same rows as from the original, and DuckDB's `parquet_bloom_probe` reads the new
   filters: every present value may be there, and absent values get bloomery's answers.

Prints one line per check and closes with "N passed, M failed"; exits 1 on any failure.
"""

import json
import os
import subprocess
import sys
import tempfile

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

BIN = os.environ.get("BLOOMERY", "target/debug/bloomery")
ROWS = 6000
RG = 2000
passed = failed = 0


def ok(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok      {what}")
    else:
        failed += 1
        print(f"FAILED  {what}")


def bloomery(*args):
    r = subprocess.run([BIN, *args], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"bloomery {' '.join(args)}: status {r.returncode}: {r.stderr}")
    return r


def ours(path, column, keys):
    """{key: set of row groups that may hold it} from `bloomery parquet check --json`."""
    r = bloomery("parquet", "check", path, "--column", column, "--json", "-q",
                 *[f"--key={k}" for k in keys])
    out = {str(k): set() for k in keys}
    for f in json.loads(r.stdout)["files"]:
        for rg in f["row_groups"]:
            if rg["filter"] is None:
                raise SystemExit(f"{path}: row group {rg['row_group']} of {column} has no filter")
            for k in rg["matches"]:
                out[k].add(rg["row_group"])
    return out


def duck(path, column, keys, sql_type):
    """{key: set of row groups that may hold it} from DuckDB's parquet_bloom_probe."""
    out = {}
    con = duckdb.connect()
    for k in keys:
        rows = con.execute(
            f"SELECT row_group_id, bloom_filter_excludes FROM parquet_bloom_probe(?, ?, ?::{sql_type})",
            [path, column, k],
        ).fetchall()
        out[str(k)] = {rg for rg, excluded in rows if not excluded}
    return out


def compare(label, path, column, present, absent, sql_type):
    keys = present + absent
    a, b = ours(path, column, keys), duck(path, column, keys, sql_type)
    diff = [k for k in map(str, keys) if a[k] != b[k]]
    ok(not diff, f"{label}: {column}: {len(keys)} keys, bloomery == DuckDB parquet_bloom_probe"
       + (f" (differ: {diff[:5]})" if diff else ""))
    misses = [k for k in map(str, present) if not a[k]]
    ok(not misses, f"{label}: {column}: every present value found ({len(present)})")


def main():
    d = tempfile.mkdtemp(prefix="bloomery-engines-")
    ids = list(range(0, ROWS * 3, 3))
    table = pa.table({
        "id": pa.array(ids, pa.int64()),
        "code": pa.array([i % 997 for i in ids], pa.int32()),
        "name": [f"user-{i}" for i in ids],
    })
    present_ids = ids[::37]
    absent_ids = [i * 3 + 1 for i in range(0, 400)]
    present_names = [f"user-{i}" for i in present_ids]
    absent_names = [f"user-{i}" for i in absent_ids]

    # 1a. pyarrow with bloom filters
    pa_path = os.path.join(d, "pyarrow.parquet")
    pq.write_table(table, pa_path, row_group_size=RG, bloom_filter_options={
        "id": {"ndv": RG, "fpp": 0.01}, "name": {"ndv": RG, "fpp": 0.01},
        "code": {"ndv": 997, "fpp": 0.05}})
    compare("pyarrow", pa_path, "id", present_ids, absent_ids, "BIGINT")
    compare("pyarrow", pa_path, "name", present_names, absent_names, "VARCHAR")
    compare("pyarrow", pa_path, "code", list(range(0, 997, 13)), [-1, -5, 2000, 5000], "INTEGER")

    # 1b. DuckDB's own filters (on dictionary-encoded columns: few distinct values)
    dd_path = os.path.join(d, "duckdb.parquet")
    duckdb.execute(
        f"COPY (SELECT (range * 3)::BIGINT AS id, ((range * 3) % 97)::INTEGER AS code, "
        f"'user-' || (range * 3) AS name FROM range({ROWS})) "
        f"TO '{dd_path}' (FORMAT parquet, ROW_GROUP_SIZE {RG})")
    info = json.loads(bloomery("parquet", "info", dd_path, "--json").stdout)
    with_filter = {c["column"] for rg in info["row_groups"] for c in rg["columns"] if c["filter"]}
    ok("code" in with_filter, f"duckdb: columns with filters: {sorted(with_filter)}")
    for col in sorted(with_filter):
        if col == "code":
            compare("duckdb", dd_path, "code", list(range(0, 97, 3)), [-1, 97, 2000, 5000], "INTEGER")
        elif col == "name":
            compare("duckdb", dd_path, "name", present_names, absent_names, "VARCHAR")
        elif col == "id":
            compare("duckdb", dd_path, "id", present_ids, absent_ids, "BIGINT")

    # 2. files without filters, rewritten with them
    for label, src in [("pyarrow", "plain-pyarrow.parquet"), ("duckdb", "plain-duckdb.parquet")]:
        src = os.path.join(d, src)
        if label == "pyarrow":
            pq.write_table(table, src, row_group_size=RG)
        else:
            duckdb.execute(
                f"COPY (SELECT (range * 3)::BIGINT AS id, 'user-' || (range * 3) AS name "
                f"FROM range({ROWS})) TO '{src}' (FORMAT parquet, ROW_GROUP_SIZE {RG}, "
                f"COMPRESSION zstd)")
        out = src.replace(".parquet", "-bf.parquet")
        r = subprocess.run([BIN, "parquet", "index", src, "--column", "id", "--rewrite", out],
                           capture_output=True, text=True)
        ok(r.returncode == 0, f"rewrite {label}: {r.stderr.strip()}")
        if r.returncode != 0:
            continue
        ok(pq.read_table(src).equals(pq.read_table(out)), f"rewrite {label}: pyarrow reads the same table")
        q = "SELECT * FROM read_parquet(?) ORDER BY ALL"
        ok(duckdb.execute(q, [src]).fetchall() == duckdb.execute(q, [out]).fetchall(),
           f"rewrite {label}: DuckDB reads the same rows")
        meta = pq.ParquetFile(out).metadata
        ok(meta.num_row_groups == pq.ParquetFile(src).metadata.num_row_groups,
           f"rewrite {label}: same row groups")
        compare(f"rewrite {label}", out, "id", present_ids, absent_ids, "BIGINT")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
