"""The review loop: prompt, answer, feedback, SM-2 grade, next card; re-drill, undo, summary."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import Reactive
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from questions.answers import Reask, choice_label
from trainer.core.collector import CollectorHold
from trainer.core.session import GRADE_LABELS, Feedback, Item, Session
from trainer.screens.base import DojoScreen
from trainer.screens.case import CasePanel, case_summary
from trainer.screens.modals import FlagScreen, NoteScreen, RelatedScreen, related_rows
from trainer.widgets.keybar import KeyBar
from trainer.widgets.rendered_markdown import RenderedMarkdown

_MODE_LABEL = {"review": "Due review", "redrill": "Re-drill", "cram": "Cram"}


class CardBody(VerticalScroll):
    """The card and its feedback. Focus comes here at every answer (the arrow keys scroll the
    feedback) and goes back to the answer at every card; Textual restyles a widget's whole
    subtree when its focus changes (~20 ms of CPU a card here: every child and both scrollbars).
    No rule styles the body's children by its focus, so only the body itself is restyled."""

    def watch_has_focus(self, _has_focus: bool) -> None:
        self.app.stylesheet.update_nodes([self], animate=True)


class ReviewScreen(DojoScreen):
    """One card at a time. Letters/digits answer and grade; ctrl-keys work even while typing."""

    AUTO_FOCUS = None
    # Focus moves at every card (answer box -> card body -> answer box). Textual's Screen
    # repaints the whole screen on each move (`focused` repaints by default) after the card's
    # own layout has already painted it: a second full frame, ~3 ms of CPU a card. The widgets
    # whose look depends on focus restyle and refresh themselves.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)
    BINDINGS = [
        *[Binding(k, f"choose({i})", show=False) for i, k in enumerate("abcd")],
        *[Binding(str(n), f"digit({n})", show=False) for n in range(6)],
        Binding("enter", "default_grade", "Grade", id="default-grade", show=False),
        Binding(
            "t",
            "override",
            "Mistyped",
            id="override",
            tooltip="I mistyped — count this answer right (logged as overridden)",
        ),
        Binding("n", "note", "Note", id="note", show=False, tooltip="The topic's concept note"),
        Binding("r", "related", "Related", id="related", show=False, tooltip="Related questions"),
        Binding("m", "sim", "Sim", id="open-sim", show=False, tooltip="This question's sim"),
        Binding(
            "l",
            "lab",
            "Lab",
            id="open-lab",
            show=False,
            tooltip="The lab exercise for this question",
        ),
        Binding(
            "u,ctrl+z",
            "undo",
            "Undo",
            id="undo",
            priority=True,
            tooltip="Take back the last graded answer (repeatable)",
        ),
        Binding("ctrl+b", "bury", "Bury", id="bury", priority=True, tooltip="Hide until tomorrow"),
        Binding(
            "ctrl+s",
            "suspend",
            "Suspend",
            id="suspend",
            priority=True,
            tooltip="Never show until unsuspended in Browse",
        ),
        Binding(
            "ctrl+f",
            "flag",
            "Flag",
            id="flag",
            priority=True,
            tooltip="Flag this question for editing, with a note",
        ),
        Binding("escape", "finish", "End", id="end-session", tooltip="End the session: summary"),
    ]

    def __init__(self, session: Session, *, practice: bool = False) -> None:
        super().__init__()
        self.session = session
        # One question practised from Related or the palette: a cram card on top of whatever
        # was open, which the end of it returns to (no summary, no trip home).
        self.practice = practice
        # The collector waits from a grade until the next card is on screen (`_grade`).
        self._collector = CollectorHold()
        self._next_prompt: RenderedMarkdown | None = None  # made while this card is read
        self._title: tuple[str, str] | None = None  # the title's head and topic, to fit

    def compose(self) -> ComposeResult:
        yield Static("", id="review-title", classes="titlebar")
        with CardBody(id="review-body"):
            yield Static("", id="prompt")
            yield OptionList(id="choices")
            with Horizontal(id="numeric"):
                yield Input(placeholder="your answer", id="answer")
                yield Static("", id="unit")
            yield CasePanel(id="case")
            yield Static("", id="reask")
            with Vertical(id="feedback"):
                yield Static("", id="verdict")
                yield Static("", id="explanation")
                yield Static("", id="links")
        yield ItemBar(id="gradebar")
        yield KeyBar()

    def on_mount(self) -> None:
        self.show_card()
        self.call_after_refresh(self._paint_title)  # fitted to the laid-out titlebar
        # The screen lives as long as the session: out of the collector's sight, as what the
        # app built at start (`DojoApp.on_services_ready`), so full collections between cards
        # walk only what the cards themselves leave.
        self.call_after_refresh(gc.freeze)

    def on_unmount(self) -> None:
        self._collector.release()  # a session left before its next card painted

    # -- painting ------------------------------------------------------------------------------

    def show_card(self) -> None:
        skipped = self.session.skip_answered_elsewhere()
        if skipped:
            from questions.wording import plural

            ids = ", ".join(i.question_id for i in skipped)
            self.notify(f"Already answered in another window, so skipped: "
                        f"{plural(len(skipped), 'card')} ({ids}).", timeout=8)
        item = self.session.current
        if item is None:
            self.finish()
            return
        self.view_changed("the card")
        inst = item.instance
        services = self.session.services
        topic = services.topic_title(str(item.question.topic))
        pending = len(self.session.pending_redrill)
        label = ("Practice, schedule untouched" if self.practice
                 else "New card" if item.new else _MODE_LABEL[item.mode])
        self._title = (f"{label} · {self.session.remaining} left"
                       f"{f' (+{pending} to re-drill)' if pending else ''}", topic)
        self._paint_title()
        self.query_one("#prompt", Static).update(self._prompt(inst.prompt))
        choices = self.query_one("#choices", OptionList)
        numeric = self.query_one("#numeric")
        self.query_one("#reask", Static).update("")
        self.query_one("#feedback").display = False
        self.query_one("#gradebar").display = False
        case = self.query_one(CasePanel)
        case.display = inst.is_case
        if inst.is_case:  # the scenario above, its steps one at a time in the panel
            numeric.display = False
            choices.display = False
            case.start(self.session)
        elif item.is_mcq:
            numeric.display = False
            choices.display = True
            choices.set_options(
                Option(escape(choice_label(i, text)), id=str(i))
                for i, text in enumerate(inst.choices)
            )
            choices.highlighted = 0
            choices.focus()
        else:
            choices.display = False
            numeric.display = True
            answer = self.query_one("#answer", Input)
            answer.value = ""
            unit = item.question.unit
            answer.placeholder = _placeholder(unit)
            self.query_one("#unit", Static).update(unit)
            answer.focus()
        self.query_one("#review-body", VerticalScroll).scroll_home(animate=False)
        self.refresh_bindings()
        self.call_after_refresh(self._card_painted)

    def _card_painted(self) -> None:
        """The card is on screen: its response clock starts; once the other callbacks waiting
        on this frame have run, the work that can wait for the learner: the collections held
        since the grade (`_grade`), the next card's prompt."""
        self.session.mark_shown()
        self.call_after_refresh(self._while_read)

    def _while_read(self) -> None:
        self._collector.release()
        if self.is_current:  # not once the session has ended (Esc right after the paint)
            self._prepare_next_prompt()

    def _prepare_next_prompt(self) -> None:
        """Parse and render the queued next card's prompt at the prompt's width, as the paint
        will (Textual asks its height, then its lines, with these options)."""
        item = self.session.upcoming
        width = self.query_one("#prompt", Static).content_size.width
        if item is None or width <= 0:
            return
        prompt = _markdown(item.instance.prompt)
        prompt.render_lines(self.app.console,
                            self.app.console_options.update_width(width).update(highlight=False))
        self._next_prompt = prompt

    def _prompt(self, text: str) -> RenderedMarkdown:
        """The card's prompt: the one made while the last card was read, if it is this one."""
        ready, self._next_prompt = self._next_prompt, None
        return ready if ready is not None and ready.text == text else _markdown(text)

    def show_feedback(self, fb: Feedback) -> None:
        item = self.session.current
        assert item is not None
        self.view_changed("the verdict")
        if item.is_mcq:
            choices = self.query_one("#choices", OptionList)
            choices.set_options(_marked_choices(item, fb))  # stays enabled: toggling restyles
        self.query_one("#verdict", Static).update("\n".join(_verdict_lines(item, fb)))
        self.query_one("#explanation", Static).update(_markdown(fb.explanation))
        self.query_one("#links", Static).update(_links(item))
        self.query_one("#feedback").display = True
        bar = self.query_one("#gradebar", ItemBar)
        bar.show(*grade_items(fb))
        bar.display = True
        self.query_one("#review-body", VerticalScroll).focus()
        self.call_after_refresh(self._scroll_to_feedback)
        self.refresh_bindings()

    def _scroll_to_feedback(self, again: bool = True) -> None:
        # Scroll only as far as needed to bring the verdict into view: the question stays on
        # screen above it when both fit (at 80x24 the old scroll-to-top hid the question).
        body = self.query_one("#review-body", VerticalScroll)
        body.scroll_to_widget(self.query_one("#verdict"), top=False, animate=False)
        if again:  # once more after the grade bar has taken its rows (it wraps when narrow)
            self.set_timer(0.05, lambda: self._scroll_to_feedback(again=False))

    # -- answering -----------------------------------------------------------------------------

    def _submit(self, answer: str | int) -> None:
        if self.session.current is None or self.session.feedback is not None:
            return
        try:
            result = self.session.submit(answer)
        except Reask as exc:
            self.query_one("#reask", Static).update(f"[yellow]{escape(str(exc))}[/]")
            return
        self.query_one("#reask", Static).update("")
        self.show_feedback(result)

    @on(Input.Submitted, "#answer")
    def _typed(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self._submit(event.value)

    @on(OptionList.OptionSelected, "#choices")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self._submit(event.option_index)

    def action_choose(self, index: int) -> None:
        self._submit(index)

    def action_digit(self, n: int) -> None:
        if self.session.feedback is None:
            if n >= 1:
                self._submit(n - 1)
        elif n in self.session.feedback.grades:
            self._grade(n)

    def action_override(self) -> None:
        if self.session.case is not None and self.session.feedback is None:
            self.query_one(CasePanel).override()  # the step showing its verdict
        elif self.session.can_override:
            self.show_feedback(self.session.override())

    @on(CasePanel.Finished)
    def _case_finished(self, event: CasePanel.Finished) -> None:
        """The last step is done: grade the card; its steps' verdicts stay in the panel."""
        self.show_feedback(event.feedback)
        self.query_one("#verdict", Static).update(case_summary(self.session))
        self.call_after_refresh(self._scroll_to_case_feedback)

    def _scroll_to_case_feedback(self, tries: int = 20) -> None:
        """The panel just folded its step away: scroll once the feedback is laid out (a region
        read before that is stale and scrolls nowhere)."""
        if self.query_one("#feedback").virtual_region.height == 0 and tries:
            self.set_timer(0.02, lambda: self._scroll_to_case_feedback(tries - 1))
            return
        self._scroll_to_feedback()

    def on_resize(self) -> None:
        self._paint_title()

    def _paint_title(self) -> None:
        if self._title is not None:
            self.query_one("#review-title", Static).update(self._fit_title(*self._title))

    def _fit_title(self, head: str, topic: str, rows: int = 2) -> str:
        """`head · topic` as markup that wraps to at most the titlebar's `rows` at its width:
        a topic's title too long for them is cut with "…" (at 60 columns the bar's last row
        ended mid-title with no sign of it). Before the first layout the width is the
        screen's less the padding; `on_mount` fits it again once laid out."""
        title = self.query_one("#review-title", Static)
        width = title.content_region.width or self.app.size.width - 2

        def fits(text: str) -> bool:
            return len(Text(text).wrap(self.app.console, width)) <= rows

        whole = f"{head} · {topic}"
        if width <= 0 or fits(whole):
            return escape(whole)
        low, high = 0, len(topic)  # the longest cut of the topic that fits
        while low < high:
            mid = (low + high + 1) // 2
            if fits(f"{head} · {topic[:mid].rstrip()}…"):
                low = mid
            else:
                high = mid - 1
        cut = topic[:low]
        if low < len(topic) and topic[low] != " " and " " in cut:
            cut = cut.rsplit(" ", 1)[0]  # a whole word before the "…", not "di…" of "dial"
        return escape(f"{head} · {cut.rstrip(' ,;:')}…")

    def action_default_grade(self) -> None:
        if self.session.feedback is not None:
            self._grade(self.session.feedback.default_grade)

    def _grade(self, quality: int) -> None:
        # No collection between the grade key and the next card painted (`CollectorHold`):
        # the ones that come due meanwhile run once it is on screen (`_card_painted`).
        self._collector.hold()
        try:
            self.session.grade(quality).add_done_callback(self._written)
            if self.session.current is None:
                self.finish()
            else:
                self.show_card()
        except BaseException:
            self._collector.release()
            raise

    def _written(self, future: Future[Any]) -> None:
        """Runs on the writer thread: report a failed write on the UI thread."""
        from trainer.core.errors import (
            AnsweredElsewhereError,
            DiskFullError,
            ReadOnlyDatabaseError,
        )

        error = future.exception()
        if error is None:
            return
        retry = not isinstance(error, AnsweredElsewhereError)
        if isinstance(error, AnsweredElsewhereError):
            message = ("That card was already answered in another window; this answer was not "
                       "recorded. Moving on.")
        elif isinstance(error, DiskFullError):
            message = ("disk full: your last answer was not saved; the card comes back at the "
                       "end of the session. Free some space to go on.")
        elif isinstance(error, ReadOnlyDatabaseError):
            message = "read-only: your last answer was not saved (browsing read-only)."
        else:
            message = f"Could not save that answer: {error}"
        def report() -> None:
            self.session.unsaved(future, retry=retry)  # the title's counts update next card
            self.notify(message, severity="error", timeout=10)

        try:
            self.app.call_from_thread(report)
        except RuntimeError:  # already done when the callback was added: we are the UI thread
            report()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Which keys show (True), show disabled (False) or hide (None): `_KEY_RULES`."""
        rule = _KEY_RULES.get(action)
        if rule is None:
            return True
        return rule(self.session, self.session.current, self.session.feedback is not None)

    # -- card actions --------------------------------------------------------------------------

    def action_undo(self) -> None:
        item = self.session.undo()
        if item is None:
            self.notify("Nothing to undo.")
            return
        self.notify(f"Undid the answer to {item.question_id}.")
        self.show_card()

    def action_bury(self) -> None:
        self._drop("bury")

    def action_suspend(self) -> None:
        self._drop("suspend")

    def _drop(self, how: Any) -> None:
        item = self.session.drop_current(how)
        if item is None:
            return
        verb = "Buried until tomorrow" if how == "bury" else "Suspended (unsuspend in Browse)"
        self.notify(f"{verb}: {item.question_id}")
        if self.session.current is None:
            self.finish()
        else:
            self.show_card()

    def action_flag(self) -> None:
        item = self.session.current
        if item is None:
            return

        store = self.session.services.store
        existing = [f.note for f in store.flags(item.question_id)]

        def done(note: str | None) -> None:
            if note is None:
                return
            if note.strip() in existing:
                self.notify(f"{item.question_id} is already flagged: {note.strip()}")
                return
            self.session.flag(note)
            self.notify(f"Flagged {item.question_id} for editing.")

        self.app.push_screen(FlagScreen(item.question_id, existing), done)

    def action_note(self) -> None:
        item = self.session.current
        if item is None:
            return
        bank = self.session.services.bank
        topic = bank.topics.get(str(item.question.topic))
        title = topic.title if topic is not None else item.question.topic
        sims = Counter(q.sim for q in bank.by_topic(str(item.question.topic)) if q.sim)
        sim = sims.most_common(1)[0][0] if sims else None
        self.app.push_screen(
            NoteScreen(title, (topic.note if topic is not None else "") or "_No note._", sim=sim)
        )

    def action_related(self) -> None:
        item = self.session.current
        if item is None:
            return
        bank = self.session.services.bank
        self.app.push_screen(RelatedScreen(related_rows(item.question, bank), bank))

    def action_lab(self) -> None:
        item = self.session.current
        if item is None or item.question.lab is None:
            return
        self.dojo.action_lab(item.question.lab.exercise, item.question.lab.level)

    def action_sim(self) -> None:
        item = self.session.current
        if item is not None and item.question.sim:
            from trainer.screens.sim import SimScreen

            self.app.push_screen(SimScreen(item.question.sim))

    def action_finish(self) -> None:
        self.save_checked()
        self.finish()

    def save_checked(self) -> tuple[str, int, Future[Any]] | None:
        """Grade an answer checked but not graded yet with Enter's grade, as Enter would, when
        the learner leaves (Esc, or a quit from any screen): leaving threw it away, a worked
        case study included, and asked the card afresh next time. Returns the card, the grade
        and the write; None when no verdict is waiting."""
        feedback, item = self.session.feedback, self.session.current
        if feedback is None or item is None:
            return None
        write = self.session.grade(feedback.default_grade)
        write.add_done_callback(self._written)
        return item.question_id, feedback.default_grade, write

    def finish(self) -> None:
        from trainer.screens.summary import SummaryScreen

        self._collector.release()
        if self.practice:
            self.app.pop_screen()
            self.notify("Practice done: your schedule is untouched.")
            return
        self.app.switch_screen(SummaryScreen(self.session.summary()))


# A key's state from the sitting: (session, the card showing, answered) -> True shown,
# False shown disabled, None hidden. Keys not named here are always shown.
KeyRule = Callable[[Session, Item | None, bool], bool | None]
_KEY_RULES: dict[str, KeyRule] = {
    "choose": lambda s, cur, answered: cur is not None and cur.is_mcq and not answered,
    "digit": lambda s, cur, answered: False if cur is None else answered or cur.is_mcq,
    "override": lambda s, cur, answered: s.can_override,  # only under a wrong verdict
    "sim": lambda s, cur, answered: answered and cur is not None and bool(cur.question.sim),
    "default_grade": lambda s, cur, answered: answered,
    "related": lambda s, cur, answered: answered and (
        bool(cur is not None and cur.question.related) or None),
    "lab": lambda s, cur, answered: answered and (cur is not None or None),
    "note": lambda s, cur, answered: answered or (cur is not None and cur.is_mcq),
    "undo": lambda s, cur, answered: s.can_undo or None,
    "bury": lambda s, cur, answered: cur is not None and not s.cram,
    "suspend": lambda s, cur, answered: cur is not None and not s.cram,
    "flag": lambda s, cur, answered: (cur is not None and not s.cram) or cur is not None,
}


def _marked_choices(item: Item, fb: Feedback) -> list[Option]:
    """The MCQ's choices with ✓ on the right one and ✗ on a wrong pick."""
    marked = []
    for i, text in enumerate(item.instance.choices):
        mark = "  "
        if i == item.instance.correct_index:
            mark = "[green]✓[/] "
        elif i == fb.chosen_index:
            mark = "[red]✗[/] "
        marked.append(Option(f"{mark}{escape(choice_label(i, text))}", id=str(i)))
    return marked


def _verdict_lines(item: Item, fb: Feedback) -> list[str]:
    """The verdict panel: the named mistake first (it is the lesson), right or not with the
    answer, the accepted range, a hint, the lab level a miss suggests."""
    if fb.overridden:
        verdict = "[b green]✓ Counted right[/] [dim](you mistyped)[/]"
    else:
        verdict = "[b green]✓ Right[/]" if fb.correct else "[b red]✗ Not quite[/]"
    lines = []
    if fb.diagnosis and not fb.correct:  # the named mistake comes first: it is the lesson
        lines.append(f"[b yellow]{escape(fb.diagnosis)}[/]")
    letters = inst_letters(item, fb) if item.is_mcq else None
    if letters is not None:
        # The choices above already carry ✓/✗ beside their text: name letters only.
        right, chosen = letters
        mine = "" if fb.correct else f"   you: [b]{chosen}[/]"
        lines.append(f"{verdict}   answer [b]{right}[/]{mine}")
    else:
        lines.append(
            f"{verdict}   answer [b]{escape(fb.expected)}[/]   you: {escape(fb.given)}")
    if fb.accepted and not item.is_mcq:  # an MCQ's answer line already names it
        lines.append(f"[dim]{escape(fb.accepted)}[/]")
    if fb.hint:
        lines.append(f"[yellow]{escape(fb.hint)}[/]")
    if fb.lab and item.question.lab is not None:  # a miss whose lab level is not passed
        link = item.question.lab  # here a key opens it; the summary keeps the command
        lines.append(f"[cyan]Practise this in the lab: [b]l[/] opens {escape(link.exercise)} "
                     f"L{link.level}[/]")
    return lines


def _links(item: Item) -> str:
    """The keys to the card's concept note, related cards, lab level and sim."""
    q = item.question
    links = ["[b]n[/] concept note"]
    if q.related:
        links.append(f"[b]r[/] related ({len(q.related)})")
    if q.lab is not None:
        links.append(f"[b]l[/] lab {q.lab.exercise} L{q.lab.level}")
    if q.sim:
        links.append(f"[b]m[/] sim {escape(q.sim)}")
    return " · ".join(links)


def _markdown(text: str) -> RenderedMarkdown:
    """Prompts and explanations render synchronously (rich), so a card paints in one frame;
    Textual's Markdown widget parses in a thread and mounts a widget per block."""
    return RenderedMarkdown(text)


class ItemBar(Static):
    """A row of items (markup) that wraps between items only, never inside one: "1
    recognised 1d↻" split over two lines at 80 columns read as two keys."""

    SEPARATOR = "  "

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._items: list[str] = []
        self._after = ""

    def show(self, items: list[str], after: str = "") -> None:
        """Lay out `items`, then `after` (already markup, may hold its own line breaks)."""
        self._items, self._after = items, after
        self.update(self._layout())

    def on_resize(self) -> None:
        if self._items:
            self.update(self._layout())

    def _layout(self) -> str:
        width = self.content_size.width or max(20, self.app.size.width - 2)
        lines: list[str] = []
        line, used = "", 0
        for item in self._items:
            size = Text.from_markup(item).cell_len
            if line and used + len(self.SEPARATOR) + size > width:
                lines.append(line)
                line, used = "", 0
            line, used = (f"{line}{self.SEPARATOR}{item}", used + len(self.SEPARATOR) + size) \
                if line else (item, size)
        if line:
            lines.append(line)
        return "\n".join(lines) + self._after


def grade_items(fb: Feedback) -> tuple[list[str], str]:
    """The grade bar as (items, what follows): each grade key an item with what it will save
    (`Feedback.previews`, the store's own rule), then the legend (an item too) and a note on
    its own line: under SM-2 the ease change when the intervals tie, under FSRS the card's
    recall now."""
    previews = fb.previews
    parts = []
    for g in fb.grades:
        preview = None if previews is None else previews.grades.get(g)
        days = None if preview is None else preview.days
        again = preview is not None and preview.again
        text = f"{g} {GRADE_LABELS[g]}{'' if days is None else f' {days}d'}{'↻' if again else ''}"
        parts.append(f"[reverse] {text} [/]" if g == fb.default_grade else f"[b]{text}[/]")
    redrills = previews is not None and any(
        p.again for g, p in previews.grades.items() if g in fb.grades)
    legend = "↻ again today " if redrills else ""
    return [*parts, f"[dim]{legend}(Enter = {fb.default_grade})[/]"], _grade_note(fb)


def _grade_note(fb: Feedback) -> str:
    """SM-2: on a young card 3, 4 and 5 all give the same next interval (1 d, then 6 d), so
    the note says what the choice does change: the ease (EF), which sets how fast later
    intervals grow. FSRS has no ease: the note gives the card's predicted recall now."""
    previews = fb.previews
    if previews is None:
        return ""
    if previews.scheduler == "fsrs":
        if previews.recall is None:
            return "\n[dim]FSRS: a new card; the days are FSRS's intervals[/]"
        return (f"\n[dim]FSRS: recall now {previews.recall:.0%}; each interval keeps recall "
                "near your desired retention[/]")
    passes = [g for g in (3, 4, 5) if g in fb.grades and (p := previews.grades.get(g))
              is not None and p.days is not None and p.ease_change is not None]
    if len(passes) < 2 or len({previews.grades[g].days for g in passes}) != 1:
        return ""
    moves = []
    for g in passes:
        delta = previews.grades[g].ease_change or 0.0
        moves.append(f"{g} {'±0' if delta == 0 else f'{delta:+.2f}'.replace('-', '−')}")
    # Short enough for one line at 60 columns.
    return (f"\n[dim]{'/'.join(map(str, passes))}: same {previews.grades[passes[0]].days}d; "
            f"the ease moves {' · '.join(moves)}[/]")


def _placeholder(unit: str) -> str:
    """The numeric input's hint: "your answer (a number in KiB)", "(a ratio, e.g. 2.5)"."""
    from trainer.core.text import answer_wanted

    return f"your answer ({answer_wanted(unit)})"


def inst_letters(item: Item, fb: Feedback) -> tuple[str, str] | None:
    """An MCQ verdict's (right letter, chosen letter), or None when either is unknown."""
    from questions.model import LETTERS

    right = item.instance.correct_index
    if right is None or fb.chosen_index is None:
        return None
    return LETTERS[right], LETTERS[fb.chosen_index]
