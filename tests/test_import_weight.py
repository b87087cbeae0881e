"""The CLI and the app's first paint must not pay for torch/transformers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers")


def _modules_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    probe = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    ).stdout
    return set(out.split())


def test_import_cli_does_not_import_torch_or_transformers() -> None:
    loaded = _modules_after("import trainer.cli")
    assert not [m for m in HEAVY if m in loaded]


def test_dojo_help_does_not_import_torch_or_transformers() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom trainer.cli import main\n"
        "r = CliRunner().invoke(main, ['--help'])\nassert r.exit_code == 0, r.output\n"
        "assert 'Serving Dojo' in r.output"
    )
    loaded = _modules_after(code)
    assert not [m for m in HEAVY if m in loaded]


def test_help_lists_every_command_and_imports_each_only_when_used() -> None:
    from click.testing import CliRunner

    from trainer.cli import COMMANDS, main

    listed = CliRunner().invoke(main, ["--help"]).output
    rows = listed[listed.index("Commands:"):].splitlines()[1:]
    assert [r.split()[0] for r in rows if r[2:3].strip()] == sorted(COMMANDS)
    loaded = _modules_after("import trainer.cli")
    assert not [m for m in loaded if m.startswith("trainer.commands.")]
    sub = CliRunner().invoke(main, ["questions", "--help"]).output
    assert "flagged" in sub and "syllabus" in sub  # added to the group where it is loaded


@pytest.mark.slow
def test_dojo_due_from_the_cache_imports_no_store_validator_or_other_command(
        tmp_path: Path) -> None:
    """Once the bank is cached and today's backup made, `dojo due` reads plain sqlite3."""
    env = {"DOJO_HOME": str(tmp_path / "home"), "DOJO_CACHE": str(tmp_path / "cache")}
    due = "from trainer.cli import main\nmain(['due'], standalone_mode=False)"
    _modules_after(due, env)  # creates the database and the cache
    _modules_after("from scheduler.store import Store\nStore.open().close()", env)  # backup
    loaded = _modules_after(due, env)
    heavy = ("sqlalchemy", "scheduler.store", "questions.validate", "questions.model",
             "trainer.commands.lab", "trainer.commands.questions", "lab.exercises", *HEAVY)
    assert [m for m in heavy if m in loaded] == []
    assert "trainer.commands.schedule" in loaded and "scheduler.queue" in loaded


def test_dojo_alone_opens_the_app_before_importing_click() -> None:
    opened = ("import sys\nsys.argv = ['dojo']\nimport trainer.app\n"
              "trainer.app.run_app = lambda: print('APP OPENED')\n"
              "from trainer.launch import main\nmain()\nprint('click' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", opened], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.split() == ["APP", "OPENED", "False"]
    version = ("import sys\nsys.argv = ['dojo', '--version']\n"
               "from trainer.launch import main\nmain()")
    out = subprocess.run([sys.executable, "-c", version], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0 and out.stdout.strip() == "dojo, version 0.1.0"
