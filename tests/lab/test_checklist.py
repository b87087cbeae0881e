"""Adding an exercise is a checklist the tests enforce: `lab.exercises.checklist` names every
piece of a folder and reports all the missing ones at once, docs/extending.md lists the same
files, and `dojo lab new` scaffolds a folder that the catalogue tests accept as it stands."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab.exercises.checklist import PIECES, missing_pieces

ROOT = Path(__file__).resolve().parents[2]


def _kv_bytes(tmp_path: Path) -> Path:
    """A copy of kv-bytes as lab/exercises/kv_bytes, with its reference beside it."""
    folder = tmp_path / "lab" / "exercises" / "kv_bytes"
    shutil.copytree(ROOT / "lab" / "exercises" / "kv_bytes", folder)
    (tmp_path / "lab" / "reference").mkdir()
    shutil.copy(ROOT / "lab" / "reference" / "kv_bytes.py", tmp_path / "lab" / "reference")
    assert missing_pieces(folder) == []
    return folder


def test_an_empty_folder_lacks_every_file_named_at_once(tmp_path: Path) -> None:
    assert missing_pieces(tmp_path) == [
        "__init__.py: missing (the package)",
        "exercise.toml: missing (id, title, summary, workspace_file, order, one [[level]] per "
        "level)",
        "statement.md: missing (the task, as `dojo lab show` prints it)",
        "stub.py: missing (what `dojo lab start` copies: each function raises "
        "NotImplementedError)",
        "hints.md: missing (hints, split on `---` lines)",
        "drive.py: missing (the child side: run(solution, case, ctx) returns plain data)",
        "grading/__init__.py: missing (the parent side: REFERENCE, cases, check (+ expected))",
        'concepts.toml: missing (which bank questions each case tests, a "*" rule ending each '
        "level)",
        "CONTRACT.md: missing (per level, a table of the contract's cells, last column `case`)",
    ]


def test_every_gap_of_a_broken_copy_is_reported_together(tmp_path: Path) -> None:
    """A copy of kv-bytes with a grading.py, level 2's module gone, no "*" rule for level 2,
    no level-2 contract table, an empty statement and a drive without run()."""
    folder = _kv_bytes(tmp_path)
    (folder / "grading.py").write_text("")
    (folder / "grading" / "level2.py").unlink()
    (folder / "statement.md").write_text("\n")
    (folder / "drive.py").write_text("def go(solution, case, ctx):\n    return None\n")
    concepts = (folder / "concepts.toml").read_text()
    (folder / "concepts.toml").write_text(concepts.replace("level = 2", "level = 3"))
    contract = (folder / "CONTRACT.md").read_text()
    (folder / "CONTRACT.md").write_text(contract.replace("## Level 2", "## Level two"))
    assert missing_pieces(folder) == [
        "grading.py: not allowed; the parent side is a grading/ package (one levelN.py per "
        "level)",
        "statement.md: empty",
        "drive.py: defines no run(solution, case, ctx)",
        "grading/level2.py: missing (level N's cases (boundaries in its docstring) and checks)",
        'concepts.toml: level 2 has no "*" rule',
        'CONTRACT.md: no "## Level 2" table',
    ]


def test_a_reference_that_does_not_exist_is_named(tmp_path: Path) -> None:
    folder = _kv_bytes(tmp_path)
    init = folder / "grading" / "__init__.py"
    init.write_text(init.read_text().replace('"lab.reference.kv_bytes"',
                                             '"lab.reference.kv_bytes_gone"'))
    assert missing_pieces(folder) == [
        "lab/reference/kv_bytes_gone.py: missing (the model answer that grading.REFERENCE "
        "names)"]


def test_the_docs_checklist_names_the_same_files() -> None:
    text = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    section = text.split("## A new lab exercise", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^- `([^`]+)`:", section, re.MULTILINE)
    assert listed == [name for name, _ in PIECES]


@pytest.mark.slow
def test_lab_new_scaffolds_an_exercise_the_catalogue_tests_accept(tmp_path: Path) -> None:
    """`dojo lab new` in a copy of the app tree: the folder is complete, the catalogue and
    contract tests pass with it, its stub fails and its reference passes."""
    tree = tmp_path / "tree"
    skip = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".*_cache")
    for part in ("lab", "trainer", "questions", "scheduler", "tests"):
        shutil.copytree(ROOT / part, tree / part, ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", tree)
    env = {**os.environ, "PYTHONPATH": str(tree), "DOJO_HOME": str(tmp_path / "home")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True,
                              text=True, timeout=600)

    made = run("-m", "trainer", "lab", "new", "prefix-cache")
    assert made.returncode == 0, made.stderr
    assert missing_pieces(tree / "lab" / "exercises" / "prefix_cache") == []
    refused = run("-m", "trainer", "lab", "new", "prefix-cache")
    assert refused.returncode == 2 and "exists already" in refused.stderr
    tests = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                "tests/lab/test_catalogue.py", "tests/lab/test_contracts.py", "-k",
                "prefix-cache", "-m", "not slow")
    assert tests.returncode == 0 and " passed" in tests.stdout, tests.stdout[-2000:]
    graded = run("-c", "import pathlib, tempfile\n"
                 "from lab.grader.testing import assert_fails, assert_passes, "
                 "reference_as_solution\n"
                 "from lab.exercises import get\n"
                 "assert_fails('prefix-cache', get('prefix-cache').stub_path, 1, "
                 "match='double', kind='not_implemented')\n"
                 "assert_passes('prefix-cache', reference_as_solution('prefix-cache', "
                 "pathlib.Path(tempfile.mkdtemp())))\n")
    assert graded.returncode == 0, graded.stderr[-2000:]
