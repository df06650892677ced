"""One stream, the CLI and Python: the count window (`dedup --window 1000`, `create --kind
window` with `add`/`check`) and the time window (`dedup --window 10m --time-field`, with
bursts and an idle gap longer than the window) answer alike for every key in WindowFilter and
TimeWindowFilter. The same stream goes through the Redis module (a primary, its replica, an
AOF restart) in crates/bloomery-redis/tests/windows_alike.rs."""

import collections

import bloomery

LEN, RANGE, WINDOW, SPAN, P = 20_000, 3_000, 1_000, 600, 0.01
MASK = (1 << 64) - 1


def stream():
    """(epoch seconds, key): keys below RANGE from a fixed-seed LCG; time rises by 0-2 s a
    line, stands still for the first 400 lines of every 2,000 (bursts) and jumps by an hour
    at line 10,000 (the generator of windows_alike.rs)."""
    x, t, out = 0x5EED, 1_700_000_000, []
    for i in range(LEN):
        x = (x * 6_364_136_223_846_793_005 + 1_442_695_040_888_963_407) & MASK
        if i % 2000 >= 400:
            t += (x >> 60) % 3
        if i == LEN // 2:
            t += 3600
        out.append((t, f"key-{(x >> 33) % RANGE}"))
    return out


def probes():
    return [f"key-{i}" for i in range(RANGE)] + [f"never-{i}" for i in range(1000)]


def lines(items):
    return "".join(f"{s}\n" for s in items).encode()


def test_count_window_cli_and_python_answer_alike(run_cli, tmp_path):
    keys = [k for _, k in stream()]
    printed = run_cli(
        "dedup", "--window", WINDOW, "-p", P, "--state", "dw.bloom", input=lines(keys)
    ).stdout.decode().splitlines()
    run_cli("create", "w.bloom", "--kind", "window", "-n", WINDOW, "-p", P)
    for start in range(0, LEN, 7000):
        run_cli("add", "w.bloom", input=lines(keys[start : start + 7000]))
    found = set(run_cli("check", "w.bloom", input=lines(probes())).stdout.decode().split())

    f = bloomery.WindowFilter(window=WINDOW, fpr=P)
    mine = []
    for k in keys:
        if k not in f:
            mine.append(k)
        f.add(k)
    # dedup prints exactly the lines Python finds new, in order
    assert printed == mine
    # and a line whose key came within the previous window is never among them
    last, repeats = {}, 0
    for i, k in enumerate(keys):
        if k in last and i - last[k] <= WINDOW:
            repeats += 1
        last[k] = i
    assert repeats > 1000 and len(printed) <= LEN - repeats
    # every probe answers alike; the files are the same window
    assert f.contains_many(probes()).tolist() == [k in found for k in probes()]
    assert bloomery.WindowFilter.load(tmp_path / "w.bloom") == f
    assert bloomery.WindowFilter.load(tmp_path / "dw.bloom") == f
    g = bloomery.WindowFilter(window=WINDOW, fpr=P)
    g.add_many(keys)
    assert g == f and len(g) == LEN
    assert all(k in found for k in keys[-WINDOW:])


def test_time_window_cli_and_python_answer_alike(run_cli, tmp_path):
    s = stream()
    printed = run_cli(
        "dedup", "--window", "10m", "-f", 2, "--time-field", 1, "-n", 1000, "-p", P,
        "--state", "dt.bloom",
        input=lines(f"{t}\t{k}" for t, k in s),
    ).stdout.decode().splitlines()

    f = bloomery.TimeWindowFilter(SPAN, 1000, P)
    mine = []
    for t, k in s:
        if not f.contains(k, float(t)):
            mine.append(f"{t}\t{k}")
        f.add(k, float(t))
    assert printed == mine
    # within a burst (one second) a key is printed once; after the hour's gap the first line
    # is new again
    per_second = collections.Counter(printed)
    assert max(per_second.values()) == 1
    t, k = s[LEN // 2]
    assert f"{t}\t{k}" in printed
    # the CLI's state is Python's window; every probe answers alike inside the window, past
    # it and past window + slack
    cli = bloomery.TimeWindowFilter.load(tmp_path / "dt.bloom")
    assert cli == f
    end = float(s[-1][0])
    for at in (end, end + SPAN / 2, end + SPAN + 1, end + SPAN + f.slack + 1):
        ps = probes()
        assert cli.contains_many(ps, [at] * len(ps)).tolist() == [f.contains(p, at) for p in ps]
    recent = {k for t, k in s if t + SPAN >= end}
    assert len(recent) > 100
    assert all(cli.contains(k, end) for k in recent)
    # add_many with time stamps builds the same window
    g = bloomery.TimeWindowFilter(SPAN, 1000, P)
    g.add_many([k for _, k in s], [float(t) for t, _ in s])
    assert g == f
