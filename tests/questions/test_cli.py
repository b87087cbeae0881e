"""`dojo questions check|import|list` as a user runs them: output, exit status, files on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainer.cli import main

from .conftest import BROKEN, VALID

ROOT = Path(__file__).resolve().parents[2]


def dojo(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.mark.slow
def test_check_valid_files_exits_0() -> None:
    code, out = dojo("questions", "check", str(VALID))
    assert code == 0, out
    assert "6 valid questions in 2 topics; all checks passed" in out


@pytest.mark.slow
def test_check_broken_files_exits_1_naming_file_line_field() -> None:
    code, out = dojo("questions", "check", str(BROKEN / "mcq-key.toml"),
                     str(BROKEN / "unit-unknown.toml"))
    assert code == 1
    assert f"{BROKEN / 'mcq-key.toml'}:14:mcq-key-001.correct: " in out
    assert f"{BROKEN / 'unit-unknown.toml'}:14:unit-unknown-001.unit: unknown unit 'furlongs'" \
        in out
    assert "2 problems" in out


@pytest.mark.slow
def test_check_as_a_real_process_sets_the_exit_status() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = subprocess.run([sys.executable, "-m", "trainer", "questions", "check", str(VALID)],
                        cwd=ROOT, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run([sys.executable, "-m", "trainer", "questions", "check", str(BROKEN)],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert bad.returncode == 1
    assert "toml-syntax.toml:5:toml: not valid TOML" in bad.stdout


def test_check_of_a_folder_without_question_files_fails(tmp_path: Path) -> None:
    """Before: 'no question files to check' and exit 0, as if the folder had passed."""
    folder = tmp_path / "pack.toml"
    folder.mkdir()
    code, out = dojo("questions", "check", str(folder))
    assert code == 1 and f"{folder}: no question files (*.toml) in it" in out


def test_check_missing_path_is_a_usage_error() -> None:
    code, out = dojo("questions", "check", "no/such/file.toml")
    assert code == 2 and "does not exist" in out


@pytest.mark.slow
def test_import_validates_copies_and_lists(dojo_home: Path) -> None:
    code, out = dojo("questions", "import", str(VALID / "fixture-spec.toml"))
    assert code == 0, out
    dest = dojo_home / "packs" / "fixture-spec.toml"
    assert dest.read_bytes() == (VALID / "fixture-spec.toml").read_bytes()
    assert "imported 3 questions (topic fixture-spec)" in out
    code, out = dojo("questions", "list", "--ids")
    assert code == 0
    assert "fixture-spec" in out and "fixture-spec-001" in out
    # importing the same file again is a no-op, not an error
    code, out = dojo("questions", "import", str(VALID / "fixture-spec.toml"))
    assert code == 0 and "already imported" in out


@pytest.mark.slow
def test_import_refuses_a_broken_pack_and_writes_nothing(dojo_home: Path) -> None:
    code, out = dojo("questions", "import", str(BROKEN / "mcq-key.toml"))
    assert code == 1
    assert "mcq-key.toml:14:mcq-key-001.correct" in out and "not imported" in out
    assert not (dojo_home / "packs" / "mcq-key.toml").exists()


@pytest.mark.slow
def test_import_never_overwrites_a_different_pack_silently(dojo_home: Path,
                                                            tmp_path: Path) -> None:
    original = VALID / "fixture-spec.toml"
    assert dojo("questions", "import", str(original))[0] == 0
    edited = tmp_path / "fixture-spec.toml"
    edited.write_text(original.read_text(encoding="utf-8").replace("difficulty = 1",
                                                                   "difficulty = 2"),
                      encoding="utf-8")
    code, out = dojo("questions", "import", str(edited))
    assert code == 1 and "already imported" in out and "--replace" in out
    dest = dojo_home / "packs" / "fixture-spec.toml"
    assert dest.read_bytes() == original.read_bytes()
    code, out = dojo("questions", "import", "--replace", str(edited))
    assert code == 0, out
    assert dest.read_bytes() == edited.read_bytes()


@pytest.mark.slow
def test_checking_an_imported_pack_while_editing_it_reports_its_own_errors(
    dojo_home: Path, tmp_path: Path
) -> None:
    """Edit, check, `import --replace`: the imported copy must not turn every id into a
    duplicate and hide the real problem."""
    original = VALID / "fixture-spec.toml"
    assert dojo("questions", "import", str(original))[0] == 0
    code, out = dojo("questions", "check", str(original))
    assert code == 0, out
    edited = tmp_path / "fixture-spec.toml"
    edited.write_text(original.read_text(encoding="utf-8").replace(
        'answer = "per_pass * base"', 'answer = "per_pass * base / 0"'), encoding="utf-8")
    code, out = dojo("questions", "check", str(edited))
    assert code == 1
    assert f"{edited}:24:fixture-spec-001.answer: division by zero" in out
    assert "duplicate" not in out and "already defined" not in out
    assert "1 problem" in out


@pytest.mark.slow
def test_import_refuses_ids_that_collide_with_an_installed_pack(dojo_home: Path,
                                                                tmp_path: Path) -> None:
    assert dojo("questions", "import", str(VALID / "fixture-kv.toml"))[0] == 0
    copy = tmp_path / "my-kv.toml"
    copy.write_text((VALID / "fixture-kv.toml").read_text(encoding="utf-8"), encoding="utf-8")
    code, out = dojo("questions", "import", str(copy))
    assert code == 1 and "duplicate id 'fixture-kv-001'" in out
    assert not (dojo_home / "packs" / "my-kv.toml").exists()


@pytest.mark.slow
def test_list_prints_topics_with_counts(dojo_home: Path) -> None:
    assert dojo("questions", "import", str(VALID / "fixture-kv.toml"))[0] == 0
    code, out = dojo("questions", "list")
    assert code == 0
    line = next(s for s in out.splitlines() if s.startswith("fixture-kv "))
    assert "3 questions (2 numeric, 2 with drawn values)" in line
    assert "KV-cache sizing (fixture)" in line
    assert "total:" in out


@pytest.mark.slow
def test_show_renders_a_draw_and_grades_an_answer(dojo_home: Path) -> None:
    assert dojo("questions", "import", str(VALID / "fixture-kv.toml"))[0] == 0
    code, out = dojo("questions", "show", "fixture-kv-003", "--seed", "5", "--answer", "2 GB")
    assert code == 0, out
    assert "How many requests fit at once?" in out
    assert "re-ask:" in out  # GB is not a count of requests
    code, out = dojo("questions", "show", "fixture-kv-002", "--answer", "z")
    assert "A) " in out and "D) " in out and "re-ask" in out
    code, out = dojo("questions", "show", "no-such-id")
    assert code == 1 and "no question" in out


@pytest.mark.slow
def test_show_renders_markdown_as_plain_text_when_piped() -> None:
    """Plain output: no raw `**` markers, no escape codes when the output is not a terminal."""
    code, out = dojo("questions", "show", "kv-cache-001", "--seed", "3")
    assert code == 0, out
    assert "**" not in out and "\x1b[" not in out
    assert "KV heads" in out and "Answer: " in out
    assert all(line == line.rstrip() for line in out.splitlines())  # no padding to the width


def test_show_renders_markdown_with_rich_on_a_terminal() -> None:
    import io

    from trainer.commands.questions import _markdown_out

    stream = io.StringIO()
    _markdown_out(stream, terminal=True)("**Mistral-7B v0.1** has **32 layers**")
    text = stream.getvalue()
    assert "\x1b[1m" in text and "**" not in text and "Mistral-7B v0.1" in text


@pytest.mark.slow
def test_show_a_case_study_renders_every_step_and_suggests_a_grade() -> None:
    code, out = dojo("questions", "show", "case-studies-001", "--seed", "0",
                     "--answer", "14.96 GiB", "--answer", "64 KiB", "--answer", "57",
                     "--answer", "23.06 ms", "--answer", "$0.281")
    assert code == 0, out
    out = " ".join(out.split())  # lines wrap at 100 columns
    for k in range(1, 6):
        assert f"Step {k} of 5." in out
    assert "57 seats, each holding 8,192 tokens" in out  # the revealed value in the next step
    assert out.count("Answer: ") == 5 and "14.957 GiB" in out
    assert "incorrect: you gave 64 KiB" in out and "forgot the factor 2 for K and V" in out
    assert "Suggested grade: 3 (4 of 5 steps right)" in out
    code, out = dojo("questions", "show", "case-studies-001", *["--answer", "1"] * 6)
    assert code == 1 and "at most 5 --answer" in out


@pytest.mark.slow
def test_list_counts_case_studies() -> None:
    code, out = dojo("questions", "list")
    assert code == 0
    line = next(s for s in out.splitlines() if s.startswith("case-studies "))
    assert "20 questions (0 numeric, 20 case studies" in line
    assert "case studies)" in out.splitlines()[-1]
