"""TDigest: RedisBloom's documented answers, accuracy within the k1 bound (fixed seed), edge
cases, merging, files, bytes and pickling."""

import math
import pickle
import random

import pytest

import bloomery


def digest(values, compression=100):
    t = bloomery.TDigest(compression)
    t.add_many(values)
    return t


def test_redisbloom_examples():
    t = digest([1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5], 1000)
    assert [t.cdf(x) for x in range(7)] == pytest.approx(
        [0, 1 / 30, 2 / 15, 0.3, 8 / 15, 5 / 6, 1], abs=1e-12
    )
    assert [t.by_rank(r) for r in range(16)] == [1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5, math.inf]
    assert [t.by_rev_rank(r) for r in range(16)] == [5, 5, 5, 5, 5, 4, 4, 4, 4, 3, 3, 3, 2, 2, 1, -math.inf]
    s = digest([10, 20, 30, 40, 50, 60], 1000)
    assert [s.rank(x) for x in range(0, 80, 10)] == [-1, 0, 1, 2, 3, 4, 5, 6]
    assert [s.rev_rank(x) for x in range(0, 80, 10)] == [6, 5, 4, 3, 2, 1, 0, -1]
    m = digest(range(1, 11))
    assert (m.trimmed_mean(0.1, 0.6), m.trimmed_mean(0.3, 0.9), m.trimmed_mean(0, 1)) == (4, 6.5, 5.5)


def test_accuracy_within_the_k1_bound():
    rng = random.Random(11)
    values = [rng.expovariate(1.0) for _ in range(50_000)]
    t = digest(values)
    ordered = sorted(values)
    n = len(ordered)
    for q in [0.001, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999]:
        x = t.quantile(q)
        # the true rank of the estimate, against one k1 unit around q (plus rounding)
        lo = sum(1 for v in ordered if v < x) / n
        bound = 2 * math.pi / 100 * math.sqrt(q * (1 - q) + (math.pi / 100) ** 2) + 2 / n
        assert abs(lo - q) <= bound, (q, x, lo, bound)
    assert t.quantiles([0.0, 0.5, 1.0]) == [t.min, t.quantile(0.5), t.max]
    assert (t.min, t.max, len(t)) == (ordered[0], ordered[-1], n)
    assert sum(w for _, w in t.centroids()) == n


def test_empty_and_bad_input():
    t = bloomery.TDigest()
    assert t.compression == 100
    assert math.isnan(t.min) and math.isnan(t.quantile(0.5)) and math.isnan(t.cdf(1))
    assert (t.rank(1), t.rev_rank(1)) == (-2, -2)
    assert math.isnan(t.by_rank(0))
    for bad in [math.nan, math.inf, -math.inf]:
        with pytest.raises(ValueError):
            t.add(bad)
    with pytest.raises(ValueError):
        t.add_many([1.0, math.nan])
    assert len(t) == 0, "nothing added when one value is refused"
    with pytest.raises(ValueError):
        bloomery.TDigest(0)
    with pytest.raises(MemoryError):
        bloomery.TDigest(300_000_000)


def test_merge_reset_files_and_pickle(tmp_path):
    a = digest(range(100), 50)
    b = digest(range(100, 300), 200)
    a.merge(b)
    assert (len(a), a.compression, a.min, a.max) == (300, 50, 0, 299)
    assert abs(a.quantile(0.5) - 149.5) <= 3
    path = tmp_path / "t.bloom"
    a.save(path)
    back = bloomery.TDigest.load(path)
    assert back == a and back.quantile(0.3) == a.quantile(0.3)
    assert type(bloomery.load(path)) is bloomery.TDigest
    assert bloomery.TDigest.from_bytes(a.to_bytes()) == a
    assert pickle.loads(pickle.dumps(a)) == a
    c = a.copy()
    c.reset()
    assert len(c) == 0 and len(a) == 300 and c != a
    assert "compression=50" in repr(a)
    with pytest.raises(bloomery.FormatError):
        bloomery.TDigest.from_bytes(bloomery.TopK(3).to_bytes())
