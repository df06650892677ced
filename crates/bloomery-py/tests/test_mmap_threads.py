"""open(): a filter larger than the process's memory budget answers queries from a read-only
map of its file. Threads: batches release the GIL, and concurrent use of one structure is
safe (a lock per object: mutations never interleave)."""

import subprocess
import sys
import threading
import time

import pytest

import bloomery

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """A 48 MB filter file (40M keys at 1%) holding 100,000 keys."""
    path = tmp_path_factory.mktemp("big") / "big.bloom"
    f = bloomery.BloomFilter(40_000_000, 0.01)
    f.add_many(np.arange(100_000))
    f.save(path)
    return path, f.nbytes


def test_open_serves_a_filter_over_the_library_budget(big_file):
    path, nbytes = big_file
    old = bloomery.max_memory()
    try:
        bloomery.set_max_memory(8 << 20)  # an 8 MiB budget for this process
        assert bloomery.max_memory() == 8 << 20
        with pytest.raises(MemoryError, match="exceeds the limit"):
            bloomery.BloomFilter.load(path)
        with pytest.raises(MemoryError):
            bloomery.BloomFilter(40_000_000, 0.01)
        f = bloomery.BloomFilter.open(path)
        assert f.read_only and f.nbytes == nbytes > 5 * (8 << 20)
        assert f.contains_many(np.arange(100_000)).all()
        assert 99_999 in f and "99999" in f
        assert f.contains_many(np.arange(10**9, 10**9 + 100_000)).mean() < 0.001
    finally:
        bloomery.set_max_memory(old)


def test_open_under_an_os_memory_limit(big_file):
    """A child process whose data segment (RLIMIT_DATA: heap and private memory) is capped
    below the file's size: open() answers, load() fails cleanly with MemoryError."""
    path, nbytes = big_file
    code = f"""
import sys
sys.modules['numpy'] = None  # answers as lists: NumPy's BLAS reserves memory of its own
import resource, bloomery
def vmdata():
    for line in open('/proc/self/status'):
        if line.startswith('VmData:'):
            return int(line.split()[1]) * 1024
cap = vmdata() + (16 << 20)
assert cap < {nbytes}, (cap, {nbytes})
resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
f = bloomery.BloomFilter.open({str(path)!r})
assert all(i in f for i in range(0, 100_000, 7))
assert sum(f.contains_many(list(range(100_000)))) == 100_000
try:
    bloomery.BloomFilter.load({str(path)!r})
    print('loaded?')
except MemoryError:
    print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok", out.stdout + out.stderr


def test_batches_release_the_gil():
    """Another Python thread runs while contains_many works on a NumPy array."""
    f = bloomery.BloomFilter(1_000_000, 0.01)
    keys = np.arange(3_000_000)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        # the spinner's rate when this thread does not hold the GIL
        c0, t0 = count[0], time.perf_counter()
        time.sleep(0.2)
        rate = (count[0] - c0) / (time.perf_counter() - t0)
        c0, t0 = count[0], time.perf_counter()
        f.contains_many(keys)
        n, took = count[0] - c0, time.perf_counter() - t0
    finally:
        stop.set()
        t.join()
    assert took > 0.02, took  # long enough to tell
    # holding the GIL, the call would let the spinner run only at the interpreter's
    # switch-interval boundaries (5 ms) around it, not for most of its duration
    assert n > 0.25 * rate * took, (n, rate * took)


def test_concurrent_adds_give_the_sequential_bits():
    parts = [[f"t{t}-{i}" for i in range(20_000)] for t in range(4)]
    seq = bloomery.BloomFilter(100_000, 0.01)
    for p in parts:
        seq.add_many(p)
    f = bloomery.BloomFilter(100_000, 0.01)
    errors = []

    def work(t):
        try:
            if t % 2:
                f.add_many(parts[t])
            else:
                for k in parts[t]:
                    f.add(k)
            assert f.contains_many(parts[t]).all()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # the same bits: their union has exactly as many ones as each
    u = f | seq
    assert u.fill_ratio == f.fill_ratio == seq.fill_ratio
    assert f.contains_many([k for p in parts for k in p]).all()


def test_concurrent_counting_is_exact():
    c = bloomery.CountingBloomFilter(50_000, 0.01, counter_bits=8)
    groups = [[f"g{g}-{i}" for i in range(5000)] for g in range(4)]

    def work(g):
        for _ in range(3):
            c.add_many(groups[g])
        for k in groups[g]:
            c.remove(k)
        c.remove_many(groups[g])

    threads = [threading.Thread(target=work, args=(g,)) for g in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(c) == 4 * 5000
    assert all((c.count_many(g) >= 1).all() for g in groups)


def test_opposite_merges_do_not_deadlock():
    a = bloomery.BloomFilter(100_000, 0.01, seed=3)
    b = bloomery.BloomFilter(100_000, 0.01, seed=3)
    a.add_many(range(1000))
    b.add_many(range(1000, 2000))
    done = []

    def merge(x, y):
        for _ in range(200):
            x |= y
            x.contains_many(np.arange(100))
        done.append(1)

    t1 = threading.Thread(target=merge, args=(a, b))
    t2 = threading.Thread(target=merge, args=(b, a))
    t1.start()
    t2.start()
    t1.join(60)
    t2.join(60)
    assert len(done) == 2, "merges in opposite directions must not wait for each other"
    assert a == b and a.contains_many(np.arange(2000)).all()
