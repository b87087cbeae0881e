"""Faults in the app, with the real app: a read-only data folder or file
is browsed and said, and no session starts that could not save; an out-of-range $DOJO_NOW is said
on Stats and Browse (not "Loading…" or an empty table); a card another window answered is said
and skipped when it would be shown, not after answering it."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from scheduler.store import DB_NAME, Store
from tests.learner import Learner, learner, listing, read_only
from tests.tui.conftest import ready, right_keys, text_of
from trainer.app import DojoApp
from trainer.screens.browse import BrowseScreen
from trainer.screens.review import ReviewScreen
from trainer.screens.stats import StatsScreen

__all__ = ["learner"]  # the fixture, used by name

SAID = "read-only: answers will not be saved"

# The app at 80x24 as the learner: what Today says, then what Enter does.
TUI = """
import asyncio, json
from trainer.app import DojoApp

async def main():
    app = DojoApp()
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(400):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if app.load_error or getattr(app.screen, "view", None) is not None:
                break
        text = lambda sel: str(app.screen.query_one(sel).render())
        out = {"load_error": app.load_error, "headline": text("#today-headline"),
               "errors": text("#today-alert")}
        await pilot.press("enter")
        await pilot.pause()
        out["screen"] = type(app.screen).__name__
        out["notes"] = [str(n.message) for n in app._notifications]
        await pilot.press("l")  # the Lab, then s: start the highlighted level's workspace
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if type(app.screen).__name__ == "LabScreen":
                break
        await pilot.press("s")
        for _ in range(5):
            await pilot.pause()
        out["lab_screen"] = type(app.screen).__name__
        out["lab_notes"] = [str(n.message) for n in app._notifications][len(out["notes"]):]
    print("RESULT " + json.dumps(out))

asyncio.run(main())
"""


def _run_tui(who: Learner) -> dict[str, object]:
    result = who.run("-c", TUI, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    line = next(x for x in result.stdout.splitlines() if x.startswith("RESULT "))
    out: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    return out


def _with_cards(who: Learner) -> None:
    with Store.open(who.home / DB_NAME) as store:
        store.sync_cards([("kv-cache-001", "kv-cache"), ("latency-001", "latency")])
    who.give_home()


@pytest.mark.slow
@pytest.mark.parametrize("what", ["folder", "file"])
def test_read_only_data_is_browsed_and_no_session_starts(learner: Learner, what: str) -> None:
    _with_cards(learner)
    if what == "folder":
        read_only(learner.home)  # chmod -R a-w
    else:
        (learner.home / DB_NAME).chmod(0o444)  # only the file; the folder stays writable
    before = listing(learner.home)
    out = _run_tui(learner)
    assert out["load_error"] is None, out  # browsed, not refused
    assert SAID in str(out["errors"]), out
    assert "unreadable" not in json.dumps(out) and "move it aside" not in json.dumps(out)
    assert out["screen"] == "TodayScreen", out  # no session that would lose every answer
    assert any(n.startswith("No session: " + SAID) for n in out["notes"]), out  # type: ignore[attr-defined]
    assert out["lab_screen"] == "LabScreen", out  # the lab opened and did not crash on s
    after = listing(learner.home)
    if what == "folder":  # no workspace can be made there: said, with what to do instead
        assert any(n.startswith(SAID) and "--workspace" in n
                   for n in out["lab_notes"]), out  # type: ignore[attr-defined]
        assert after == before  # nothing written, no -shm
    else:  # the lab wrote its workspace; beside the database nothing appeared (no -shm)
        assert {k: v for k, v in after.items() if k.startswith(DB_NAME)} == {
            DB_NAME: before[DB_NAME]}


@pytest.mark.slow
async def test_an_out_of_range_dojo_now_is_said_on_stats_and_browse(
        dojo_home: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOJO_NOW", "9999-12-31")
    app = DojoApp()
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if app.load_error:
                break
        assert app.load_error and "DOJO_NOW" in app.load_error
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, StatsScreen)
        headline = text_of(app, "#stats-headline")
        assert "DOJO_NOW" in headline and "Loading" not in headline
        await pilot.press("escape", "b")
        await pilot.pause()
        assert isinstance(app.screen, BrowseScreen)
        card = text_of(app, "#browse-card")
        assert "DOJO_NOW" in card and "Loading" not in card


@pytest.mark.slow
async def test_a_card_answered_elsewhere_is_said_when_it_would_be_shown(
        make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, ReviewScreen) and app.services is not None
        first, second = screen.session._state.queue[:2]
        with Store.open(app.services.store.path) as other:  # the other window answers card 2
            other.answer(second.question_id, 4, correct=True, answer_text="x", response_ms=1,
                         now=app.services.now)
        await pilot.press(*right_keys(first))
        await pilot.press("enter")  # grade the first: the second would be shown now
        await pilot.pause()
        notes = [str(n.message) for n in app._notifications]
        assert any("answered in another window" in n and second.question_id in n
                   for n in notes), notes
        current = screen.session.current
        assert current is None or current.question_id != second.question_id
        app.services.flush()
        await pilot.pause()
        assert not any("not recorded" in str(n.message) for n in app._notifications)
