"""What the lab hands a tensor-parallel learner, and how the drive runs ranks.

Learner-facing helpers (import them in your file if you like): `rope` (Llama's rotary positions),
`rms_norm`, `read_config` (a Llama checkpoint's config, normalised) and `SHIPPED_TARGET`.

Drive-facing: `run_ranks(world_size, fn, ...)` starts one process per rank (fork on the CPU;
spawn on CUDA, which cannot fork once initialised), joins them to a torch.distributed process
group (gloo over the loopback interface, NCCL when every rank has its own GPU), hands `fn` that
group, records every collective each rank calls (name, group, bytes) and returns each rank's
plain result with its pid. Every rank waits for its peers after joining and before leaving
(a barrier on the default group, not counted), so no rank tears the group down while a peer is
still joining. A rank still running at the deadline is killed and named with where it was: the
harness's set-up or tear-down, or the learner's code and how many collectives it had called.

Imported in the sandbox child (drive.CHILD_MODULES) and by the grader; torch lazily.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import os
import pickle
import select
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

SHIPPED_TARGET = Path(__file__).resolve().parents[2] / "models" / "pycode-target"
COLLECTIVE_TIMEOUT_S = 3.0  # gloo's own timeout: a collective only some ranks call raises
# torch.distributed functions the drive counts (name -> index of the tensor argument)
COUNTED = ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "broadcast", "reduce", "all_to_all", "all_to_all_single",
           "send", "recv", "isend", "irecv", "gather", "scatter", "barrier",
           "all_gather_object", "broadcast_object_list")


# the tensor forms of a collective count as the collective itself
SAME_AS = {"all_gather_into_tensor": "all_gather", "reduce_scatter_tensor": "reduce_scatter"}


def read_config(folder: str | Path | None = None) -> dict[str, Any]:
    """A Llama checkpoint's config.json as the figures a TP decoder needs."""
    path = Path(folder) if folder else SHIPPED_TARGET
    cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
    heads = int(cfg["num_attention_heads"])
    rope = cfg.get("rope_parameters") or {}
    return {
        "hidden": int(cfg["hidden_size"]), "heads": heads,
        "kv_heads": int(cfg.get("num_key_value_heads") or heads),
        "head_dim": int(cfg.get("head_dim") or cfg["hidden_size"] // heads),
        "layers": int(cfg["num_hidden_layers"]), "intermediate": int(cfg["intermediate_size"]),
        "eps": float(cfg.get("rms_norm_eps", 1e-6)), "vocab": int(cfg["vocab_size"]),
        "theta": float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0))),
        "tied": bool(cfg.get("tie_word_embeddings", False)),
        "weights": str(path / "model.safetensors"),
    }


def rope(x: Any, positions: Any, theta: float = 10000.0) -> Any:
    """x [T, heads, head_dim] rotated by integer positions [T] (Llama's rotate-half RoPE)."""
    import torch

    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.int64, device=x.device).float() / d)
    freqs = positions.to(x.device).float()[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
    half = d // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def rms_norm(x: Any, weight: Any, eps: float) -> Any:
    import torch

    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


# ---------------------------------------------------------------------------------------------
# running ranks


def backend_for(device: str, world_size: int) -> str:
    """NCCL when every rank can have its own GPU (NCCL refuses two ranks on one device), else
    gloo (CPU tensors, or CUDA tensors over gloo's CUDA collectives)."""
    if device == "cuda":
        import torch

        if torch.cuda.device_count() >= world_size:
            return "nccl"
    return "gloo"


class CollectiveLog:
    """Counts every torch.distributed collective a rank calls: [name, on the handed-in group,
    payload bytes]. Patched in after the fork, on torch.distributed, distributed_c10d and any
    name the learner's module bound with `from torch.distributed import ...`."""

    def __init__(self, group: Any, modules: list[Any],
                 on_call: Callable[[], None] | None = None) -> None:
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d

        self.calls: list[list[Any]] = []
        self.failed_in: str | None = None  # the collective an exception came out of, if any
        self.group = group
        self.on_call = on_call
        originals = {name: getattr(c10d, name) for name in COUNTED if hasattr(c10d, name)}
        wrapped = {name: self._wrap(name, fn) for name, fn in originals.items()}
        for mod in (dist, c10d):
            for name, fn in wrapped.items():
                setattr(mod, name, fn)
        by_id = {id(fn): wrapped[name] for name, fn in originals.items()}
        for mod in modules:
            for key, value in list(vars(mod).items()):
                if id(value) in by_id:
                    setattr(mod, key, by_id[id(value)])

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            group = kwargs.get("group")
            if group is None:
                group = next((a for a in args if type(a).__name__ == "ProcessGroup"), None)
            self.calls.append([SAME_AS.get(name, name), group is self.group,
                               _payload(name, args, kwargs)])
            if self.on_call is not None:
                self.on_call()
            try:
                return fn(*args, **kwargs)
            except BaseException:
                self.failed_in = SAME_AS.get(name, name)
                raise

        counted.__name__ = name
        return counted


def _payload(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Bytes one rank contributes: the input tensor(s) of the call."""
    import torch

    def size(t: Any) -> int:
        if isinstance(t, torch.Tensor):
            return int(t.numel() * t.element_size())
        if isinstance(t, (list, tuple)):
            return sum(size(x) for x in t)
        return 0

    if name in ("all_gather", "all_gather_into_tensor", "reduce_scatter_tensor"):
        src = args[1] if len(args) > 1 else kwargs.get("input_tensor", kwargs.get("tensor"))
        return size(src)
    if name == "reduce_scatter":
        return size(args[1] if len(args) > 1 else kwargs.get("input_list"))
    first = args[0] if args else kwargs.get("tensor", kwargs.get("tensor_list"))
    return size(first)


RankFn = Callable[[Any, int, int, Any], Any]  # (solution, rank, world_size, group) -> data


def run_ranks(solution: Any, world_size: int, fn: RankFn, device: str = "cpu",
              deadline_s: float = 8.0) -> list[dict[str, Any]]:
    """Run `fn(solution, rank, world_size, group)` in `world_size` processes on one process
    group; per rank {"rank", "pid", "backend", "value" | "error", "log"} in rank order. A rank
    still running after `deadline_s` is killed: {"error": ["Hung", ...], "log": None}."""
    fd, store = tempfile.mkstemp(prefix="dojo-tp-store-")
    os.close(fd)
    os.unlink(store)  # FileStore creates it; rendezvous through a file, the data over loopback
    backend = backend_for(device, world_size)
    try:
        if device == "cuda":
            return _spawned(solution, world_size, fn, device, backend, store, deadline_s)
        return _forked(solution, world_size, fn, device, backend, store, deadline_s)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(store)


def _forked(solution: Any, world_size: int, fn: RankFn, device: str, backend: str,
            store: str, deadline_s: float) -> list[dict[str, Any]]:
    pipes: list[int] = []
    pids: list[int] = []
    for rank in range(world_size):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the rank: never returns into the drive
            os.close(r)
            code = 0
            try:
                out = rank_main(solution, rank, world_size, fn, device, backend, store,
                                functools.partial(os.write, w))
                _send(w, out)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        pipes.append(r)
        pids.append(pid)
    return _collect(pipes, pids, deadline_s)


def _spawned(solution: Any, world_size: int, fn: RankFn, device: str, backend: str,
             store: str, deadline_s: float) -> list[dict[str, Any]]:
    """CUDA cannot be forked once initialised: spawn fresh interpreters that load the learner's
    file by path; each writes its result to a file beside the store (the sandbox's tmpfs)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    path = str(Path(solution.__file__).resolve())
    procs = []
    for rank in range(world_size):
        proc = ctx.Process(target=spawned_rank, daemon=True,
                           args=(path, solution.__name__, rank, world_size, fn, device, backend,
                                 store))
        proc.start()
        procs.append(proc)
    end = time.monotonic() + deadline_s + 60.0  # each spawn imports torch and inits CUDA
    for proc in procs:
        proc.join(max(0.0, end - time.monotonic()))
    results: list[dict[str, Any]] = []
    for rank, proc in enumerate(procs):
        hung = proc.is_alive()
        if hung:
            proc.kill()
            proc.join()
        out_path = Path(f"{store}.rank{rank}")
        if hung:
            results.append({"rank": rank, "pid": proc.pid, "log": None,
                            "error": ["Hung", f"rank {rank} did not finish in time", ""]})
        elif out_path.exists():
            results.append(pickle.loads(out_path.read_bytes()))
        else:
            results.append({"rank": rank, "pid": proc.pid, "log": None,
                            "error": ["Died", f"rank {rank} exited without a result", ""]})
        with contextlib.suppress(OSError):
            out_path.unlink()
    return results


def spawned_rank(path: str, name: str, rank: int, world_size: int, fn: RankFn, device: str,
                 backend: str, store: str) -> None:
    """A spawned rank (CUDA): load the learner's file by path, then run like a forked one."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.append(str(Path(path).parent))
    spec.loader.exec_module(module)
    out = rank_main(module, rank, world_size, fn, device, backend, store)
    Path(f"{store}.rank{rank}").write_bytes(pickle.dumps(_cpu(out)))


# progress marks a forked rank writes to its pipe ahead of its result (a pickle, which starts
# with b"\x80"): the grader can then tell a rank that hung in the harness's set-up or tear-down
# from one that hung in the learner's code, and whether it had called a collective there
SET_UP, COLLECTIVE, RETURNED = b"s", b"c", b"r"
PHASES = {None: "set-up", SET_UP: "learner", COLLECTIVE: "learner", RETURNED: "tear-down"}


def rank_main(solution: Any, rank: int, world_size: int, fn: RankFn, device: str,
              backend: str, store: str,
              progress: Callable[[bytes], Any] | None = None) -> dict[str, Any]:
    """One rank: join the group, wait for every peer (set-up), run `fn` on the handed group,
    wait for every peer again (tear-down), leave. The two barriers run on the default group
    with the original `barrier` (not counted as the learner's): without them a fast rank tore
    the group down while a slow peer was still joining, and the peer waited forever."""
    import torch
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    mark = progress or (lambda _mark: None)
    barrier = c10d.barrier

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # the sandbox's own loopback only
    torch.set_num_threads(1)
    if device == "cuda":
        torch.cuda.set_device(rank % max(1, torch.cuda.device_count()))
    out: dict[str, Any] = {"rank": rank, "pid": os.getpid(), "backend": backend, "log": None}
    timeout = datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S)
    from torch.distributed import FileStore  # type: ignore[attr-defined]

    dist.init_process_group(backend, store=FileStore(store, world_size), rank=rank,
                            world_size=world_size, timeout=timeout)
    try:
        group = dist.new_group(list(range(world_size)))  # the group handed in (not WORLD)
        barrier()
        mark(SET_UP)
        log = CollectiveLog(group, [solution], lambda: mark(COLLECTIVE))
        CURRENT["log"] = log
        try:
            out["value"] = fn(solution, rank, world_size, group)
        except NotImplementedError as exc:
            out["error"] = ["NotImplementedError", str(exc), _where(exc, solution)]
        except Exception as exc:  # the learner's exception is a result the grader judges
            out["error"] = [type(exc).__name__, str(exc)[:400], _where(exc, solution)]
            # raised inside a collective (a peer stopped, gloo timed out) or by the rank's own
            # code: the grader names the rank whose own code raised, not the peer it left waiting
            out["failed_in"] = log.failed_in
        out["log"] = log.calls
        mark(RETURNED)
        with contextlib.suppress(Exception):  # a peer stuck in the learner's code: go anyway
            barrier()
    finally:
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
    return out


def _where(exc: BaseException, solution: Any) -> str:
    """The learner's line that raised, if any (the traceback's last frame in their file)."""
    file = getattr(solution, "__file__", None)
    last = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == file:
            last = f"line {frame.lineno}, in {frame.name}"
    return last


def _send(w: int, out: dict[str, Any]) -> None:
    data = pickle.dumps(_cpu(out))
    view = memoryview(data)
    while view:
        n = os.write(w, view)
        view = view[n:]
    os.close(w)


def _cpu(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cpu(v) for v in value)
    return value


def _collect(pipes: list[int], pids: list[int], deadline_s: float) -> list[dict[str, Any]]:
    chunks: dict[int, list[bytes]] = {fd: [] for fd in pipes}
    open_fds = set(pipes)
    end = time.monotonic() + deadline_s
    while open_fds:
        left = end - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select(list(open_fds), [], [], left)
        for fd in ready:
            data = os.read(fd, 1 << 20)
            if data:
                chunks[fd].append(data)
            else:
                open_fds.discard(fd)
    for pid in pids:
        if pid > 0:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)
    results: list[dict[str, Any]] = []
    for rank, fd in enumerate(pipes):
        os.close(fd)
        raw = b"".join(chunks[fd])
        marks = raw[:len(raw) - len(raw.lstrip(SET_UP + COLLECTIVE + RETURNED))]
        raw = raw[len(marks):]
        if fd in open_fds:
            results.append({"rank": rank, "pid": pids[rank], "log": None,
                            "phase": PHASES[marks[-1:] or None],
                            "collectives": marks.count(COLLECTIVE),
                            "error": ["Hung", f"rank {rank} did not finish within "
                                      f"{deadline_s:.0f} s", ""]})
            continue
        try:
            results.append(pickle.loads(raw))
        except Exception:  # a rank that died before reporting
            results.append({"rank": rank, "pid": pids[rank], "log": None,
                            "error": ["Died", f"rank {rank} exited without a result", ""]})
    return results


# ---------------------------------------------------------------------------------------------
# seeded inputs: the drive builds them in every rank, the grader again for the expected answer


def linear_inputs(p: dict[str, Any]) -> dict[str, Any]:
    """Full weight [out, in], bias [out] or None, input [rows, in], from the case's seed."""
    import torch

    g = torch.Generator().manual_seed(int(p["seed"]))
    w = torch.randn((p["out"], p["in"]), generator=g) / p["in"] ** 0.5
    b = torch.randn((p["out"],), generator=g) if p.get("bias") else None
    x = torch.randn((p["rows"], p["in"]), generator=g)
    return {"weight": w, "bias": b, "x": x}


def mlp_inputs(p: dict[str, Any]) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(int(p["seed"]))
    h, i = p["hidden"], p["inter"]
    return {"gate": torch.randn((i, h), generator=g) / h ** 0.5,
            "up": torch.randn((i, h), generator=g) / h ** 0.5,
            "down": torch.randn((h, i), generator=g) / i ** 0.5,
            "x": torch.randn((p["rows"], h), generator=g)}


def attention_inputs(p: dict[str, Any]) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(int(p["seed"]))
    d, hq, hkv, hidden = p["head_dim"], p["heads"], p["kv_heads"], p["hidden"]
    return {"q": torch.randn((hq * d, hidden), generator=g) / hidden ** 0.5,
            "k": torch.randn((hkv * d, hidden), generator=g) / hidden ** 0.5,
            "v": torch.randn((hkv * d, hidden), generator=g) / hidden ** 0.5,
            "o": torch.randn((hidden, hq * d), generator=g) / (hq * d) ** 0.5,
            "x": torch.randn((p["tokens"], hidden), generator=g),
            "positions": torch.arange(p["start"], p["start"] + p["tokens"])}


def dense_attention(inp: dict[str, Any], p: dict[str, Any]) -> Any:
    """The single-process layer the sharded one must equal: causal GQA self-attention."""
    import torch
    import torch.nn.functional as F

    t, d = p["tokens"], p["head_dim"]
    x, pos, theta = inp["x"], inp["positions"], p.get("theta", 10000.0)
    q = rope(F.linear(x, inp["q"]).view(t, -1, d), pos, theta).transpose(0, 1)
    k = rope(F.linear(x, inp["k"]).view(t, -1, d), pos, theta).transpose(0, 1)
    v = F.linear(x, inp["v"]).view(t, -1, d).transpose(0, 1)
    rep = p["heads"] // p["kv_heads"]
    k, v = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return F.linear(out.transpose(0, 1).reshape(t, -1), inp["o"])


CURRENT: dict[str, Any] = {}  # this rank's CollectiveLog while fn runs ("log")
