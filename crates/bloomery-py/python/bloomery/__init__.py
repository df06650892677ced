"""bloomery: the Bloom-filter family, with files shared by the CLI, the Redis module and Rust.

>>> import bloomery
>>> seen = bloomery.BloomFilter(1_000_000, 0.01)
>>> seen.add("https://example.org/")
True
>>> "https://example.org/" in seen
True

Keys are ``str`` (UTF-8), bytes-like, or ``int`` (its decimal text: ``42``, ``"42"`` and
``b"42"`` are one key), hashed exactly as the ``bloomery`` CLI and the Redis module hash them,
so a file made by ``bloomery add f.bloom words.txt`` answers the same in Python. See
``docs/PYTHON.md`` in the repository.
"""

from bloomery._native import (
    FORMAT_VERSION,
    BloomFilter,
    CountingBloomFilter,
    CountMinSketch,
    CuckooFilter,
    FormatError,
    FullError,
    ScalableBloomFilter,
    ShardLayout,
    TDigest,
    TopK,
    UrlFilter,
    XorFilter,
    __version__,
    load,
    max_memory,
    set_max_memory,
)

__all__ = [
    "FORMAT_VERSION",
    "BloomFilter",
    "CountingBloomFilter",
    "CountMinSketch",
    "CuckooFilter",
    "FormatError",
    "FullError",
    "ScalableBloomFilter",
    "ShardLayout",
    "TDigest",
    "TopK",
    "UrlFilter",
    "XorFilter",
    "__version__",
    "load",
    "max_memory",
    "set_max_memory",
]
