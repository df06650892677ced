"""The key mapping (str → UTF-8, bytes-like → bytes, int → decimal text) and the batch
inputs (lists, iterables, NumPy and Arrow arrays) that must give the same answers as one key
at a time."""

import array

import pytest

import bloomery

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")


def new(**kw):
    return bloomery.BloomFilter(10_000, 0.001, **kw)


def test_same_key_in_every_form():
    f = new()
    f.add(42)
    for same in (42, "42", b"42", bytearray(b"42"), memoryview(b"42"), np.int64(42), np.uint8(42)):
        assert same in f, same
    f.add("h\u00e9llo")
    assert "h\u00e9llo".encode() in f
    assert b"h\xc3\xa9llo" in f
    f.add(b"\x00\xff")
    assert bytearray(b"\x00\xff") in f and memoryview(b"\x00\xff") in f


def test_int_is_its_decimal_text_at_every_width():
    f = new()
    ints = [0, -1, 7, -(2**63), 2**63 - 1, 2**64 - 1, 2**64, -(2**64), 10**40, -(10**40)]
    for i in ints:
        assert f.add(i), i  # distinct keys: each sets new bits
    for i in ints:
        assert str(i) in f and str(i).encode() in f, i
    # an int subclass hashes as its value
    import enum

    class E(enum.IntEnum):
        A = 5

    f.add(E.A)
    assert "5" in f


def test_int_is_not_its_little_endian_bytes():
    # the Rust library hashes integers as little-endian bytes; Python ints are text
    f = new()
    f.add(1)
    assert (1).to_bytes(8, "little") not in f
    assert "1" in f


@pytest.mark.parametrize("bad", [True, False, 1.5, 2.0, None, (1, 2), [1], {"a": 1}, object(), np.True_, np.float64(1.0), 1j])
def test_other_types_raise_type_error(bad):
    f = new()
    with pytest.raises(TypeError, match="bloomery keys are str, bytes"):
        f.add(bad)
    with pytest.raises(TypeError):
        bad in f  # noqa: B015
    assert len(f) == 0


def test_lone_surrogate_is_an_encode_error():
    f = new()
    with pytest.raises(UnicodeEncodeError):
        f.add("\ud800")


def test_batch_error_names_the_key_and_inserts_nothing_after_it():
    f = new()
    with pytest.raises(TypeError, match="key 2: bloomery keys"):
        f.add_many(["a", "b", 1.5, "c"])
    assert "c" not in f
    # keys are read (and hashed) before the filter changes: a wrong type changes nothing
    assert len(f) == 0


def test_single_str_is_not_a_batch():
    f = new()
    for one in ("abc", b"abc", bytearray(b"abc")):
        with pytest.raises(TypeError, match="not one str or bytes"):
            f.add_many(one)
        with pytest.raises(TypeError, match="not one str or bytes"):
            f.contains_many(one)
    with pytest.raises(TypeError, match="iterable of keys"):
        f.add_many(5)


def filled():
    f = new()
    f.add_many([f"k{i}" for i in range(0, 2000, 2)] + list(range(0, 2000, 3)) + [b"\x00raw"])
    return f


def probe_strs():
    return [f"k{i}" for i in range(2000)] + [f"x{i}" for i in range(500)]


def test_batch_answers_equal_single_answers_for_every_input_type():
    f = filled()
    strs = probe_strs()
    want = [s in f for s in strs]
    assert any(want) and not all(want)
    got_list = f.contains_many(strs)
    assert isinstance(got_list, np.ndarray) and got_list.dtype == np.bool_
    assert got_list.tolist() == want
    assert f.contains_many(tuple(strs)).tolist() == want
    assert f.contains_many(s for s in strs).tolist() == want  # generator
    assert f.contains_many(iter(strs)).tolist() == want
    assert f.contains_many(np.array(strs)).tolist() == want  # U dtype
    assert f.contains_many(np.array([s.encode() for s in strs])).tolist() == want  # S dtype
    assert f.contains_many(np.array(strs, dtype=object)).tolist() == want
    for t in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        assert f.contains_many(pa.array(strs, type=t)).tolist() == want, t
    if hasattr(pa, "string_view"):
        # views: short strings inline (<= 12 bytes), long ones in data buffers
        long = [s * 5 for s in strs]
        g = new()
        g.add_many(long[::3])
        assert g.contains_many(pa.array(long, type=pa.string_view())).tolist() == [s in g for s in long]
    chunked = pa.chunked_array([strs[:700], strs[700:701], [], strs[701:]])
    assert f.contains_many(chunked).tolist() == want
    # a sliced array (non-zero offset)
    assert f.contains_many(pa.array(strs)[100:]).tolist() == want[100:]


def test_arrow_answers_equal_single_answers_across_chunks_slices_and_types():
    # more keys than one internal chunk, so chunk boundaries, offsets into the value buffers
    # and the answer positions are all exercised; about half the keys are present
    f = new()
    present = [f"key-{i}" for i in range(0, 30_000, 2)]
    f.add_many(pa.array(present))
    keys = [f"key-{i}" for i in range(30_000)] + ["", "h\u00e9", "\u00ff" * 40]
    want = [k in f for k in keys]
    assert 15_000 <= sum(want) < 15_200
    for t in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        arr = pa.array(keys if t in (pa.string(), pa.large_string()) else [k.encode() for k in keys], type=t)
        got = f.contains_many(arr)
        assert isinstance(got, np.ndarray) and got.dtype == np.bool_ and got.shape == (len(keys),)
        assert got.tolist() == want, t
        for lo, hi in ((1, len(keys)), (4095, 4097), (4097, 12_289), (12_345, 12_345), (7, 29_999)):
            assert f.contains_many(arr[lo:hi]).tolist() == want[lo:hi], (t, lo, hi)
        # a slice of an array with nulls, the nulls outside the slice
        with_nulls = pa.array([None] + keys[:9000] + [None], type=pa.string()).cast(t)
        assert f.contains_many(with_nulls[1:9001]).tolist() == want[:9000], t
        # a null after the first chunk is reported at its position
        with pytest.raises(ValueError, match="element 5000 .* null"):
            f.contains_many(pa.concat_arrays([with_nulls[1:5001], pa.nulls(1, t)]))
    assert f.contains_many(pa.array([], type=pa.string())).tolist() == []
    chunked = pa.chunked_array([keys[:5000], keys[5000:5001], [], keys[5001:]])
    assert f.contains_many(chunked).tolist() == want


def test_integer_arrays_are_decimal_text():
    f = filled()
    ints = list(range(-50, 2100))
    want = [i in f for i in ints]
    assert sum(want) > 600
    for dt in ("int8", "int16", "int32", "int64", ">i8", "<i4"):
        sub = [i for i in ints if np.iinfo(np.dtype(dt)).min <= i <= np.iinfo(np.dtype(dt)).max]
        arr = np.array(sub, dtype=dt)
        assert f.contains_many(arr).tolist() == [i in f for i in sub], dt
        assert f.contains_many(pa.array(sub, type=pa.from_numpy_dtype(np.dtype(dt).newbyteorder("="))) ).tolist() == [i in f for i in sub], dt
    for dt in ("uint8", "uint16", "uint32", "uint64", ">u2"):
        sub = [i for i in ints if 0 <= i <= np.iinfo(np.dtype(dt)).max]
        assert f.contains_many(np.array(sub, dtype=dt)).tolist() == [i in f for i in sub], dt
    big = np.array([2**64 - 1, 2**63], dtype=np.uint64)
    g = new()
    g.add_many(big)
    assert str(2**64 - 1) in g and 2**63 in g
    neg = np.array([-(2**63)], dtype=np.int64)
    g.add_many(neg)
    assert str(-(2**63)) in g
    g.add_many(pa.array([-5, 300], type=pa.int16()))
    assert "-5" in g and 300 in g


def test_numpy_answers_keep_the_input_shape():
    f = filled()
    arr = np.arange(24).reshape(2, 3, 4)
    got = f.contains_many(arr)
    assert got.shape == (2, 3, 4)
    assert got.ravel().tolist() == [int(i) in f for i in arr.ravel()]
    col = np.asfortranarray(np.arange(12).reshape(3, 4))
    assert f.contains_many(col).tolist() == [[int(i) in f for i in row] for row in col]


def test_numpy_s_and_u_drop_trailing_nuls_as_numpy_does():
    f = new()
    f.add_many(np.array(["a", "bbb", "h\u00e9"]))
    assert "a" in f and "bbb" in f and "h\u00e9" in f
    f.add_many(np.array([b"x", b"yyyy"]))
    assert b"x" in f and "yyyy" in f


def test_unsupported_arrays_raise_type_error():
    f = new()
    with pytest.raises(TypeError, match="dtype"):
        f.add_many(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="dtype"):
        f.add_many(np.array([True]))
    with pytest.raises(TypeError, match="not keys"):
        f.add_many(pa.array([1.0]))
    with pytest.raises(TypeError, match="dictionary_decode"):
        f.add_many(pa.array(["a", "b", "a"]).dictionary_encode())
    with pytest.raises(TypeError, match="one column"):
        f.add_many(pa.record_batch({"a": ["x"]}))
    assert len(f) == 0


def test_arrow_nulls_are_refused():
    f = new()
    with pytest.raises(ValueError, match="element 1 .* null"):
        f.contains_many(pa.array(["a", None, "c"]))
    with pytest.raises(ValueError, match="element 3 .* null"):
        f.contains_many(pa.chunked_array([["a", "b"], ["c", None]]))


def test_lists_without_numpy_return_lists(monkeypatch):
    import importlib.util
    assert importlib.util.find_spec("numpy")  # this environment has it; the fallback is
    # exercised in a subprocess that hides numpy
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "import bloomery\n"
        "f = bloomery.BloomFilter(100, 0.01); f.add('a')\n"
        "r = f.contains_many(['a', 'b'])\n"
        "assert r == [True, False] and type(r) is list, r\n"
        "c = bloomery.CountingBloomFilter(100, 0.01); c.add('a'); c.add('a')\n"
        "assert c.count_many(['a', 'b']) == [2, 0]\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_array_module_and_other_iterables():
    f = new()
    f.add_many(array.array("q", [5, 6]))  # an iterable of ints
    assert 5 in f and "6" in f
    f.add_many({"s1", "s2"})
    f.add_many({"d1": 1}.keys())
    assert "s1" in f and "d1" in f
