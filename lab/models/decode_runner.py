"""Run `StaticStep`'s decode step eager, compiled by inductor, or replayed from CUDA graphs, one
per batch size, a batch padded up to the next size.

Why: the eager step is ~150 small operations, and on a CPU their per-call overhead, not the
weights' bytes, sets its time (bench/decode_step.py). Compiled (inductor, with freezing: the
elementwise work fused into a few loops per layer, at B = 1 the whole step into one), it runs
without them: ahead of time into a shared library (AOTInductor, no Dynamo guards per call) for
1-3 rows, through torch.compile with its C++ wrapper for 4+ rows (their oneDNN-packed weights
cannot go through torch.export). On a GPU a CUDA graph replays the whole step in one launch.
On a CPU in fp32, "native" runs the step as one C function built at run time
(`lab.models.native_step`: its own 8-row matmul tile, no dispatch between operations; one build
for every batch size, ~1 s, and no padding, since nothing is compiled per shape).
Both need fixed shapes and, for graphs, fixed addresses: the runner keeps one set of input
buffers and KV stores for the largest size, and a step of b rows runs the graph of the smallest
size >= b over the first rows of those buffers (rows b.. are padding: token 0 at position 0,
written into column 0 of their own free rows, logits dropped).

Opt-in only (a bench row): a compile takes seconds, and needs a C++ (or, native, a C) compiler
that a learner's machine may lack; without one, or when compiling fails, the runner says why in
one line and runs the same module eagerly. torch is imported lazily.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import Any

from lab.models.lean_llama import LeanLlama
from lab.models.static_step import StaticStep

SIZES = (1, 2, 4, 8, 16)  # batch sizes compiled or captured
MODES = ("eager", "compile", "graph", "native")
COMPILERS = ("g++", "c++", "clang++")  # what inductor's CPU backend looks for (CXX first)


def padded_size(rows: int, sizes: Sequence[int]) -> int:
    """The smallest of `sizes` that holds `rows` rows."""
    if rows < 1:
        raise ValueError(f"a step needs at least one row, got {rows}")
    fits = [s for s in sizes if s >= rows]
    if not fits:
        raise ValueError(f"{rows} rows: the largest batch size prepared is {max(sizes)}")
    return min(fits)


def compiler_missing(device: str) -> str:
    """Why torch.compile cannot build a CPU step here ("" when it can): inductor's CPU backend
    compiles C++ with the compiler in $CXX or the first of g++, c++, clang++ on PATH."""
    if device != "cpu":
        return ""
    cxx = os.environ.get("CXX")
    if cxx:
        return "" if shutil.which(cxx) else f"$CXX is {cxx!r}, which is not on PATH"
    if any(shutil.which(name) for name in COMPILERS):
        return ""
    return f"no C++ compiler on PATH (looked for $CXX, {', '.join(COMPILERS)})"


def _say(line: str) -> None:
    print(line, file=sys.stderr)


class DecodeRunner:
    """Decode steps of up to max(sizes) rows, `capacity` columns each, run as `mode` says:
    "eager" (the static module as it is), "compile" (inductor per size: see the module's text),
    "graph" (a CUDA graph per size; CUDA only) or "native" (the C step, built now). `reason` is
    why a build was given up ("" when none was): the runner then runs eager. `capture` replaces
    CUDA graph capture (tests of the padding and buffer bookkeeping on a CPU)."""

    def __init__(self, lean: LeanLlama, capacity: int, sizes: Sequence[int] = SIZES,
                 mode: str = "eager", say: Callable[[str], None] = _say,
                 capture: Callable[[Callable[[], Any]], Callable[[], Any]] | None = None
                 ) -> None:
        import torch

        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if not sizes or min(sizes) < 1:
            raise ValueError(f"sizes must be batch sizes >= 1, got {list(sizes)}")
        self.sizes = tuple(sorted(set(sizes)))
        self.static = StaticStep(lean, self.sizes[-1], capacity)
        device = lean._embed.device
        if mode == "graph" and capture is None and device.type != "cuda":
            raise ValueError(f"CUDA graphs need the model on a GPU; it is on {device.type}")
        self.mode, self.say, self.reason, self.capture = mode, say, "", capture
        rows = self.sizes[-1]
        self.ids = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.positions = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.columns = torch.zeros((rows,), dtype=torch.long, device=device)
        self._runs: dict[tuple[int, int], Callable[[], Any]] = {}  # (size, span) -> a step
        self.compile_seconds: dict[tuple[int, int], float] = {}
        self._folder: Any = None  # a TemporaryDirectory for ahead-of-time builds, made on need
        self.native: Any = None  # the NativeStep, in mode "native"
        if mode == "compile":
            missing = compiler_missing(device.type)
            if missing:
                self._give_up(missing)
        elif mode == "native":
            self._build_native()

    def _build_native(self) -> None:
        """The C step over the static stores, built into the runner's folder (the model must
        be on a CPU in fp32: else, or without a C compiler, or when the build fails, give up)."""
        import tempfile
        import time

        from lab.models import native_step

        start = time.perf_counter()
        compiler, missing = native_step.c_compiler()
        why = native_step.unsupported(self.static) or missing
        if why:
            self._give_up(why)
            return
        self._folder = tempfile.TemporaryDirectory(prefix="dojo-decode-")
        try:
            path = native_step.build(self._folder.name, compiler)
            self.native = native_step.NativeStep(self.static, path)
        except (OSError, RuntimeError, ValueError) as exc:
            self._give_up(f"{type(exc).__name__}: {str(exc).strip()[:300]}")
            return
        self.compile_seconds[(self.sizes[-1], self.static.capacity)] = (
            time.perf_counter() - start)

    def _give_up(self, why: str) -> None:
        self.reason = why
        self.mode = "eager"
        self._runs.clear()
        self.say(f"decode step: not compiled ({why}); running eager")

    def step(self, ids: Any, positions: Any, columns: Any, span: int | None = None) -> Any:
        """`StaticStep.step` of b = ids.shape[0] rows (rows [0, b) of the stores), padded to the
        next prepared size (native: the b rows as they are): logits [b, V]."""
        import torch

        b = int(ids.shape[0])
        size = padded_size(b, self.sizes)
        span = span or self.static.capacity
        if self.ids.device.type == "cpu":
            self.static.check_columns(columns, span)
        if self.native is not None and self.mode == "native":  # any b rows, no padding
            return self.native(ids, positions, columns, span)
        with torch.inference_mode():
            self.ids[:b].copy_(ids)
            self.positions[:b].copy_(positions)
            self.columns[:b].copy_(columns)
            if size > b:  # padding rows: token 0 at position 0 into column 0 of its own row
                self.ids[b:size].zero_()
                self.positions[b:size].zero_()
                self.columns[b:size].zero_()
            logits = self._run(size, span)()
        return logits[:b].clone() if self.mode == "graph" else logits[:b]

    def _args(self, size: int, span: int) -> tuple[Any, ...]:
        return self.static.inputs(self.ids[:size], self.positions[:size], self.columns[:size],
                                  span)

    def _run(self, size: int, span: int) -> Callable[[], Any]:
        """The step of (size, span), prepared at its first use."""
        key = (size, span)
        run = self._runs.get(key)
        if run is not None:
            return run
        # compiled on a CPU: attention and one-row projections as products and sums inductor
        # fuses (see `decoder_module`)
        fused = self.mode == "compile" and self.ids.device.type == "cpu"
        module, args = self.static.decoder(size, fused), self._args(size, span)
        if self.mode == "compile":
            run = self._compiled(module, args, key)
        elif self.mode == "graph":
            run = (self.capture or capture_graph)(lambda: module(*args))
        if run is None:  # eager, or the compile was given up
            def run() -> Any:
                return module(*args)
        self._runs[key] = run
        return run

    def _compiled(self, module: Any, args: tuple[Any, ...],
                  key: tuple[int, int]) -> Callable[[], Any] | None:
        """The module compiled for these inputs, built and checked now (its first call computes
        the step the caller asked for, so nothing runs twice); None when the build fails."""
        import time

        start = time.perf_counter()
        try:
            compiled = (self._ahead_of_time(module, args, key) if not module.packed
                        else self._dynamo(module, args))
            first = compiled(*args)
        except Exception as exc:  # any failure to build: say why, run eager
            text = str(exc).strip()
            self._give_up(f"{type(exc).__name__}: {text.splitlines()[0][:200]}" if text
                          else type(exc).__name__)
            return None
        self.compile_seconds[key] = time.perf_counter() - start
        pending = [first]

        def run() -> Any:
            if pending:
                return pending.pop()
            return compiled(*args)

        return run

    def _dynamo(self, module: Any, args: tuple[Any, ...]) -> Callable[..., Any]:
        """torch.compile: for modules holding oneDNN-packed weights (4+ rows on a CPU), which
        torch.export cannot take. freezing makes the weights constants and keeps the packed
        ones packed (a torch.compile `options` dict does not reach the freezing pass);
        cpp_wrapper makes the graph's calls from C++."""
        import torch
        import torch._inductor.config as inductor_config

        with inductor_config.patch({"freezing": True, "cpp_wrapper": True}):
            compiled: Any = torch.compile(module, fullgraph=True, dynamic=False)
            dynamo: Any = sys.modules.get("torch._dynamo.config")
            if dynamo is not None:  # one graph per (size, span): let dynamo keep them all
                dynamo.recompile_limit = max(dynamo.recompile_limit, 8 * len(self.sizes))
            compiled(*args)  # builds it while the patch holds

        def call(*inputs: Any) -> Any:
            return compiled(*inputs)

        return call

    def _ahead_of_time(self, module: Any, args: tuple[Any, ...],
                       key: tuple[int, int]) -> Callable[..., Any]:
        """AOTInductor (torch.export, then inductor with freezing into a shared library): a
        call runs the library with no Dynamo guards or Python wrapper around it, ~0.37 ms less
        per step at B = 1 than torch.compile (1.70 vs 2.07 ms, interleaved, load ~4). Used for
        the modules without packed weights (1-3 rows on a CPU; every size on a GPU)."""
        import tempfile

        import torch
        import torch._inductor
        import torch._inductor.config as inductor_config

        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="dojo-decode-")
        path = os.path.join(self._folder.name, f"step-{key[0]}x{key[1]}.pt2")
        with torch.inference_mode(False), torch.no_grad():
            program = torch.export.export(module, args)
        with inductor_config.patch({"freezing": True}):
            package = torch._inductor.aoti_compile_and_package(program, package_path=path)
        loaded: Callable[..., Any] = torch._inductor.aoti_load_package(package)
        return loaded


def capture_graph(fn: Callable[[], Any]) -> Callable[[], Any]:
    """`fn` captured in a CUDA graph and replayed: warmed up three times on a side stream (the
    allocator and lazy initialisation settle; a decode step rewrites the same columns with the
    same values, so warming up changes nothing), then captured. Returns a call that replays it
    and gives the graph's output tensor (overwritten by the next replay)."""
    import torch

    stream = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()

    def replay() -> Any:
        graph.replay()
        return out

    return replay


def generate(runner: DecodeRunner, prompts: Sequence[Sequence[int]], tokens: int
             ) -> list[list[int]]:
    """`tokens` greedy tokens after each prompt, the prompts run as one static batch: each
    prefilled alone by `LeanLlama.step` and its cache loaded into its row, then one runner step
    per token for every row, each at its own column (no padding columns, so no mask beyond the
    rows' lengths). What a static-batching engine produces for requests without stops."""
    import torch

    if not 1 <= len(prompts) <= runner.static.rows:
        raise ValueError(f"{len(prompts)} prompts: this runner holds 1..{runner.static.rows} rows")
    longest = max(len(p) for p in prompts)
    if longest + tokens - 1 > runner.static.capacity:
        raise ValueError(f"a {longest}-token prompt and {tokens} new tokens need "
                         f"{longest + tokens - 1} columns; the runner holds "
                         f"{runner.static.capacity}")
    lean, first = runner.static.lean, []
    device = runner.ids.device
    with torch.inference_mode():
        for row, prompt in enumerate(prompts):
            ids = torch.tensor([list(prompt)], device=device)
            logits, view = lean.step(ids, torch.arange(len(prompt), device=device)[None], None)
            runner.static.load(view, row)
            first.append(logits[0])
        lengths = torch.tensor([len(p) for p in prompts], device=device)
        token = torch.stack(first).argmax(-1)
        out = [token]
        for i in range(tokens - 1):
            token = runner.step(token[:, None], (lengths + i)[:, None], lengths + i).argmax(-1)
            out.append(token)
    return torch.stack(out, 1).tolist()
