"""A learner's pack written for an earlier format of the bank still imports, with warnings.

The fixtures are the built-in kv-cache topic as it stood in three earlier editions (ids prefixed
`old-`): the first (no mistakes, no whys), the one that added `[[question.cases]]` rows, and the
reviewed one whose seat counts carry unit "seats" but no `round` field (the field came later).
`dojo questions import` takes each with warnings; `--strict` still refuses the missing `round`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from questions.bank import builtin_files, load_bank
from questions.validate import validate_files
from trainer.cli import main

PACKS = Path(__file__).resolve().parents[1] / "fixtures" / "packs"
EDITIONS = sorted(PACKS.glob("kv-cache-*-edition.toml"))


def test_every_earlier_edition_is_kept_as_a_fixture() -> None:
    assert [p.stem for p in EDITIONS] == [
        "kv-cache-cases-edition", "kv-cache-first-edition", "kv-cache-reviewed-edition"]


@pytest.mark.parametrize("pack", EDITIONS, ids=lambda p: p.stem)
def test_an_earlier_edition_validates_with_warnings_only(pack: Path) -> None:
    report = validate_files([pack], context=builtin_files())
    assert [str(p) for p in report.problems] == []
    assert report.warnings  # missing mistakes / whys are named
    assert len(report.questions) == 10


@pytest.mark.slow
def test_a_count_without_round_is_a_warning_with_its_default_and_strict_refuses_it() -> None:
    pack = PACKS / "kv-cache-reviewed-edition.toml"
    lenient = validate_files([pack], context=builtin_files())
    counted = [w for w in lenient.warnings if w.field.endswith(".round")]
    assert len(counted) == 1
    assert "seats are counted" in counted[0].message
    assert "rounded to the nearest" in counted[0].message
    question = next(q for q in lenient.questions if q.id == "old-kv-cache-004")
    assert question.round == "nearest"
    assert float(question.draw(0).answer).is_integer()
    strict = validate_files([pack], context=builtin_files(), strict=True)
    assert any(p.field.endswith(".round") for p in strict.problems)


@pytest.mark.slow
@pytest.mark.parametrize("pack", EDITIONS, ids=lambda p: p.stem)
def test_an_earlier_edition_imports_through_the_cli(pack: Path, dojo_home: Path) -> None:
    result = CliRunner().invoke(main, ["questions", "import", str(pack)])
    assert result.exit_code == 0, result.output
    assert "warning" in result.output
    bank = load_bank()  # the built-in bank and the imported packs, as the app loads them
    assert bank.errors == []
    assert sum(q.topic == "old-kv-cache" for q in bank.questions) == 10
