"""The sandbox child: `python -P -m lab.grader.sandbox --rfd R --wfd W [options]`.

It confines itself (`lab.grader.confine`), loads the exercise's `drive` module and the learner's
file, then answers requests framed by `lab.grader.protocol` on the two inherited pipe fds (never on
stdout, which belongs to the learner). Nothing here judges: `run` returns what the learner's code
returned (through `drive.run`), `batch` runs it several times for the grader's stopwatch, and
`timed` times it on the device's clock; all three through one driver (`Child.calls`). The
child is untrusted as a whole — the grader decides everything from plain data.

An import guard refuses every module of the judge: in the child only the modules the grader lists
(the sandbox machinery, `lab.grader.api`, the exercise's `drive` and its `CHILD_MODULES`, their
parent packages) may be imported from the guarded roots (`lab` and the exercise's own package);
a judge file loaded by path under any name is caught after each request. The reference child the
grader uses for timing is trusted and has no guard.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import resource
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from lab.grader import codec, confine, gpu_timing, limits, protocol, signal_guard
from lab.grader.api import case_from_wire, ctx_from_wire, warm_drive
from lab.grader.root import RootSpec

REFERENCE_PACKAGE = "lab.reference"
LAB_DIR = Path(__file__).resolve().parents[1]
REFERENCE_DIR = (LAB_DIR / "reference").resolve()
FORBIDDEN_MESSAGE = (
    "your solution imports {name} — the reference is off limits: solve it yourself "
    "(the grader computes the reference's answers in its own process)"
)
JUDGE_MESSAGE = (
    "your solution imports {name} — the grader's own modules (grading, checks, statistics, "
    "other exercises) are off limits in the sandbox: the grader judges in its own process"
)


def forbidden_message(name: str, reference: str = REFERENCE_PACKAGE) -> str:
    refs = (REFERENCE_PACKAGE, reference)
    if any(name == r or name.startswith(r + ".") for r in refs):
        return FORBIDDEN_MESSAGE.format(name=name)
    return JUDGE_MESSAGE.format(name=name)


class ImportGuard(importlib.abc.MetaPathFinder):
    """Refuses every module under the guarded roots except the allowed ones, and remembers.

    `allowed` maps each allowed module name to its file (as the grader found it), so a judge file
    loaded by path — under an allowed name or any other — is caught by `scan()`.
    """

    def __init__(self, roots: list[str], allowed: dict[str, str | None],
                 guarded_paths: list[str], reference: str = REFERENCE_PACKAGE,
                 reference_paths: list[str] | None = None) -> None:
        self.roots = tuple(roots)
        self.allowed = allowed
        self.reference = reference
        self.guarded_paths = [Path(p).resolve() for p in guarded_paths]
        self.reference_paths = [Path(p).resolve() for p in [*(reference_paths or []),
                                                             str(REFERENCE_DIR)]]
        self.attempted: list[str] = []  # messages, first one shown
        self.main = sys.modules.get("__main__")  # this file (multiprocessing aliases it)
        self.seen: dict[str, int] = {}  # name -> id(module) already checked (scan stays cheap)
        # id(module) -> (module, __file__, where it resolves): located ahead by `Child.warm`
        self.located: dict[int, tuple[ModuleType, str, str]] = {}

    def _guarded(self, fullname: str) -> bool:
        return any(fullname == r or fullname.startswith(r + ".") for r in self.roots)

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if self._guarded(fullname) and fullname not in self.allowed:
            message = forbidden_message(fullname, self.reference)
            self.attempted.append(message)
            raise ImportError(message, name=fullname)
        return None

    @staticmethod
    def _under(file: str, paths: list[Path]) -> bool:
        """`file`, a resolved path, is one of `paths` or inside one (compared as strings: the
        scan runs this for each of torch's ~2,600 modules)."""
        return any(file == str(p) or file.startswith(os.path.join(p, "")) for p in paths)

    def _location(self, module: ModuleType, file: str) -> str:
        """Where `file` resolves: from `located` when this very module object still names the
        same file, else resolved now (a first scan over torch's ~2,500 modules cost ~0.5 s of
        every prepared grading before `warm` resolved them ahead)."""
        known = self.located.get(id(module))
        if known is not None and known[0] is module and known[1] == file:
            return known[2]
        return os.path.realpath(file)

    def scan(self) -> None:
        """Catch judge files loaded by path (importlib.util.spec_from_file_location & co)."""
        for name, module in list(sys.modules.items()):
            if self.seen.get(name) == id(module):
                continue
            self.seen[name] = id(module)
            file = getattr(module, "__file__", None)
            if not isinstance(file, str) or not os.path.isabs(file) or module is self.main:
                continue  # torch.ops says "_ops.py": relative names are not files on disk
            where = self._location(module, file)
            if not self._under(where, self.guarded_paths + self.reference_paths):
                continue
            expected = self.allowed.get(name)
            if expected is not None and Path(expected).resolve() == Path(where):
                continue
            if name in self.allowed and expected is None:
                continue
            template = (FORBIDDEN_MESSAGE if self._under(where, self.reference_paths)
                        else JUDGE_MESSAGE)
            self.attempted.append(template.format(name=name))
            del sys.modules[name]


def locate_modules() -> dict[int, tuple[ModuleType, str, str]]:
    """Where every module imported so far resolves, for the guard's first scan (see `warm`)."""
    out: dict[int, tuple[ModuleType, str, str]] = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.isabs(file):
            out[id(module)] = (module, file, os.path.realpath(file))
    return out


def _is_learners(filename: str | None, learner_file: str | None) -> bool:
    """A frame is the learner's when it is in their file's folder (their file or its helpers)."""
    if not filename or learner_file is None or not os.path.isabs(filename):
        return False  # "<frozen importlib._bootstrap>" would resolve into the cwd: theirs
    return Path(filename).resolve().parent == Path(learner_file).resolve().parent


def trim_traceback(exc: BaseException, learner_file: str | None) -> str:
    """The traceback restricted to frames in the learner's files; with none of theirs (a
    wrong signature refused at the drive's call, a syntax error: the caret under their line
    says it all) only the exception, never a frame of the grader's shown as theirs."""
    te = traceback.TracebackException.from_exception(exc)
    mine = [f for f in te.stack if _is_learners(f.filename, learner_file)]
    shown = traceback.StackSummary.from_list(mine)
    return "".join(shown.format()) + "".join(te.format_exception_only())


def _where(exc: BaseException, learner_file: str | None) -> str:
    if isinstance(exc, SyntaxError) and _is_learners(exc.filename, learner_file):
        return f" ({Path(exc.filename or '').name}:{exc.lineno})"  # no frame: it never ran
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if _is_learners(frame.filename, learner_file):
            return f" ({Path(frame.filename).name}:{frame.lineno}, in {frame.name})"
    return ""


def _out_of_memory(exc: BaseException) -> bool:
    """Python's MemoryError, or an allocator's refusal that torch raises as a RuntimeError
    (`DefaultCPUAllocator: can't allocate memory`, CUDA's OutOfMemoryError, a mapping the data
    limit refuses: `Cannot allocate memory (12)`, ENOMEM): one message."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, RuntimeError) and any(
        marker in str(exc) for marker in ("can't allocate memory", "Cannot allocate memory"))


def _no_cuda(exc: BaseException) -> bool:
    """torch refusing CUDA on a machine without it (no driver, a CPU-only build, no device)."""
    text = str(exc)
    return isinstance(exc, RuntimeError | AssertionError) and any(
        marker in text for marker in ("Found no NVIDIA driver", "not compiled with CUDA",
                                      "No CUDA GPUs are available"))


class Child:
    """Answers the grader's requests in the sandbox. After the imports (`warm`) and after the
    solution's load, what is alive is frozen out of the garbage collector (`gc.freeze`): with
    torch imported, a full collection walks ~2·10^5 import-time objects (~0.15 s), and the 10^5
    result objects of one law case set off several. Learner and reference children freeze at
    the same points, so timed ratios compare like with like."""

    def __init__(self) -> None:
        self.guard: ImportGuard | None = None
        self.drive: Any = None
        self.solution: ModuleType | None = None
        self.solution_file: str | None = None
        self.located: dict[int, tuple[ModuleType, str, str]] = {}
        self.flush: gpu_timing.L2Flush | None = None  # written between timed calls

    def error(self, exc: BaseException) -> dict[str, Any]:
        tb = trim_traceback(exc, self.solution_file)
        where = _where(exc, self.solution_file)
        if self.guard is not None and self.guard.attempted:
            return {"ok": False, "kind": "forbidden_import",
                    "message": self.guard.attempted[0], "traceback": tb}
        if isinstance(exc, SystemExit):
            return {"ok": False, "kind": "exit", "traceback": tb,
                    "message": f"your code called sys.exit({exc.code!r}){where} — "
                               "return a value instead of exiting"}
        limit = limits.explain(exc)
        if limit is not None:
            return {"ok": False, "kind": "limit", "traceback": tb, "message": limit + where}
        if _out_of_memory(exc):
            return {"ok": False, "kind": "memory", "traceback": tb, "message": (
                f"out of memory{where}: your code asked for more than the sandbox's memory "
                "cap allows — runaway allocation?")}
        if _no_cuda(exc):
            return {"ok": False, "kind": "exception", "traceback": tb, "message": (
                f"your code used CUDA{where}, but this grading runs on the CPU (`--device "
                "cpu`: no GPU here) — put tensors on the device of the inputs you are given "
                "(`x.device`) instead of calling .cuda(); to grade on a GPU, see \"Grading "
                "on a GPU machine\" in lab/README.md")}
        if isinstance(exc, NotImplementedError):
            detail = str(exc)
            detail = "" if not detail or f"in {detail})" in where else f": {detail}"
            return {"ok": False, "kind": "not_implemented", "traceback": tb,
                    "message": f"not implemented yet{where}{detail}"}
        return {"ok": False, "kind": "exception", "traceback": tb,
                "message": f"{type(exc).__name__}{where}: {exc}"}

    def warm(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Import the exercise's drive (torch and the trusted helpers it uses) before the
        learner's file is loaded: a child prepared ahead of its grading. `load` imports the
        same module after installing the guard, so what this imports is what a cold load
        would have imported, and the guard's scan checks it all the same."""
        self._threads(msg)
        if self.guard is None and self.solution is None:
            drive = importlib.import_module(str(msg["drive"]))
            warm_drive(drive, msg.get("device"))
            self.located = locate_modules()  # the guard's first scan then only looks them up
        return {"ok": True}

    @staticmethod
    def _threads(msg: dict[str, Any]) -> None:
        if msg.get("torch_threads"):
            import torch

            torch.set_num_threads(int(msg["torch_threads"]))

    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        self._threads(msg)
        if not msg.get("trusted"):
            self.guard = ImportGuard(list(msg["roots"]), dict(msg["allowed"]),
                                     list(msg["guarded_paths"]), str(msg["reference"]),
                                     list(msg["reference_paths"]))
            self.guard.located = self.located
            self.guard.allowed[msg["module_name"]] = str(Path(msg["solution"]).resolve())
            sys.meta_path.insert(0, self.guard)
        self.drive = importlib.import_module(msg["drive"])
        if msg.get("trusted"):  # the grader's own reference child: import it by name
            self.solution = importlib.import_module(msg["reference"])
            return {"ok": True}
        path = Path(msg["solution"]).resolve()
        self.solution_file = str(path)
        sys.path.append(str(path.parent))
        spec = importlib.util.spec_from_file_location(msg["module_name"], path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[msg["module_name"]] = module
        spec.loader.exec_module(module)
        self.solution = module
        return {"ok": True}

    def calls(self, msg: dict[str, Any]) -> dict[str, Any]:
        """`run` (the graded call: its one seed), `batch` (the grader's stopwatch: once per
        seed) and `timed` (the device's clock: warm-up, L2 flush, the stop rule) are one code
        path: every call of the learner's code is made by `gpu_timing.timed_calls`, from the
        same line, through `call` below, with the same context (its seed is always 0 on the
        wire: `Children.message`). The learner's code sees the same callers and frames whether
        it is checked or timed, on the CPU and on CUDA."""
        case, ctx = case_from_wire(msg["case"]), dict(msg["ctx"])
        seeds = [int(s) for s in msg["seeds"]]
        clock, flush, warmup, rule = self._stopwatch(msg, str(ctx["device"]), len(seeds))

        def call(seed: int) -> Any:
            return self.drive.run(self.solution, case, ctx_from_wire({**ctx, "seed": seed}))

        timed = gpu_timing.timed_calls(call, seeds, warmup, clock, flush, rule)
        if msg.get("op") == "timed":
            return timed.to_reply()
        if msg.get("op") == "batch":
            return {"ok": True, "values": timed.values}
        return {"ok": True, "value": timed.values[0]}

    def _stopwatch(self, msg: dict[str, Any], device: str, calls: int) -> tuple[
            gpu_timing.Clock, Callable[[], None], int, gpu_timing.StopRule]:
        """The clock (the device's, for every op), the flush, warm-up calls and stop rule of a
        request: a `timed` one's from the grader; none and every seed for `run` and `batch`."""
        clock = gpu_timing.CudaClock() if device == "cuda" else gpu_timing.CpuClock()
        if msg.get("op") != "timed":
            return clock, _no_flush, 0, gpu_timing.StopRule.every(calls)
        nbytes = int(msg["flush_bytes"])
        if self.flush is None or self.flush.nbytes != nbytes:
            self.flush = gpu_timing.L2Flush(device, nbytes)
        return clock, self.flush, int(msg["warmup"]), gpu_timing.StopRule.from_wire(msg["rule"])

    def expected(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The grading's expected value of one case (its `expected`, else the reference's
        `drive.run`), in the grader's own child: where the learner's own checkpoints are
        loaded, under the sandbox's limits, instead of in the grader's process, which no limit
        covers. Only a trusted child (the reference loaded, no import guard) computes one."""
        if self.guard is not None or self.solution_file is not None:
            return {"ok": False, "kind": "protocol",
                    "message": "expected values are computed only in the grader's own child"}
        grading = importlib.import_module(str(msg["grading"]))
        case, ctx = case_from_wire(msg["case"]), ctx_from_wire(msg["ctx"])
        custom = getattr(grading, "expected", None)
        value = custom(case, ctx) if callable(custom) else self.drive.run(self.solution, case,
                                                                           ctx)
        return {"ok": True, "value": value}

    def handle(self, msg: dict[str, Any]) -> bytes:
        """Answer one request; returns the encoded frame (a value that cannot be sent becomes
        an error reply that says why)."""
        op = msg.get("op")
        handler = {"warm": self.warm, "load": self.load, "run": self.calls,
                   "batch": self.calls, "timed": self.calls,
                   "expected": self.expected}.get(str(op))
        if handler is None:
            reply: dict[str, Any] = {"ok": False, "kind": "protocol",
                                     "message": f"unknown op {op!r}"}
        else:
            try:
                reply = handler(msg)
            except BaseException as exc:  # the learner's code may raise anything
                reply = self.error(exc)
            if op in ("warm", "load") and reply.get("ok"):
                gc.freeze()  # imports and the loaded solution: see the class docstring
        if self.guard is not None:
            self.guard.scan()
            if self.guard.attempted and reply.get("ok"):
                reply = {"ok": False, "kind": "forbidden_import", "traceback": "",
                         "message": self.guard.attempted[0]}
        try:
            return protocol.encode(reply)
        except (codec.NotEncodable, codec.CodecError) as exc:
            return protocol.encode({
                "ok": False, "kind": "unsendable", "traceback": "",
                "message": f"your result cannot be sent back to the grader: "
                           f"{_explain(reply) or exc}"})
        except BaseException as exc:  # e.g. a __len__ of theirs that raises while encoding
            return protocol.encode({
                "ok": False, "kind": "unsendable", "traceback": "",
                "message": f"your result cannot be sent back to the grader "
                           f"({type(exc).__name__}: {exc}); {codec.PLAIN_HELP}"})


def _no_flush() -> None:
    """The stopwatch's and the graded call's stand-in for the L2 flush (timed on the grader's
    clock, not the device's: nothing to flush)."""


def _explain(reply: dict[str, Any]) -> str:
    """Why a reply cannot be encoded, with the path counted from drive.run's own result."""
    values = [reply["value"]] if "value" in reply else list(reply.get("values", []))
    for value in values:
        try:
            codec.encode(value)
        except (codec.NotEncodable, codec.CodecError) as exc:
            return str(exc)
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lab.grader.sandbox")
    parser.add_argument("--rfd", type=int, required=True)
    parser.add_argument("--wfd", type=int, required=True)
    parser.add_argument("--lifeline", type=int, default=-1)
    parser.add_argument("--data-limit-mb", type=int, default=0)
    parser.add_argument("--workspace", default="")
    parser.add_argument("--root", default="", help="the allow-list (lab.grader.root, JSON)")
    parser.add_argument("--network", action="store_true")
    parser.add_argument("--unconfined", action="store_true")
    args = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if args.unconfined:
        state = confine.Confinement(outer_pid=os.getpid(), mode=confine.UNCONFINED)
    else:
        try:
            state = confine.enter(RootSpec.from_json(args.root), args.workspace or os.getcwd(),
                                  network=args.network)
        except confine.ConfinementError as exc:
            state = confine.Confinement(outer_pid=os.getpid(), waiter=True, error=str(exc))
    hello = protocol.encode({"op": "hello", "pid": state.outer_pid, "missing": state.missing,
                             "error": state.error, "mode": state.mode})
    if state.waiter:  # outside the confinement: tell the grader who runs the code, then wait
        protocol.send_bytes(args.wfd, hello)
        os.close(args.rfd)
        os.close(args.wfd)
        if state.error or state.outer_pid == os.getpid():
            os._exit(3)
        confine.wait_and_mirror(state.outer_pid, args.lifeline)
    if state.outer_pid == os.getpid():  # unconfined at the learner's request: this process
        # answers; orphans of the learner's code reparent here, not to the host's init, so the
        # grader still finds them (CPU time, memory, stopping between requests)
        with contextlib.suppress(OSError):
            confine.set_child_subreaper()
        if args.lifeline >= 0:
            confine.watch_lifeline(args.lifeline)
        protocol.send_bytes(args.wfd, hello)
    elif args.lifeline >= 0:
        os.close(args.lifeline)  # the waiter watches it; this process only inherited it
    if args.data_limit_mb > 0:
        limit = args.data_limit_mb << 20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    limits.apply()
    signal_guard.install()  # before any learner code: the grader and the app are off limits
    child = Child()
    speaker = os.getpid()
    while True:
        try:
            msg = protocol.recv_blocking(args.rfd)
        except protocol.ChannelClosed:
            return 0
        if msg.get("op") == "exit":
            return 0
        frame = child.handle(msg)
        if os.getpid() != speaker:  # a copy the learner's code forked and let return (no
            os._exit(0)  # os._exit): only this process answers; the copy ends unheard
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the learner may have closed the stream
                stream.flush()
        try:
            protocol.send_bytes(args.wfd, frame)
        except OSError:  # the learner's code closed the result pipe (or put another file there)
            os._exit(protocol.PIPE_LOST)


if __name__ == "__main__":
    os._exit(main())
