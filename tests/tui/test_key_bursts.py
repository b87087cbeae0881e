"""Keys sent in one burst, as a terminal writes them (tmux `send-keys`, a key repeat, a fast
typist): applied in order, each to what the key before left, and never to a card or verdict
that had not appeared when they were typed (`trainer.key_order`).

Pilot's `press` waits for the app between keys, so it never showed the bug: these tests feed
the bytes through Textual's own terminal parser and post every key before the app has handled
any of them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual._xterm_parser import XTermParser
from textual.pilot import Pilot
from textual.widgets import Input

from tests.tui.conftest import FIXTURES, FlushedStore, ready, right_keys, text_of
from trainer.app import DojoApp
from trainer.core.session import Item
from trainer.screens.browse import BrowseScreen
from trainer.screens.help import HelpScreen
from trainer.screens.review import ReviewScreen

pytestmark = pytest.mark.slow  # each drives the real app and store (~1 s)

AppFactory = Callable[..., DojoApp]
BSPACE, ENTER = "\x7f", "\r"  # what a terminal sends for them


async def burst(app: DojoApp, pilot: Pilot[None], data: str) -> None:
    """Post every key of `data` at once, then wait until the app has applied them all."""
    for event in XTermParser().feed(data):
        app.post_message(event)
    await pilot.pause()
    while not app.key_order.idle:
        await pilot.pause()
    await pilot.pause()


def _item(app: DojoApp) -> Item:
    assert isinstance(app.screen, ReviewScreen), app.screen
    item = app.screen.session.current
    assert item is not None
    return item


def _answer(item: Item) -> str:
    assert item.instance.answer is not None
    return f"{item.instance.answer:g}"


def _notes(app: DojoApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def _numeric_card(app: DojoApp, pilot: Pilot[None]) -> Item:
    """Today's session, the two MCQs ahead buried: the numeric card, its answer box focused."""
    await ready(app, pilot)
    await pilot.press("enter", "ctrl+b", "ctrl+b")
    item = _item(app)
    assert not item.is_mcq and app.screen.query_one("#answer", Input).has_focus
    return item


async def test_a_backspace_in_a_burst_deletes_what_was_typed_before_it(
        make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        item = await _numeric_card(app, pilot)
        right = _answer(item)
        # "9", backspace, then the answer: Textual alone applied the backspace after the
        # answer's digits (graded "9" + the answer less its last digit).
        await burst(app, pilot, "9" + BSPACE + right + ENTER)
        assert app.screen.query_one("#answer", Input).value == right
        verdict = text_of(app, "#verdict")
        assert "Right" in verdict and f"you: {right}" in verdict
        store = FlushedStore(app)
        await burst(app, pilot, "5")
        assert [r.quality for r in store.history(item.question_id)] == [5]


async def test_keys_typed_after_enter_before_the_verdict_appeared_are_ignored(
        make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        item = await _numeric_card(app, pilot)
        right = _answer(item)
        store = FlushedStore(app)
        # Letters typed and taken back, the answer, Enter, and a grade before the verdict
        # could be read: the grade is ignored, and said so.
        await burst(app, pilot, "xy" + BSPACE * 2 + right + ENTER + "2")
        assert "Right" in text_of(app, "#verdict")
        assert app.screen.query_one("#answer", Input).value == right  # not right + "2"
        assert store.history(item.question_id) == []
        assert "Ignored 1 key typed before the verdict appeared." in _notes(app)
        await burst(app, pilot, "5")  # typed once the verdict is shown: graded
        assert [r.quality for r in store.history(item.question_id)] == [5]


async def test_keys_after_a_grade_never_answer_the_next_card_unseen(
        make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        first = _item(app)
        assert first.is_mcq
        await pilot.press(*right_keys(first))
        store = FlushedStore(app)
        # The grade, repeated as a held key does: the second "3" would pick choice C of the
        # next card (an MCQ too) before it was painted.
        await burst(app, pilot, "333")
        assert [r.quality for r in store.history(first.question_id)] == [3]
        second = _item(app)
        assert second.is_mcq and second.question_id != first.question_id
        assert app.screen.session.feedback is None  # type: ignore[attr-defined]
        assert store.history(second.question_id) == []
        assert "Ignored 2 keys typed before the card appeared." in _notes(app)


async def test_an_mcq_answered_by_the_first_letter_of_a_burst(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        item = _item(app)
        assert item.is_mcq and item.instance.correct_index is not None
        wrong = "abcd"[(item.instance.correct_index + 1) % 4]
        right = "abcd"[item.instance.correct_index]
        await burst(app, pilot, wrong + BSPACE + right)  # a letter answers at once
        verdict = text_of(app, "#verdict")
        assert "Not quite" in verdict and f"you: {wrong.upper()}" in verdict
        assert "Ignored 2 keys typed before the verdict appeared." in _notes(app)


async def test_a_case_step_burst(make_app: AppFactory) -> None:
    app = make_app(FIXTURES / "cases")
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        while not (item := _item(app)).instance.is_case:
            await pilot.press("ctrl+b")
        step = item.instance.steps[0]
        assert step.answer is not None
        right = f"{step.answer:g}"
        # The step's answer after a slip, Enter, then Enter again (next step) before the
        # step's verdict was painted: the second Enter is ignored, the verdict stays.
        await burst(app, pilot, "7" + BSPACE + right + ENTER + ENTER)
        assert "Step 1 of" in text_of(app, "#case-step")
        verdict = text_of(app, "#case-step-verdict")
        assert "Right" in verdict and f"you: {right}" in verdict
        assert "Ignored 1 key typed before the step's verdict appeared." in _notes(app)
        await burst(app, pilot, ENTER)
        assert "Step 2 of" in text_of(app, "#case-step")


async def test_a_paste_keeps_its_place_among_the_keys(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        item = await _numeric_card(app, pilot)
        right = _answer(item)
        # A slip, its backspace, then the answer pasted (bracketed, one event): Textual alone
        # pasted before the backspace had run, which then took the pasted last digit.
        await burst(app, pilot, "9" + BSPACE + f"\x1b[200~{right}\x1b[201~" + ENTER)
        verdict = text_of(app, "#verdict")
        assert "Right" in verdict and f"you: {right}" in verdict


async def test_help_typed_before_the_next_card_appeared_still_opens(
        make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        first = _item(app)
        await pilot.press(*right_keys(first))
        await burst(app, pilot, "5" + "\x1bOP")  # the grade, then F1 (the app's own key)
        assert isinstance(app.screen, HelpScreen)
        assert not any(note.startswith("Ignored") for note in _notes(app))


async def test_a_burst_in_another_screens_input(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("b", "slash")
        assert isinstance(app.screen, BrowseScreen)
        await burst(app, pilot, "factor of 3" + BSPACE + "2")
        assert app.screen.query_one("#browse-search", Input).value == "factor of 2"
