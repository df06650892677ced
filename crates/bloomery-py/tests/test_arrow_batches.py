"""Batch inserts and queries over Arrow string/binary arrays (hashed straight from Arrow's
buffers by the library) and over lists of str (read with the GIL held, probed without it):
every answer and every filter equals what one key at a time gives, for sliced arrays, nulls,
large and binary types, chunked arrays and empty inputs."""

import pytest

import bloomery

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")

TYPES = (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())


def keys_of(n, tag="k"):
    # more keys than one internal chunk; an empty key, non-ASCII keys and repeats included
    ks = [f"{tag}-{i % (n - 50)}-\u00e9" if i % 9 == 0 else f"{tag}-{i}" for i in range(n)]
    ks[3] = ""
    return ks


def arr(keys, t):
    return pa.array(keys if t in (pa.string(), pa.large_string()) else [k.encode() for k in keys], type=t)


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_arrow_add_many_equals_per_key_adds(t):
    keys = keys_of(5000)
    for lo, hi in ((0, 5000), (1, 4999), (1023, 1026), (2500, 2500)):
        for kind in ("blocked", "classic", "split-block"):
            a = bloomery.BloomFilter(5000, 0.01, kind=kind)
            b = bloomery.BloomFilter(5000, 0.01, kind=kind)
            new = a.add_many(arr(keys, t)[lo:hi])
            for k in keys[lo:hi]:
                b.add(k)
            assert a == b and len(a) == len(b) == new, (kind, lo, hi)
    s = bloomery.ScalableBloomFilter(100, 0.01)  # grows inside the batch
    s2 = bloomery.ScalableBloomFilter(100, 0.01)
    s.add_many(arr(keys, t))
    for k in keys:
        s2.add(k)
    assert s == s2


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_arrow_contains_many_equals_in(t):
    f = bloomery.BloomFilter(5000, 0.01)
    keys = keys_of(6000)
    f.add_many(keys[::2])
    want = [k in f for k in keys]
    assert 3000 <= sum(want) < 3200
    a = arr(keys, t)
    assert f.contains_many(a).tolist() == want
    assert f.contains_many(a[777:5001]).tolist() == want[777:5001]
    assert f.contains_many(a[6000:]).tolist() == []
    chunked = pa.chunked_array([a[:1], a[1:1], a[1:4097], a[4097:]])
    assert f.contains_many(chunked).tolist() == want


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_arrow_nulls_refuse_the_whole_batch(t):
    keys = keys_of(3000)
    with_nulls = pa.array([None] + keys + [None, "x"], type=pa.string()).cast(t)
    f = bloomery.BloomFilter(5000, 0.01)
    # a null anywhere in the batch: ValueError naming it, and nothing inserted
    with pytest.raises(ValueError, match="element 3000 .* null"):
        f.add_many(with_nulls[1:])
    assert len(f) == 0 and f.approx_len() == 0
    with pytest.raises(ValueError, match="element 0 .* null"):
        f.add_many(pa.chunked_array([with_nulls[:1], with_nulls[1:2000]]).combine_chunks())
    with pytest.raises(ValueError, match="element 1999 .* null"):
        f.add_many(pa.chunked_array([with_nulls[1:2000], with_nulls[:1]]))
    assert len(f) == 0
    # the nulls outside a slice are not in it
    assert f.add_many(with_nulls[1:3001]) == len(set(keys))
    assert f.contains_many(with_nulls[1:3001]).all()
    with pytest.raises(ValueError, match="element 2 .* null"):
        f.contains_many(with_nulls[2999:3003])


def test_arrow_empty_inputs():
    f = bloomery.BloomFilter(100, 0.01)
    for t in TYPES:
        assert f.add_many(pa.array([], type=t)) == 0
        assert f.contains_many(pa.array([], type=t)).tolist() == []
        assert f.contains_many(pa.chunked_array([], type=t)).tolist() == []
        assert f.contains_many(pa.array(["a"], type=pa.string()).cast(t)[1:]).tolist() == []
    assert len(f) == 0


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_arrow_keys_for_the_other_structures_equal_per_key_calls(t):
    keys = keys_of(3000)
    a = arr(keys, t)[5:]
    c, c2 = bloomery.CountingBloomFilter(5000, 0.01), bloomery.CountingBloomFilter(5000, 0.01)
    c.add_many(a)
    for k in keys[5:]:
        c2.add(k)
    assert c == c2
    assert c.count_many(a).tolist() == [c.count(k) for k in keys[5:]]
    cf = bloomery.CuckooFilter(5000)
    cf.add_many(a)
    assert cf.contains_many(a).all() and len(cf) == len(keys) - 5
    x = bloomery.XorFilter(a)
    assert all(k in x for k in keys[5:]) and len(x) == len(set(keys[5:]))
    with pytest.raises(ValueError, match="element 1 .* null"):
        cf.add_many(pa.array(["a", None], type=pa.string()).cast(t))


class Index:
    """An int-like key whose __index__ empties the list being read."""

    def __init__(self, target, value):
        self.target, self.value = target, value

    def __index__(self):
        self.target.clear()
        return self.value


def test_list_contains_many_equals_in_and_survives_mutation():
    f = bloomery.BloomFilter(5000, 0.01)
    keys = keys_of(5000)
    f.add_many(keys[::2])
    mixed = keys + [b"k-2", bytearray(b"k-4"), 6, "x"]
    want = [k in f for k in mixed]
    assert f.contains_many(mixed).tolist() == want
    # Python code run for a key (an __index__) may change the list: the keys read so far keep
    # their answers, the batch ends where the list now ends, and nothing is read from freed
    # objects
    victim = [f"k-{i}" for i in range(10)]
    victim.insert(3, Index(victim, 42))
    f.add(42)
    got = f.contains_many(victim).tolist()
    assert got == [("k-0" in f), ("k-1" in f), ("k-2" in f), True]
