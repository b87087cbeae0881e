"""The sandbox child: `python -m lab.grader.sandbox --rfd R --wfd W [--data-limit-mb N]`.

It loads the learner's module and the exercise's grading module, then answers requests framed by
`lab.grader.protocol` on the two inherited pipe fds (never on stdout, which belongs to the
learner). Imports of `lab.reference` are refused by a meta-path hook. Every failure inside the
learner's code becomes a reply with a `kind` and a message; anything worse (segfault, os._exit,
runaway memory, an infinite loop) is detected by the grader from outside.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import pickle
import resource
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from lab.grader import protocol, signal_guard
from lab.grader.timing import synchronize, time_calls

REFERENCE_PACKAGE = "lab.reference"
REFERENCE_DIR = (Path(__file__).resolve().parents[1] / "reference").resolve()
FORBIDDEN_MESSAGE = (
    "your solution imports {name} — the reference is off limits: solve it yourself "
    "(the grader computes the reference's answers in its own process)"
)


class ReferenceGuard(importlib.abc.MetaPathFinder):
    """Refuses `lab.reference` and its submodules, and remembers that someone tried."""

    def __init__(self) -> None:
        self.attempted: list[str] = []

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == REFERENCE_PACKAGE or fullname.startswith(REFERENCE_PACKAGE + "."):
            self.attempted.append(fullname)
            raise ImportError(FORBIDDEN_MESSAGE.format(name=fullname), name=fullname)
        return None

    def scan(self) -> None:
        """Also catch a reference file loaded by path (importlib.util.spec_from_file_location)."""
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if file and Path(file).resolve().parent == REFERENCE_DIR:
                self.attempted.append(name)
                del sys.modules[name]


def _is_learners(filename: str | None, learner_file: str | None) -> bool:
    """A frame is the learner's when it is in their file's folder (their file or its helpers)."""
    if not filename or learner_file is None or not os.path.isabs(filename):
        return False  # "<frozen importlib._bootstrap>" would resolve into the cwd: theirs
    return Path(filename).resolve().parent == Path(learner_file).resolve().parent


def trim_traceback(exc: BaseException, learner_file: str | None) -> str:
    """The traceback restricted to frames in the learner's files (else the last frame)."""
    te = traceback.TracebackException.from_exception(exc)
    frames = list(te.stack)
    mine = [f for f in frames if _is_learners(f.filename, learner_file)]
    if isinstance(exc, SyntaxError) and not mine:  # the caret under their line says it all
        return "".join(te.format_exception_only())
    shown = traceback.StackSummary.from_list(mine or frames[-1:])
    return "".join(shown.format()) + "".join(te.format_exception_only())


def _where(exc: BaseException, learner_file: str | None) -> str:
    if isinstance(exc, SyntaxError) and _is_learners(exc.filename, learner_file):
        return f" ({Path(exc.filename or '').name}:{exc.lineno})"  # no frame: it never ran
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if _is_learners(frame.filename, learner_file):
            return f" ({Path(frame.filename).name}:{frame.lineno}, in {frame.name})"
    return ""


class Child:
    def __init__(self, guard: ReferenceGuard) -> None:
        self.guard = guard
        self.grading: Any = None
        self.solution: ModuleType | None = None
        self.solution_file: str | None = None

    def error(self, exc: BaseException) -> dict[str, Any]:
        tb = trim_traceback(exc, self.solution_file)
        where = _where(exc, self.solution_file)
        if self.guard.attempted:
            name = self.guard.attempted[0]
            return {"ok": False, "kind": "forbidden_import",
                    "message": FORBIDDEN_MESSAGE.format(name=name), "traceback": tb}
        if isinstance(exc, SystemExit):
            return {"ok": False, "kind": "exit", "traceback": tb,
                    "message": f"your code called sys.exit({exc.code!r}){where} — "
                               "return a value instead of exiting"}
        if isinstance(exc, MemoryError):
            return {"ok": False, "kind": "memory", "traceback": tb,
                    "message": f"MemoryError{where}: your code ran past the sandbox memory cap"}
        if isinstance(exc, NotImplementedError):
            detail = str(exc)
            detail = "" if not detail or f"in {detail})" in where else f": {detail}"
            return {"ok": False, "kind": "not_implemented", "traceback": tb,
                    "message": f"not implemented yet{where}{detail}"}
        return {"ok": False, "kind": "exception", "traceback": tb,
                "message": f"{type(exc).__name__}{where}: {exc}"}

    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        if msg.get("torch_threads"):
            import torch

            torch.set_num_threads(int(msg["torch_threads"]))
        self.grading = importlib.import_module(msg["grading"])
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

    def run(self, msg: dict[str, Any]) -> dict[str, Any]:
        case, ctx = msg["case"], msg["ctx"]
        start = time.perf_counter()
        value = self.grading.run(self.solution, case, ctx)
        synchronize(ctx.device)
        duration = time.perf_counter() - start
        try:  # the grader accepts plain values only (protocol.loads_plain): check here
            protocol.loads_plain(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        except Exception as exc:
            return {"ok": False, "kind": "exception", "traceback": "",
                    "message": f"the result cannot be sent back to the grader ({exc}); "
                               "return plain Python values (int, float, str, list, dict), "
                               "numpy values or CPU tensors, not objects of your own classes"}
        return {"ok": True, "value": value, "duration_s": duration}

    def time(self, msg: dict[str, Any]) -> dict[str, Any]:
        case, ctx = msg["case"], msg["ctx"]
        durations = time_calls(
            lambda: self.grading.run(self.solution, case, ctx), ctx.device, int(msg["repeats"])
        )
        return {"ok": True, "durations": durations}

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        op = msg.get("op")
        handler = {"load": self.load, "run": self.run, "time": self.time}.get(str(op))
        if handler is None:
            return {"ok": False, "kind": "protocol", "message": f"unknown op {op!r}"}
        try:
            reply = handler(msg)
        except BaseException as exc:  # the learner's code may raise anything, SystemExit included
            reply = self.error(exc)
        self.guard.scan()
        if self.guard.attempted and reply.get("ok"):
            name = self.guard.attempted[0]
            reply = {"ok": False, "kind": "forbidden_import", "traceback": "",
                     "message": FORBIDDEN_MESSAGE.format(name=name)}
        return reply


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lab.grader.sandbox")
    parser.add_argument("--rfd", type=int, required=True)
    parser.add_argument("--wfd", type=int, required=True)
    parser.add_argument("--data-limit-mb", type=int, default=0)
    args = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if args.data_limit_mb > 0:
        limit = args.data_limit_mb << 20
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    signal_guard.install()  # before any learner code: the grader and the app are off limits
    guard = ReferenceGuard()
    sys.meta_path.insert(0, guard)
    child = Child(guard)
    while True:
        try:
            msg = protocol.recv_blocking(args.rfd)
        except protocol.ChannelClosed:
            return 0
        if msg.get("op") == "exit":
            return 0
        reply = child.handle(msg)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the learner may have closed the stream
                stream.flush()
        try:
            protocol.send(args.wfd, reply)
        except Exception as exc:  # e.g. an unpicklable exception inside the reply
            protocol.send(args.wfd, {"ok": False, "kind": "exception", "traceback": "",
                                     "message": f"reply could not be sent: {exc}"})


if __name__ == "__main__":
    os._exit(main())
