"""The inputs-untouched check (lab/exercises/untouched.py): lists of token ids take a fast path
(one C-level comparison, a shallow copy); it must still name every change the walk would."""

from __future__ import annotations

import torch

from lab.exercises.untouched import changed, keep


def _changes(mutate: object) -> list[str]:
    args = {"logits": torch.tensor([[1.0, float("nan")]]),
            "prompts": [[5, 6, 7], [8]], "params": [{"top_k": 2, "stop": ["a", "b"]}]}
    kept = keep(args)
    mutate(args)  # type: ignore[operator]
    return changed(args, kept)


def test_nothing_changed_is_nothing_reported() -> None:
    assert _changes(lambda a: None) == []


def test_a_changed_token_id_is_named_with_its_index() -> None:
    def bump(a: dict) -> None:
        a["prompts"][0][1] += 1

    assert _changes(bump) == ["prompts[0][1]"]


def test_a_token_id_replaced_by_an_equal_float_or_bool_is_a_change() -> None:
    def as_float(a: dict) -> None:
        a["prompts"][0][0] = 5.0

    def as_bool(a: dict) -> None:
        a["prompts"][1][0] = True
        a["params"][0]["stop"][0] = "a"  # an equal str is no change

    assert _changes(as_float) == ["prompts[0][0]"]
    assert _changes(as_bool) == ["prompts[1][0]"]


def test_the_kept_copy_of_an_id_list_is_private() -> None:
    ids = [1, 2, 3]
    kept = keep({"ids": ids})
    ids.append(4)
    assert kept["ids"] == [1, 2, 3]
    assert changed({"ids": ids}, kept) == ["ids"]


def test_a_list_of_tensors_is_still_walked() -> None:
    rows = [torch.zeros(2), torch.ones(2)]
    kept = keep({"rows": rows})
    rows[1][0] = 5.0
    assert changed({"rows": rows}, kept) == ["rows[1]"]
