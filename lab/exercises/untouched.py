"""Inputs the caller owns, checked untouched after every call of the learner's code (child side).

The statements say it: the logits, drafts, token lists, parameter dicts and requests a function
is handed are read-only (a serving stack reuses them: the same logits feed a log-probability, a
request's parameters the next step). A drive takes a private copy before the call (`keep`) and,
after it, lists what the call changed (`changed`): that list is what the learner's code did,
sent back with its outputs, and the grader fails the case naming each changed input. torch is
never imported here: a value is a tensor only if torch is already loaded (the pure-Python labs,
meter, fleet, kv-bytes and paged-kv's levels 1-3, start no torch).
"""

from __future__ import annotations

import copy
import sys
from typing import Any


def _is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def keep(value: Any) -> Any:
    """A private deep copy (tensors cloned) that the learner's code never sees."""
    if _is_tensor(value):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: keep(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if _atoms(value):  # token ids: a shallow copy is a private one (ints are immutable)
            return type(value)(value)
        return type(value)(keep(v) for v in value)
    return copy.deepcopy(value)


_ATOMS = frozenset((int, str))


def _atoms(seq: list[Any] | tuple[Any, ...]) -> bool:
    """Every element an int or a str (exactly: not a bool, a float or a subclass), so `==` on
    the sequences is the element-wise check and a shallow copy a private one. A timed case
    hands 64 x 256 token ids per call; walking them one Python call each cost more than the
    learner's batched processors (both sides pay it, inside the timed round trip)."""
    return set(map(type, seq)) <= _ATOMS


def changed(inputs: dict[str, Any], kept: dict[str, Any]) -> list[str]:
    """Where each input differs from its kept copy, as paths (`logits`, `prompts[2]`,
    `params[0]['top_k']`): values, lengths, keys, shapes and dtypes all count."""
    out: list[str] = []
    for name, value in inputs.items():
        _diff(name, value, kept[name], out)
    return out


def _diff(path: str, now: Any, was: Any, out: list[str]) -> None:
    if _is_tensor(was):
        if not (_is_tensor(now) and now.shape == was.shape
                and now.dtype == was.dtype and _same_values(now.detach(), was)):
            out.append(path)
    elif isinstance(was, dict) and isinstance(now, dict):
        if set(now) != set(was):
            out.append(path)
            return
        for k in was:
            _diff(f"{path}[{k!r}]", now[k], was[k], out)
    elif isinstance(was, list | tuple) and isinstance(now, list | tuple):
        if len(now) != len(was) or type(now) is not type(was):
            out.append(path)
            return
        if _atoms(was) and _atoms(now) and now == was:
            return
        for i, (a, b) in enumerate(zip(now, was, strict=True)):
            _diff(f"{path}[{i}]", a, b, out)
    elif type(now) is not type(was) or now != was:
        out.append(path)


def _same_values(now: Any, was: Any) -> bool:
    """Equal element by element, NaN equal to NaN at the same place. torch.equal first: one
    read of each tensor, no copies (a timed case compares 10^7 floats after every call, and
    the comparison's cost is part of the round trip the grader times)."""
    import torch

    if torch.equal(now, was):
        return True
    if not (now.is_floating_point() or now.is_complex()):
        return False
    return bool(((now == was) | (now.isnan() & was.isnan())).all())


def message(function: str, paths: list[str],
            copies: str = "logits.clone(), list(tokens), dict(params)") -> str:
    """The failure the grader reports for a call that changed its inputs (`copies`: examples
    of the copies to take, in the exercise's own names)."""
    shown = ", ".join(paths[:4]) + (f" (+{len(paths) - 4} more)" if len(paths) > 4 else "")
    return (f"{function} changed its caller's input in place: {shown}. The inputs are "
            f"read-only (the caller reuses them): work on a copy (e.g. {copies}) and return "
            "new values")
