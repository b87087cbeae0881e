"""Resolve `--device auto|cpu|cuda` without importing torch for exercises that do not use it."""

from __future__ import annotations

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(Exception):
    """The requested device is unknown or not available here (a usage error)."""


def resolve_device(requested: str, needs_torch: bool) -> tuple[str, str]:
    """Return (device, note): the note says why, and goes into every report."""
    if requested not in DEVICES:
        raise DeviceError(f"unknown device {requested!r} (choose auto, cpu or cuda)")
    if not needs_torch:
        return "cpu", "pure Python exercise, no torch"
    import torch

    available = torch.cuda.is_available()
    if requested == "cpu":
        return "cpu", "requested"
    if requested == "cuda" and not available:
        raise DeviceError("--device cuda: torch.cuda.is_available() is False on this machine")
    if available:
        name = torch.cuda.get_device_name(0)
        return "cuda", f"{name} (auto)" if requested == "auto" else name
    return "cpu", "auto: no CUDA device"
