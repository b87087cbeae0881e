"""Every tensor the graders hand a learner's code follows the grading's device (the CUDA
paths have never run, so this is checked with torch's `meta` device, which has shapes but no
data): each case of every torch lab runs its drive with device "meta" against a solution that
records the devices of what it is given and stops. A case whose inputs need a real model (the
model loader accepts only cpu and cuda) is counted apart.

By design, some inputs stay on the CPU whatever the device, so that `--seed` replays the same
draws on every machine (CPU and CUDA generators give different streams) — each listed below with
its reason; any other tensor on the wrong device, or two devices in one call, fails."""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from typing import Any

import pytest

from lab.exercises import get
from lab.grader.api import Case, RunContext

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow


class _Stop(Exception):
    pass


def _devices(x: Any, depth: int = 0) -> set[str]:
    if depth > 4:
        return set()
    if isinstance(x, torch.Tensor):
        return {x.device.type}
    if isinstance(x, torch.nn.Module):
        return {p.device.type for p in x.parameters()}
    if isinstance(x, list | tuple):
        return set().union(*[_devices(y, depth + 1) for y in x]) if x else set()
    if isinstance(x, dict):
        return set().union(*[_devices(y, depth + 1) for y in x.values()]) if x else set()
    if hasattr(x, "__dict__") and not isinstance(x, type | types.ModuleType) and depth < 2:
        return _devices(list(vars(x).values()), depth + 1)
    return set()


class _Recorder(types.ModuleType):
    """A learner's module whose every function (and class) records its arguments' devices."""

    def __init__(self) -> None:
        super().__init__("solution")
        self.calls: list[set[str]] = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)

        def record(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(_devices([*args, *kwargs.values()]))
            raise _Stop

        return record


# (exercise, why) -> the cases whose inputs are on the CPU by design
ON_CPU: dict[tuple[str, str], Callable[[Case], bool]] = {
    ("spec-verify", "synthetic logits and distributions (levels 1-3, level 5's verifier) are "
     "built and sampled with seeded CPU generators, and level 1's logits come back to the CPU, "
     "so a replay draws the same on every machine"):
        lambda c: c.level in (1, 2, 3) or (c.level == 5 and c.params.get("kind") == "verify"),
    ("spec-verify", "the toy models of levels 4-5 are tiny CPU models (the shipped pair runs on "
     "the device)"): lambda c: c.params.get("model") not in (None, "shipped"),
}


def _on_cpu(exercise: str, case: Case) -> bool:
    return any(rule(case) for (ex, _), rule in ON_CPU.items() if ex == exercise)


@pytest.mark.parametrize("exercise", ["spec-verify", "batch-engine", "paged-kv", "sampling"])
def test_tensors_handed_to_the_learner_follow_the_device(exercise: str) -> None:
    ex = get(exercise)
    drive = importlib.import_module(f"{ex.module}.drive")
    grading = ex.grading()
    on_device = needs_model = 0
    wrong: list[str] = []
    for level in ex.level_numbers:
        for case in grading.cases(level, 3):
            solution = _Recorder()
            try:
                drive.run(solution, case, RunContext(device="meta", seed=1, dtype=ex.dtype))
            except _Stop:
                pass
            except ValueError as exc:
                if "unknown device 'meta'" not in str(exc):
                    raise
                needs_model += 1
                continue
            except RuntimeError as exc:  # a torch.Generator cannot live on meta (sampling's
                if "META device type" not in str(exc):  # level 3 draws on the grading's device)
                    raise
                needs_model += 1
                continue
            want = "cpu" if _on_cpu(exercise, case) else "meta"
            for devices in solution.calls:
                if devices - {want}:
                    wrong.append(f"L{level} {case.id}: {sorted(devices)}, want {want}")
                on_device += want == "meta" and devices == {"meta"}
    assert not wrong, wrong
    if exercise == "paged-kv":
        assert on_device >= 9  # level 4's pool and gather inputs
    if exercise != "batch-engine":  # batch-engine's probe model is device-free by design
        assert on_device + needs_model > 0
