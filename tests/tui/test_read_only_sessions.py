"""No session starts that cannot save: on a read-only data folder, as a learner who
is not root, every way into one — Enter, c, u, i, the palette, a due lab card (r), a question
practised from the palette's question view (its Related path) — is refused before its first
card (tried at 60x20), and the read-only warning is the first thing on Today, above the
headline, in view at 80x24 and 60x20."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from scheduler.days import utc_now
from scheduler.store import DB_NAME, Store
from tests.learner import Learner, learner, read_only
from trainer.core.services import Services

__all__ = ["learner"]  # the fixture, used by name

# Each way in: (name, keys on Today). "palette:TEXT" runs a palette command.
WAYS = [
    ("enter", ["enter"]),
    ("c", ["c", "enter"]),
    ("u", ["u", "down", "down", "down", "enter"]),  # cram before the interview: studied cards
    ("i", ["i"]),
    ("palette start", ["palette:Start today's session"]),
    ("palette custom", ["palette:Custom study", "down", "down", "down", "enter"]),
    ("palette mock", ["palette:Mock round"]),
    ("lab card", ["r"]),
    ("related question", ["palette:Question kv-cache-001", "p"]),
]

TUI = """
import asyncio, json, sys
from trainer.app import DojoApp

WAYS = json.loads(sys.argv[1])
SIZE = tuple(json.loads(sys.argv[2]))
SESSIONS = {"ReviewScreen", "MockScreen", "LabScreen", "CramPicker", "StudyPicker"}

async def settle(app, pilot, n=6):
    for _ in range(n):
        await app.workers.wait_for_complete()
        await pilot.pause()

async def main():
    app = DojoApp()
    said = []
    notify = app.notify
    app.notify = lambda message, *a, **k: (said.append(str(message)), notify(message, *a, **k))
    out = {"ways": {}}
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(400):
            await settle(app, pilot, 1)
            if app.load_error or (getattr(app.screen, "view", None) is not None
                                  and not getattr(app.screen, "plan_pending", False)):
                break
        await settle(app, pilot)
        screen = app.screen
        head = screen.query_one("#today-headline")
        alert = next(iter(screen.query("#today-alert")), head)  # absent: the headline
        out["alert"] = str(alert.render()) if alert.display and alert is not head else ""
        out["alert_y"], out["head_y"] = alert.region.y, head.region.y
        out["alert_bottom"] = alert.region.bottom
        out["headline"] = str(head.render())
        out["rebuilds"] = screen.query_one("#today-rebuilds").display
        for name, keys in WAYS:
            before = len(said)
            opened = set()
            for key in keys:
                if key.startswith("palette:"):
                    await pilot.press("ctrl+p")
                    await pilot.press(*key.removeprefix("palette:"))
                    await settle(app, pilot, 3)  # its search (a worker) done, its hits listed
                    await pilot.pause()
                    await pilot.press("enter")
                else:
                    await pilot.press(key)
                await settle(app, pilot)
                opened |= {type(s).__name__ for s in app.screen_stack}
            notes = said[before:]
            out["ways"][name] = {"opened": sorted(opened & SESSIONS), "notes": notes}
            while len(app.screen_stack) > 2:
                app.pop_screen()
                await settle(app, pilot, 2)
    print("RESULT " + json.dumps(out))

asyncio.run(main())
"""


def _history(who: Learner) -> None:
    """Cards answered (so every custom set has some), a passed lab level due for its rebuild."""
    services = Services.open()
    try:
        store, now = services.store, utc_now()
        store.update_settings(timezone="UTC")
        for qid in ("kv-cache-001", "kv-cache-002", "latency-001"):
            store.answer(qid, 1, correct=False, answer_text="1", response_ms=5000,
                         now=now - dt.timedelta(days=3))
        store.grade_lab_card("kv-bytes", 1, 4, passed=True, rebuild=False, pass_s=600,
                             gradings=1, now=now - dt.timedelta(days=9))
    finally:
        services.close()
    with Store.open(who.home / DB_NAME):
        pass
    who.give_home()


def _walk(who: Learner, size: tuple[int, int],
          ways: list[tuple[str, list[str]]]) -> dict[str, object]:
    result = who.run("-c", TUI, json.dumps(ways), json.dumps(size), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(x for x in result.stdout.splitlines() if x.startswith("RESULT "))
    out: dict[str, object] = json.loads(line.removeprefix("RESULT "))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("size", "ways"), [((60, 20), WAYS), ((80, 24), [])],
                         ids=["60x20", "80x24"])
def test_every_way_into_a_session_is_refused_on_read_only_data(
        learner: Learner, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int],
        ways: list[tuple[str, list[str]]]) -> None:
    """Every way in is tried at the smaller size (the refusal does not depend on the size);
    the warning's place on Today is checked at both."""
    monkeypatch.setenv("DOJO_HOME", str(learner.home))
    _history(learner)
    read_only(learner.home)
    out = _walk(learner, size, ways)
    assert out["rebuilds"], "the due lab card must be on Today for `r` to be tried"
    seen_ways = out["ways"]
    assert isinstance(seen_ways, dict)
    opened = {name: seen["opened"] for name, seen in seen_ways.items()}
    assert not any(opened.values()), f"sessions opened on read-only data: {opened}"
    assert list(seen_ways) == [name for name, _ in ways]
    for name, seen in seen_ways.items():
        assert seen["opened"] == [], f"{name} opened {seen['opened']} on read-only data"
        assert any(n.startswith("No session: read-only: answers will not be saved")
                   for n in seen["notes"]), f"{name} was not refused with why: {seen['notes']}"
    # The warning is the first thing on Today, in view; the headline invites no Enter.
    assert "read-only: answers will not be saved" in str(out["alert"]), out
    assert out["alert_y"] < out["head_y"], out  # type: ignore[operator]
    assert out["alert_bottom"] <= size[1] - 2, out  # type: ignore[operator]
    assert "Press Enter" not in str(out["headline"]), out
    assert "no session can start" in str(out["headline"]), out
