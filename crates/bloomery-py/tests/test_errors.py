"""Bad parameters, bad files and misuse raise Python exceptions with the library's message:
ValueError, MemoryError, OSError (its errno subclass, with the filename),
bloomery.FormatError, io.UnsupportedOperation; never a crash."""

import io
import math
import os

import pytest

import bloomery


def test_format_error_is_a_value_error():
    assert issubclass(bloomery.FormatError, ValueError)
    assert issubclass(bloomery.FullError, Exception)


@pytest.mark.parametrize("fpr", [math.nan, 0.0, 1.0, -0.5, 1.5, math.inf])
def test_bad_fpr(fpr):
    with pytest.raises(ValueError, match="fpr"):
        bloomery.BloomFilter(1000, fpr)
    with pytest.raises(ValueError, match="fpr"):
        bloomery.ScalableBloomFilter(1000, fpr)
    with pytest.raises(ValueError):
        bloomery.CountingBloomFilter(1000, fpr)
    with pytest.raises(ValueError):
        bloomery.UrlFilter(1000, fpr)


@pytest.mark.parametrize("cap", [0, -1, -(2**70), 2**64, 1.5, math.nan, math.inf, -3.0])
def test_bad_capacity_value(cap):
    for make in (
        lambda: bloomery.BloomFilter(cap, 0.01),
        lambda: bloomery.CountingBloomFilter(cap, 0.01),
        lambda: bloomery.CuckooFilter(cap),
        lambda: bloomery.UrlFilter(cap, 0.01),
        lambda: bloomery.ScalableBloomFilter(cap, 0.01),
    ):
        with pytest.raises(ValueError, match="capacity"):
            make()


@pytest.mark.parametrize("cap", ["100", None, True, [100]])
def test_bad_capacity_type(cap):
    with pytest.raises(TypeError):
        bloomery.BloomFilter(cap, 0.01)


def test_float_capacity_with_a_whole_value_is_accepted():
    assert bloomery.BloomFilter(1e6, 0.01).capacity == 1_000_000


def test_bad_options():
    with pytest.raises(ValueError, match="unknown kind"):
        bloomery.BloomFilter(100, 0.01, kind="bogus")
    with pytest.raises(ValueError, match="not both"):
        bloomery.BloomFilter(100, 0.01, seed=1, keyed=True)
    with pytest.raises(OverflowError):
        bloomery.BloomFilter(100, 0.01, seed=-1)
    with pytest.raises(ValueError, match="unknown kind"):
        bloomery.CountingBloomFilter(100, 0.01, kind="cms")
    with pytest.raises(ValueError):
        bloomery.CountingBloomFilter(100, 0.01, counter_bits=0)
    with pytest.raises(ValueError, match="spectral method"):
        bloomery.CountingBloomFilter(100, 0.01, kind="spectral", method="xx")
    with pytest.raises(ValueError, match="width and depth"):
        bloomery.CountMinSketch()
    with pytest.raises(ValueError, match="width and depth"):
        bloomery.CountMinSketch(100)
    with pytest.raises(ValueError):
        bloomery.CountMinSketch(epsilon=0.0, delta=0.1)
    with pytest.raises(ValueError):
        bloomery.CountMinSketch(epsilon=math.nan, delta=0.1)
    with pytest.raises(ValueError):
        bloomery.TopK(0)
    with pytest.raises(ValueError):
        bloomery.TopK(5, decay=1.5)
    with pytest.raises(ValueError):
        bloomery.ScalableBloomFilter(100, 0.01, growth=0)
    with pytest.raises(ValueError):
        bloomery.ScalableBloomFilter(100, 0.01, tightening=1.0)
    with pytest.raises(ValueError):
        bloomery.XorFilter(["a"], fingerprint_bits=7)
    with pytest.raises(ValueError):
        bloomery.CuckooFilter(100, bucket_size=0)


def test_too_large_is_a_memory_error_before_allocating():
    with pytest.raises(MemoryError, match="exceeds the limit"):
        bloomery.BloomFilter(10**15, 0.01)
    with pytest.raises(MemoryError):
        bloomery.CountMinSketch(10**13, 8)


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        bloomery.BloomFilter.load(tmp_path / "nope.bloom")
    assert e.value.filename == str(tmp_path / "nope.bloom") and e.value.errno == 2
    assert str(e.value).count("nope.bloom") == 1, str(e.value)
    with pytest.raises(FileNotFoundError):
        bloomery.load(tmp_path / "nope.bloom")
    with pytest.raises(FileNotFoundError):
        bloomery.BloomFilter.open(tmp_path / "nope.bloom")
    with pytest.raises(IsADirectoryError):
        bloomery.BloomFilter.load(tmp_path)
    f = bloomery.BloomFilter(10, 0.01)
    with pytest.raises(FileNotFoundError):
        f.save(tmp_path / "no" / "such" / "dir.bloom")
    with pytest.raises(FileNotFoundError):
        bloomery.CountMinSketch(10, 2).save(tmp_path / "no" / "x.bloom")


def saved(tmp_path):
    f = bloomery.BloomFilter(1000, 0.01)
    f.add_many(range(500))
    p = tmp_path / "f.bloom"
    f.save(p)
    return p, p.read_bytes()


def test_corrupt_files_raise_format_error(tmp_path):
    p, good = saved(tmp_path)
    bad = bytearray(good)
    bad[200] ^= 0x01  # one bit of the payload
    (tmp_path / "flip.bloom").write_bytes(bad)
    with pytest.raises(bloomery.FormatError, match="checksum mismatch") as e:
        bloomery.BloomFilter.load(tmp_path / "flip.bloom")
    assert str(e.value).count("flip.bloom") == 1, str(e.value)
    with pytest.raises(bloomery.FormatError, match="checksum") as e:
        bloomery.BloomFilter.open(tmp_path / "flip.bloom")
    assert str(e.value).count("flip.bloom") == 1, str(e.value)
    # verify=False trusts the payload (still checks the header and lengths)
    assert bloomery.BloomFilter.open(tmp_path / "flip.bloom", verify=False).read_only
    with pytest.raises(bloomery.FormatError, match="truncated"):
        bloomery.BloomFilter.from_bytes(good[:-9])
    with pytest.raises(bloomery.FormatError, match="trailing"):
        bloomery.BloomFilter.from_bytes(good + b"\0")
    with pytest.raises(bloomery.FormatError, match="magic"):
        bloomery.BloomFilter.from_bytes(b"NOTBLOOM" + good[8:])
    for junk in (b"", b"\0" * 10, os.urandom(4096)):
        with pytest.raises(bloomery.FormatError):
            bloomery.BloomFilter.from_bytes(junk)
        with pytest.raises(bloomery.FormatError):
            bloomery.CountingBloomFilter.from_bytes(junk)
        with pytest.raises(bloomery.FormatError):
            bloomery.XorFilter.from_bytes(junk)
    (tmp_path / "junk.bloom").write_bytes(os.urandom(1000))
    with pytest.raises(bloomery.FormatError):
        bloomery.load(tmp_path / "junk.bloom")
    with pytest.raises(TypeError):
        bloomery.BloomFilter.from_bytes("a str is not bytes")


def test_every_truncation_and_single_byte_change_is_refused_or_loads(tmp_path):
    """No crash, whatever the damage: a truncated or altered file either raises FormatError
    or (for a change the checksum cannot see, none here) loads."""
    _, good = saved(tmp_path)
    for cut in range(0, len(good), 7):
        with pytest.raises(bloomery.FormatError):
            bloomery.BloomFilter.from_bytes(good[:cut])
    for i in range(0, len(good), 3):
        b = bytearray(good)
        b[i] ^= 0x40
        with pytest.raises(bloomery.FormatError):
            bloomery.BloomFilter.from_bytes(bytes(b))


def test_wrong_kind_names_the_right_loader(tmp_path):
    c = bloomery.CountingBloomFilter(100, 0.01)
    c.save(tmp_path / "c.bloom")
    with pytest.raises(bloomery.FormatError, match="wrong kind"):
        bloomery.BloomFilter.load(tmp_path / "c.bloom")
    s = bloomery.ScalableBloomFilter(100, 0.01)
    with pytest.raises(bloomery.FormatError, match="bloomery.load"):
        bloomery.BloomFilter.from_bytes(s.to_bytes())
    with pytest.raises(bloomery.FormatError, match="wrong kind"):
        bloomery.ScalableBloomFilter.from_bytes(bloomery.BloomFilter(10, 0.1).to_bytes())
    m = bloomery.CountMinSketch(10, 2)
    with pytest.raises(bloomery.FormatError, match="count-min"):
        bloomery.CountingBloomFilter.from_bytes(m.to_bytes())
    with pytest.raises(bloomery.FormatError, match="wrong kind"):
        bloomery.CuckooFilter.from_bytes(m.to_bytes())


def test_read_only_filters_refuse_changes(tmp_path):
    p, _ = saved(tmp_path)
    f = bloomery.BloomFilter.open(p)
    assert f.read_only and 5 in f and "read-only" in repr(f)
    for change in (
        lambda: f.add("x"),
        lambda: f.add_many(["x"]),
        lambda: f.update(["x"]),
        lambda: f.clear(),
        lambda: f.__ior__(bloomery.BloomFilter(1000, 0.01)),
    ):
        with pytest.raises(io.UnsupportedOperation, match="read-only"):
            change()
    g = f.copy()
    assert not g.read_only and g.add("x") and "x" not in f
    assert pickle_roundtrip(f) == f


def pickle_roundtrip(o):
    import pickle

    return pickle.loads(pickle.dumps(o))


def test_unsupported_operations_are_type_errors():
    s = bloomery.ScalableBloomFilter(10, 0.01)
    with pytest.raises(TypeError, match="scalable"):
        s.clear()
    c = bloomery.CountingBloomFilter(100, 0.01, kind="dlcbf")
    with pytest.raises(TypeError, match="clear"):
        c.clear()
    sp = bloomery.CountingBloomFilter(100, 0.01, kind="spectral", method="mi")
    sp.add("a")
    with pytest.raises(TypeError, match="Minimal Increase"):
        sp.remove("a")


def test_split_block_keeps_parquets_hash():
    # a seed or a secret would make a filter Parquet readers answer wrongly: refused, as the CLI does
    for kw in ({"seed": 7}, {"keyed": True}):
        with pytest.raises(ValueError, match="Parquet"):
            bloomery.BloomFilter(1000, 0.01, kind="split-block", **kw)
    assert bloomery.BloomFilter(1000, 0.01, kind="split-block").kind == "split-block"
