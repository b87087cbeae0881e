"""Shared fixtures: every test gets its own DOJO_HOME so nothing touches a real home directory."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests assert outcomes, never time: on a loaded 2-core CI machine Hypothesis's default
# 200 ms deadline and its "input generation is slow" health check fail correct code (seen under
# load 10). Tests that set their own settings keep them.
settings.register_profile("dojo", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dojo")


@pytest.fixture(scope="session")
def _bank_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dojo-cache")


@pytest.fixture(autouse=True)
def dojo_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
              _bank_cache: Path) -> Path:
    home = tmp_path_factory.mktemp("dojo-home")
    monkeypatch.setenv("DOJO_HOME", str(home))
    # The validated-bank cache (questions.cache) is keyed by content, so tests share one per
    # session, never the user's own cache dir.
    monkeypatch.setenv("DOJO_CACHE", str(_bank_cache))
    return home


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Collect garbage once, then freeze the heap: pytest collects five more times when it
    unconfigures, and over a whole session's heap (torch, models, ~10^6 objects, ~1.5 s a pass)
    that outlasts pytest-xdist's 5 s shutdown grace, so the worker got a SIGINT (a
    KeyboardInterrupt traceback at the end of the run). Garbage with a failing __del__ is still
    reported: this collection runs under pytest's unraisable hook."""
    gc.collect()
    gc.freeze()
