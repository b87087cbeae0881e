"""Properties over many inputs: parsing never crashes, shown answers read back as themselves,
known exercises come from disk as well as the agreed table."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from questions.answers import Reask, parse_answer, parse_quantity
from questions.units import UNITS, format_quantity
from tests.questions.conftest import VALID
from trainer.core.catalogue import known_exercises, known_sims

QUESTION_UNITS = sorted(UNITS)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=30), st.sampled_from(QUESTION_UNITS))
def test_any_text_is_either_a_number_or_a_reask(text: str, unit: str) -> None:
    try:
        value = parse_answer(text, unit)
    except Reask as exc:
        assert str(exc)  # says why
    else:
        assert isinstance(value, float)


@settings(max_examples=150, deadline=None)
@given(
    st.floats(min_value=1e-3, max_value=1e13, allow_nan=False, allow_infinity=False),
    st.sampled_from(QUESTION_UNITS),
    st.booleans(),
)
@pytest.mark.slow
def test_a_displayed_answer_reads_back_as_itself(value: float, unit: str, negative: bool) -> None:
    """What feedback shows ('$1,125', '16.7%', '320 KiB') is also valid input for that unit."""
    value = -value if negative else value
    shown = format_quantity(value, unit)
    assert parse_answer(shown, unit) == pytest.approx(value, rel=1e-5)


def test_ambiguous_suffix_offers_both_readings() -> None:
    readings = parse_quantity("1.5B")
    assert [(v, u.symbol if u else None) for v, u in readings] == [(1.5, "B"), (1.5e9, None)]


def test_known_exercises_are_read_from_the_lab_catalogue_on_disk(tmp_path: Path) -> None:
    """No hard-coded list: a lab that lands (its exercise.toml) becomes linkable at once, and a
    broken manifest is left out rather than stopping the bank from loading."""
    assert known_exercises(tmp_path / "missing") == {}
    folder = tmp_path / "paged_attn"
    folder.mkdir()
    (folder / "exercise.toml").write_text(
        'id = "paged-attn"\ntitle = "Paged attention"\nworkspace_file = "p.py"\n'
        '[[level]]\nnumber = 1\ntitle = "a"\n[[level]]\nnumber = 2\ntitle = "b"\n'
        '[[level]]\nnumber = 3\ntitle = "c"\n',
        encoding="utf-8",
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "exercise.toml").write_text("id = = 1", encoding="utf-8")
    assert known_exercises(tmp_path) == {"paged-attn": 3}


def test_the_real_catalogue_is_lab_s_own() -> None:
    from lab.exercises import discover
    from lab.sims import SIMS

    assert known_exercises() == {ex.id: max(ex.level_numbers) for ex in discover()}
    assert known_sims() == set(SIMS)


def test_the_trainer_checks_lab_links_against_lab_and_the_bank_alone_their_shape(
        tmp_path: Path) -> None:
    """`questions` never imports lab: the trainer hands it lab's catalogue, so a link to a lab
    that does not exist is refused where the learner loads or checks the bank."""
    from questions.bank import load_bank
    from trainer.core.bank import load_study_bank

    text = (VALID / "fixture-kv.toml").read_text(encoding="utf-8")
    pack = tmp_path / "fixture-kv.toml"
    pack.write_text(text.replace('exercise = "kv-bytes"', 'exercise = "no-such-lab"', 1),
                    encoding="utf-8")
    checked = load_study_bank([pack])
    assert any("unknown lab exercise 'no-such-lab'" in str(e) for e in checked.errors)
    assert checked.get("fixture-kv-001") is None
    shape_only = load_bank([pack])
    assert shape_only.errors == [] and shape_only.get("fixture-kv-001") is not None
