"""How a grading's child is made: its options, its import boundary and its key, and a learner's
child spawned and warmed ahead of a grading (`Prepared`: torch imported) that the grading
adopts (`lab.grader.runner.prepare` makes one; `lab.grader.children` runs them)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.exercises import Exercise
from lab.grader import boundary
from lab.grader.api import warm_drive
from lab.grader.isolation import ChildReply, Sandbox

REFERENCE_PACKAGE = "lab.reference"  # grading.REFERENCE is lab.reference.<exercise package>
# exercises whose drive connects processes over TCP (torch.distributed's ranks, on loopback):
# where Landlock confines the grading, TCP stays open for them (namespaces give a private `lo`)
NETWORK_EXERCISES = frozenset({"tensor-parallel"})
# the modules outside `lab` that grading modules import (the wording of their messages): the
# models child (`models_sandbox`), which imports a grading module, is shown these files too
GRADING_IMPORTS = ("questions.wording",)


def sandbox_options(exercise: Exercise, device: str, memory_mb: int,
                    load_timeout_s: float | None, confine: bool,
                    models: tuple[str, ...] = ()) -> dict[str, Any]:
    """What shapes a learner's (or the reference's) child for this exercise and device
    (`models`: the learner's own checkpoint folders, which the child reads)."""
    uses_torch_cpu = exercise.needs_torch and device == "cpu"
    return dict(
        module_name=Path(exercise.workspace_file).stem,
        memory_mb=memory_mb,
        torch_threads=1 if uses_torch_cpu else None,
        data_limit=device == "cpu",
        load_timeout_s=load_timeout_s or exercise.load_timeout_s,
        confine=confine,
        needs_torch=exercise.needs_torch,
        network=exercise.id in NETWORK_EXERCISES,
        device=device,
        read_also=models,
    )


def reference_guess(exercise: Exercise) -> str:
    """The reference module by convention (checked against grading.REFERENCE once that module
    is imported): known before the grading module, so the child can start first."""
    return f"{REFERENCE_PACKAGE}.{exercise.module.rsplit('.', 1)[-1]}"


def learner_sandbox(exercise: Exercise, solution: Path, reference: str,
                    options: dict[str, Any]) -> tuple[boundary.Boundary, Sandbox]:
    found = boundary.compute(exercise.module, reference)
    return found, Sandbox(solution=solution, load=found.load_message(trusted=False), **options)


def reference_sandbox(solution: Path, found: boundary.Boundary,
                      options: dict[str, Any]) -> Sandbox:
    """The grader's own child for timing the reference (trusted: nothing hidden from it)."""
    return Sandbox(solution=solution, load=found.load_message(trusted=True), **options)


def models_sandbox(solution: Path, found: boundary.Boundary,
                   options: dict[str, Any]) -> Sandbox:
    """The grader's own child for expected values computed with the learner's own checkpoints
    (`lab.grader.sandbox.Child.expected`): trusted like the reference's, and also shown the
    modules outside `lab` that grading modules import (GRADING_IMPORTS)."""
    also = [*options.get("read_also", ())]
    for name in GRADING_IMPORTS:
        parts = name.split(".")
        for n in range(1, len(parts) + 1):  # the module and its parent packages
            spec = importlib.util.find_spec(".".join(parts[:n]))
            if spec is not None and spec.origin and spec.has_location:
                also.append(str(Path(spec.origin).resolve()))
    return Sandbox(solution=solution, load=found.load_message(trusted=True),
                   **{**options, "read_also": tuple(also)})


def child_key(exercise: Exercise, solution: Path, device: str, reference: str,
              options: dict[str, Any]) -> tuple[Any, ...]:
    return (exercise.id, exercise.needs_torch, str(solution.resolve()), device, reference,
            tuple(sorted(options.items())))


@dataclass
class Prepared:
    """A learner's child spawned and warmed (torch imported) before its grading, on a thread:
    `grade(..., prepared=)` adopts it when nothing that shapes the child differs (else closes
    it). It never holds the learner's code: the file is loaded when the grading starts.

    When the levels have a timed case, the reference's timing child is spawned and warmed too,
    once the learner's is ready (so the learner's first failure never waits for it): the
    grading's first timed case then only loads the reference into it, instead of waiting
    seconds for a fresh child's torch import."""

    key: tuple[Any, ...]
    boundary: boundary.Boundary
    sandbox: Sandbox
    exercise: Exercise | None = None
    device: str | None = None
    outcome: ChildReply | None = None
    levels: list[int] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    reference: Sandbox | None = None  # the timing child, warmed by `_warm_reference`
    thread: threading.Thread = field(init=False)
    imports: threading.Thread = field(init=False)
    reference_thread: threading.Thread | None = field(init=False, default=None)
    closed: threading.Event = field(init=False, default_factory=threading.Event)

    def __post_init__(self) -> None:
        # A close cuts the warm-up short (its request polls this between reads), so closing
        # never waits for a child's torch import: `dojo lab serve` stopped by the app has 5 s
        # before SIGKILL, and at load a warm-up outlasted them, leaving its folder.
        self.sandbox.cancelled = self.closed.is_set
        # This process imports what the grading will (the grading module, the reference and
        # its drive: torch) while the child warms on the other core.
        self.imports = threading.Thread(target=self._import, daemon=True)
        self.imports.start()
        self.thread = threading.Thread(target=self._warm, daemon=True)
        self.thread.start()

    def _warm(self) -> None:
        with contextlib.suppress(Exception):  # a failed warm-up: the grading starts its own
            self.outcome = self.sandbox.prepare(self.device)
        if (self.outcome is not None and self.outcome.ok and not self.closed.is_set()
                and self._has_timed_case()):
            self.reference = reference_sandbox(self.sandbox.solution, self.boundary,
                                               self.options)
            self.reference.cancelled = self.closed.is_set
            self.reference_thread = threading.Thread(target=self._warm_reference, daemon=True)
            self.reference_thread.start()

    def _has_timed_case(self) -> bool:
        while self.imports.is_alive():  # a close meanwhile wants no reference child
            if self.closed.wait(0.05):
                return False
        if self.exercise is None or not self.options:
            return False
        try:
            grading = self.exercise.grading()
            return any(c.timed for n in self.levels for c in grading.cases(n, 0))
        except Exception:
            return False

    def _warm_reference(self) -> None:
        assert self.reference is not None
        with contextlib.suppress(Exception):  # not warm: the grading starts its own
            self.reference.prepare(None)  # torch and the drive imported; no models loaded

    def _import(self) -> None:
        if self.exercise is None:
            return
        with contextlib.suppress(Exception):  # the grading imports again and reports a failure
            grading = self.exercise.grading()
            importlib.import_module(grading.REFERENCE)
            warm_drive(importlib.import_module(self.boundary.drive), self.device)

    def wait(self) -> ChildReply | None:
        """Block until the child is warm and this process's imports are done (not for the
        reference's child: `take_reference` waits for that one)."""
        self.thread.join()
        self.imports.join()
        return self.outcome

    def take_reference(self, *, use: bool = True) -> Sandbox | None:
        """The reference's warmed timing child, handed over once (waiting for its warm-up);
        None when none was prepared or its warm-up failed. `use=False` discards it without
        waiting: a warm-up in flight is killed (a stub's verdict must not wait for a torch
        import it will never use)."""
        self.thread.join()
        ref, self.reference = self.reference, None
        if ref is None:
            return None
        if not use:
            ref.signal_kill()  # the warm-up's pending request then ends at once
        if self.reference_thread is not None:
            self.reference_thread.join()
        if not (use and ref.ready and ref.alive):
            ref.close()
            return None
        return ref

    @property
    def usable(self) -> bool:
        """Still worth adopting: warming, or warmed and neither used by a grading nor dead."""
        return self.thread.is_alive() or (self.outcome is not None and self.outcome.ok
                                          and self.sandbox.ready and self.sandbox.alive)

    def close(self, *, leaving: bool = False) -> None:
        """Kill the child and remove its folder: a warm-up in flight (a torch import) is
        killed first, so closing never waits for it. `leaving`: this process is on its way out
        (`dojo lab watch` stopped), so its own imports are not awaited either (a daemon thread;
        at load they kept a Ctrl-C waiting 4-9 s); otherwise they are, as what comes next
        imports the same modules."""
        self.closed.set()
        self.sandbox.signal_kill()
        self.thread.join()
        if not leaving:
            self.imports.join()
        self.sandbox.close()
        self.take_reference(use=False)
