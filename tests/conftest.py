"""Shared fixtures: every test gets its own DOJO_HOME so nothing touches a real home directory."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="session", autouse=True)
def _commits_without_fsync() -> Iterator[None]:
    """The tests' stores write without fsync (PRAGMA synchronous = OFF after the store's own
    pragmas; the app keeps FULL: tests/scheduler/test_durable_commits.py). That drops only what
    guards a commit against power loss or an OS crash, which no test can observe (the crash
    tests kill processes, whose commits WAL keeps either way, and run their writers in
    subprocesses, which keep FULL). Each sync waited 5-6 ms on this shared disk: the 30-day
    history's 2,183 commits took 24.7 s wall vs 13.6 s in a folder without fsync, 3-4 s of CPU
    either way; test_quick_home + test_core_store + test_answers made 2,435 fsync/fdatasync
    calls."""
    from scheduler.storage.base import on_connect as real

    def on_connect(dbapi_conn: Any, record: Any) -> None:
        real(dbapi_conn, record)
        dbapi_conn.execute("PRAGMA synchronous = OFF")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("scheduler.store.on_connect", on_connect)
        yield


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
