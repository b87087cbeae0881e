"""Read-only data handled for real, as a learner who is not root (root may
write anything, so these faults never show as root): after `chmod -R a-w` of the data folder,
or with only the database file read-only, every reading command browses the data and says
"read-only: answers will not be saved"; nothing calls it unreadable or advises moving it aside;
nothing is left beside the file (a stray read-only `-shm` broke the next writable open)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

from scheduler.store import DB_NAME, Store
from tests.learner import ROOT, Learner, learner, listing, read_only

__all__ = ["learner"]  # the fixture, used by name

SAID = "read-only: answers will not be saved"
NEVER = ("unreadable", "not a readable", "move it aside", "Traceback")


def _with_data(who: Learner) -> None:
    """A learner's database with cards and a flag, owned by the learner, closed cleanly."""
    with Store.open(who.home / DB_NAME) as store:
        store.sync_cards([("kv-cache-001", "kv-cache"), ("latency-001", "latency")])
        store.flag("kv-cache-001", "the unit looks wrong")
    who.give_home()


def _said_plainly(result: subprocess.CompletedProcess[str]) -> str:
    out = result.stdout + result.stderr
    assert SAID in out, out
    for word in NEVER:
        assert word not in out, out
    return out


@pytest.mark.slow
@pytest.mark.parametrize("args", [("due",), ("stats",), ("export",), ("questions", "flagged"),
                                  ("lab", "list")])
def test_a_read_only_data_folder_is_browsed_and_said(learner: Learner,
                                                     args: tuple[str, ...]) -> None:
    _with_data(learner)
    read_only(learner.home)
    before = listing(learner.home)
    result = learner.dojo(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    out = _said_plainly(result)
    if args == ("questions", "flagged"):
        assert "the unit looks wrong" in out
    if args == ("export",):
        assert '"kv-cache-001"' in out
    assert listing(learner.home) == before  # nothing created beside the file


@pytest.mark.slow
def test_lab_start_in_a_read_only_data_folder_says_why_without_a_traceback(
        learner: Learner) -> None:
    _with_data(learner)
    read_only(learner.home)
    result = learner.dojo("lab", "start", "kv-bytes")
    assert result.returncode == 1
    out = _said_plainly(result)
    assert "--workspace" in out  # what to do instead
    elsewhere = learner.base / "user" / "ws"
    result = learner.dojo("lab", "start", "kv-bytes", "--workspace", str(elsewhere))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (elsewhere / "kv_bytes.py").is_file()


@pytest.mark.slow
def test_a_read_only_file_leaves_no_shm_and_is_writable_again_after_chmod(
        learner: Learner) -> None:
    _with_data(learner)
    db = learner.home / DB_NAME
    db.chmod(0o444)  # only the file: the folder stays writable
    result = learner.dojo("due")
    assert result.returncode == 0
    _said_plainly(result)
    assert sorted(p.name for p in learner.home.iterdir()) == [DB_NAME]  # no -shm, no -wal
    # The advised fix, by the learner: chmod u+w the file. Writing works again.
    fix = learner.run("-c", f"import os; os.chmod({str(db)!r}, 0o644)")
    assert fix.returncode == 0, fix.stderr
    result = learner.dojo("settings", "new_limit=7")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "read-only" not in result.stdout + result.stderr


@pytest.mark.slow
def test_answers_still_in_the_wal_after_a_crash_are_shown_read_only(learner: Learner) -> None:
    _with_data(learner)
    db = learner.home / DB_NAME
    crash = ("import os, signal, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
             "c.execute('PRAGMA wal_autocheckpoint = 0'); "
             "c.execute(\"INSERT INTO flags (question_id, note, created_ms) VALUES "
             "('latency-001', 'only in the WAL', 1)\"); c.commit(); "
             "os.kill(os.getpid(), signal.SIGKILL)")
    died = subprocess.run([sys.executable, "-c", crash, str(db)], cwd=ROOT, timeout=60)
    assert died.returncode == -signal.SIGKILL
    assert os.path.getsize(f"{db}-wal") > 0  # the flag is committed, but only in the WAL
    learner.give_home()
    read_only(learner.home)
    before = listing(learner.home)
    result = learner.dojo("questions", "flagged")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "only in the WAL" in _said_plainly(result)
    assert listing(learner.home) == before


@pytest.mark.slow
def test_a_read_only_mount_is_browsed_and_said(learner: Learner) -> None:
    """The same on a read-only bind mount (EROFS: even root cannot write), in a private mount
    namespace; skipped where mounting is not allowed."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a private read-only bind mount needs root and unshare(1)")
    _with_data(learner)
    home = learner.home
    script = (f"mount --bind {home} {home} && mount -o remount,bind,ro {home} && "
              f"exec {sys.executable} -c 'from trainer.cli import main; main()' questions flagged")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOJO_HOME": str(home)}
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, cwd=learner.base,
                            capture_output=True, text=True, timeout=120)
    if "mount" in result.stderr and result.returncode != 0 and SAID not in result.stderr:
        pytest.skip(f"mounting is not allowed here: {result.stderr[-200:]}")
    assert result.returncode == 0, result.stdout + result.stderr
    out = _said_plainly(result)
    assert "the unit looks wrong" in out and "mounted read-only" in out


@pytest.mark.slow
def test_a_stray_read_only_shm_is_named_and_chmod_fixes_it(learner: Learner) -> None:
    """What an older version's read-only browse left behind (a r--r--r-- -shm beside a file
    made writable again): the learner is told which file, and chmod u+w on it is enough."""
    _with_data(learner)
    shm = learner.home / f"{DB_NAME}-shm"
    shm.write_bytes(b"")
    learner.give_home()
    shm.chmod(0o444)
    result = learner.dojo("settings", "new_limit=7")
    assert result.returncode == 1
    assert f"{shm} cannot be written" in _said_plainly(result)
    fix = learner.run("-c", f"import os; os.chmod({str(shm)!r}, 0o644)")
    assert fix.returncode == 0, fix.stderr
    result = learner.dojo("settings", "new_limit=7")
    assert result.returncode == 0, result.stdout + result.stderr
