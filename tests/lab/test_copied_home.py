"""A copied data folder (`cp -a home home_future`, the README's way to try `DOJO_NOW`) is a data
folder of its own: its lab commands read and write only the copy. Workspace paths
are stored relative to the data folder; absolute ones from an older release are migrated."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lab.exercises import get
from tests.lab_state import interview, load_state, solution_path
from trainer.cli import main


def _sums(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _copy(original: Path, copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(original, copy, symlinks=True)
    monkeypatch.setenv("DOJO_HOME", str(copy))


def _rehearse_in_copy(copy: Path) -> None:
    """What a learner does in the copy: a rehearsal, a grading, a restore, a reset."""
    runner = CliRunner()
    ex = get("kv-bytes")
    assert solution_path(ex) == copy.resolve() / "lab" / "kv-bytes" / ex.workspace_file
    for args in (["lab", "start", "kv-bytes", "--interview", "--minutes", "5"],
                 ["lab", "grade", "kv-bytes", "--level", "1"],
                 ["lab", "restore", "kv-bytes"],
                 ["lab", "reset", "kv-bytes", "--yes"]):
        out = runner.invoke(main, args)
        assert out.exit_code in (0, 1), (args, out.output)
        assert str(copy) in out.output or args[1] == "grade", out.output


def _started(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DOJO_HOME", str(home))
    out = CliRunner().invoke(main, ["lab", "start", "kv-bytes"])
    assert out.exit_code == 0, out.output
    path = solution_path(get("kv-bytes"))
    path.write_text(path.read_text() + "\n# my own work\n")
    return path


@pytest.mark.slow
def test_a_copied_data_folder_touches_only_the_copy(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    original, copy = tmp_path / "home", tmp_path / "home_future"
    _started(original, monkeypatch)
    assert load_state(get("kv-bytes"))["workspace"] == "lab/kv-bytes"  # relative
    before = _sums(original)
    _copy(original, copy, monkeypatch)
    _rehearse_in_copy(copy)
    assert _sums(original) == before
    backups = list((copy / "lab" / "kv-bytes" / "backups").iterdir())
    assert any("# my own work" in b.read_text() for b in backups)  # reset kept the copy's work


@pytest.mark.slow
def test_absolute_paths_stored_by_an_older_release_are_migrated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original, copy = tmp_path / "home", tmp_path / "home_future"
    path = _started(original, monkeypatch)
    from scheduler.store import Store

    ex = get("kv-bytes")
    aside = path.parent / "backups" / "kv_bytes-before-interview-1.py"
    aside.parent.mkdir()
    aside.write_text("# the file moved aside\n")
    with Store.open() as store:  # what an older release stored: absolute paths
        store.set_lab_state("kv-bytes", {
            "workspace": str(path.parent), "levels_started": [1],
            "interview": {"level": 1, "started_at": 0.0, "minutes": 5,
                          "moved_aside": str(aside)}})
    before = _sums(original)
    _copy(original, copy, monkeypatch)
    session = interview(ex)
    assert session is not None
    assert session.moved_aside == str(copy.resolve() / "lab/kv-bytes/backups" / aside.name)
    assert load_state(ex)["workspace"] == "lab/kv-bytes"
    assert load_state(ex)["interview"]["moved_aside"] == f"lab/kv-bytes/backups/{aside.name}"
    out = CliRunner().invoke(main, ["lab", "restore", "kv-bytes"])
    assert out.exit_code == 0, out.output
    assert (copy / "lab/kv-bytes" / ex.workspace_file).read_text() == "# the file moved aside\n"
    assert _sums(original) == before


def test_a_workspace_outside_the_data_folder_stays_absolute(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOJO_HOME", str(tmp_path / "home"))
    mine = tmp_path / "code" / "lab" / "kv-bytes"  # looks like a data folder's, but is not
    out = CliRunner().invoke(main, ["lab", "start", "kv-bytes", "--workspace", str(mine)])
    assert out.exit_code == 0, out.output
    ex = get("kv-bytes")
    assert load_state(ex)["workspace"] == str(mine.resolve())
    assert solution_path(ex) == mine.resolve() / ex.workspace_file
