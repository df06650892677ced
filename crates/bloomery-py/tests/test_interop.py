"""Files shared with the real `bloomery` CLI, the Redis module (BLOOMERY.DUMP) and the Rust
library's golden files: the same keys give the same answers everywhere."""

import random

import pytest

import bloomery
from conftest import DATA, GOLDEN


def words(n, seed):
    """A realistic mixed list: words, accented words, numbers, URLs, an empty key."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = [""]
    for i in range(n):
        r = i % 5
        w = "".join(rng.choice(letters) for _ in range(rng.randint(3, 12)))
        if r == 0:
            out.append(w)
        elif r == 1:
            out.append(w + "\u00e9\u00df\u4e2d")
        elif r == 2:
            out.append(str(rng.randint(-(10**12), 10**12)))
        elif r == 3:
            out.append(f"https://{w}.example/{i}?q={rng.randint(0, 99)}")
        else:
            out.append(w.capitalize() + " " + w)
    return list(dict.fromkeys(out))


def write_lines(path, keys, crlf=False):
    end = "\r\n" if crlf else "\n"
    path.write_bytes("".join(k + end for k in keys).encode())


def cli_check(run_cli, f, keys, tmp_path):
    """The keys `bloomery check` prints as possibly present."""
    write_lines(tmp_path / "probe.txt", keys)
    p = run_cli("check", f, "probe.txt", check=False)
    assert p.returncode in (0, 1), p.stderr  # 1: no line matched, as grep
    return set(p.stdout.decode().split("\n")[:-1])


@pytest.mark.parametrize(
    "kind,seed",
    [("blocked", None), ("blocked", 99), ("classic", None), ("partitioned", 7), ("split-block", None), ("scalable", None)],
)
def test_cli_file_answers_like_the_cli(run_cli, tmp_path, kind, seed):
    keys = words(3000, 1)
    absent = [w for w in words(6000, 2) if w not in set(keys)]
    write_lines(tmp_path / "words.txt", keys, crlf=(kind == "classic"))
    extra = ["--seed", seed] if seed is not None else []
    n = 1000 if kind == "scalable" else 3000  # a scalable filter grows past 1000
    run_cli("create", "f.bloom", "-n", n, "-p", 0.01, "--kind", kind, *extra)
    run_cli("add", "f.bloom", "words.txt")
    f = bloomery.load(tmp_path / "f.bloom")
    want_cls = bloomery.ScalableBloomFilter if kind == "scalable" else bloomery.BloomFilter
    assert type(f) is want_cls
    assert f.kind == ("blocked" if kind == "blocked" else kind)
    # len() counts inserts that set a new bit, as the CLI's item count does
    info = run_cli("info", "--json", "f.bloom").stdout.decode()
    assert f'"items": {len(f)},' in info and len(keys) * 0.98 < len(f) <= len(keys)
    # the same filter built in Python is the same file, bit for bit
    if kind == "scalable":
        same = bloomery.ScalableBloomFilter(n, 0.01, seed=seed)
    else:
        same = bloomery.BloomFilter(n, 0.01, kind=kind, seed=seed)
    same.add_many(keys)
    if kind == "scalable":
        # the file also records the memory limit sub-filters may grow to, which the CLI
        # sets from --max-memory: the same filter, another limit
        assert same.info() == f.info()
        assert same.contains_many(absent).tolist() == f.contains_many(absent).tolist()
    else:
        assert same == f and same.to_bytes() == (tmp_path / "f.bloom").read_bytes()
    # zero false negatives, CRLF lines included (the CLI strips the line ending)
    assert all(k in f for k in keys)
    assert f.contains_many(keys).all()
    # absent keys: Python's answers, false positives included, are the CLI's
    py_hits = {k for k in absent if k in f}
    assert 0 < len(py_hits) < 0.05 * len(absent)
    assert cli_check(run_cli, "f.bloom", absent, tmp_path) == py_hits
    # the batch path answers the same
    assert {k for k, a in zip(absent, f.contains_many(absent)) if a} == py_hits


def test_python_file_answers_like_the_cli(run_cli, tmp_path):
    f = bloomery.BloomFilter(4000, 0.01, seed=5)
    keys = words(2000, 3)
    f.add_many(keys)
    ints = list(range(-500, 1500))
    f.update(ints)
    f.save(tmp_path / "py.bloom")
    probe = [w for w in words(5000, 4) if w not in set(keys)] + [str(i) for i in range(-600, 1600)]
    want = {k for k in probe if k in f}
    assert {str(i) for i in ints} <= want
    assert cli_check(run_cli, "py.bloom", probe, tmp_path) == want
    info = run_cli("info", "--json", "py.bloom").stdout.decode()
    assert '"seed_kind": "user"' in info and f'"items": {len(f)}' in info


def test_keyed_python_file_works_in_the_cli(run_cli, tmp_path):
    f = bloomery.BloomFilter(1000, 0.01, keyed=True)
    f.add_many(["secret-a", "secret-b", 7])
    f.save(tmp_path / "k.bloom")
    assert cli_check(run_cli, "k.bloom", ["secret-a", "secret-b", "7", "nope"], tmp_path) >= {"secret-a", "secret-b", "7"}
    assert bloomery.BloomFilter(1000, 0.01, keyed=True) != f  # another secret


def test_url_filter_files_are_shared(run_cli, tmp_path):
    urls = [f"https://host{i % 40}.example/dir{i % 9}/page{i}.html" for i in range(1500)]
    write_lines(tmp_path / "urls.txt", urls)
    run_cli("create", "u.bloom", "-n", 1500, "-p", 0.001, "--kind", "mlbf")
    run_cli("add", "u.bloom", "urls.txt")
    f = bloomery.load(tmp_path / "u.bloom")
    assert type(f) is bloomery.UrlFilter and f.layers == 4
    assert all(u in f for u in urls)
    # the same URL, spelled differently, is the same key
    assert "HTTPS://HOST3.example:443/dir3/page3.html#frag" in f
    probe = [f"https://other{i}.example/x/{i}" for i in range(1000)]
    assert cli_check(run_cli, "u.bloom", probe, tmp_path) == {u for u in probe if u in f}
    # and the other way round
    g = bloomery.UrlFilter(100, 0.01)
    g.add("http://example.org/a/b")
    g.save(tmp_path / "g.bloom")
    assert cli_check(run_cli, "g.bloom", ["http://example.org/a/b", "http://example.org/a/c"], tmp_path) == {
        "http://example.org/a/b"
    }


@pytest.mark.parametrize("kind", ["counting", "blocked-counting", "dlcbf", "spectral"])
def test_counting_files_count_like_the_cli(run_cli, tmp_path, kind):
    rng = random.Random(9)
    keys = words(800, 5)
    # at most 3 repeats: the d-left filter's 2-bit counters saturate at 3
    stream = [k for k in keys for _ in range(rng.randint(1, 3))]
    rng.shuffle(stream)
    write_lines(tmp_path / "s.txt", stream)
    run_cli("create", "c.bloom", "-n", 1000, "-p", 0.01, "--kind", kind)
    run_cli("add", "c.bloom", "s.txt")
    c = bloomery.load(tmp_path / "c.bloom")
    assert type(c) is bloomery.CountingBloomFilter and c.kind == kind
    probe = keys + [w for w in words(1600, 6) if w not in set(keys)]
    write_lines(tmp_path / "p.txt", probe)
    cli = [int(line.split(b"\t", 1)[0]) for line in run_cli("count", "c.bloom", "p.txt").stdout.splitlines()]
    assert [c.count(k) for k in probe] == cli
    assert c.count_many(probe).tolist() == cli
    truth = {k: stream.count(k) for k in keys}
    assert all(c.count(k) >= truth[k] for k in keys)
    # removals made in Python are seen by the CLI
    for k in keys[:100]:
        c.remove(k)
    c.save(tmp_path / "c.bloom")
    cli = [int(line.split(b"\t", 1)[0]) for line in run_cli("count", "c.bloom", "p.txt").stdout.splitlines()]
    assert [c.count(k) for k in probe] == cli


def test_count_min_files_are_shared(run_cli, tmp_path):
    stream = [f"user{i % 97}" for i in range(3000)]
    write_lines(tmp_path / "s.txt", stream)
    run_cli("create", "m.bloom", "--kind", "cms", "--width", 200, "--depth", 4)
    run_cli("add", "m.bloom", "s.txt")
    m = bloomery.load(tmp_path / "m.bloom")
    assert type(m) is bloomery.CountMinSketch and (m.width, m.depth, m.total) == (200, 4, 3000)
    probe = [f"user{i}" for i in range(150)]
    write_lines(tmp_path / "p.txt", probe)
    cli = [int(line.split(b"\t", 1)[0]) for line in run_cli("count", "m.bloom", "p.txt").stdout.splitlines()]
    assert m.query_many(probe).tolist() == cli
    assert all(m[f"user{i}"] >= stream.count(f"user{i}") for i in range(97))


def golden_keys():
    return [f"golden-{i}" for i in range(50)]


def absent_keys():
    return [f"absent-{i}" for i in range(200)]


@pytest.mark.parametrize(
    "file,cls",
    [
        ("classic.bloom", bloomery.BloomFilter),
        ("partitioned.bloom", bloomery.BloomFilter),
        ("blocked.bloom", bloomery.BloomFilter),
        ("blocked-sectors.bloom", bloomery.BloomFilter),
        ("blocked-keyed.bloom", bloomery.BloomFilter),
        ("split-block.bloom", bloomery.BloomFilter),
        ("scalable.bloom", bloomery.ScalableBloomFilter),
        ("classic-compressed.bloom", bloomery.BloomFilter),
    ],
)
def test_golden_set_files(run_cli, tmp_path, file, cls):
    path = GOLDEN / file
    f = cls.load(path)
    assert type(bloomery.load(path)) is cls
    assert all(k in f for k in golden_keys())
    absent = absent_keys()
    assert cli_check(run_cli, path, absent, tmp_path) == {k for k in absent if k in f}
    if "compressed" not in file:
        assert f.to_bytes() == path.read_bytes()  # re-encodes bit for bit
    assert cls.open(path).to_bytes() == f.to_bytes()


@pytest.mark.parametrize(
    "file,kind",
    [
        ("counting.bloom", "counting"),
        ("blocked-counting.bloom", "blocked-counting"),
        ("dleft.bloom", "dlcbf"),
        ("spectral-rm.bloom", "spectral"),
        ("iterative.bloom", "ibf"),
        ("space-code.bloom", "scbf"),
        ("count-min.bloom", "cms"),
    ],
)
def test_golden_counting_files_count_like_the_cli(run_cli, tmp_path, file, kind):
    path = GOLDEN / file
    c = bloomery.load(path)
    probe = golden_keys() + absent_keys()
    write_lines(tmp_path / "p.txt", probe)
    cli = [int(line.split(b"\t", 1)[0]) for line in run_cli("count", path, "p.txt").stdout.splitlines()]
    if kind == "cms":
        assert type(c) is bloomery.CountMinSketch
        assert c.query_many(probe).tolist() == cli
    else:
        assert type(c) is bloomery.CountingBloomFilter and c.kind == kind
        assert [c.count(k) for k in probe] == cli
    assert all(x > 0 for x in cli[:50])
    assert c.to_bytes() == path.read_bytes()


def test_golden_files_without_a_cli_kind():
    # pinned by the library's golden test (crates/bloomery/tests/golden.rs): the same
    # numbers prove the same hashing and decoding
    cf = bloomery.load(GOLDEN / "cuckoo.bloom")
    assert type(cf) is bloomery.CuckooFilter and cf.capacity == 32
    assert all(k in cf for k in golden_keys())
    assert sum(cf.count(k) for k in golden_keys()) == 103
    assert sum(cf.count(k) for k in absent_keys()) == 6
    x = bloomery.load(GOLDEN / "xor.bloom")
    assert type(x) is bloomery.XorFilter and len(x) == 50
    assert all(k in x for k in golden_keys())
    assert sum(k in x for k in absent_keys()) == 1
    assert bloomery.XorFilter.open(GOLDEN / "xor.bloom") == x
    t = bloomery.load(GOLDEN / "topk.bloom")
    assert type(t) is bloomery.TopK and (t.k, t.width, t.depth, t.decay) == (5, 16, 3, 0.9)
    assert t.total == sum(range(1, 51))
    assert sum(int(k.removeprefix("golden-")) + 1 for k, _ in t.list()) == 208
    assert sum(t.count(k) for k in golden_keys()) == 489
    u = bloomery.load(GOLDEN / "mlbf.bloom")
    assert type(u) is bloomery.UrlFilter and u.layers == 3
    urls = [f"http://host{i % 4}.example/dir{i % 7}/page{i}.html" for i in range(50)]
    assert all(x in u for x in urls)
    assert not any(f"http://host{i}.example/x/y{i}" in u for i in range(200))
    for f in (cf, x, t, u):
        assert f.to_bytes() == (GOLDEN / {bloomery.CuckooFilter: "cuckoo.bloom", bloomery.XorFilter: "xor.bloom", bloomery.TopK: "topk.bloom", bloomery.UrlFilter: "mlbf.bloom"}[type(f)]).read_bytes()


def test_kinds_without_a_python_class_are_named():
    with pytest.raises(TypeError, match="bbf structure has no Python class"):
        bloomery.load(GOLDEN / "breadth.bloom")


def redis_dump_keys():
    return [f"redis-{i}" for i in range(300)] + [str(i) for i in range(-50, 50)]


def test_redis_dump_golden_loads():
    """A BLOOMERY.DUMP reply saved from the Redis module (tests/data/README.md)."""
    f = bloomery.ScalableBloomFilter.from_bytes((DATA / "redis-bf.dump").read_bytes())
    assert all(k in f for k in redis_dump_keys())
    assert all(i in f for i in range(-50, 50))  # BF.ADD key 42 and Python's 42: one key
    assert f.filters >= 2  # grew from capacity 100
    assert sum(f"absent-{i}" in f for i in range(2000)) < 2000 * 0.01 * 3
    c = bloomery.CuckooFilter.from_bytes((DATA / "redis-cf.dump").read_bytes())
    assert all(k in c for k in redis_dump_keys())


def test_redis_module_live(redis, tmp_path):
    keys = redis_dump_keys()
    assert redis("BF.RESERVE", "bf", "0.01", "100") == "OK"
    redis("BF.MADD", "bf", *keys)
    dump = redis("BLOOMERY.DUMP", "bf")
    f = bloomery.ScalableBloomFilter.from_bytes(dump)
    assert all(k in f for k in keys) and 42 in f and -7 in f
    probe = [f"absent-{i}" for i in range(3000)]
    assert redis("BF.MEXISTS", "bf", *probe) == [int(p in f) for p in probe]
    (tmp_path / "bf.bloom").write_bytes(dump)
    assert type(bloomery.load(tmp_path / "bf.bloom")) is bloomery.ScalableBloomFilter

    # a filter made in Python, sent to Redis through SCANDUMP's chunk protocol
    g = bloomery.ScalableBloomFilter(200, 0.01, growth=2)
    g.add_many([f"py-{i}" for i in range(1000)])
    b = g.to_bytes()
    header = int.from_bytes(b[12:16], "little")
    assert redis("BF.LOADCHUNK", "g", header, b[:header]) == "OK"
    assert redis("BF.LOADCHUNK", "g", len(b), b[header:]) == "OK"
    probe = [f"py-{i}" for i in range(1000)] + [f"np-{i}" for i in range(2000)]
    assert redis("BF.MEXISTS", "g", *probe) == [int(p in g) for p in probe]
    assert redis("BLOOMERY.DUMP", "g") == b

    # sketches
    redis("CMS.INITBYDIM", "cms", 500, 4)
    redis("CMS.INCRBY", "cms", "a", 5, "b", 2, "42", 3)
    m = bloomery.CountMinSketch.from_bytes(redis("BLOOMERY.DUMP", "cms"))
    assert (m["a"], m["b"], m[42]) == tuple(redis("CMS.QUERY", "cms", "a", "b", "42"))
    redis("TOPK.RESERVE", "tk", 3, 50, 4, 0.9)
    for k in ["x"] * 10 + ["y"] * 5 + ["z"] * 3 + ["w"]:
        redis("TOPK.ADD", "tk", k)
    t = bloomery.TopK.from_bytes(redis("BLOOMERY.DUMP", "tk"))
    listed = redis("TOPK.LIST", "tk", "WITHCOUNT")
    assert [(k, c) for k, c in t.list(decode=False)] == list(zip(listed[::2], listed[1::2]))
    redis("CF.RESERVE", "cf", 1000)
    for k in keys:
        redis("CF.ADD", "cf", k)
    c = bloomery.CuckooFilter.from_bytes(redis("BLOOMERY.DUMP", "cf"))
    assert all(k in c for k in keys) and len(c) == len(keys)
