"""WindowFilter (the last N adds) and TimeWindowFilter (the last T seconds): no false negative
inside the window, the target rate on a long stream, timestamps given or not, files shared
with the CLI."""

import math
import pickle
import random

import pytest

import bloomery


def fresh(n, seed):
    r = random.Random(seed)
    return [f"fresh-{r.getrandbits(64)}" for _ in range(n)]


def bound(q, p):
    """Expected false positives of q fresh keys at rate p, plus three standard deviations."""
    return q * p + 3 * math.sqrt(q * p * (1 - p))


def test_window_filter_remembers_the_window_and_keeps_the_rate():
    window, p = 1000, 0.01
    f = bloomery.WindowFilter(window=window, fpr=p, seed=7)
    assert (f.window, f.worst_fpr <= p) == (window, True)
    fp = q = 0
    stream = [f"k{i}" for i in range(100 * window)]
    for start in range(0, len(stream), 500):
        f.add_many(stream[start : start + 500])
        end = start + 500
        # every key of the last `window` adds is found
        assert all(f.contains_many(stream[max(0, end - window) : end]))
        probes = fresh(300, end)
        fp += sum(f.contains_many(probes))
        q += len(probes)
    assert fp <= bound(q, p), (fp, q)
    # keys followed by window + slack adds are found only as false positives
    old = stream[: len(stream) - window - f.slack - 1]
    found = sum(f.contains_many(old[-5000:]))
    assert found <= bound(5000, p)
    assert len(f) == len(stream)
    assert "k0" not in f or found > 0


def test_window_filter_files_and_copies():
    f = bloomery.WindowFilter(500, 0.001, seed=3)
    for i in range(2000):
        f.add(i)
    g = bloomery.WindowFilter.from_bytes(f.to_bytes())
    assert g == f and pickle.loads(pickle.dumps(f)) == f
    assert g.contains_many(range(1500, 2000)).all()
    with pytest.raises(ValueError):
        bloomery.WindowFilter(0, 0.01)


def test_blocked_window_filter_remembers_the_window_and_keeps_the_rate():
    window, p = 2000, 0.01
    f = bloomery.WindowFilter(window=window, fpr=p, seed=5, blocked=True)
    assert f.blocked and not bloomery.WindowFilter(window, p).blocked
    assert f.worst_fpr <= p
    assert "blocked" in repr(f)
    fp = q = 0
    stream = [f"b{i}" for i in range(50 * window)]
    for start in range(0, len(stream), 1000):
        f.add_many(stream[start : start + 1000])
        end = start + 1000
        # every key of the last `window` adds is found
        assert all(f.contains_many(stream[max(0, end - window) : end]))
        probes = fresh(400, end)
        fp += sum(f.contains_many(probes))
        q += len(probes)
    assert fp <= bound(q, p), (fp, q)
    # the file keeps the layout (kind window-blocked, id 30) and the point in the stream
    data = f.to_bytes()
    assert int.from_bytes(data[10:12], "little") == 30
    g = bloomery.WindowFilter.from_bytes(data)
    assert g == f and g.blocked and pickle.loads(pickle.dumps(f)) == f
    f.add("one more")
    g.add("one more")
    assert g == f


def test_time_window_with_timestamps_bursts_and_gaps():
    window = 60.0
    f = bloomery.TimeWindowFilter(window, capacity=1000, fpr=0.01, seed=11)
    r = random.Random(5)
    t, key, recent = 1_700_000_000.0, 0, []
    for step in range(400):
        # a steady trickle, a burst of 20x the capacity, a silence longer than the window
        if step == 150:
            burst = [f"b{i}" for i in range(20_000)]
            f.add_many(burst, [t] * len(burst))
            recent += [(k, t) for k in burst]
        if step == 250:
            t += 3 * window
        keys = [f"k{key + i}" for i in range(50)]
        times = [t + i * 0.01 for i in range(50)]
        f.add_many(keys, times)
        recent += list(zip(keys, times))
        key += 50
        t += r.uniform(0.5, 2.0)
        recent = [(k, s) for k, s in recent if t - s <= window]
        ks = [k for k, _ in recent]
        assert all(f.contains_many(ks, [t] * len(ks))), step
    probes = fresh(20_000, 1)
    fp = sum(f.contains_many(probes, [t] * len(probes)))
    assert fp <= bound(20_000, 0.01)
    assert f.current_fpr(t) <= 0.01
    # everything leaves after window + slack
    later = t + window + f.slack + 1
    f.advance(later)
    assert not any(f.contains_many(ks, [later] * len(ks)))
    assert f.recent(later) == 0


def test_time_window_defaults_to_now_and_shares_files():
    f = bloomery.TimeWindowFilter(3600, 1000, 0.01, seed=1)
    f.add("a")
    assert "a" in f and f.contains("a")
    f.add_many(["b", "c"])
    assert f.contains_many(["a", "b", "c", "zzz"]).tolist()[:3] == [True, True, True]
    g = bloomery.TimeWindowFilter.from_bytes(f.to_bytes())
    assert g == f and g.window == 3600.0
    with pytest.raises(ValueError):
        f.add_many(["x", "y"], [1.0])
    with pytest.raises(ValueError):
        f.add("x", -5.0)


def test_time_window_files_from_the_cli(run_cli, tmp_path):
    (tmp_path / "keys.txt").write_text("".join(f"key-{i}\n" for i in range(300)))
    run_cli("create", "t.bloom", "--kind", "window", "-n", 1000, "-p", 0.01, "--window", "1h")
    run_cli("add", "t.bloom", "keys.txt")
    f = bloomery.TimeWindowFilter.load(tmp_path / "t.bloom")
    assert f.window == 3600.0 and len(f) == 300
    # added by the CLI moments ago: inside the hour now
    assert f.contains_many([f"key-{i}" for i in range(300)]).all()
    # and the CLI reads a Python file
    f.add_many([f"py-{i}" for i in range(100)])
    f.save(tmp_path / "p.bloom")
    (tmp_path / "py.txt").write_text("".join(f"py-{i}\n" for i in range(100)))
    out = run_cli("check", "p.bloom", "py.txt").stdout.decode().split()
    assert len(out) == 100
