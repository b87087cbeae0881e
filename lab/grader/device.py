"""Resolve `--device auto|cpu|cuda` without importing torch for exercises that do not use it."""

from __future__ import annotations

import sys
from pathlib import Path

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(Exception):
    """The requested device is unknown or not available here (a usage error)."""


def resolve_device(requested: str, needs_torch: bool) -> tuple[str, str]:
    """Return (device, note): the note says why, and goes into every report."""
    if requested not in DEVICES:
        raise DeviceError(f"unknown device {requested!r} (choose auto, cpu or cuda)")
    if not needs_torch:
        return "cpu", "pure Python exercise, no torch"
    if requested == "cpu":
        return "cpu", "requested"
    if requested == "auto" and not nvidia_device_nodes():
        return "cpu", "auto: no CUDA device"
    import torch  # seconds: only when CUDA may be there

    available = torch.cuda.is_available()
    if requested == "cuda" and not available:
        raise DeviceError("--device cuda: torch.cuda.is_available() is False on this machine")
    if available:
        name = torch.cuda.get_device_name(0)
        return "cuda", f"{name} (auto)" if requested == "auto" else name
    return "cpu", "auto: no CUDA device"


def nvidia_device_nodes() -> bool:
    """False only where CUDA surely is not there (Linux without /dev/nvidia*), so `auto` need
    not import torch (seconds) to find out; True elsewhere (then torch decides)."""
    if not sys.platform.startswith("linux"):
        return True
    return any(Path("/dev").glob("nvidia*"))
