"""The reference's answers of fixed cases kept between gradings (`lab.grader.expected_cache`):
a grading reads the same verdicts and messages with and without them, a changed input is a
different key, a damaged file is rebuilt, and no folder the learner's code could write is used."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from lab.exercises import get
from lab.grader import expected_cache
from lab.grader.api import Case, RunContext
from lab.grader.expected_cache import ExpectedCache, fixed_cases, run_key, usable_folder
from lab.grader.testing import grade_file, reference_as_solution
from tests.lab.conftest import BROKEN


def _verdicts(run: Any) -> list[tuple[Any, ...]]:
    return [(expected_cache.case_key(r.case), r.passed, r.kind, r.message, r.expected, r.got)
            for lvl in run.result.levels for r in lvl.results]


def _answers_file(folder: Path) -> Path:
    (found,) = (folder / "kv-bytes").glob("*.answers")
    return found


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Ids of the cases whose reference answer the grader computed (kv-bytes has no
    `expected`: the grader runs its drive on the reference)."""
    import lab.exercises.kv_bytes.drive as drive

    calls: list[str] = []
    real = drive.run

    def run(solution: Any, case: Case, ctx: RunContext) -> Any:
        calls.append(case.id)
        return real(solution, case, ctx)

    monkeypatch.setattr(drive, "run", run)
    return calls


@pytest.mark.slow
def test_same_verdicts_without_cache_cold_and_warm(tmp_path: Path, counted: list[str]) -> None:
    broken = BROKEN / "ignores_head_dim.py"  # some cases pass, some fail showing the expected
    without = grade_file("kv-bytes", broken, 1, seed=3)
    computed = len(counted)
    cold = grade_file("kv-bytes", broken, 1, seed=3, expected_cache=tmp_path)
    assert len(counted) == 2 * computed  # nothing kept yet: every answer computed again
    kept = ExpectedCache(_answers_file(tmp_path))
    kept.answers, why = expected_cache._read(kept.path)
    assert why == "" and 0 < len(kept.answers) < computed  # the fixed cases, not the hidden
    warm = grade_file("kv-bytes", broken, 1, seed=4, expected_cache=tmp_path)
    warm_computed = len(counted) - 2 * computed
    assert warm_computed == computed - len(kept.answers)  # only the other seed's hidden cases
    assert _verdicts(without) == _verdicts(cold)
    assert _verdicts(warm) == _verdicts(grade_file("kv-bytes", broken, 1, seed=4))
    # a failure whose expected value came from the file
    assert any(not r[1] and r[4] for r in _verdicts(warm) if f"expected/{r[0]}" in kept.answers)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "other format"])
def test_a_damaged_file_is_rebuilt(tmp_path: Path, counted: list[str], damage: str) -> None:
    reference = grade_file("kv-bytes", BROKEN / "ignores_head_dim.py", 1, seed=3,
                           expected_cache=tmp_path)
    path = _answers_file(tmp_path)
    raw = path.read_bytes()
    if damage == "flip a byte":
        path.write_bytes(raw[:-5] + bytes([raw[-5] ^ 1]) + raw[-4:])
    elif damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    else:  # a valid checksum over a body of another shape
        import hashlib

        from lab.grader import codec
        body = codec.encode({"format": 0, "answers": {}})
        path.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    _, why = expected_cache._read(path)
    assert why == {"flip a byte": "its checksum does not match its content",
                   "truncate": "its checksum does not match its content",
                   "other format": "it is not an answers file of this format"}[damage]
    before = len(counted)
    again = grade_file("kv-bytes", BROKEN / "ignores_head_dim.py", 1, seed=3,
                       expected_cache=tmp_path)
    assert len(counted) - before == before  # nothing read from it: every answer computed
    assert _verdicts(again) == _verdicts(reference)
    assert path.read_bytes() == raw  # rewritten whole


def test_every_input_of_an_answer_changes_the_key(tmp_path: Path) -> None:
    ex = get("spec-verify")
    models = tmp_path / "own-target"
    models.mkdir()
    (models / "model.safetensors").write_bytes(b"weights")
    ctx = RunContext(device="cpu", model_paths={"target": str(models)})
    base = run_key(ex, ctx)
    assert run_key(ex, ctx) == base  # deterministic
    assert run_key(ex, dataclasses.replace(ctx, device="cuda")) != base
    assert run_key(ex, dataclasses.replace(ctx, dtype="bfloat16")) != base
    assert run_key(ex, dataclasses.replace(ctx, seed=99)) == base  # untimed answers: no run seed
    (models / "model.safetensors").write_bytes(b"weightz")
    assert run_key(ex, ctx) != base  # the model files' content
    (models / "model.safetensors").write_bytes(b"weights")
    assert run_key(ex, ctx) == base
    copy = tmp_path / "exercise"
    shutil.copytree(ex.path, copy, ignore=shutil.ignore_patterns("__pycache__"))
    moved = dataclasses.replace(ex, path=copy)
    assert run_key(moved, ctx) != base  # another folder's files (their paths are hashed)
    first = run_key(moved, ctx)
    (copy / "grading" / "level1.py").write_text((copy / "grading" / "level1.py").read_text()
                                                 + "\n# changed\n")
    assert run_key(moved, ctx) != first  # the exercise's code
    assert run_key(get("kv-bytes"), ctx) != base  # another exercise


def test_a_changed_key_misses(tmp_path: Path) -> None:
    ex = get("kv-bytes")
    case = Case("c", 1, {"x": 1})
    cache = ExpectedCache.open(tmp_path, ex, RunContext())
    cache.put(case, {"answer": 42})
    cache.save()
    assert ExpectedCache.open(tmp_path, ex, RunContext()).get(case) == (True, {"answer": 42})
    assert ExpectedCache.open(tmp_path, ex, RunContext(dtype="float16")).get(case) == (False, None)
    assert ExpectedCache.open(tmp_path, ex, RunContext()).get(
        Case("c", 1, {"x": 2})) == (False, None)  # other params: another case


def test_only_untimed_cases_every_seed_draws_are_fixed() -> None:
    a = [Case("fixed", 1, {"v": 1}), Case("hidden-0", 1, {"v": 7}),
         Case("timed", 1, {"v": 2}, timed=True)]
    b = [Case("fixed", 1, {"v": 1}), Case("hidden-0", 1, {"v": 8}),
         Case("timed", 1, {"v": 2}, timed=True)]
    assert fixed_cases(a, b) == {expected_cache.case_key(a[0])}


def test_no_folder_the_learner_could_write(tmp_path: Path) -> None:
    solution = tmp_path / "work" / "kv_bytes.py"
    outside = tmp_path / "cache"
    assert usable_folder(outside, solution, confine=True) == outside
    assert usable_folder(outside, solution, confine=False) is None  # unconfined: none
    assert usable_folder(tmp_path / "work" / "cache", solution, confine=True) is None
    assert usable_folder(tmp_path / "work", solution, confine=True) is None
    assert usable_folder(tmp_path, solution, confine=True) is None  # holds the workspace
    assert usable_folder(None, solution, confine=True) is None


@pytest.mark.slow
def test_real_model_inputs_come_from_the_grader(tmp_path: Path) -> None:
    """spec-verify level 1's real-model cases: the child gets the logits the grader built
    (`RunContext.given`, kept beside the answers), so it never imports transformers, and the
    verdicts read back from the kept file are the ones computed."""
    solution = reference_as_solution("spec-verify", tmp_path / "work")
    solution.write_text(solution.read_text() + """

_verify = verify_greedy


def verify_greedy(drafts, logits):
    import sys
    print("transformers in the child:", "transformers" in sys.modules)
    return _verify(drafts, logits)
""")
    cache = tmp_path / "cache"
    cold = grade_file("spec-verify", solution, 1, seed=5, expected_cache=cache)
    warm = grade_file("spec-verify", solution, 1, seed=5, expected_cache=cache)
    assert cold.result.passed and _verdicts(warm) == _verdicts(cold)
    models = [r for lvl in warm.result.levels for r in lvl.results
              if r.case.params.get("model") == "shipped"]
    assert len(models) == 5
    for run in (cold, warm):
        outputs = {r.output.strip() for lvl in run.result.levels for r in lvl.results
                   if r.case.params.get("model") == "shipped"}
        assert outputs == {"transformers in the child: False"}
    (kept,) = (cache / "spec-verify").glob("*.answers")
    answers, _ = expected_cache._read(kept)
    assert {f"{part}/{expected_cache.case_key(r.case)}" for r in models
            for part in ("inputs", "expected")} <= set(answers)
