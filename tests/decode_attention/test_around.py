"""decode-attention around the kernels: the lab where triton is missing, bf16 and the speed case
under the interpreter, the speed case's figures and gate on CUDA (from given samples)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from lab.exercises import get
from lab.grader.api import Case

REAL_FIND_SPEC = importlib.util.find_spec


@pytest.fixture
def no_triton(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a platform without triton's wheels: the module cannot be found."""

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "triton" else REAL_FIND_SPEC(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_available_where_triton_is_installed() -> None:
    assert get("decode-attention").unavailable() is None


@pytest.mark.slow  # the CLI reads the catalogue and the attempts
def test_listed_with_the_reason_when_triton_is_missing(no_triton: None) -> None:
    from click.testing import CliRunner

    from trainer.cli import main

    reason = get("decode-attention").unavailable()
    assert reason is not None and "needs triton" in reason and "wheels" in reason
    assert all(ex.unavailable() is None for ex in _others())
    out = CliRunner().invoke(main, ["lab", "list"]).output
    assert "unavailable here: it needs triton, which is not installed here" in out
    assert "paged-kv" in out and "sampling" in out  # everything else still listed


def test_grading_refused_with_the_reason_when_triton_is_missing(no_triton: None,
                                                                 tmp_path: Path) -> None:
    from lab.grader.plan import GradeOptions, UsageError, plan_grading

    solution = tmp_path / "decode_attention.py"
    solution.write_text("", encoding="utf-8")
    with pytest.raises(UsageError, match=r"decode-attention cannot be graded here: it needs "
                                         r"triton"):
        plan_grading(get("decode-attention"), solution, GradeOptions(device="cpu"))
    other = tmp_path / "kv_bytes.py"
    other.write_text("", encoding="utf-8")
    plan_grading(get("kv-bytes"), other, GradeOptions(device="cpu"))  # unaffected


@pytest.mark.slow
def test_catalogue_row_says_unavailable(no_triton: None, dojo_home: Any) -> None:
    from trainer.core.lab import Lab

    with Lab.open() as lab:
        rows = [r for r in lab.catalogue().rows if r.exercise == "decode-attention"]
    assert rows and all(r.status.startswith("unavailable here: it needs triton") for r in rows)


def _others() -> list[Any]:
    from lab.exercises import discover

    return [ex for ex in discover() if ex.id != "decode-attention"]


def _case(kind: str, **params: Any) -> Case:
    return Case(id="c", level=2, params={"kind": kind, **params})


def test_bf16_refused_under_the_interpreter() -> None:
    from lab.exercises.decode_attention import drive, grading
    from lab.grader.api import RunContext

    assert drive.INTERPRETED  # no DOJO_LAB_DEVICE=cuda here
    case = _case("attention", dtype="bfloat16")
    got = drive.run(object(), case, RunContext(device="cpu"))  # type: ignore[arg-type]
    verdict = grading.check(case, got, None)
    assert verdict.passed and "1 + 1 is stored as 1.7e38" in verdict.message


def test_speed_case_says_it_needs_a_gpu_on_a_cpu() -> None:
    from lab.exercises.decode_attention import drive, grading
    from lab.grader.api import RunContext

    case = next(c for c in grading.cases(2, 1) if c.params["kind"] == "speed")
    got = drive.run(object(), case, RunContext(device="cpu"))  # type: ignore[arg-type]
    verdict = grading.check(case, got, grading.expected(case, RunContext(device="cpu")))
    assert verdict.passed and "the speed part needs a GPU" in verdict.message
    assert not verdict.metrics  # so no gate applies on a CPU


@pytest.mark.parametrize(("learner_ms", "missed"), [
    (2.0, ""), (3.0, "bandwidth_share 0.17 < 0.2"),
    (9.0, "bandwidth_share 0.06 < 0.2, torch_ratio 2.25 > 2")])
def test_speed_figures_and_gate(learner_ms: float, missed: str) -> None:

    from lab.exercises.decode_attention.grading import speed
    from lab.grader.measure import check_gate

    case = _small_speed_case("contiguous")
    got = {**_answers(case, [5, 6]), "learner_ms": [learner_ms] * 5,
           "torch_ms": [4.0] * 5, "copy_ms": [1.0] * 5, "kv_bytes": 10**9,
           "copy_bytes": 2 * 10**9}
    verdict = speed.check(case, got, {"device": "cpu"})
    # copy: 2e9 B in 1 ms = 2 TB/s; roofline: 1e9 B / 2 TB/s = 0.5 ms
    assert verdict.passed and "roofline 0.500 ms" in verdict.message
    assert verdict.metrics["bandwidth_share"] == pytest.approx(0.5 / learner_ms)
    assert verdict.metrics["torch_ratio"] == pytest.approx(learner_ms / 4.0)
    assert check_gate(get("decode-attention").level(2).gate, verdict.metrics) == missed


def _small_speed_case(layout: str) -> Case:
    from lab.exercises.decode_attention.grading import speed

    case = speed.case(2, layout)
    small = {**case.params, "batch": 2, "heads": 4, "kv_heads": 2, "head_dim": 16,
             "min_len": 5, "max_len": 40, "block_size": 8, "num_splits": 3,
             "dtype": "float32"}
    return Case(id=case.id, level=case.level, params=small)


def _answers(case: Case, seeds: list[int]) -> dict[str, Any]:
    """Right outputs for timed calls on these query seeds, as the drive returns them."""
    from lab.exercises.decode_attention.grading import speed

    return {"outs": [speed.answer(case.params, "cpu", s).float() for s in seeds], "seeds": seeds}


def test_every_timed_output_may_be_the_one_checked() -> None:
    """The grader draws which timed outputs it checks after the calls ran (4 of them): one call
    in 4 answered wrong (skipped work, an answer replayed from a cache) fails; an output whose
    buffer a later call wrote again (None) is never picked."""
    import torch

    from lab.exercises.decode_attention.grading import speed

    case = _small_speed_case("paged")
    figures = {"learner_ms": [1.0], "torch_ms": [1.0], "copy_ms": [1.0], "kv_bytes": 1,
               "copy_bytes": 2}
    got = {**_answers(case, [11, 12, 13, 14]), **figures}
    assert speed.check(case, got, {"device": "cpu"}).passed
    stale = [*got["outs"][:3], got["outs"][0]]  # call 4 answers call 1's question
    verdict = speed.check(case, {**got, "outs": stale}, {"device": "cpu"})
    assert not verdict.passed
    assert "the output of timed call 4 of 4 (its own query)" in verdict.message
    reused = {**got, "outs": [None, None, None, got["outs"][3]]}
    assert speed.check(case, reused, {"device": "cpu"}).passed
    odd = {**got, "outs": [*got["outs"][:3], "a list"]}
    assert "returned a list, not a torch.Tensor" in speed.check(case, odd,
                                                               {"device": "cpu"}).message
    assert torch.equal(speed.answer(case.params, "cpu", 11), speed.answer(case.params, "cpu", 11))


@pytest.mark.slow  # the reference under the interpreter, timed by the CPU stand-in clock
@pytest.mark.parametrize("layout", ["contiguous", "paged", "split"])
def test_speed_path_runs_end_to_end_on_the_cpu_stand_in(layout: str) -> None:
    """Everything of the CUDA speed case but the CUDA events: the inputs, the learner's call in
    the launcher's argument order, torch's baseline (SDPA with a mask), the copy, the figures."""
    import importlib

    from lab.exercises.decode_attention import gpu_timing, grading
    from lab.exercises.decode_attention.grading import speed

    case = _small_speed_case(layout)
    small = case.params
    reference = importlib.import_module(grading.REFERENCE)
    got = gpu_timing.measure(reference, small, device="cpu")
    want = speed.answer(small, "cpu")
    baseline = gpu_timing.torch_decode(gpu_timing.speed_inputs(small, "cpu"))
    assert (baseline.double() - want).abs().max() < 1e-4
    verdict = speed.check(case, got, {"device": "cpu"})
    assert verdict.passed, verdict.message
    # every call was timed on its own query: as many outputs as timed calls, distinct seeds
    assert len(got["outs"]) == len(got["seeds"]) == len(got["learner_ms"])
    assert len(set(got["seeds"])) == len(got["seeds"])
    assert set(verdict.metrics) == {"torch_ratio", "bandwidth_share", "median_ms"}
    lens = gpu_timing.speed_inputs(small, "cpu")
    per_token = 2 * 16 * 4  # kv_heads x head_dim x fp32 bytes
    key = "seq_lens" if layout == "contiguous" else "context_lens"
    assert got["kv_bytes"] == 2 * int(lens[key].sum()) * per_token


@pytest.mark.slow  # a fresh interpreter per device
@pytest.mark.parametrize(("device", "interpret"), [("cpu", "1"), ("cuda", None)])
def test_drive_turns_the_interpreter_on_off_cuda_and_keeps_triton_files_private(
        tmp_path: Path, device: str, interpret: str | None) -> None:
    """The child's device is in its environment before the drive is imported: off CUDA the drive
    sets TRITON_INTERPRET before the learner's file imports triton; Triton's cache goes to a new
    folder under the (sandbox's private) temporary folder, whatever the parent's environment
    said, removed when the process ends."""
    import json
    import os
    import subprocess
    import sys

    from lab.grader.api import DEVICE_VAR

    env = {**os.environ, DEVICE_VAR: device, "TMPDIR": str(tmp_path),
           "TRITON_CACHE_DIR": "/root/.triton/cache"}
    env.pop("TRITON_INTERPRET", None)
    code = ("import json, os; from lab.exercises.decode_attention import drive; "
            "print(json.dumps([os.environ.get('TRITON_INTERPRET'), "
            "os.environ['TRITON_CACHE_DIR'], 'triton' in __import__('sys').modules]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2]).stdout
    got_interpret, cache, imported = json.loads(out)
    assert got_interpret == interpret
    assert Path(cache).parent == tmp_path and Path(cache).name.startswith("dojo-triton-")
    assert not imported  # the drive leaves triton's import to the learner's file
    # the grader imports the drive too: its folder goes when the process ends (each grading
    # left an empty one in /tmp)
    assert not Path(cache).exists() and list(tmp_path.iterdir()) == []


def _torch_paged(memo: bool) -> Any:
    """A paged launcher in plain torch; `memo`: computes its first answer once and returns a
    copy of it on every later call (a cache keyed on the pool, which every call shares)."""
    from types import SimpleNamespace

    from lab.exercises.decode_attention import gpu_timing

    first: list[Any] = []

    def paged_decode_attention(q: Any, k_cache: Any, v_cache: Any, block_tables: Any,
                               context_lens: Any, scale: float) -> Any:
        if memo and first:
            return first[0].clone()
        out = gpu_timing.torch_decode({"q": q, "k_cache": k_cache, "v_cache": v_cache,
                                       "block_tables": block_tables,
                                       "context_lens": context_lens, "scale": scale})
        first.append(out)
        return out

    return SimpleNamespace(paged_decode_attention=paged_decode_attention)


@pytest.mark.slow  # 203 queries, three timings on the CPU stand-in clock
@pytest.mark.parametrize("memo", [False, True])
def test_a_launcher_that_replays_its_first_answer_fails_the_speed_case(memo: bool) -> None:
    """Every timed call asks its own question (its own query), so a launcher that answers later
    calls from a cache keyed on the shared pool fails the outputs the grader checks; the same
    launcher computing every call passes. (Before, every timed call repeated one question and
    only an untimed call before them was checked.)"""
    from lab.exercises.decode_attention import gpu_timing
    from lab.exercises.decode_attention.grading import speed

    case = _small_speed_case("paged")
    got = gpu_timing.measure(_torch_paged(memo), case.params, device="cpu")
    verdict = speed.check(case, got, {"device": "cpu"})
    assert verdict.passed is not memo, verdict.message
    if memo:
        assert "(its own query)" in verdict.message and "differs" in verdict.message
