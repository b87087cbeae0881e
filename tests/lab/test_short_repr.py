"""`events.short_repr`: the got/expected text of every case event. It must cost in proportion to
its limit, not to the value (a batch-engine record holds thousands of tensors, and printing
them only to cut the text took seconds per case), and read like repr() where repr is short."""

from __future__ import annotations

import numpy as np
import pytest

from lab.grader.events import REPR_LIMIT, short_repr


@pytest.mark.parametrize("value", [
    [1, 2, (3,)], {"a": [1, 2], "b": (1, 2)}, (1,), (), [], {}, {1: None}, [None, True, 0.5],
    "text", [[[]]], ({"k": ("v",)},),
])
def test_short_values_read_exactly_as_repr(value: object) -> None:
    assert short_repr(value) == repr(value)


class Counted:
    calls = 0

    def __repr__(self) -> str:
        Counted.calls += 1
        return "c"


def test_a_huge_list_is_walked_only_as_far_as_the_limit() -> None:
    Counted.calls = 0
    text = short_repr([[Counted()] * 1000] * 1000)
    assert len(text) == REPR_LIMIT and text.endswith("…")
    assert Counted.calls <= REPR_LIMIT  # not a million reprs


def test_large_arrays_and_tensors_are_described_by_shape_small_ones_shown() -> None:
    torch = pytest.importorskip("torch")
    assert short_repr(np.zeros((20, 20))) == "array(shape=(20, 20), dtype=float64)"
    assert short_repr([torch.zeros(1000)]) == "[tensor(shape=(1000,), dtype=torch.float32)]"
    assert short_repr(torch.tensor([1, 2])) == repr(torch.tensor([1, 2]))


def test_hostile_values_never_raise() -> None:
    class Bad:
        def __repr__(self) -> str:
            raise ValueError("no")

    assert short_repr([Bad()]) == "[<Bad whose repr() failed: ValueError>]"
    assert short_repr(10 ** 5000) == "<int with about 5000 digits>"
    loop: list[object] = []
    loop.append(loop)
    assert len(short_repr(loop)) == REPR_LIMIT
    assert short_repr("x" * 10_000) == "'" + "x" * (REPR_LIMIT - 2) + "…"
