"""Fixtures for the TUI tests: a real SQLite store under the per-test DOJO_HOME and a small bank."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from trainer.services import Services

FIXTURES = Path(__file__).parent / "fixtures"
BANK = FIXTURES / "bank"
BROKEN = FIXTURES / "broken"


@pytest.fixture
def open_services(dojo_home: Path) -> Iterator[Callable[..., Services]]:
    """Open services on the fixture bank (plus extra paths); closes every store at the end."""
    opened: list[Services] = []

    def factory(*extra: Path) -> Services:
        services = Services.open(bank_paths=[BANK, *extra])
        services.rng.seed(1234)
        opened.append(services)
        return services

    yield factory
    for services in opened:
        services.store.close()


@pytest.fixture
def services(open_services: Callable[..., Services]) -> Services:
    return open_services()
