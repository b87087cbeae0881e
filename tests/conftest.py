"""Shared fixtures: every test gets its own DOJO_HOME so nothing touches a real home directory."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def dojo_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("dojo-home")
    monkeypatch.setenv("DOJO_HOME", str(home))
    return home
