"""Workspace commands treat the workspace as hostile input: graded code may have left a
named pipe, a device, a link or a huge sparse file where the learner's file was. `reset`,
`start_interview` and `end_interview` never block on it, never copy gigabytes, never follow a
link, and say what the file is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lab.exercises import get
from lab.workspace import WorkspaceFileError, lab_dir
from tests import lab_state as workspace

EX = get("kv-bytes")


@pytest.fixture
def ws(dojo_home: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    path, _ = workspace.start(EX, folder)
    path.unlink()
    return folder


def _backups() -> list[Path]:
    folder = lab_dir(EX) / "backups"
    return sorted(folder.iterdir()) if folder.exists() else []


def test_a_named_pipe_is_replaced_by_reset_without_blocking(ws: Path) -> None:
    path = ws / EX.workspace_file
    os.mkfifo(path)  # an open() for reading would wait forever for a writer
    got, backup = workspace.reset(EX, ws)
    assert backup is None and _backups() == []
    assert got.is_file() and got.read_text() == EX.stub_path.read_text()


def test_a_named_pipe_is_named_and_refused_by_an_interview(ws: Path) -> None:
    os.mkfifo(ws / EX.workspace_file)
    with pytest.raises(WorkspaceFileError, match=r"kv_bytes.py is a named pipe, not a file: "
                                                 r"move it away \(or delete it\) and try again"):
        workspace.start_interview(EX, 1, 30, ws)


def test_a_huge_sparse_file_is_never_copied(ws: Path) -> None:
    path = ws / EX.workspace_file
    with open(path, "wb") as f:
        f.truncate(3 << 30)  # 3 GiB that hold nothing on disk: a copy would write them all
    with pytest.raises(WorkspaceFileError, match=r"is 3221.2 MB, over the 16 MiB the app "
                                                 r"copies \(a solution file is a few kilobytes\)"):
        workspace.start_interview(EX, 1, 30, ws)
    got, backup = workspace.reset(EX, ws)
    assert backup is None and _backups() == []
    assert got.stat().st_size == EX.stub_path.stat().st_size


def test_a_regular_file_is_still_backed_up_and_moved(ws: Path) -> None:
    path = ws / EX.workspace_file
    path.write_text("# mine\n")
    _, backup = workspace.reset(EX, ws)
    assert backup is not None and backup.read_text() == "# mine\n"
    path.write_text("# mine again\n")
    workspace.start_interview(EX, 1, 30, ws)
    workspace.end_interview(EX, ws)
    assert path.read_text() == "# mine again\n"


def test_a_link_in_place_of_the_file_is_not_followed(ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("not theirs to copy\n")
    (ws / EX.workspace_file).symlink_to(secret)
    with pytest.raises(WorkspaceFileError, match=r"is a symbolic link: the app copies only the "
                                                 r"file itself"):
        workspace.start_interview(EX, 1, 30, ws)
    _, backup = workspace.reset(EX, ws)
    assert backup is None
    assert secret.read_text() == "not theirs to copy\n"
