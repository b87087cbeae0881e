"""`StaticStep`'s decode step run by one C function (native_step.c), built at run time.

Why: on a CPU the compiled step at 8 rows still took ~3x the bandwidth limit. Its 33 oneDNN
matmuls alone ran at ~38 GFLOP/s (2.9 ms; a 512 x 512 matmul reaches ~95 on the same core), and
the norms, rotary, attention and per-kernel calls around them cost ~1.5 ms more. The C step
packs each weight once into 32-column blocks and runs an 8-row tile over them (~78 GFLOP/s
measured), and does the rest of the step in plain loops with no dispatch between them. One
`ctypes` call per step; no padding, since nothing is compiled per shape.

It reads and writes the `StaticStep`'s own stores (the same layout, the same column rule), so
`StaticStep.load` fills it and a step's keys and values are the static step's. Its logits
agree with the eager static step to fp32 rounding (another summation order), with the same
argmax (tests/models/test_native_step.py). Opt-in, as the compiled step is: it needs a C
compiler ($CC, cc, gcc or clang), and the model on a CPU in fp32 with every projection's output
width a multiple of 32. torch is imported lazily.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from lab.models.static_step import StaticStep, rotary_rows

SOURCE = Path(__file__).with_name("native_step.c")
COMPILERS = ("cc", "gcc", "clang")
BLOCK = 32  # output columns per packed block (BLOCK in native_step.c)
DIMS = ("hidden", "heads", "kv_heads", "dim", "inter", "vocab", "layers", "rows", "capacity",
        "positions")
KINDS = ("qkv", "o", "gate_up", "down")  # a layer's projections, as LeanLlama.fused() has them
ERRORS = {1: "rows", 2: "a token id", 3: "a position", 4: "a column", 5: "the span"}


class _Model(ctypes.Structure):
    """native_step.c's `Model`: the dimensions, then pointers (arrays of per-layer pointers
    where the C type is `const float *const *`)."""

    _fields_ = [*((name, ctypes.c_int64) for name in DIMS),
                *((name, ctypes.c_void_p) for name in (
                    "embed", "cos", "sin", "in_norm", "post_norm", "in_eps", "post_eps", "scale",
                    "qkv", "o", "gate_up", "down", "norm")),
                ("norm_eps", ctypes.c_float),
                *((name, ctypes.c_void_p) for name in ("head", "stores", "scratch"))]


def c_compiler() -> tuple[str, str]:
    """(the C compiler to build with, "") - $CC, else the first of cc, gcc, clang on PATH - or
    ("", why there is none)."""
    cc = os.environ.get("CC")
    if cc:
        found = shutil.which(cc)
        return (found, "") if found else ("", f"$CC is {cc!r}, which is not on PATH")
    found = next((path for name in COMPILERS if (path := shutil.which(name))), None)
    if found:
        return found, ""
    return "", f"no C compiler on PATH (looked for $CC, {', '.join(COMPILERS)})"


def unsupported(static: StaticStep) -> str:
    """Why the C step cannot run this model ("" when it can)."""
    import torch

    weight = static.lean._embed
    if weight.device.type != "cpu" or weight.dtype != torch.float32:
        return f"the C step runs fp32 on a CPU; the model is {weight.dtype} on {weight.device}"
    for n, layer in enumerate(static.lean.fused()):
        for kind, projection in zip(KINDS, layer, strict=True):
            if projection.weight.shape[0] % BLOCK:
                return (f"layer {n}'s {kind} projection has {projection.weight.shape[0]} "
                        f"outputs, not a multiple of {BLOCK}")
    assert static.lean._head is not None  # set by fused()
    if static.lean._head.weight.shape[0] % BLOCK:
        return f"the head has {static.lean._head.weight.shape[0]} outputs, not a multiple of 32"
    lean = static.lean
    if lean.heads % lean.kv_heads:
        return f"{lean.heads} query heads do not share {lean.kv_heads} kv heads"
    if lean.head_dim % 16 or lean.head_dim > 256:
        return f"head_dim {lean.head_dim} is not a multiple of 16 up to 256"
    return ""


def build(folder: str, compiler: str, source: Path = SOURCE) -> str:
    """`source` (native_step.c) compiled into a shared library in `folder` for this machine;
    raises RuntimeError with the compiler's first lines of complaint when it fails."""
    out = os.path.join(folder, source.stem + ".so")
    done = subprocess.run([compiler, "-O3", "-march=native", "-shared", "-fPIC", "-o", out,
                           str(source), "-lm"], capture_output=True, text=True, check=False)
    if done.returncode:
        why = " / ".join((done.stderr or done.stdout).strip().splitlines()[:3])
        raise RuntimeError(f"{compiler} failed ({done.returncode}): {why[:300]}")
    return out


class NativeStep:
    """The C step over a `StaticStep`'s stores and the library at `path` (from `build`)."""

    def __init__(self, static: StaticStep, path: str) -> None:
        import torch

        why = unsupported(static)
        if why:
            raise ValueError(why)
        lib = ctypes.CDLL(path)
        pointer, int64 = ctypes.c_void_p, ctypes.c_int64
        lib.dojo_pack.argtypes = [pointer, int64, int64, pointer]
        lib.dojo_scratch_floats.argtypes = [ctypes.POINTER(_Model)]
        lib.dojo_scratch_floats.restype = int64
        lib.dojo_step.argtypes = [ctypes.POINTER(_Model), int64, pointer, pointer, pointer,
                                  int64, pointer]
        lib.dojo_step.restype = ctypes.c_int
        lib.dojo_matmul.argtypes = [pointer, int64, int64, int64, pointer, pointer, ctypes.c_int]
        self.static, self._lib = static, lib
        lean = static.lean
        self._keep: list[Any] = []  # every tensor and array the C side points into
        self._packed: list[Any] = []  # the packed weights [n, k], in the step's order

        def ptr(tensor: Any) -> int:  # never a copy: the C step writes into the stores
            if not tensor.is_contiguous():
                raise ValueError(f"the C step reads contiguous tensors; got strides "
                                 f"{tensor.stride()} for shape {tuple(tensor.shape)}")
            self._keep.append(tensor)
            return int(tensor.data_ptr())

        def table(tensors: list[Any]) -> int:
            array = (pointer * len(tensors))(*(ptr(t) for t in tensors))
            self._keep.append(array)
            return ctypes.addressof(array)

        def packed(weight: Any) -> Any:
            out = torch.empty_like(weight, memory_format=torch.contiguous_format)
            lib.dojo_pack(ptr(weight), weight.shape[0], weight.shape[1], ptr(out))
            self._packed.append(out)
            return out

        def floats(values: list[float]) -> Any:
            return torch.tensor(values, dtype=torch.float32)

        with torch.inference_mode():
            layers = lean.fused()
            assert lean._head is not None  # set by fused()
            cos, sin = rotary_rows(lean)
            norms = lean._layers
            packs = [[packed(p.weight) for p in layer] for layer in layers]  # the step's order
            model = _Model(
                hidden=lean._embed.shape[1], heads=lean.heads, kv_heads=lean.kv_heads,
                dim=lean.head_dim, inter=layers[0][3].weight.shape[1],
                vocab=lean._head.weight.shape[0], layers=len(layers), rows=static.rows,
                capacity=static.capacity, positions=cos.shape[0],
                embed=ptr(lean._embed), cos=ptr(cos), sin=ptr(sin),
                in_norm=table([n.weight for n, _, _ in norms]),
                post_norm=table([n.weight for _, n, _ in norms]),
                in_eps=ptr(floats([float(n.eps) for n, _, _ in norms])),
                post_eps=ptr(floats([float(n.eps) for _, n, _ in norms])),
                scale=ptr(floats([scaling for _, _, scaling in norms])),
                **{kind: table([pack[i] for pack in packs]) for i, kind in enumerate(KINDS)},
                norm=ptr(lean._final_norm.weight), norm_eps=float(lean._final_norm.eps),
                head=ptr(packed(lean._head.weight)), stores=table(static.stores))
            model.scratch = ptr(torch.empty(int(lib.dojo_scratch_floats(ctypes.byref(model))),
                                            dtype=torch.float32))
        self._model, self.vocab = model, int(model.vocab)

    def __call__(self, ids: Any, positions: Any, columns: Any, span: int) -> Any:
        """Logits [b, V] of `StaticStep.step(ids, positions, columns, span)` (ids and positions
        [b, 1], columns [b], long), computed by the C step."""
        import torch

        b = int(ids.shape[0])
        flat = [t.reshape(-1).to(torch.long).contiguous() for t in (ids, positions, columns)]
        if any(t.shape[0] != b for t in flat):
            raise ValueError(f"ids, positions and columns must have one entry per row ({b}), "
                             f"got {[t.shape[0] for t in flat]}")
        logits = torch.empty((b, self.vocab), dtype=torch.float32)
        code = self._lib.dojo_step(ctypes.byref(self._model), b,
                                   *(t.data_ptr() for t in flat), span, logits.data_ptr())
        if code:
            raise ValueError(f"the C step refused {ERRORS.get(code, code)} out of range (rows "
                             f"1..{self.static.rows}, span 1..{self.static.capacity}, columns "
                             f"< span, ids < {self.vocab}, positions < "
                             f"{int(self._model.positions)}): got {b} rows, span {span}")
        return logits

    def projections(self, rows: int) -> Any:
        """A call running the step's matmuls alone through the C tile (each layer's qkv, o,
        gate/up and down, then the head) on `rows` rows: the bench's share of the step that is
        matmul, so the C step minus it is everything else."""
        import torch

        calls = [(torch.zeros((rows, w.shape[1])), w, torch.empty((rows, w.shape[0])))
                 for w in self._packed]
        matmul = self._lib.dojo_matmul

        def run() -> None:
            for x, w, y in calls:
                matmul(x.data_ptr(), rows, w.shape[1], w.shape[0], w.data_ptr(), y.data_ptr(), 0)

        return run
