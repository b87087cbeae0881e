"""A mock interview round: one clock over estimates, a sim decision, a system-design prompt and a
lab level from a blank stub, drawn from the learner's weakest topics.

Headless: the `dojo mock` command and the TUI's mock screen both drive a `MockRound` through
`begin`, `answer`, `grade_lab` and `skip`, and the round is saved to the store after every step
(`save`), so closing the app and coming back resumes it (`resume`). Answers here rehearse; they
never touch the SM-2 schedule (a lab pass is recorded like any grading, and counts as one).
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from questions.wording import plural
from trainer.core.text import answer_wanted

if TYPE_CHECKING:
    from questions.bank import Bank
    from questions.model import Instance, Question
    from scheduler.store import Store
    from trainer.core.services import Services

DEFAULT_MINUTES = 45
ESTIMATES = 4
PART_NAMES = {"estimate": "Estimates", "sim": "Sim decision", "design": "System design",
              "lab": "Coding (lab)"}
Clock = Callable[[], float]


# ------------------------------------------------------------------------------ weakest topics
def topic_recall_on_day(services: Services) -> dict[str, float] | None:
    """Where a study plan's forecast plugs in: each topic's predicted recall on the plan's
    interview day (`recall_on_day`), lowest = weakest. None while no plan exists, and the
    round falls back to accuracy (`weakest_topics`)."""
    from trainer.core.plan import plan_report

    if services.store.plan() is None:
        return None
    report = plan_report(services.store, services.bank, services.now)
    return {t.topic: t.recall_on_day for t in report.topics}


def weakest_topics(services: Services, rng: random.Random | None = None) -> list[str]:
    """Topic ids, weakest first: by predicted recall where a plan exists, else by answer
    accuracy smoothed toward 50% (an unseen topic ranks as a coin flip, a topic missed 3 of 4
    times ranks below it); ties in a shuffled order, so a fresh learner sees every topic."""
    topics = [t for t in services.bank.topics if services.bank.by_topic(t)]
    (rng or random.Random()).shuffle(topics)
    recall = topic_recall_on_day(services)
    if recall is not None:
        return sorted(topics, key=lambda t: recall.get(t, 0.5))
    accuracy = services.store.topic_accuracy()

    def smoothed(topic: str) -> float:
        acc = accuracy.get(topic)
        n, right = (acc.answered, acc.correct) if acc is not None else (0, 0)
        return (right + 1) / (n + 2)

    return sorted(topics, key=smoothed)


# ------------------------------------------------------------------------------------ the round
@dataclass
class Part:
    """One thing to answer. `ref` says what: estimate {question, seed}, sim {decision},
    design {prompt}, lab {exercise, level}."""

    kind: str
    ref: dict[str, Any]
    topic: str
    started_s: float | None = None
    ended_s: float | None = None
    score: float | None = None  # 0..1 once done
    answers: list[str] = field(default_factory=list)
    right: list[bool] = field(default_factory=list)
    mistakes: list[str] = field(default_factory=list)
    text: str = ""  # design: the free-text answer, before its rubric is marked

    @property
    def done(self) -> bool:
        return self.score is not None

    @property
    def seconds(self) -> float:
        if self.started_s is None:
            return 0.0
        return max(0.0, (self.ended_s or self.started_s) - self.started_s)


@dataclass
class MockRound:
    """A round and its own clock. The clock counts the time the round is open, not the time it
    sat closed: `clock_s` is the round time at the last step (`last_s`, wall time) of the
    sitting under way, and items' `started_s`/`ended_s` and `finished_s` are round times. A
    round left (Esc, the app closed) or resumed on another study day (`resume`) starts a new
    sitting from where its clock stood. `opened` and `day` are the study days it was opened and
    last played (dated like answers: $DOJO_NOW moves them)."""

    started_s: float
    minutes: int
    items: list[Part]
    weakest: list[str]
    round_id: int | None = None
    finished_s: float | None = None
    clock_s: float = 0.0
    last_s: float | None = None  # None: no sitting under way (left, or not resumed yet)
    opened: str = ""  # ISO study day
    day: str = ""  # ISO study day of the last step
    left_since: dt.date | None = field(default=None, compare=False)  # set by `resume`

    @property
    def current(self) -> Part | None:
        return next((i for i in self.items if not i.done), None)

    @property
    def position(self) -> int:
        """1-based number of the current item (len(items) + 1 when finished)."""
        return sum(i.done for i in self.items) + 1

    def elapsed_s(self, now: float) -> float:
        """The round time at wall time `now`."""
        if self.finished_s is not None:
            return self.finished_s
        if self.last_s is None:
            return self.clock_s
        return self.clock_s + max(0.0, now - self.last_s)

    def clock(self, now: float) -> str:
        """"12:34 of 45:00" ("47:10 of 45:00, over time")."""
        elapsed = self.elapsed_s(now)
        over = ", over time" if elapsed > self.minutes * 60 else ""
        return f"{_mmss(elapsed)} of {self.minutes}:00{over}"

    def stamp(self, now: float, day: dt.date) -> None:
        """A step at wall time `now` on study day `day`: the clock keeps the time so far."""
        self.clock_s = self.elapsed_s(now)
        self.last_s = now
        self.day = day.isoformat()

    def to_state(self) -> dict[str, Any]:
        return {"started_s": self.started_s, "minutes": self.minutes, "weakest": self.weakest,
                "finished_s": self.finished_s, "items": [asdict(i) for i in self.items],
                "clock_s": self.clock_s, "last_s": self.last_s, "opened": self.opened,
                "day": self.day}

    @classmethod
    def from_state(cls, state: Mapping[str, Any], round_id: int | None = None) -> MockRound:
        items = [Part(**i) for i in state["items"]]
        finished = state.get("finished_s")
        if "clock_s" not in state:  # saved before rounds kept their own clock: wall times
            origin = float(state["started_s"])
            for i in items:
                i.started_s = None if i.started_s is None else max(0.0, i.started_s - origin)
                i.ended_s = None if i.ended_s is None else max(0.0, i.ended_s - origin)
            finished = None if finished is None else max(0.0, finished - origin)
            marks = [t for i in items for t in (i.started_s, i.ended_s) if t is not None]
            state = {**state, "clock_s": max(marks, default=0.0), "last_s": None}
        return cls(started_s=float(state["started_s"]), minutes=int(state["minutes"]),
                   items=items, weakest=list(state["weakest"]), round_id=round_id,
                   finished_s=finished, clock_s=float(state["clock_s"]),
                   last_s=state.get("last_s"), opened=str(state.get("opened", "")),
                   day=str(state.get("day", "")))


def _mmss(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def new_round(services: Services, minutes: int = DEFAULT_MINUTES, *,
              rng: random.Random | None = None, clock: Clock = time.time) -> MockRound:
    """Draw a round from the weakest topics: four estimates with fresh numbers, a sim decision,
    a design prompt and a lab level; saved at once (so it resumes even before an answer)."""
    from lab.sims.decisions import DECISIONS
    from questions.design import design_prompts

    if minutes <= 0:
        raise ValueError(f"--minutes must be positive, got {minutes}")
    rng = rng or random.Random()
    weak = weakest_topics(services, rng)
    rank = {t: i for i, t in enumerate(weak)}
    items = [Part("estimate", {"question": q.id, "seed": rng.randrange(1, 2**31)}, q.topic)
             for q in _estimates(services.bank, weak, rng)]
    decision = min(DECISIONS, key=lambda d: (rank.get(d.topic, len(rank)), rng.random()))
    items.append(Part("sim", {"decision": decision.id}, decision.topic))
    prompt = min(design_prompts(), key=lambda p: (p.topic == decision.topic,
                                                  rank.get(p.topic, len(rank)), rng.random()))
    items.append(Part("design", {"prompt": prompt.id}, prompt.topic))
    exercise, level, topic = choose_lab(services.bank, weak)
    level = first_open_level(exercise, level, services.store.lab_levels_passed())
    items.append(Part("lab", {"exercise": exercise, "level": level}, topic))
    today = services.day()
    mock = MockRound(started_s=clock(), minutes=minutes, items=items, weakest=weak[:5],
                     last_s=clock(), opened=today.isoformat(), day=today.isoformat())
    save(mock, services, clock)
    return mock


def _estimates(bank: Bank, weak: list[str], rng: random.Random) -> list[Question]:
    """Numeric questions and case studies, one per weak topic in turn (a small bank repeats
    one with fresh numbers)."""
    pools = [[q for q in bank.by_topic(t) if q.kind in ("numeric", "case")] for t in weak]
    pools = [p for p in pools if p]
    if not pools:
        raise ValueError("the question bank has no numeric questions or case studies")
    picked: list[Question] = []
    while len(picked) < ESTIMATES:
        for pool in pools:
            fresh = [q for q in pool if q not in picked] or pool
            picked.append(rng.choice(fresh))
            if len(picked) == ESTIMATES:
                break
    return picked


def choose_lab(bank: Bank, weak: list[str]) -> tuple[str, int, str]:
    """The level the weakest topic's questions link to (exercise, level, topic); the first
    level of the first exercise when none links."""
    from lab.exercises import discover

    known = {ex.id: ex for ex in discover()}
    for topic in weak:
        for q in bank.by_topic(topic):
            ex = known.get(q.lab.exercise) if q.lab is not None else None
            if ex is not None and q.lab is not None and q.lab.level in ex.level_numbers:
                return ex.id, q.lab.level, topic
    ex = next(iter(known.values()))
    return ex.id, ex.level_numbers[0], weak[0] if weak else ""


def first_open_level(exercise: str, linked: int, passed: set[tuple[str, int]]) -> int:
    """The exercise's first level not passed yet (its blank stub needs every level before it
    written too, so a weak topic linked to L4 draws L2 when only L1 has passed); the linked
    level when every level has passed."""
    from lab.exercises import get

    open_levels = [n for n in get(exercise).level_numbers if (exercise, n) not in passed]
    return open_levels[0] if open_levels else linked


# ---------------------------------------------------------------------------- store round-trip
def save(mock: MockRound, services: Services, clock: Clock = time.time) -> None:
    """Stamp the step on the round's clock and store the round."""
    mock.stamp(clock(), services.day())
    _store(mock, services)


def leave(mock: MockRound, services: Services, clock: Clock = time.time) -> None:
    """The learner leaves the round open (Esc, the app closes): its clock stops here."""
    if mock.current is None:
        return
    mock.stamp(clock(), services.day())
    mock.last_s = None
    _store(mock, services)


def _store(mock: MockRound, services: Services) -> None:
    """Insert or update the round, dated on the study day it is played ($DOJO_NOW moves it, as
    it moves answers)."""
    from scheduler.days import utc_now

    moment = services.now or utc_now()
    mock.round_id = services.store.save_mock_round(
        mock.to_state(), round_id=mock.round_id, started=moment, minutes=mock.minutes,
        finished=None if mock.finished_s is None else moment,
        score=None if mock.finished_s is None else total_score(mock))


def resume(store: Store, now: dt.datetime | None = None,
           clock: Clock = time.time) -> MockRound | None:
    """The round left open, if any. Its clock goes on from where it stood when it was left,
    when it was last played on another study day, or after a pause longer than the whole
    round (a round left, not a long think); `left_since` then names the day it was left on
    another day. A CLI step a few minutes after the last one counts those minutes."""
    found = store.open_mock_round()
    if found is None:
        return None
    mock = MockRound.from_state(found[1], found[0])
    today, wall = store.study_day(now), clock()
    gap = None if mock.last_s is None else wall - mock.last_s
    if mock.day and mock.day != today.isoformat():
        mock.left_since = dt.date.fromisoformat(mock.day)
    if mock.left_since is not None or gap is None or not 0 <= gap <= mock.minutes * 60:
        mock.last_s = wall  # a new sitting: the time it sat closed is not counted
    return mock


def resume_note(mock: MockRound, today: dt.date) -> str:
    """What resuming says: the round's number, where its clock stands, and for a round left
    on another day, since when it sat open."""
    stands = f"Resuming mock round #{mock.round_id} at {_mmss(mock.clock_s)} of {mock.minutes}:00"
    if mock.left_since is None:
        return f"{stands}."
    days = (today - mock.left_since).days
    return (f"{stands}: left open since {mock.left_since} ({plural(days, 'day')} ago); the time "
            "it sat closed is not counted.")


# ------------------------------------------------------------------------------- one item
@dataclass(frozen=True)
class View:
    """What the current item shows: a title, the text to answer, and how to answer it."""

    title: str
    text: str
    how: str
    path: str = ""  # lab: the file to edit


@dataclass
class PartFeedback:
    lines: list[str]
    reask: bool = False
    item_done: bool = False
    round_done: bool = False


def _instance(item: Part, services: Services) -> Instance:
    return services.question(item.ref["question"]).draw(int(item.ref["seed"]))


def begin(mock: MockRound, services: Services, clock: Clock = time.time) -> View | None:
    """Start the current item's clock (and, for the lab, its interview rehearsal: your file is
    moved aside, a fresh stub, hints off) and say what it asks; None when the round is over."""
    item = mock.current
    if item is None:
        return None
    if item.started_s is None:
        item.started_s = mock.elapsed_s(clock())
        if item.kind == "lab":
            _start_lab(mock, item, clock, services)
        save(mock, services, clock)
    n, total = mock.position, len(mock.items)
    head = f"{n}/{total} · {PART_NAMES[item.kind]} · {services.topic_title(item.topic)}"
    if item.kind == "estimate":
        inst = _instance(item, services)
        if inst.is_case:
            step = len(item.answers)
            done = "".join(f"\n- step {i + 1}: {_revealed(s)}" for i, s in
                           enumerate(inst.steps[:step]))
            done = f"\n{done}" if done else ""
            unit = inst.steps[step].question.unit
            return View(head, f"{inst.prompt}{done}\n\nStep {step + 1} of {len(inst.steps)}: "
                        f"{inst.steps[step].prompt}", answer_wanted(unit))
        return View(head, inst.prompt, answer_wanted(inst.question.unit))
    if item.kind == "sim":
        from lab.sims import SIMS
        from lab.sims.decisions import decision
        from lab.sims.report import format_value

        d = decision(item.ref["decision"])
        sim = SIMS[d.sim]
        start = d.start()
        dials = ", ".join(f"{name} (now {format_value(sim.spec(name), start[name])}, "
                          f"{sim.spec(name).describe_range()})" for name in d.dials)
        return View(head, f"{d.scenario}\n\nYou may set: {dials}. Every check of the "
                    f"{sim.title.lower()} sim must pass.", "key=value pairs, e.g. "
                    f"{d.dials[0]}={format_value(sim.spec(d.dials[0]), start[d.dials[0]])}")
    if item.kind == "design":
        from questions.design import design_prompt

        p = design_prompt(item.ref["prompt"])
        if not item.text:
            return View(f"{head} · {p.title}", p.prompt,
                        "your answer in free text (one paragraph is fine)")
        rubric = "\n".join(f"  {i + 1}. {point}" for i, point in enumerate(p.rubric))
        return View(f"{head} · {p.title}", f"Your answer: {item.text}\n\nRubric: which points "
                    f"did your answer cover?\n{rubric}", "the point numbers, e.g. 1 3 4; all; none")
    from trainer.core.lab import Lab

    lab = Lab(services.store, now=services.now)
    ex = lab.exercise(item.ref["exercise"])
    lvl = ex.level(int(item.ref["level"]))
    return View(f"{head} · {ex.id} L{lvl.number}: {lvl.title}",
                f"Implement level {lvl.number} of {ex.title} from a blank stub, interview rules: "
                f"no hints (the statement below is also `dojo lab show {ex.id}`).\n\n"
                f"{lab.statement(ex)}",
                "edit the file and grade it, as often as you need: the part ends with a pass "
                "or with the round's clock",
                path=str(lab.state.solution_path(ex)))


def _revealed(step: Instance) -> str:
    from questions.cases import revealed

    return revealed(step)


def _start_lab(mock: MockRound, item: Part, clock: Clock, services: Services) -> None:
    from trainer.core.lab import Lab

    lab = Lab(services.store, now=services.now)
    left = mock.minutes - mock.elapsed_s(clock()) / 60
    lab.start_interview(lab.exercise(item.ref["exercise"]), int(item.ref["level"]),
                        max(1, round(left)))


def _finish_item(mock: MockRound, item: Part, score: float, services: Services,
                 clock: Clock) -> PartFeedback:
    item.score = max(0.0, min(1.0, score))
    item.ended_s = mock.elapsed_s(clock())
    if mock.current is None:
        mock.finished_s = item.ended_s
    save(mock, services, clock)
    return PartFeedback([], item_done=True, round_done=mock.current is None)


def answer(mock: MockRound, text: str, services: Services,
           clock: Clock = time.time) -> PartFeedback:
    """Answer the current item (an estimate step, a sim configuration, a design answer or its
    rubric marks). The lab is graded with `grade_lab`; a reask changes nothing."""
    item = mock.current
    if item is None:
        return PartFeedback(["The round is over."], round_done=True)
    if item.started_s is None:
        begin(mock, services, clock)
    if item.kind == "estimate":
        return _answer_estimate(mock, item, text, services, clock)
    if item.kind == "sim":
        return _answer_sim(mock, item, text, services, clock)
    if item.kind == "design":
        return _answer_design(mock, item, text, services, clock)
    return PartFeedback(["This part is graded, not typed: run the grader (dojo mock grade, or "
                     "ctrl+g in the app)."], reask=True)


def _answer_estimate(mock: MockRound, item: Part, text: str, services: Services,
                     clock: Clock) -> PartFeedback:
    from questions.answers import check_answer

    inst = _instance(item, services)
    step = inst.steps[len(item.answers)] if inst.is_case else inst
    outcome = check_answer(step, text)
    if not outcome.graded:
        return PartFeedback([outcome.message or "try again"], reask=True)
    item.answers.append(text)
    item.right.append(bool(outcome.correct))
    label = f"{inst.question.id}" + (f" step {len(item.answers)}" if inst.is_case else "")
    if outcome.correct:
        lines = [f"Right: {outcome.expected_display}."]
    else:
        why = f" ({outcome.diagnosis or outcome.hint})" if outcome.diagnosis or outcome.hint \
            else ""
        item.mistakes.append(f"{label}: said {outcome.given_display}, expected "
                             f"{outcome.expected_display}{why}")
        lines = [f"Wrong: expected {outcome.expected_display}, you said "
                 f"{outcome.given_display}{why}."]
    if inst.is_case and len(item.answers) < len(inst.steps):
        save(mock, services, clock)
        return PartFeedback(lines)
    fb = _finish_item(mock, item, sum(item.right) / len(item.right), services, clock)
    fb.lines = lines
    return fb


def _answer_sim(mock: MockRound, item: Part, text: str, services: Services,
                clock: Clock) -> PartFeedback:
    from lab.sims import SimInputError
    from lab.sims.decisions import decision

    d = decision(item.ref["decision"])
    try:
        changes = d.parse(text)
        result = d.evaluate(changes)
    except SimInputError as exc:
        return PartFeedback([str(exc)], reask=True)
    item.answers.append(text)
    failed = [c for c in result.checks if not c.passed]
    example = " ".join(f"{k}={v}" for k, v in d.example.items())
    if failed:
        item.mistakes.extend(f"{d.id}: {c.description} failed: {c.margin_text}" for c in failed)
        lines = [f"Fails {len(failed)} of {len(result.checks)} checks: "
                 + "; ".join(f"{c.name}: {c.margin_text}" for c in failed),
                 f"One configuration that passes: {example}"]
    else:
        lines = [f"Every check passes ({len(result.checks)}): "
                 + "; ".join(f"{c.name}: {c.margin_text}" for c in result.checks)]
    fb = _finish_item(mock, item, 0.0 if failed else 1.0, services, clock)
    fb.lines = lines
    return fb


def _answer_design(mock: MockRound, item: Part, text: str, services: Services,
                   clock: Clock) -> PartFeedback:
    from questions.design import design_prompt, parse_points

    p = design_prompt(item.ref["prompt"])
    if not item.text:
        if not text.strip():
            return PartFeedback(["Write your answer first."], reask=True)
        item.text = " ".join(text.split())
        save(mock, services, clock)
        return PartFeedback(["Now mark the rubric points your answer covered."])
    try:
        covered = parse_points(text, len(p.rubric))
    except ValueError as exc:
        return PartFeedback([str(exc)], reask=True)
    item.answers.append(" ".join(str(i + 1) for i in covered))
    missed = [point for i, point in enumerate(p.rubric) if i not in covered]
    item.mistakes.extend(f"{p.id}: missed: {point}" for point in missed)
    fb = _finish_item(mock, item, len(covered) / len(p.rubric), services, clock)
    fb.lines = [f"Covered {len(covered)} of {len(p.rubric)} points."]
    return fb


def grade_lab(mock: MockRound, services: Services, clock: Clock = time.time,
              device: str = "auto", on: str | None = None) -> PartFeedback:
    """Grade the lab item's file on its level (recorded like any grading). A pass, or a
    failure once the round's clock has run out, ends the part: the rehearsal ends (your own
    file comes back; the rehearsal's is kept under backups/) and it is scored. A failure with
    time left keeps the part open (`reask`): fix the file and grade again.
    Graded on `on` (an SSH host, "local") or else the lab_host setting's host; a host that
    cannot grade raises `trainer.core.remote.RemoteError` with nothing counted or recorded.
    Blocking (a sandboxed subprocess): the TUI calls it from a worker thread."""
    from lab.concepts import recall_lines
    from trainer.core.lab import Lab

    item = mock.current
    if item is None or item.kind != "lab":
        return PartFeedback(["The current part is not the lab."], reask=True)
    if item.started_s is None:
        begin(mock, services, clock)
    lab = Lab(services.store, now=services.now)
    ex = lab.exercise(item.ref["exercise"])
    level = int(item.ref["level"])
    host = lab.grading_host(on)
    graded = lab.grade(ex, lab.state.solution_path(ex), [level], device, None, None,
                       host=host)
    result = graded.result
    passed = any(lvl.passed for lvl in result.levels if lvl.level == level)
    item.answers.append("passed" if passed else "failed")
    lines = [f"{ex.id} L{level} {'passed' if passed else 'failed'}"
             + (f" (graded on {result.device} at {host})." if host else ".")]
    item.mistakes = []  # the last grading's failure is the part's mistake
    for lvl in result.levels:
        failure = lvl.smallest_failure()
        if failure is not None and not passed:
            message = " ".join(failure.message.split())[:160]
            item.mistakes.append(f"{ex.id} L{level}: case {failure.case.id} failed: {message}")
            lines.append(f"First failing case: {failure.case.id}: {message}")
    lines += recall_lines(graded.recorder.recalls)
    left_s = mock.minutes * 60 - mock.elapsed_s(clock())
    if not passed and left_s > 0:  # iterate: the part stays open until a pass or the clock
        lines.append(f"Fix it and grade again ({_mmss(left_s)} left on the round's clock; "
                     "skipping gives the part up).")
        save(mock, services, clock)
        return PartFeedback(lines, reask=True)
    running = lab.interview(ex)
    if running is not None:
        path, kept = lab.state.end_interview(ex)
        back = "Your own file is back" if running.moved_aside else "A fresh stub is"
        lines.append(f"{back} at {path}; this round's file is kept at {kept}.")
    fb = _finish_item(mock, item, 1.0 if passed else 0.0, services, clock)
    fb.lines = lines
    return fb


def skip(mock: MockRound, services: Services, clock: Clock = time.time) -> PartFeedback:
    """Give up the current item (scored 0, named as skipped); a lab rehearsal is ended."""
    item = mock.current
    if item is None:
        return PartFeedback(["The round is over."], round_done=True)
    if item.started_s is None:
        item.started_s = mock.elapsed_s(clock())
    item.mistakes.append(f"{PART_NAMES[item.kind]}: skipped ({_what(item)})")
    if item.kind == "lab":
        from trainer.core.lab import Lab

        lab = Lab(services.store, now=services.now)
        ex = lab.exercise(item.ref["exercise"])
        if lab.interview(ex) is not None:
            lab.state.end_interview(ex)
    fb = _finish_item(mock, item, 0.0, services, clock)
    fb.lines = ["Skipped."]
    return fb


def abandon(mock: MockRound, services: Services, clock: Clock = time.time) -> None:
    """End the round now: every item not answered scores 0."""
    while mock.current is not None:
        skip(mock, services, clock)


def _what(item: Part) -> str:
    if item.kind == "estimate":
        return str(item.ref["question"])
    if item.kind == "lab":
        return f"{item.ref['exercise']} L{item.ref['level']}"
    return str(next(iter(item.ref.values())))


# ------------------------------------------------------------------------------------ report
@dataclass(frozen=True)
class PartScore:
    kind: str
    name: str
    score: float  # 0..1
    seconds: float
    items: int


@dataclass(frozen=True)
class Report:
    round_id: int | None
    score: float
    elapsed_s: float
    minutes: int
    parts: list[PartScore]
    mistakes: list[str]
    study_next: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def total_score(mock: MockRound) -> float:
    """The mean of the four parts' scores (each part weighs the same)."""
    parts = part_scores(mock)
    return sum(p.score for p in parts) / len(parts) if parts else 0.0


def part_scores(mock: MockRound) -> list[PartScore]:
    out = []
    for kind, name in PART_NAMES.items():
        items = [i for i in mock.items if i.kind == kind]
        if not items:
            continue
        out.append(PartScore(kind, name, sum(i.score or 0.0 for i in items) / len(items),
                             sum(i.seconds for i in items), len(items)))
    return out


def report(mock: MockRound, services: Services, clock: Clock = time.time) -> Report:
    """Score and time per part, every mistake by name, and what to study next: the topics of
    the items that lost points, weakest first, with the commands that drill them."""
    mistakes = [m for i in mock.items for m in i.mistakes]
    lost: dict[str, list[Part]] = {}
    for item in mock.items:
        if (item.score or 0.0) < 1.0:
            lost.setdefault(item.topic, []).append(item)
    study: list[str] = []
    for topic, items in sorted(lost.items(), key=lambda kv: sum(i.score or 0 for i in kv[1])):
        what = []
        for i in items:
            if i.kind == "estimate":
                what.append(f"dojo questions show {i.ref['question']}")
            elif i.kind == "sim":
                from lab.sims.decisions import decision

                what.append(f"dojo sim {decision(i.ref['decision']).sim}")
            elif i.kind == "lab":
                what.append(f"dojo lab start {i.ref['exercise']} --level {i.ref['level']}")
            else:
                what.append(f"the rubric of {i.ref['prompt']} (missed points named above)")
        study.append(f"{services.topic_title(topic)}: {'; '.join(dict.fromkeys(what))}")
    return Report(mock.round_id, total_score(mock), mock.elapsed_s(clock()), mock.minutes,
                  part_scores(mock), mistakes, study)


SPARKS = "▁▂▃▄▅▆▇█"
SHORT = {"estimate": "est", "sim": "sim", "design": "design", "lab": "lab"}


def history_lines(store: Store, last: int = 8) -> list[str]:
    """Stats' chart of finished rounds: a sparkline of every score, then the latest rounds
    with a bar and the score of each part."""
    rounds = store.mock_rounds()
    if not rounds:
        return []
    scores = [score for _, _, score, _ in rounds]
    spark = "".join(SPARKS[min(len(SPARKS) - 1, int(s * len(SPARKS)))] for s in scores)
    lines = [f"{spark}  {len(rounds)} round{'s' if len(rounds) != 1 else ''}, "
             f"best {max(scores):.0%}, latest {scores[-1]:.0%}"]
    for rid, at, score, state in rounds[-last:]:
        parts = part_scores(MockRound.from_state(state, rid))
        full = round(score * 10)
        each = " ".join(f"{SHORT[p.kind]} {p.score:.0%}" for p in parts)
        lines.append(f"#{rid} {at:%m-%d} {'█' * full}{'░' * (10 - full)} {score:>4.0%}  {each}")
    return lines
