"""The sweep of grading folders (`lab.grader.scratch`): a folder whose owner has ended goes, one
whose owner still runs stays, whoever owns it; old-style folders without an owner in their
name go only when no live process names them and they are old."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from lab.grader import scratch

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="Linux /proc")
OLD = time.time() - 2 * scratch.UNNAMED_AGE_S


def _ended_owner() -> str:
    """The `<pid>-<start>` of a process that has ended (and been reaped)."""
    proc = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    tag = scratch.owner_tag(proc.pid)
    proc.communicate(b"")
    return tag


def _folder(parent: Path, name: str, *, old: bool = False) -> Path:
    folder = parent / name
    folder.mkdir()
    (folder / "inside").write_text("x")
    if old:
        os.utime(folder, (OLD, OLD))
    return folder


def test_make_names_this_process_and_the_sweep_keeps_it(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    made = Path(scratch.make("dojo-sandbox-"))
    pid, start, ns = re.fullmatch(  # type: ignore[union-attr]
        r"dojo-sandbox-(\d+)-(\d+)-(\d+)-\w{8}", made.name).groups()
    assert int(pid) == os.getpid() and int(start) == scratch.start_time(os.getpid()) > 0
    assert int(ns) == os.stat("/proc/self/ns/pid").st_ino
    assert scratch.sweep() == []
    assert made.is_dir()


def test_a_folder_whose_owner_ended_goes_and_a_live_owners_stays(tmp_path: Path) -> None:
    ended = _folder(tmp_path, f"dojo-sandbox-{_ended_owner()}-abcd1234")
    ended_triton = _folder(tmp_path, f"dojo-triton-{_ended_owner()}-abcd1234")
    live = _folder(tmp_path, f"dojo-sandbox-{scratch.owner_tag()}-abcd1234")
    # the same pid as a live process, another start time: the pid was reused, the owner ended
    start = scratch.start_time(os.getpid())
    ns = scratch.pid_namespace()
    reused = _folder(tmp_path, f"dojo-sandbox-{os.getpid()}-{start + 1}-{ns}-abcd1234")  # type: ignore[operator]
    other = _folder(tmp_path, f"other-{_ended_owner()}-abcd1234")  # not a grading's folder
    # an ended owner's pid and start time, but another PID namespace's: cannot be told here
    pid, started, _ = _ended_owner().split("-")
    elsewhere = _folder(tmp_path, f"dojo-sandbox-{pid}-{started}-{ns + 1}-abcd1234")
    removed = scratch.sweep(str(tmp_path))
    assert sorted(removed) == sorted(map(str, (ended, ended_triton, reused)))
    assert live.is_dir() and other.is_dir() and elsewhere.is_dir()
    assert not ended.exists() and not reused.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's folder needs root to plant")
def test_root_keeps_another_users_live_folder_and_removes_their_ended_one(
        tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               user=65534)
    try:
        live = _folder(tmp_path, f"dojo-sandbox-{scratch.owner_tag(sleeper.pid)}-abcd1234")
        ended = _folder(tmp_path, f"dojo-sandbox-{_ended_owner()}-abcd1234")
        for folder in (live, ended):
            os.chown(folder, 65534, 65534)
        assert scratch.sweep(str(tmp_path)) == [str(ended)]
        assert live.is_dir()
    finally:
        sleeper.communicate(b"")


def test_old_style_folders_go_only_when_old_and_named_by_no_live_process(
        tmp_path: Path) -> None:
    named = _folder(tmp_path, "dojo-sandbox-named123", old=True)
    recent = _folder(tmp_path, "dojo-sandbox-recent12")
    orphan = _folder(tmp_path, "dojo-triton-orphan12", old=True)
    holder = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              env={**os.environ, "TRITON_CACHE_DIR": str(named)})
    try:
        assert scratch.sweep(str(tmp_path)) == [str(orphan)]
        assert named.is_dir() and recent.is_dir()
    finally:
        holder.communicate(b"")
    assert scratch.sweep(str(tmp_path)) == [str(named)]  # its holder has ended


def test_make_refuses_a_prefix_the_sweep_would_not_know() -> None:
    with pytest.raises(ValueError, match="'dojo-other-' is not a grading's folder prefix"):
        scratch.make("dojo-other-")
