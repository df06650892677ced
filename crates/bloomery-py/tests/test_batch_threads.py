"""Large batch queries are split over threads (BLOOMERY_THREADS, else the machine's cores):
the answers must equal one key at a time, in order, for every input kind, whatever the part
boundaries are relative to Arrow's chunks, slices and the package's internal chunks; the
first bad key (in key order) is the one reported.

The checks run in a child interpreter with BLOOMERY_THREADS=3, so that the split happens
(and with more threads than parts of some inputs) on any machine."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bloomery

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")

# more than 4 parts' worth of keys (a part is at least 65,536 keys): with 3 threads the
# batch is cut into 4 parts of 75,001 keys, boundaries that no internal chunk shares
N = 300_004


def check_all():
    assert bloomery._native._batch_threads() == 3
    keys = [f"https://example.org/k/{i:x}/page.html" for i in range(N)]
    for kind in ("blocked", "classic", "split-block"):
        f = bloomery.BloomFilter(N, 0.01, kind=kind)
        f.add_many(keys[::2])
        check_filter(f, keys)
    s = bloomery.ScalableBloomFilter(1000, 0.01)
    s.add_many(keys[: N // 3])
    check_filter(s, keys, arrow_types=False)
    u = bloomery.UrlFilter(10_000, 0.01)
    u.add_many(keys[:5000])
    probe = keys[:5000] + keys[N - 200_000 :]
    assert u.contains_many(probe).tolist() == [k in u for k in probe]


def check_filter(f, keys, arrow_types=True):
    want = [k in f for k in keys]
    assert 0 < sum(want) < len(keys)
    assert f.contains_many(keys).tolist() == want
    assert f.contains_many(tuple(keys)).tolist() == want
    assert f.contains_many(np.array(keys)).tolist() == want
    ints = np.arange(-1000, N - 1000, dtype=np.int64)
    assert f.contains_many(ints).tolist() == [int(i) in f for i in ints]
    if not arrow_types:
        assert f.contains_many(pa.array(keys)).tolist() == want
        return
    raw = [k.encode() for k in keys]
    width = max(map(len, raw))
    fixed = [k.ljust(width, b"#") for k in raw]
    for t in (pa.string(), pa.large_string(), pa.string_view(),
              pa.binary(), pa.large_binary(), pa.binary_view()):
        arr = pa.array(keys if "string" in str(t) else raw, type=t)
        got = f.contains_many(arr)
        assert got.dtype == np.bool_ and got.shape == (N,)
        assert got.tolist() == want, t
        # a slice (an offset into the buffers) whose parts start mid-chunk
        assert f.contains_many(arr[4097 : N - 3]).tolist() == want[4097 : N - 3], t
    fx = pa.array(fixed, type=pa.binary(width))
    assert f.contains_many(fx).tolist() == [k in f for k in fixed]
    # a chunked array whose chunks straddle the parts
    cuts = [0, 1, 70_000, 75_001, 75_002, 160_000, N]
    chunked = pa.chunked_array([keys[a:b] for a, b in zip(cuts, cuts[1:])])
    assert f.contains_many(chunked).tolist() == want
    # nulls outside a slice are not keys; nulls inside are reported, the first one in key
    # order even when a later part meets its own null first
    with_nulls = pa.array([None] + keys + [None])
    assert f.contains_many(with_nulls[1 : N + 1]).tolist() == want
    bad = keys[:]
    bad[200_000] = None
    bad[100_000] = None
    with pytest.raises(ValueError, match="element 100000 .* null"):
        f.contains_many(pa.array(bad))
    with pytest.raises(ValueError, match="element 100000 .* null"):
        f.contains_many(pa.chunked_array([bad[:90_000], bad[90_000:]]))
    with pytest.raises(TypeError, match="key 150000"):
        f.contains_many(keys[:150_000] + [1.5] + keys[150_001:])


def test_batch_queries_split_over_threads_answer_as_one_key_at_a_time():
    env = dict(os.environ, BLOOMERY_THREADS="3")
    here = Path(__file__).resolve().parent
    code = f"import sys; sys.path.insert(0, {str(here)!r}); import test_batch_threads as t; t.check_all()"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]


def test_small_batches_and_the_thread_setting():
    # the in-process setting is the machine's (or the environment's) and at least 1
    assert bloomery._native._batch_threads() >= 1
    f = bloomery.BloomFilter(1000, 0.01)
    f.add_many(["a", "b"])
    assert f.contains_many(pa.array(["a", "z", "b"])).tolist() == [True, "z" in f, True]
