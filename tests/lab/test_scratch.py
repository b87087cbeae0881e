"""The sweep of grading folders (`lab.grader.scratch`): a folder whose owner has ended goes, one
whose owner still runs stays, whoever owns it; old-style folders without an owner in their
name go only when no live process names them and they are old."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
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
    scratch.remove(str(made))
    assert not made.exists()


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


def _exit_in_child(tmp_path: Path, body: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run `body` in a fresh interpreter whose temporary directory is `tmp_path`; return its
    result and what grading folders it left there."""
    code = "import atexit, os, sys, threading\nfrom lab.grader import scratch\n"
    done = subprocess.run([sys.executable, "-c", code + textwrap.dedent(body)], text=True,
                          capture_output=True, env={**os.environ, "TMPDIR": str(tmp_path)},
                          timeout=60)
    return done, sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(scratch.PREFIXES))


def test_a_folder_no_one_removed_goes_when_its_process_exits(tmp_path: Path) -> None:
    """`dojo lab serve` stopped by SIGTERM while a prepare's thread was making its child's
    folder left it behind, its processes all gone (the prepared object was not yet the
    server's to close): a folder is the process's, not the object's."""
    done, left = _exit_in_child(tmp_path, """
        print(scratch.make("dojo-sandbox-"), scratch.make("dojo-triton-"))
        sys.exit(3)
    """)
    assert done.returncode == 3, done.stderr
    assert len(done.stdout.split()) == 2 and left == []


def test_a_folder_asked_for_once_the_exit_began_is_refused(tmp_path: Path) -> None:
    """A thread still preparing a child when the exit handler has run gets an error naming
    why, and leaves nothing (the handler registered first runs last)."""
    done, left = _exit_in_child(tmp_path, """
        def late():
            def make():
                try:
                    print("made", scratch.make("dojo-sandbox-"))
                except OSError as exc:
                    print("refused:", exc)
            thread = threading.Thread(target=make)
            thread.start()
            thread.join()
        atexit.register(late)
        scratch.make("dojo-sandbox-")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "refused: no new dojo-sandbox-* folder: this process is exiting\n"
    assert left == []


def test_a_forked_child_leaving_does_not_remove_its_parents_folder(tmp_path: Path) -> None:
    done, left = _exit_in_child(tmp_path, """
        mine = scratch.make("dojo-sandbox-")
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # a normal exit: the child runs the inherited exit handlers
        os.waitpid(pid, 0)
        print(os.path.isdir(mine))
    """)
    assert done.stdout == "True\n", done.stderr
    assert left == []  # and the parent's own exit removed it
