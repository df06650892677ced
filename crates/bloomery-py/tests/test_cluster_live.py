"""bloomery.cluster.ShardedBloomFilter against a live cluster: 6 redis-server primaries on
loopback ports, in cluster mode, with the bloomery module loaded; the CLI pushes a file made
by ``bloomery create -n -p`` (the salted layout at 1%, hashed by xxh3-64) or by ``bloomery
create --kind blocked-sectors`` in 6 shards, and redis-py's RedisCluster answers
``contains_many`` for members and non-members exactly as the local file does, before and
after ``add_many`` of the same keys to both.

Prints SKIP (and fails in CI) without redis-server, redis-cli, the module or redis-py."""

import shutil
import subprocess
import time

import pytest

import bloomery
from bloomery.cluster import ShardedBloomFilter

from conftest import _free_port, redis_module_path, skip_or_fail

NODES = 6


def _cli(port, *args):
    return subprocess.run(
        ["redis-cli", "-p", str(port), *map(str, args)], capture_output=True, text=True
    ).stdout


@pytest.fixture
def cluster(tmp_path):
    """The ports of 6 primaries of a fresh cluster with the module loaded."""
    for tool in ("redis-server", "redis-cli"):
        if shutil.which(tool) is None:
            skip_or_fail(f"{tool} is not installed (apt-get install redis-server redis-tools)")
    module = redis_module_path()
    if module is None:
        skip_or_fail("the Redis module is not built (cargo build -p bloomery-redis)")
    procs, ports = [], []
    try:
        for i in range(NODES):
            # the cluster bus listens on port + 10000: both must be free
            while True:
                port = _free_port()
                if port < 55535:
                    break
            d = tmp_path / f"n{i}"
            d.mkdir()
            log = open(d / "redis.log", "wb")
            procs.append(
                subprocess.Popen(
                    [
                        "redis-server",
                        "--port", str(port),
                        "--bind", "127.0.0.1",
                        "--dir", str(d),
                        "--save", "",
                        "--appendonly", "no",
                        "--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "5000",
                        "--loadmodule", str(module),
                    ],
                    stdout=log,
                    stderr=log,
                )
            )
            log.close()
            ports.append(port)
        deadline = time.time() + 20
        for port, p in zip(ports, procs):
            while _cli(port, "PING").strip() != "PONG":
                if time.time() > deadline or p.poll() is not None:
                    raise RuntimeError(f"redis-server on {port} did not start")
                time.sleep(0.05)
        subprocess.run(
            ["redis-cli", "--cluster", "create"]
            + [f"127.0.0.1:{p}" for p in ports]
            + ["--cluster-replicas", "0", "--cluster-yes"],
            check=True,
            capture_output=True,
        )
        deadline = time.time() + 30
        for port in ports:
            while "cluster_state:ok" not in _cli(port, "CLUSTER", "INFO"):
                if time.time() > deadline:
                    raise RuntimeError("the cluster did not become ready")
                time.sleep(0.1)
        yield ports
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.mark.parametrize(
    "kind, layout", [(None, "salted"), ("blocked-sectors", "sectors")], ids=["default", "sectors"]
)
def test_contains_many_on_a_live_cluster_answers_as_the_file(
    cluster, run_cli, tmp_path, kind, layout
):
    try:
        from redis.cluster import RedisCluster
    except ImportError:
        skip_or_fail("redis-py is not installed (pip install redis, in the test requirements)")
    members = [f"member-{i}" for i in range(15_000)]
    (tmp_path / "keys.txt").write_text("\n".join(members) + "\n")
    run_cli("create", "f.bloom", "-n", "20000", "-p", "0.01", *(["--kind", kind] if kind else []))
    assert bloomery.load(tmp_path / "f.bloom").info()["layout"] == layout
    run_cli("add", "f.bloom", "keys.txt")
    nodes = ",".join(f"127.0.0.1:{p}" for p in cluster[:2])
    run_cli("cluster", "push", "f.bloom", "--nodes", nodes, "--name", "live", "--shards", "6")

    client = RedisCluster(host="127.0.0.1", port=cluster[0])
    try:
        f = ShardedBloomFilter(client, "live")
        assert f.layout.shards == 6
        # every member, and non-members enough to meet about 100 false positives at 1%
        probes = members + [f"stranger-{i}" for i in range(10_000)]
        local = bloomery.load(tmp_path / "f.bloom")

        def same():
            got = f.contains_many(probes)
            want = [bool(x) for x in local.contains_many(probes)]
            assert len(got) == len(want)
            differ = [k for k, g, w in zip(probes, got, want) if g != w]
            assert not differ, f"{len(differ)} answers differ, e.g. {differ[:5]}"
            return got

        got = same()
        assert all(got[: len(members)])
        assert any(got[len(members):]), "no false positive among 10,000 at 1%: suspicious"
        # the same keys added to both
        late = [f"late-{i}" for i in range(1_000)]
        (tmp_path / "late.txt").write_text("\n".join(late) + "\n")
        run_cli("add", "f.bloom", "late.txt")
        f.add_many(late)
        local = bloomery.load(tmp_path / "f.bloom")
        probes += late + [f"late-{i}" for i in range(1_000, 3_000)]
        same()
    finally:
        client.close()
