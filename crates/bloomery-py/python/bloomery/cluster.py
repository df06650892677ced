"""One Bloom filter sharded over a Redis/Valkey Cluster running the bloomery module.

``bloomery cluster push FILE --nodes HOST:PORT --name NAME --shards S`` loads a blocked filter
file as S shards (ordinary ``BF`` values of the module, on keys whose hash tags spread them
over the cluster's slots) and a descriptor at NAME. :class:`ShardedBloomFilter` reads it
through a cluster client (redis-py's ``redis.cluster.RedisCluster``, or valkey-py's
``valkey.cluster.ValkeyCluster``) and answers every key exactly as the file does:

>>> from redis.cluster import RedisCluster                      # doctest: +SKIP
>>> from bloomery.cluster import ShardedBloomFilter              # doctest: +SKIP
>>> f = ShardedBloomFilter(RedisCluster(host="10.0.0.1", port=6379), "leaked")  # doctest: +SKIP
>>> f.contains_many(["alice@example.org", "bob@example.org"])   # doctest: +SKIP
[True, False]

Keys map to bytes as in the rest of the package (``str`` as UTF-8, bytes-like as is, ``int``
as its decimal text); the shard of a key comes from the library (:class:`bloomery.ShardLayout`),
so the CLI, Python and Rust route alike. The layout is described in docs/CLUSTER.md.
"""

from typing import Any, Dict, Iterable, List, Sequence, Tuple, Union

from bloomery import FormatError, ShardLayout

__all__ = ["ShardError", "ShardedBloomFilter"]

_Key = Union[str, bytes, bytearray, memoryview, int]

#: Keys sent per pipelined round (one command per shard, commands grouped by node).
BATCH = 16384


class ShardError(Exception):
    """A missing or mismatched shard, or a shard's error reply; the message names it."""


def _key_bytes(k: Any) -> bytes:
    if isinstance(k, bytes):
        return k
    if isinstance(k, str):
        return k.encode("utf-8")
    if isinstance(k, (bytearray, memoryview)):
        return bytes(k)
    if isinstance(k, int) and not isinstance(k, bool):
        return str(k).encode()
    raise TypeError(
        f"bloomery keys are str, bytes, bytearray, memoryview or int, not {type(k).__name__}"
    )


class ShardedBloomFilter:
    """The sharded filter ``name`` on a cluster ``client``.

    Opening reads the descriptor and checks every shard's header against it (one pipelined
    round: ``EXISTS`` and ``BF.SCANDUMP key 0`` per shard); a missing or mismatched shard
    raises :class:`ShardError` naming it (``check=False`` skips this).
    """

    def __init__(self, client: Any, name: Union[str, bytes], *, check: bool = True) -> None:
        self.client = client
        self.name = name
        raw = client.get(name)
        if raw is None:
            raise ShardError(f"no sharded filter named {name!r} (no key)")
        if isinstance(raw, str):
            raw = raw.encode("latin-1")
        try:
            self.layout = ShardLayout.from_bytes(raw)
        except FormatError as e:
            raise ShardError(f"{name!r} is not a valid sharded filter's descriptor: {e}") from e
        self.shard_keys: List[bytes] = self.layout.shard_keys(name)
        self._nodes = self._node_order()
        if check:
            self.check()

    def _what(self, s: int) -> str:
        return f"shard {s} of {self.name!r} (key {self.shard_keys[s]!r})"

    def _node_order(self) -> List[int]:
        """Shard indices ordered by the node that serves them (the pipeline's batches)."""
        node_of = getattr(self.client, "get_node_from_key", None)

        def node(s: int) -> str:
            if node_of is not None:
                n = node_of(self.shard_keys[s])
                return str(getattr(n, "name", n))
            return str(ShardLayout.key_slot(self.shard_keys[s]))

        return sorted(range(self.layout.shards), key=lambda s: (node(s), s))

    def check(self) -> List[Tuple[int, int]]:
        """Check every shard against the descriptor; returns each shard's (items, bytes)."""
        pipe = self.client.pipeline()
        for k in self.shard_keys:
            pipe.exists(k)
        for s, n in enumerate(pipe.execute()):
            if not n:
                raise ShardError(f"{self._what(s)} is missing")
        pipe = self.client.pipeline()
        for k in self.shard_keys:
            pipe.execute_command("BF.SCANDUMP", k, 0)
        out = []
        for s, reply in enumerate(pipe.execute(raise_on_error=False)):
            if isinstance(reply, Exception):
                raise ShardError(f"{self._what(s)}: {reply}")
            try:
                out.append(self.layout.check_shard_header(bytes(reply[1])))
            except FormatError as e:
                raise ShardError(f"{self._what(s)} does not match the descriptor: {e}") from e
        return out

    def _run(self, command: str, keys: Sequence[bytes]) -> List[bool]:
        out: List[bool] = [False] * len(keys)
        for start in range(0, len(keys), BATCH):
            part = keys[start : start + BATCH]
            per: Dict[int, List[int]] = {}
            for i, s in enumerate(self.layout.route(part)):
                per.setdefault(s, []).append(start + i)
            order = [s for s in self._nodes if s in per]
            pipe = self.client.pipeline()
            for s in order:
                pipe.execute_command(command, self.shard_keys[s], *(keys[i] for i in per[s]))
            for s, reply in zip(order, pipe.execute(raise_on_error=False)):
                if isinstance(reply, Exception):
                    raise ShardError(f"{self._what(s)}: {reply}")
                answers = list(reply)
                errors = [a for a in answers if isinstance(a, Exception)]
                if errors or len(answers) != len(per[s]):
                    why = errors[0] if errors else f"{len(answers)} answers for {len(per[s])} keys"
                    raise ShardError(f"{self._what(s)}: {why}")
                for i, a in zip(per[s], answers):
                    out[i] = bool(a)
        return out

    def contains_many(self, keys: Iterable[_Key]) -> List[bool]:
        """For each key, whether it may be in the filter (one BF.MEXISTS per shard, pipelined)."""
        return self._run("BF.MEXISTS", [_key_bytes(k) for k in keys])

    def add_many(self, keys: Iterable[_Key]) -> List[bool]:
        """Add keys (one BF.MADD per shard, pipelined); for each, whether it was new. A shard
        that holds its share of the capacity refuses further keys: ShardError naming it (the
        keys of the same round for the other shards, and this shard's keys before the refusal,
        were added)."""
        return self._run("BF.MADD", [_key_bytes(k) for k in keys])

    def __contains__(self, key: _Key) -> bool:
        return self.contains_many([key])[0]

    def add(self, key: _Key) -> bool:
        """Add one key; whether it was new."""
        return self.add_many([key])[0]

    def info(self) -> Dict[str, Any]:
        """The layout, and the shards' items and bytes as their headers say."""
        shards = self.check()
        items = [i for i, _ in shards]
        return {
            "name": self.name,
            "generation": self.layout.generation,
            "shards": self.layout.shards,
            "blocks_per_shard": self.layout.blocks_per_shard,
            "hashes": self.layout.hashes,
            "capacity": self.layout.capacity,
            "target_fpr": self.layout.target_fpr,
            "items": sum(items),
            "bytes": sum(b for _, b in shards),
            "current_fpr": self.layout.current_fpr(items),
            "shard_keys": list(self.shard_keys),
        }
