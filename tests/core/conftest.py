"""Fixtures for the headless core's tests: services over a real SQLite store under the per-test
DOJO_HOME and the small fixture bank the TUI's tests use too."""

from __future__ import annotations

from tests.tui.conftest import open_services, services

__all__ = ["open_services", "services"]
