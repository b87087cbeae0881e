"""FSRS as a scheduler option and fitted to the learner: `dojo settings
scheduler=fsrs` sets due days from an FSRS replay, SM-2 stays the default, switching keeps the
history; `dojo fsrs fit` says how many answers it needs and reports log-loss before/after."""

from __future__ import annotations

import datetime as dt
import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from fsrs import Card, Rating, Scheduler

from scheduler.store import Store
from tests.scheduler.conftest import at, grade
from tests.scheduler.learner import simulate_history
from trainer.cli import main


def test_sm2_stays_the_default_and_fsrs_sets_the_due_day(store: Store) -> None:
    assert store.settings().scheduler == "sm2"
    store.sync_cards([("a", "t"), ("b", "t")])
    sm2 = grade(store, "a", 4, at(1))
    assert sm2.due == at(1).date() + dt.timedelta(days=1)  # SM-2: I(1) = 1
    store.update_settings(scheduler="fsrs")
    first = grade(store, "b", 4, at(1))
    # Independently: FSRS defaults, no fuzz, no steps, one Good answer.
    fsrs = Scheduler(enable_fuzzing=False, learning_steps=(), relearning_steps=())
    card, _ = fsrs.review_card(Card(card_id=1), Rating.Good, at(1))
    days = round((card.due - at(1)) / dt.timedelta(days=1))
    assert days >= 2 and first.due == at(1).date() + dt.timedelta(days=days)
    later = grade(store, "b", 5, at(1 + days))
    card, _ = fsrs.review_card(card, Rating.Easy, at(1 + days))
    again = round((card.due - at(1 + days)) / dt.timedelta(days=1))
    assert later.due == at(1 + days).date() + dt.timedelta(days=again)
    # Back to SM-2: the history is all there, and SM-2 continues from the card's state.
    store.update_settings(scheduler="sm2")
    assert [r.quality for r in store.history("b")] == [4, 5]
    back = grade(store, "b", 4, at(1 + days + again))
    assert back.after.interval == -(-later.after.interval * 260 // 100)  # ceil(I * EF 2.60)


def test_a_bad_scheduler_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="scheduler must be one of sm2, fsrs"):
        store.update_settings(scheduler="anki")
    out = CliRunner().invoke(main, ["settings", "scheduler=anki"])
    assert out.exit_code == 2 and "sm2, fsrs" in out.output
    out = CliRunner().invoke(main, ["settings", "scheduler=FSRS"])
    assert out.exit_code == 0 and "scheduler          fsrs" in out.output


def _import(tmp_path: Path, days: int, topics: dict[str, list[str]] | None = None) -> None:
    history = simulate_history(dt.date(2026, 1, 1), days, topics=topics)
    path = tmp_path / "history.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    out = CliRunner().invoke(main, ["import", str(path)])
    assert out.exit_code == 0, out.output


def test_fit_says_how_many_answers_it_needs(tmp_path: Path) -> None:
    _import(tmp_path, 20)
    out = CliRunner().invoke(main, ["fsrs", "fit"])
    assert out.exit_code == 0, out.output
    assert "Not enough answers yet" in out.output and "of the 512 answers needed" in out.output


@pytest.mark.slow
def test_fit_reports_log_loss_before_and_after(tmp_path: Path, dojo_home: Path) -> None:
    topics = {f"t{i}": [f"t{i}-{j}" for j in range(20)] for i in range(4)}
    _import(tmp_path, 200, topics)
    out = CliRunner().invoke(main, ["fsrs", "fit"])
    assert out.exit_code == 0, out.output
    assert "Log-loss: " in out.output and "with the defaults -> " in out.output, out.output
    before, after = (float(x.split()[0]) for x in
                     out.output.split("Log-loss: ")[1].split(" -> ")[:2])
    with Store.open(dojo_home / "dojo.sqlite3") as store:
        kept = store.stored_value("fsrs_parameters")
    assert (kept is not None) == (after < before)
    if kept is not None:
        assert len(kept) == 21 and "Kept" in out.output


def test_fit_docs_match_what_the_set_up_installs() -> None:
    """The set-up installs the dev extra, which carries the optimiser: README and --help must
    not send a learner to install what they have, and must name the extra for a bare install."""
    root = Path(__file__).resolve().parents[2]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert "'.[dev]'" in (root / "scripts" / "setup.sh").read_text()
    assert any(d.startswith("fsrs[optimizer]") for d in extras["dev"])
    assert any(d.startswith("fsrs[optimizer]") for d in extras["fit"])
    row = next(line for line in (root / "README.md").read_text().splitlines()
               if line.startswith("| `dojo fsrs fit"))
    text = CliRunner().invoke(main, ["fsrs", "fit", "--help"]).output
    for doc in (row, " ".join(text.split())):
        assert 'needs `pip install "fsrs' not in doc and 'extra (pip install "fsrs' not in doc, doc
        assert "set-up" in doc or "setup.sh" in doc, doc
        assert '".[fit]"' in doc, doc
