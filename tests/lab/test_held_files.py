"""What the grader counts that no folder and no RSS shows: memory files held open (memfd,
memfd_secret) and files removed from the workspace while still open or mapped. Measured on a
helper process of this test's own, as the grader measures the learner's tree."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.grader.isolation import memfd_mb, unlinked_mb

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
HOLD = """
import ctypes, mmap, os, sys
how, folder = sys.argv[1], sys.argv[2]
held = []
if how == 'secret':
    fd = ctypes.CDLL(None, use_errno=True).syscall(447, 0)  # memfd_secret
    if fd < 0:
        print('unsupported', flush=True)
        sys.stdin.read()
        sys.exit()
    os.ftruncate(fd, 8 << 20)
    held.append(fd)
else:
    path = os.path.join(folder, 'part.bin')
    with open(path, 'w+b') as f:
        f.write(b'x' * (8 << 20))
        f.flush()
        held.append(os.dup(f.fileno()) if how == 'open' else mmap.mmap(f.fileno(), 4096))
    if how != 'linked':
        os.unlink(path)
print('ready', flush=True)
sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, request.param, str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        said = proc.stdout.readline().strip() if proc.stdout else ""
        if said == "unsupported":
            pytest.skip("no memfd_secret in this kernel")
        assert said == "ready"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("holder", ["secret"], indirect=True)
def test_secret_memory_counts_as_shared_memory(holder: int) -> None:
    """memfd_secret's file shows no blocks: before, it counted 0 MiB."""
    assert memfd_mb([holder]) >= 8


@pytest.mark.parametrize("holder", ["open", "mapped"], indirect=True)
def test_a_removed_file_still_held_counts_on_its_disk(holder: int, tmp_path: Path) -> None:
    device = os.stat(tmp_path).st_dev
    held = unlinked_mb([holder], {device})
    assert held.get(device, 0) >= 8 if _can_follow(holder) else held.get(device, 0) > 0, held
    assert unlinked_mb([holder], {device + 1}) == {}  # another file system's count


@pytest.mark.parametrize("holder", ["linked"], indirect=True)
def test_a_file_still_in_its_folder_is_left_to_the_folder_count(holder: int,
                                                                tmp_path: Path) -> None:
    assert unlinked_mb([holder], {os.stat(tmp_path).st_dev}) == {}


def _can_follow(pid: int) -> bool:
    """Whether this process may follow /proc/<pid>/map_files (root): else a mapping without a
    descriptor counts only the span mapped."""
    try:
        entry = next(iter(os.listdir(f"/proc/{pid}/map_files")))
        os.stat(f"/proc/{pid}/map_files/{entry}")
        return True
    except (OSError, StopIteration):
        return False
