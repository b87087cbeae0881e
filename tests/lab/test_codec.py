"""The result pipe's codec: plain data round-trips exactly; nothing else is sent or decoded."""

from __future__ import annotations

import math
import sys

import pytest

from lab.grader import codec


@pytest.mark.parametrize("value", [  # 2**16000: over Python's int-to-str digit limit
    None, True, 0, -1, 2**62, -(2**200), 2**16000, 1.5, -0.0, "é", b"\x00\xff", [], (), {},
    [1, (2, [3, {"a": None}])], {"counts": {(0, 1): 3, (2,): 1}}, {1: "x", 2.5: "y"},
], ids=lambda v: type(v).__name__)
def test_plain_values_round_trip_exactly(value: object) -> None:
    back = codec.roundtrip(value)
    assert back == value and type(back) is type(value)


def test_special_floats_round_trip() -> None:
    back = codec.roundtrip([math.inf, -math.inf, math.nan])
    assert back[:2] == [math.inf, -math.inf] and math.isnan(back[2])


def test_arrays_round_trip_with_dtype_and_shape() -> None:
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    back = codec.roundtrip(a)
    assert back.dtype == a.dtype and back.shape == (2, 3) and (back == a).all()
    for t in (torch.arange(6).reshape(3, 2), torch.randn(2, 2).to(torch.bfloat16),
              torch.zeros(0, 4), torch.tensor(3.5)):
        out = codec.roundtrip(t)
        assert out.dtype == t.dtype and out.shape == t.shape and torch.equal(out, t)
    assert codec.roundtrip(np.int64(7)) == 7 and type(codec.roundtrip(np.int64(7))) is int
    assert type(codec.roundtrip(np.float64(0.5))) is float


def test_standard_dict_flavours_arrive_as_dicts() -> None:
    from collections import Counter, OrderedDict, defaultdict

    for d in (Counter({(1, 2): 3}), OrderedDict(a=1), defaultdict(list, {"k": [1]})):
        back = codec.roundtrip(d)
        assert type(back) is dict and back == dict(d)


class Mine:
    def __eq__(self, other: object) -> bool:
        return True


@pytest.mark.parametrize(("value", "where"), [
    (Mine(), r"the result is a .*Mine object"),
    ({"a": [1, Mine()]}, r"result\['a'\]\[1\] is a .*Mine object"),
    (print, r"builtin_function_or_method"),
    ({frozenset(): 1}, r"frozenset key"),
    ({1, 2}, r"is a builtins.set object"),
    (type("Liar", (int,), {})(3), r"is a .*Liar object"),  # a subclass may carry a lying __eq__
])
def test_anything_else_is_refused_with_where_it_is(value: object, where: str) -> None:
    with pytest.raises(codec.NotEncodable, match=where):
        codec.encode(value)


def test_an_object_array_is_refused() -> None:
    np = pytest.importorskip("numpy")
    with pytest.raises(codec.NotEncodable, match="dtype object"):
        codec.encode(np.array([Mine()], dtype=object))


def test_the_size_cap() -> None:
    with pytest.raises(codec.CodecError, match="over the 1 MiB limit"):
        codec.encode(b"x" * (2 << 20), limit=1 << 20)


@pytest.mark.parametrize("doc", [
    b'["X", 1]', b'["N", "object", [1], 0]', b'["L"]', b'["B", 5]', b'{"a": 1}',
    b'["M", [[["L", []], 1]]]', b'["N", "int64", [2], 0]',
])
def test_malformed_messages_are_rejected(doc: bytes) -> None:
    buf = b"\x00" * 8  # one buffer of 8 bytes: the wrong size for an int64 array of 2
    data = codec._HEAD.pack(len(doc), 1) + codec._LEN.pack(len(buf)) + doc + buf
    with pytest.raises(codec.CodecError):
        codec.decode(data)


def test_a_one_element_slice_with_a_stride_round_trips() -> None:
    """torch calls t[::4][:1] contiguous though its stride is 4: its byte view used to fail,
    so batch-engine's reference was refused as `unsendable` on one hidden case."""
    torch = pytest.importorskip("torch")
    value = torch.arange(8, dtype=torch.int32)[::4][:1]
    back = codec.roundtrip(value)
    assert back.tolist() == [0] and back.dtype == torch.int32
    scalar_view = torch.arange(6, dtype=torch.int64).reshape(2, 3)[:, 1:2][:1]
    assert codec.roundtrip(scalar_view).tolist() == [[1]]


def test_a_module_still_being_imported_on_another_thread_is_not_consulted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The grader talks to a child on one thread while another imports torch (and numpy): a
    half-initialised numpy, without `generic` yet, once made encoding a plain message raise."""
    import importlib.machinery
    import types

    half = types.ModuleType("numpy")
    half.__spec__ = importlib.machinery.ModuleSpec("numpy", None)
    half.__spec__._initializing = True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "numpy", half)
    monkeypatch.setitem(sys.modules, "torch", half)
    message = {"op": "load", "roots": ["lab"], "n": 3, "x": 1.5, "b": b"\x00"}
    assert codec.decode(codec.encode(message)) == message
