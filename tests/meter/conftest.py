"""Meter lab tests: where the broken implementations live."""

from __future__ import annotations

from pathlib import Path

BROKEN = Path(__file__).resolve().parent / "broken"
