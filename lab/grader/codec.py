"""A data-only codec for everything that crosses the sandbox pipe (both directions).

A reply from the learner's process can only ever decode to builtin values and arrays: None, bool,
int, float, str, bytes, list, tuple, dict (str keys; int/float/tuple keys are carried too), numpy
ndarrays and torch tensors (dense, sent as dtype, shape and raw bytes). No class, module or
function can be named in a message, so decoding runs no code of the sender's choosing (pickle did:
a reply could import a module the learner wrote into the install tree). Anything else is refused
on the sending side with a message that says where in the value the offending object sits.

Wire format: one JSON document (a tree of tagged nodes, see `_enc`) followed by the raw buffers it
refers to by index. Decoding checks every tag, dtype and length; a malformed message raises
`CodecError`.
"""

from __future__ import annotations

import collections
import json
import math
import struct
import sys
from typing import Any

MAX_MESSAGE_BYTES = 256 << 20  # a reply over this is refused (a runaway result, not an answer)
MAX_DEPTH = 200
# values (list items, dict entries) one message may hold: a wide reply of tiny values would
# otherwise cost the grader ~20x its size in Python objects (a 256 MiB "[0,0,...]" reply, GBs)
MAX_VALUES = 4_000_000
_HEAD = struct.Struct("!II")  # JSON length, number of buffers; then each buffer's length (!Q)
_LEN = struct.Struct("!Q")

# dtypes a reply may carry, by the name both numpy and torch understand (no object dtypes)
NUMPY_DTYPES = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
})
TORCH_DTYPES = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32",
    "float64", "complex64", "complex128",
})
_STD_DICTS = (collections.OrderedDict, collections.Counter, collections.defaultdict)
PLAIN_HELP = ("return plain Python values (None, bool, int, float, str, bytes, lists, tuples, "
              "dicts), numpy arrays or torch tensors — not objects of other classes")


class NotEncodable(TypeError):
    """A value that cannot be sent: the message names where it sits and what it is."""


class CodecError(ValueError):
    """The bytes are not a valid message (or over the size cap)."""


def _where(path: str) -> str:
    return f"result{path}" if path else "the result"


def _imported(name: str) -> Any:
    """The module if it is imported — not while another thread is still importing it (the
    grader imports torch on one thread while another talks to a child: a half-initialised
    numpy has no `generic` yet, and no value can be an instance of it)."""
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


def _enc(value: Any, bufs: list[bytes], path: str, depth: int) -> Any:
    """Exact builtin types only (a subclass could carry behaviour, e.g. a lying __eq__)."""
    if depth > MAX_DEPTH:
        raise NotEncodable(f"{_where(path)} is nested more than {MAX_DEPTH} levels deep")
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value if abs(value) < 1 << 62 else ["I", format(value, "x")]  # exact, no digit cap
    if kind is float:
        return value if math.isfinite(value) else ["F", repr(value)]
    if kind is bytes or kind is bytearray:
        bufs.append(bytes(value))
        return ["B", len(bufs) - 1]
    if kind is list or kind is tuple:
        items = [_enc(v, bufs, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
        return ["T" if kind is tuple else "L", items]
    if kind is dict or kind in _STD_DICTS:  # sent as a plain dict
        if all(isinstance(k, str) for k in value):
            return ["D", {str(k): _enc(v, bufs, f"{path}[{k!r:.40}]", depth + 1)
                          for k, v in value.items()}]
        pairs = []  # other hashable plain keys (ints, tuples of ints: counts of outcomes)
        for k, v in value.items():
            if not isinstance(k, str | int | float | tuple) or k is None:
                raise NotEncodable(f"{_where(path)} is a dict with a {type(k).__name__} key "
                                   f"{k!r:.60}: use str, int, float or tuple keys")
            pairs.append([_enc(k, bufs, f"{path} key {k!r:.40}", depth + 1),
                          _enc(v, bufs, f"{path}[{k!r:.40}]", depth + 1)])
        return ["M", pairs]
    # looked up only for what is not a plain container (the common case stays a type check)
    numpy = _imported("numpy")
    if numpy is not None and isinstance(value, numpy.generic):  # numpy scalars: plain values
        return _enc(value.item(), bufs, path, depth)
    if numpy is not None and type(value) is numpy.ndarray:
        name = value.dtype.name
        if name not in NUMPY_DTYPES:
            raise NotEncodable(f"{_where(path)} is a numpy array of dtype {name}: only "
                               "numeric and bool arrays can be sent")
        data = numpy.ascontiguousarray(value).tobytes()
        bufs.append(data)
        return ["N", name, list(value.shape), len(bufs) - 1]
    torch = _imported("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        name = str(value.dtype).removeprefix("torch.")
        if name not in TORCH_DTYPES or value.layout != torch.strided:
            raise NotEncodable(f"{_where(path)} is a torch tensor of dtype {name} / layout "
                               f"{value.layout}: send dense numeric tensors")
        cpu = value.detach().to("cpu").contiguous()
        flat = cpu.reshape(-1)
        if flat.numel() and flat.stride(-1) != 1:  # torch calls a one-element slice
            flat = flat.clone(memory_format=torch.contiguous_format)  # (t[::4][:1]) contiguous
        raw = flat.view(torch.uint8) if cpu.numel() else cpu.new_empty(0)
        bufs.append(bytes(raw.numpy().tobytes()) if cpu.numel() else b"")
        return ["P", name, list(cpu.shape), len(bufs) - 1, value.device.type]
    raise NotEncodable(f"{_where(path)} is a {type(value).__module__}.{type(value).__qualname__}"
                       f" object: {PLAIN_HELP}")


def encode(value: Any, limit: int = MAX_MESSAGE_BYTES) -> bytes:
    """Serialise a plain value; raises NotEncodable (what and where) or CodecError (too big)."""
    bufs: list[bytes] = []
    tree = _enc(value, bufs, "", 0)
    doc = json.dumps(tree, separators=(",", ":"), ensure_ascii=False).encode()
    if _values(doc) > MAX_VALUES:
        raise CodecError(f"the result holds more than {MAX_VALUES:,} values (list items and "
                         "dict entries), over the limit on what the sandbox may send back: "
                         "send arrays or tensors for bulk numbers")
    size = len(doc) + sum(len(b) for b in bufs)
    if size > limit:
        raise CodecError(f"the result is {size / 2**20:.0f} MiB, over the {limit >> 20} MiB "
                         "limit on what the sandbox may send back")
    parts = [_HEAD.pack(len(doc), len(bufs)), *(_LEN.pack(len(b)) for b in bufs), doc, *bufs]
    return b"".join(parts)


def _values(doc: bytes) -> int:
    """An upper bound on the values a JSON document holds, counted without parsing it (commas
    inside strings count too: the bound only errs on the safe side)."""
    return doc.count(b",") + doc.count(b"[") + doc.count(b"{")


def _dec(node: Any, bufs: list[bytes], depth: int) -> Any:
    if depth > MAX_DEPTH + 1:
        raise CodecError("message nested too deeply")
    if node is None or isinstance(node, bool | int | float | str):
        return node
    if not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise CodecError(f"bad node {str(node)[:60]}")
    tag = node[0]
    if tag in ("L", "T") and len(node) == 2 and isinstance(node[1], list):
        items = [_dec(v, bufs, depth + 1) for v in node[1]]
        return tuple(items) if tag == "T" else items
    if tag == "D" and len(node) == 2 and isinstance(node[1], dict):
        return {str(k): _dec(v, bufs, depth + 1) for k, v in node[1].items()}
    if tag == "M" and len(node) == 2 and isinstance(node[1], list):
        out = {}
        for pair in node[1]:
            if not isinstance(pair, list) or len(pair) != 2:
                raise CodecError("bad mapping pair")
            key = _dec(pair[0], bufs, depth + 1)
            try:
                out[key] = _dec(pair[1], bufs, depth + 1)
            except TypeError as exc:  # an unhashable key
                raise CodecError(f"bad mapping key: {exc}") from exc
        return out
    if tag == "I" and len(node) == 2 and isinstance(node[1], str):
        return int(node[1], 16)
    if tag == "F" and len(node) == 2 and node[1] in ("nan", "inf", "-inf"):
        return float(node[1])
    if tag == "B" and len(node) == 2:
        return _buf(bufs, node[1])
    if tag == "N" and len(node) == 4:
        return _ndarray(node[1], node[2], _buf(bufs, node[3]))
    if tag == "P" and len(node) == 5:
        return _tensor(node[1], node[2], _buf(bufs, node[3]), node[4])
    raise CodecError(f"bad node tag {tag!r:.20}")


def _buf(bufs: list[bytes], index: Any) -> bytes:
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(bufs):
        raise CodecError(f"bad buffer index {index!r:.20}")
    return bufs[index]


def _shape(shape: Any, itemsize: int, nbytes: int) -> tuple[int, ...]:
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise CodecError("bad array shape")
    if math.prod(shape) * itemsize != nbytes:
        raise CodecError("array shape does not match its bytes")
    return tuple(shape)


def _ndarray(dtype: Any, shape: Any, data: bytes) -> Any:
    import numpy

    if dtype not in NUMPY_DTYPES:
        raise CodecError(f"dtype {dtype!r:.20} not allowed")
    dt = numpy.dtype(dtype)
    dims = _shape(shape, dt.itemsize, len(data))
    return numpy.frombuffer(bytearray(data), dtype=dt).reshape(dims)


def _tensor(dtype: Any, shape: Any, data: bytes, device: Any) -> Any:
    import torch

    if dtype not in TORCH_DTYPES:
        raise CodecError(f"dtype {dtype!r:.20} not allowed")
    dt = getattr(torch, dtype)
    dims = _shape(shape, torch.empty(0, dtype=dt).element_size(), len(data))
    if data:
        flat = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dt)
    else:
        flat = torch.empty(0, dtype=dt)
    out = flat.reshape(dims)
    if device == "cuda" and torch.cuda.is_available():
        out = out.to("cuda")
    return out


def decode(data: bytes, limit: int = MAX_MESSAGE_BYTES) -> Any:
    """Rebuild a value from `encode`'s bytes; only builtin values and arrays come out."""
    if len(data) > limit:
        raise CodecError(f"message of {len(data)} bytes is over the limit")
    try:
        doc_len, nbufs = _HEAD.unpack_from(data)
        offset = _HEAD.size
        if nbufs > min(MAX_VALUES, (len(data) - offset) // _LEN.size):
            raise CodecError(f"a header announcing {nbufs} buffers")
        lengths = [_LEN.unpack_from(data, offset + i * _LEN.size)[0] for i in range(nbufs)]
        offset += nbufs * _LEN.size
        doc = data[offset:offset + doc_len]
        offset += doc_len
        bufs = []
        for n in lengths:
            bufs.append(data[offset:offset + n])
            offset += n
    except struct.error as exc:
        raise CodecError(f"truncated message: {exc}") from exc
    if offset != len(data) or len(doc) != doc_len:
        raise CodecError("message length does not match its header")
    if _values(doc) > MAX_VALUES:
        raise CodecError(f"message holds more than {MAX_VALUES:,} values")
    try:
        tree = json.loads(doc)
    except (ValueError, RecursionError) as exc:
        raise CodecError(f"not a message: {exc}") from exc
    try:
        return _dec(tree, bufs, 0)
    except RecursionError as exc:
        raise CodecError("message nested too deeply") from exc


def roundtrip(value: Any) -> Any:
    """What the parent would receive for `value` (the reference's answers go through this too,
    so `check` compares values of the same kinds)."""
    return decode(encode(value))
