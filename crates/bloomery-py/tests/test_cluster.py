"""bloomery.cluster.ShardedBloomFilter against an in-process stand-in for a cluster client:
6 nodes owning equal slot ranges, shard values loaded from the module's BF bytes that the
library splits from a file made by the CLI. Every key answers as the file does; commands
reach the node that owns their key's slot, one batch per node; missing and mismatched shards
are errors naming them. (A live cluster is exercised by the CLI's tests/cluster.rs.)"""

import pytest

import bloomery
from bloomery import ShardLayout
from bloomery.cluster import ShardedBloomFilter, ShardError

NODES = 6


def _b(x):
    """A command argument as redis-py encodes it."""
    if isinstance(x, str):
        return x.encode()
    if isinstance(x, int):
        return str(x).encode()
    return bytes(x)


class FakeNode:
    def __init__(self, i):
        self.name = f"127.0.0.1:{7000 + i}"
        self.lo = 16384 * i // NODES
        self.hi = 16384 * (i + 1) // NODES - 1


class FakeCluster:
    """What ShardedBloomFilter uses of redis-py's RedisCluster: get, get_node_from_key and a
    pipeline whose execute(raise_on_error=False) returns error replies as exceptions."""

    def __init__(self):
        self.nodes = [FakeNode(i) for i in range(NODES)]
        self.strings = {}
        self.filters = {}
        self.rounds = []  # per pipeline execute: the node of each command, in order

    def node_of_slot(self, slot):
        return next(n for n in self.nodes if n.lo <= slot <= n.hi)

    def get_node_from_key(self, key):
        return self.node_of_slot(ShardLayout.key_slot(_b(key)))

    def get(self, key):
        return self.strings.get(_b(key))

    def pipeline(self):
        return FakePipe(self)

    def run(self, args):
        cmd, key, rest = args[0].upper(), _b(args[1]), [_b(a) for a in args[2:]]
        if cmd == "EXISTS":
            return int(key in self.filters or key in self.strings)
        f = self.filters.get(key)
        if cmd == "BF.SCANDUMP":
            if f is None:
                return RuntimeError("ERR not found")
            b = f.to_bytes()
            return [512, b[:512]]
        if cmd == "BF.MEXISTS":
            return [int(k in f) if f is not None else 0 for k in rest]
        if cmd == "BF.MADD":
            return [int(bool(f.add(k))) for k in rest]
        raise AssertionError(cmd)


class FakePipe:
    def __init__(self, cluster):
        self.c = cluster
        self.cmds = []

    def exists(self, key):
        self.cmds.append(("EXISTS", key))

    def execute_command(self, *args):
        self.cmds.append(args)

    def execute(self, raise_on_error=True):
        self.c.rounds.append([self.c.get_node_from_key(a[1]).name for a in self.cmds])
        out = [self.c.run(a) for a in self.cmds]
        if raise_on_error:
            for r in out:
                if isinstance(r, Exception):
                    raise r
        return out


@pytest.fixture
def pushed(run_cli, tmp_path):
    """A 30,000-key blocked file (positions layout) and a fake cluster holding it in 6 shards."""
    members = [f"key-{i}" for i in range(20_000)]
    (tmp_path / "keys.txt").write_text("\n".join(members) + "\n")
    run_cli("create", "f.bloom", "-n", "30000", "-p", "0.01", "--hashes", "7")
    run_cli("add", "f.bloom", "keys.txt")
    path = tmp_path / "f.bloom"
    layout = ShardLayout.of_file(path, 6)
    c = FakeCluster()
    c.strings[b"users"] = layout.to_bytes()
    for s, k in enumerate(layout.shard_keys("users")):
        c.filters[k] = bloomery.ScalableBloomFilter.from_bytes(layout.shard_bytes(path, s))
    return c, path, layout


def test_answers_as_the_file(pushed):
    c, path, layout = pushed
    f = ShardedBloomFilter(c, "users")
    local = bloomery.load(path)
    probes = [f"key-{i}" for i in range(10_000, 60_000)] + [b"key-3", 42, bytearray(b"key-7")]
    got = f.contains_many(probes)
    want = [bool(x) for x in local.contains_many(probes)]
    assert got == want
    assert sum(got[:10_000]) == 10_000  # the members among the probes
    assert "key-5" in f
    # ints are their decimal text, as redis-py sends them
    assert f.contains_many([42]) == f.contains_many(["42"]) == f.contains_many([b"42"])


def test_commands_reach_their_node_one_batch_per_node(pushed):
    c, _, layout = pushed
    f = ShardedBloomFilter(c, "users")
    c.rounds.clear()
    f.contains_many([f"q-{i}" for i in range(5_000)])
    (nodes,) = c.rounds
    assert len(nodes) == 6  # one command per shard
    # grouped: each node's commands are consecutive
    seen = [n for i, n in enumerate(nodes) if i == 0 or nodes[i - 1] != n]
    assert len(seen) == len(set(nodes))
    # shards sit on 6 distinct, evenly spread slots
    slots = sorted(ShardLayout.key_slot(k) for k in layout.shard_keys("users"))
    assert len(set(slots)) == 6
    gaps = [(b - a) % 16384 for a, b in zip(slots, slots[1:] + slots[:1])]
    assert set(gaps) <= {2730, 2731}


def test_add_many_then_contains(pushed):
    c, path, _ = pushed
    f = ShardedBloomFilter(c, "users")
    new = [f"new-{i}" for i in range(1_000)]
    before = f.contains_many(new)
    added = f.add_many(new)
    assert added == [not b for b in before]  # a key already reported present is not new
    assert all(f.contains_many(new))
    info = f.info()
    assert info["shards"] == 6 and info["generation"] == 1
    assert 0 < info["current_fpr"] < 0.02


def test_routing_matches_the_library_and_keys(pushed):
    _, _, layout = pushed
    keys = [f"k{i}" for i in range(1000)]
    assert layout.route(keys) == [layout.shard_of(k) for k in keys]
    assert all(0 <= s < 6 for s in layout.route(keys))
    assert layout.shard_key("users", 2) == layout.shard_keys("users")[2]
    assert layout.shard_keys("users")[0].endswith(b"users:g1:s0")
    assert ShardLayout.from_bytes(layout.to_bytes()).to_bytes() == layout.to_bytes()
    with pytest.raises(TypeError):
        layout.route([1.5])


def test_missing_and_mismatched_shards_are_named(pushed):
    c, _, layout = pushed
    k3 = layout.shard_keys("users")[3]
    saved = c.filters.pop(k3)
    with pytest.raises(ShardError, match=r"shard 3 of 'users' .* is missing"):
        ShardedBloomFilter(c, "users")
    c.filters[k3] = bloomery.ScalableBloomFilter(1000, 0.01, scaling=False)
    with pytest.raises(ShardError, match=r"shard 3 of 'users' .* does not match"):
        ShardedBloomFilter(c, "users")
    c.filters[k3] = saved
    ShardedBloomFilter(c, "users")
    with pytest.raises(ShardError, match="no sharded filter named 'nothing'"):
        ShardedBloomFilter(c, "nothing")
    c.strings[b"bad"] = b"BLMSHARD" + bytes(69)
    with pytest.raises(ShardError, match="not a valid sharded filter's descriptor"):
        ShardedBloomFilter(c, "bad")
    with pytest.raises(bloomery.FormatError):
        ShardLayout.from_bytes(b"garbage")
