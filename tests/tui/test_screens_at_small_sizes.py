"""Screens at 60x20, 80x24 and 100x30: answers, grade bars, lab results, counts worded for one
and help text stay in view and uncut; each test failed on the screens before they were fixed."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widget import Widget
from textual.widgets import DataTable

from tests.tui.conftest import open_review, ready, text_of
from trainer.app import DojoApp
from trainer.screens.review import ReviewScreen

AppFactory = Callable[..., DojoApp]


async def _settle(app: DojoApp, pilot: object, rounds: int = 4) -> None:
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()  # type: ignore[attr-defined]


def _in_view(body: Widget, widget: Widget) -> None:
    """Every row of `widget` lies inside the scrolled `body`'s visible rows (screen space)."""
    view, region = body.content_region, widget.region
    assert region.height and view.y <= region.y and region.bottom <= view.bottom, (
        f"{widget.id} rows {region.y}-{region.bottom} outside the view {view.y}-{view.bottom}")


async def _numeric_card(app: DojoApp, pilot: object) -> ReviewScreen:
    """Start today's session and skip to kv-cache-001 (numeric, with a named mistake)."""
    await pilot.press("enter")  # type: ignore[attr-defined]
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    for _ in range(5):
        item = screen.session.current
        assert item is not None
        if item.question_id == "kv-cache-001":
            return screen
        await pilot.press("ctrl+b")  # type: ignore[attr-defined]  # bury: next card
    raise AssertionError("kv-cache-001 never came up")


@pytest.mark.slow
async def test_60x20_wrong_answer_shows_the_correct_answer_in_view(make_app: AppFactory) -> None:
    """Item 6: the diagnosis and the "answer 128 KiB" line are both on screen at 60x20."""
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        review = await _numeric_card(app, pilot)
        item = review.session.current
        assert item is not None
        total = item.instance.values["total_bytes"]
        long = " ".join(["A long scenario sentence about the model and its cache."] * 6)
        item.instance = replace(item.instance, prompt=long)  # as tall as a real bank's prompt
        await pilot.press(*f"{total / 2 / 1024:g}", "enter")  # the forgot-K-and-V mistake
        await _settle(app, pilot)
        verdict = text_of(app, "#verdict")
        assert "forgot the factor 2" in verdict and "answer" in verdict
        _in_view(review.query_one("#review-body"), review.query_one("#verdict"))


@pytest.mark.slow
async def test_60x20_case_step_wrong_answer_shows_the_answer_line(make_app: AppFactory) -> None:
    """Item 6 as the walkthrough met it: a case study's wrong step at 60x20 showed its
    diagnosis while "✗ Not quite … answer 21.7 ms" sat below the fold."""
    from tests.tui.conftest import FIXTURES

    app = make_app(FIXTURES / "cases")
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        while (item := review.session.current) is not None and not item.instance.is_case:
            await pilot.press("ctrl+b")
        assert item is not None
        for step in item.instance.steps[:3]:  # steps further down the scenario
            assert step.answer is not None
            await pilot.press(*f"{step.answer * 10:g}", "enter")
            await _settle(app, pilot)
            line = review.query_one("#case-step-verdict")
            assert "Not quite" in text_of(app, "#case-step-verdict")
            _in_view(review.query_one("#review-body"), line)
            await pilot.press("enter")
            await _settle(app, pilot)


async def _browse(app: DojoApp, pilot: object) -> DataTable[str]:
    await pilot.press("b")  # type: ignore[attr-defined]
    for _ in range(50):
        await _settle(app, pilot, 1)
        table = app.screen.query_one(DataTable)
        if table.row_count:
            return table
    raise AssertionError("Browse never loaded")


@pytest.mark.slow
async def test_browse_esc_leaves_after_a_filter_and_s_suspends_nothing(
    make_app: AppFactory,
) -> None:
    """Item 7: pick a status filter, then `s` (Stats on Today) must not suspend a card and
    one Esc leaves Browse."""
    from textual.widgets import Select

    from trainer.screens.browse import BrowseScreen
    from trainer.screens.today import TodayScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await _browse(app, pilot)
        await pilot.press("f", "enter", "down", "down", "enter")  # pick a status
        await _settle(app, pilot)
        assert isinstance(app.screen, BrowseScreen)
        assert app.screen.query_one("#browse-status", Select).value == "new"
        await pilot.press("s")
        await _settle(app, pilot)
        assert app.services is not None
        assert not any(c.suspended for c in app.services.store.cards())
        await pilot.press("escape")
        await _settle(app, pilot)
        assert isinstance(app.screen, TodayScreen)


@pytest.mark.slow
async def test_60x20_browse_shows_status_and_due(make_app: AppFactory) -> None:
    """Item 6: at 60 columns the status and due columns are on screen beside the id."""
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        table = await _browse(app, pilot)
        labels = [str(c.label) for c in table.ordered_columns]
        shown, room = [], table.scrollable_content_region.width
        for column in table.ordered_columns:
            room -= column.get_render_width(table)
            if room < 0:
                break
            shown.append(str(column.label))
        assert {"id", "status", "due"} <= set(shown), (labels, shown)


@pytest.mark.slow
async def test_lab_80x24_verdict_column_header_and_results_after_restart(
    make_app: AppFactory,
) -> None:
    """Item 8: the header fits 80 columns, the table's first column is the verdict, and a
    grading stored by an earlier run is on screen after a restart."""
    from scheduler.store import Store
    from trainer.screens.lab import LabScreen

    with Store.open() as store:  # an earlier run graded kv-bytes L1
        store.record_lab_attempt(
            "kv-bytes", 1, "cpu", False,
            [{"id": "tiny-one-layer", "passed": True, "kind": ""},
             {"id": "zero-layers", "passed": False, "kind": "wrong_answer"},
             *[{"id": f"hidden-{i}", "passed": False, "kind": "skipped"} for i in range(5)]],
            {}, 0.5)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LabScreen)
        for _ in range(100):
            await _settle(app, pilot, 1)
            if screen.rows and screen.query_one("#lab-results", DataTable).row_count:
                break
        assert len(text_of(app, ".titlebar").strip()) <= 80
        table = screen.query_one("#lab-results", DataTable)
        assert str(table.ordered_columns[0].label) == "result"
        assert table.row_count == 3  # pass, FAIL, and one row for the 5 not run
        assert "FAIL" in str(table.get_row_at(1)[0])
        assert str(table.get_row_at(2)[1]) == "5 more"
        assert "graded" in text_of(app, "#lab-results-title")
        assert "Workspace" in text_of(app, "#lab-detail")


@pytest.mark.slow
async def test_palette_and_related_lists_show_plain_text(make_app: AppFactory) -> None:
    """Item 9: no raw template fields or Markdown in the palette's or Related's lines."""
    from trainer.screens.modals import related_rows

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        assert app.services is not None
        helps = [c.help for c in app.get_system_commands(app.screen)
                 if c.title.startswith("Question ")]
        assert helps and all("{" not in h and "**" not in h for h in helps), helps
        assert any(h.startswith(("A model has 32 layers", "A model has 40 layers")) for h in helps)
        bank = app.services.bank
        rows = related_rows(bank.get("kv-cache-002") or bank.questions[0], bank) + \
            related_rows(bank.get("kv-cache-001"), bank)  # type: ignore[arg-type]
        assert rows and all("**" not in text and "{" not in text for _, text in rows), rows


@pytest.mark.slow
async def test_unstudied_card_hides_its_answer_and_practises_off_schedule(
    make_app: AppFactory,
) -> None:
    """Item 12: the palette's question view hides a new card's answer; `p` practises it on
    fresh numbers in cram mode and comes back; the card stays new."""
    from trainer.screens.modals import QuestionScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        app.action_question("kv-cache-001")
        await _settle(app, pilot)
        view = app.screen
        assert isinstance(view, QuestionScreen)
        body = view.query_one("#question-body")._markdown  # type: ignore[attr-defined]
        assert "Answer:" not in body and "KiB" not in body.split("Not studied")[1]
        await pilot.press("p")
        await _settle(app, pilot)
        review = app.screen
        assert isinstance(review, ReviewScreen) and review.practice
        item = review.session.current
        assert item is not None and item.mode == "cram"
        await pilot.press(*f"{item.instance.answer:g}", "enter", "enter")
        await _settle(app, pilot)
        assert not isinstance(app.screen, ReviewScreen | QuestionScreen)
        assert app.services is not None
        assert app.services.store.card("kv-cache-001").is_new  # not graded into the schedule


@pytest.mark.slow
async def test_grade_bar_says_what_3_4_5_change_on_a_young_card(make_app: AppFactory) -> None:
    """Item 13: the same interval for 3, 4 and 5 comes with what the choice does change."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        _review, item = await open_review(app, pilot)
        assert item.is_mcq
        await pilot.press("abcd"[item.instance.correct_index or 0])
        await _settle(app, pilot)
        bar = text_of(app, "#gradebar")
        assert "ease moves" in bar and "3 −0.14" in bar and "5 +0.10" in bar, bar


# "1 <plural>" and "(s)" anywhere a learner reads a count.
_ONE_PLURAL = re.compile(
    r"(?<![\d.,/])1 (attempts|minutes|questions|valid questions|re-drills|cards|new cards|answers"
    r"|days|steps|problems|topics|files|reviews|cases|lab attempts|leeches|case studies)\b")


def _wording_faults(text: str) -> list[str]:
    return [m.group(0) for m in _ONE_PLURAL.finditer(text)] + (["(s)"] if "(s)" in text else [])


@pytest.mark.slow
def test_cli_counts_are_worded_for_one(dojo_home: Path, tmp_path: Path) -> None:
    """`questions check` of one file with one topic, `due`, `stats` and `export` on a store
    with one card answered once: no "1 files", "1 topics", "(s)"."""
    from click.testing import CliRunner

    from trainer.cli import main

    one = Path(__file__).parents[1] / "fixtures" / "questions" / "valid" / "fixture-spec.toml"
    runner = CliRunner()
    outputs = []
    for args in (["questions", "check", str(one)], ["due"], ["stats", "--days", "1"],
                 ["export", str(tmp_path / "out.json")], ["lab", "start", "kv-bytes",
                                                          "--interview", "--minutes", "1"]):
        result = runner.invoke(main, args)
        outputs.append(f"$ dojo {' '.join(args)}\n{result.output}")
    text = "\n".join(outputs)
    assert "1 file: " in text and "in 1 topic;" in text, text
    assert "Answers in the last 1 day" in text
    assert _wording_faults(text) == [], text


@pytest.mark.slow
async def test_screens_word_counts_of_one(make_app: AppFactory) -> None:
    """The session summary after one re-drill and the Today/Stats screens: no "1 re-drills"."""
    from trainer.core.session import SessionSummary
    from trainer.screens.summary import SummaryScreen

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        shown = [text_of(app, "#today-headline"), text_of(app, "#today-counts")]
        await app.push_screen(SummaryScreen(SessionSummary(answered=2, correct=1, redrilled=1,
                                                    missed_topics={"KV": 1})))
        await _settle(app, pilot)
        shown.append(text_of(app, "#summary-body"))
        assert "(1 re-drill)" in shown[-1]
        assert _wording_faults("\n".join(shown)) == [], shown


def _fits(app: DojoApp, selector: str, container: str) -> None:
    inner = app.screen.query_one(container).content_region
    region = app.screen.query_one(selector).region
    assert region.right <= inner.right, f"{selector} ends at {region.right} > {inner.right}"


@pytest.mark.slow
async def test_100x30_stats_topic_names_and_sim_outputs_are_not_cut(
    make_app: AppFactory,
) -> None:
    """Item 11: at 100 columns a long topic title and the capacity sim's longest output line
    wrap inside their pane instead of running past it."""
    from dataclasses import replace as dc_replace

    from trainer.core.views import stats_view
    from trainer.screens.stats import StatsScreen

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("s")
        await _settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, StatsScreen) and app.services is not None
        title = "Attention variants: MQA/GQA/MLA, FlashAttention and the KV they keep"
        screen._show(dc_replace(stats_view(app.services), topics=[(title, 4, 3, 0)]))
        await _settle(app, pilot)
        _fits(app, "#stats-topics", "#stats-topics-panel")
        await pilot.press("escape", "m")
        await _settle(app, pilot)
        assert "43.97 per seat" in text_of(app, "#sim-result")
        _fits(app, "#sim-result", "#sim-out")


def _lines(app: DojoApp, selector: str) -> list[str]:
    """The widget's text as laid out at its own width."""
    import io

    from rich.console import Console

    widget = app.screen.query_one(selector)
    console = Console(width=widget.content_size.width, file=io.StringIO(), color_system=None)
    content = widget.content  # type: ignore[attr-defined]
    console.print(content if not isinstance(content, str) else widget.render())
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined,no-any-return]


@pytest.mark.slow
async def test_80_columns_case_grades_wrap_between_items_and_summary_keeps_columns(
    make_app: AppFactory,
) -> None:
    """Item 11: a case study offers all six grades; at 80 columns the row wraps between
    keys ("1 recognised 1d↻" whole). The summary's long "Missed" wraps under its value."""
    from tests.tui.conftest import FIXTURES
    from trainer.core.session import SessionSummary
    from trainer.screens.summary import SummaryScreen

    app = make_app(FIXTURES / "cases")
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        while (item := review.session.current) is not None and not item.instance.is_case:
            await pilot.press("ctrl+b")
        assert item is not None
        for step in item.instance.steps:
            await pilot.press(*f"{step.answer:g}", "enter", "enter")
            await _settle(app, pilot, 2)
        lines = _lines(app, "#gradebar")
        assert len(lines) >= 2, lines  # six grades do not fit one 80-column line
        for label in ("blackout", "recognised", "almost", "hard", "good", "easy"):
            assert any(re.search(rf"\d {label}", line) for line in lines), (label, lines)
        missed = {f"A long topic title number {i}": 1 for i in range(6)}
        await app.push_screen(SummaryScreen(SessionSummary(answered=6, correct=0,
                                                    missed_topics=missed)))
        await _settle(app, pilot)
        body = _lines(app, "#summary-body")
        start = next(i for i, line in enumerate(body) if line.startswith("Missed"))
        assert body[start + 1].startswith(" " * 10), body  # wrapped under the value


@pytest.mark.slow
async def test_a_failed_lab_grading_leaves_the_log_uncovered(make_app: AppFactory) -> None:
    """Item 11: no toast lands on the log's explanation after a failed grading (the results
    title says failed; the log says why)."""
    from trainer.screens.lab import LabScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LabScreen)
        for _ in range(100):
            await _settle(app, pilot, 1)
            if screen.rows:
                break
        await pilot.press("s")
        await _settle(app, pilot)
        app.clear_notifications()  # "s" says where the file is; only the grading's count here
        await pilot.press("g")  # the stub fails at once
        assert screen._grading is not None
        await screen._grading.wait()
        await _settle(app, pilot)
        assert "failed" in text_of(app, "#lab-results-title")
        assert not list(app._notifications), [n.message for n in app._notifications]


@pytest.mark.slow
async def test_a_hint_is_logged_one_line_per_paragraph(make_app: AppFactory) -> None:
    """Item 10: a hint written wrapped at 100 columns is not broken at each source line in a
    60-column log (the log wraps whole paragraphs at its own width)."""
    from lab.exercises import get
    from trainer.screens.lab import LabScreen

    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LabScreen)
        for _ in range(100):
            await _settle(app, pilot, 1)
            if screen.rows:
                break
        await pilot.press("h")
        await _settle(app, pilot)
        source = get("kv-bytes").hints()[0]
        assert "\n" in source.strip()  # the source is hard-wrapped
        start = next(i for i, line in enumerate(screen.log_lines) if line.startswith("── hint 1"))
        logged = screen.log_lines[start + 1:]
        paragraphs = [p for p in source.split("\n\n") if p.strip()]
        assert len([x for x in logged if x.strip()]) == len(paragraphs), logged
        assert " ".join(" ".join(logged).split()) == " ".join(source.split())


@pytest.mark.slow
async def test_60x20_help_wraps_descriptions_under_themselves(make_app: AppFactory) -> None:
    """Item 10: at 60 columns a key's long description continues in its own column, not
    mid-sentence back at the left edge."""
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        await pilot.press("f1")
        await _settle(app, pilot)
        lines = _lines(app, "#help-body")
        start = lines.index(next(x for x in lines if x.startswith("Keys here")))
        rows = list(itertools.takewhile(lambda x: x.startswith(" "), lines[start + 1:]))
        assert len(rows) > 8  # Today has more keys than that, some wrapped
        for row in rows:
            key_row = row.startswith("  ") and not row.startswith("   ")
            assert key_row or row.startswith(" " * 19), rows
