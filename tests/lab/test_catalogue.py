"""The catalogue finds every exercise, and every exercise honours the grading contract."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from lab.exercises import ExerciseError, discover, get, load_exercise
from lab.grader.api import Case

EXERCISES = discover()


def test_kv_bytes_is_listed_with_two_levels() -> None:
    ex = get("kv-bytes")
    assert ex.level_numbers == [1, 2]
    assert ex.workspace_file == "kv_bytes.py"
    assert not ex.needs_torch
    assert get("kv_bytes") == ex  # the folder name works too


def test_unknown_exercise_names_the_known_ones() -> None:
    with pytest.raises(ExerciseError, match=r"unknown exercise 'nope'.*kv-bytes"):
        get("nope")


def test_hints_are_split_on_separator_lines() -> None:
    hints = get("kv-bytes").hints()
    assert len(hints) >= 4
    assert all(h and "---" not in h.splitlines() for h in hints)
    assert "2" in hints[0] and "kv_heads" in hints[1]


def test_malformed_exercise_toml_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "exercise.toml").write_text('id = "x"\ntitle = "t"\n')
    with pytest.raises(ExerciseError, match="missing or invalid field"):
        load_exercise(tmp_path)


def test_a_timed_case_may_have_its_own_gate(tmp_path: Path) -> None:
    """`[level.case_gate.<id>]` replaces the level's gate for that case only, and
    `dojo lab list` shows both."""
    (tmp_path / "exercise.toml").write_text(
        'id = "x"\ntitle = "t"\nsummary = "s"\nworkspace_file = "x.py"\n'
        '[[level]]\nnumber = 1\ntitle = "one"\n[level.gate]\nmedian_ratio_max = 3\n'
        '[level.case_gate.L1-big]\nmedian_ratio_max = 6\np95_ratio_max = 8\n')
    level = load_exercise(tmp_path).level(1)
    assert level.gate_for("L1-big") == {"median_ratio_max": 6.0, "p95_ratio_max": 8.0}
    assert level.gate_for("L1-small") == {"median_ratio_max": 3.0}
    assert level.gate_text() == ("median_ratio_max 3; L1-big: median_ratio_max 6, "
                                 "p95_ratio_max 8")


@pytest.mark.parametrize("ex", EXERCISES, ids=[e.id for e in EXERCISES])
def test_exercise_folder_is_complete(ex: object) -> None:
    """Every piece of docs/extending.md's checklist (`lab.exercises.checklist`), each missing
    one named at once; then the grading loads and its reference imports."""
    from lab.exercises import Exercise
    from lab.exercises.checklist import missing_pieces

    assert isinstance(ex, Exercise)
    assert missing_pieces(ex.path) == []
    grading = ex.grading()
    module = grading.REFERENCE
    assert module.startswith("lab.reference.")
    assert importlib.util.find_spec(module) is not None


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXERCISES, ids=[e.id for e in EXERCISES])
def test_cases_are_seeded_unique_and_json(ex: object) -> None:
    from lab.exercises import Exercise

    assert isinstance(ex, Exercise)
    grading = ex.grading()
    for level in ex.level_numbers:
        a, b, c = grading.cases(level, 7), grading.cases(level, 7), grading.cases(level, 8)
        assert a == b, "same seed must give the same cases"
        assert a != c, "a different seed must give different hidden cases"
        assert all(isinstance(case, Case) and case.level == level for case in a)
        ids = [case.id for case in a]
        assert len(ids) == len(set(ids)), "case ids must be unique within a level"
        timed = {case.id for case in a if case.timed}
        stray = set(ex.level(level).case_gates) - timed
        assert not stray, f"level {level}'s case_gate names no timed case of it: {stray}"
        for case in a:
            json.dumps(case.params)


def test_stub_imports_and_fails_cleanly() -> None:
    ex = get("kv-bytes")
    spec = importlib.util.spec_from_file_location("kv_bytes_stub", ex.stub_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(NotImplementedError):
        module.kv_bytes_per_token({"num_hidden_layers": 1}, "fp16")


def test_pure_python_levels_of_a_model_lab_need_no_torch() -> None:
    """paged-kv levels 1-3 are pure Python: grading them alone starts a child without torch
    (seconds faster); level 4 runs the model, so any run that includes it imports torch."""
    from lab.exercises import get

    paged = get("paged-kv")
    assert paged.needs_torch
    assert not paged.needs_torch_for([1]) and not paged.needs_torch_for([1, 2, 3])
    assert paged.needs_torch_for([4]) and paged.needs_torch_for([1, 4])
    assert get("spec-verify").needs_torch_for([1])  # no opt-out: as the exercise says
    assert not get("kv-bytes").needs_torch_for([1])
