"""Fixtures: one loopback sshd and one "remote" Dojo install per test session (worker)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.remote.loopback import ALIAS, Sshd, remote_install, sshd_missing


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    why = sshd_missing()
    if why:
        pytest.skip(f"no loopback SSH server: {why}")
    server = Sshd.start(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def remote_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return remote_install(tmp_path_factory.mktemp("host") / "dojo")


@pytest.fixture
def on_host(sshd: Sshd, remote_root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The alias of the loopback host, with ssh and the host's install pointed at it."""
    monkeypatch.setenv("DOJO_SSH_COMMAND", sshd.ssh_command())
    monkeypatch.setenv("DOJO_REMOTE_ROOT", str(remote_root))
    monkeypatch.delenv("DOJO_REMOTE_TIME_LIMIT_S", raising=False)
    monkeypatch.delenv("DOJO_REMOTE_PYTHON", raising=False)
    return ALIAS
