"""Shared fixtures: every test gets its own DOJO_HOME so nothing touches a real home directory."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest


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


# The files holding the longest tests of a full run (CI, 2 cores, 2 workers, and the slow tests
# added since), longest test first. Under pytest-xdist they are collected first: the workers
# take them at the start and the run ends on short tests, instead of one worker finishing a
# 20-40 s grading alone while the other idles. Whole files move, in their own order, so a
# module-scoped fixture is still set up once per worker.
LONGEST_FIRST = (
    "tests/lab/test_checked_like_timed.py",
    "tests/sampling/test_grading.py",
    "tests/tui/test_read_only_sessions.py",
    "tests/spec_verify/test_platform.py",
    "tests/meter/test_meter_teeth.py",
    "tests/lab/test_confinement.py",
    "tests/tui/test_fit_every_screen.py",
    "tests/lab/test_checklist.py",
    "tests/lab/test_cli.py",
    "tests/spec_verify/test_own_families.py",
    "tests/models/test_own_models_sandboxed.py",
    "tests/lab/test_timed_outputs_checked.py",
    "tests/batch_engine/test_grading.py",
    "tests/spec_verify/test_broken.py",
    "tests/tui/test_palette.py",
    "tests/lab/test_prepared.py",
    "tests/lab/test_isolation.py",
    "tests/scheduler/test_plan.py",
    "tests/tui/test_daily_use_at_small_sizes.py",
    "tests/lab/test_timing.py",
    "tests/tensor_parallel/test_grading.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """On an xdist worker only (a serial run keeps the files' own order): `LONGEST_FIRST`'s
    files first, each in its own order, then the rest as collected (a stable sort)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
