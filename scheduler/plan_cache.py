"""The plan's feasibility kept between starts: its simulation (`scheduler.feasibility`, ~0.1 s of
CPU on a 2,000-answer history) runs once per change of what it is computed from, not at every
start of the app.

The key is a digest of every argument the simulation takes (the plan, today, each card in
study with its schedule and FSRS memory, the learner's pace, every setting, the FSRS
parameters, the lab levels still to pass, when each study day up to the interview begins),
the caller's version and the source of the code that
computes it (this package's modules and the `fsrs` package), so a changed input or a changed
program gives a new key: a stale plan is never returned. The latest KEEP entries are kept (the
plan as it stands, and the next AHEAD_DAYS study days' computed ahead by the home screen and
`dojo plan`, so a learner back after up to AHEAD_DAYS - 1 days away finds the plan kept), as
JSON in the data folder, replaced atomically; a file that cannot be read or written is a miss
(a read-only folder recomputes every time).
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scheduler.days import resolve_timezone
from scheduler.feasibility import Feasibility, feasibility
from scheduler.readiness import day_start

if TYPE_CHECKING:
    from scheduler.plan import Pace, Plan
    from scheduler.records import Settings
    from scheduler.simulate import SimCard

CACHE_NAME = "plan-cache.json"
FORMAT = 2  # of the file's content
AHEAD_DAYS = 3  # study days after today whose plan is computed ahead
KEEP = AHEAD_DAYS + 3  # entries kept, the latest first: today's, the days ahead and a spare
# The modules whose code decides the result (the simulation and everything it calls).
_SOURCES = ("days", "feasibility", "fsrs_arith", "fsrs_memory", "next_states", "plan",
            "plan_cache", "readiness", "records", "simulate", "sm2", "transition")


@functools.cache
def code_digest() -> str:
    """A digest of the source that computes the plan: this package's modules above and every
    module of the installed `fsrs` package."""
    here = Path(__file__).parent
    files = [here / f"{name}.py" for name in _SOURCES]
    try:
        import fsrs  # imported already: the readiness beside the plan reads it
    except ImportError:
        pass
    else:
        files += sorted(Path(fsrs.__file__).parent.glob("*.py"))
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def plan_key(plan: Plan, today: dt.date, cards: Sequence[SimCard], pace: Pace,
             settings: Settings, parameters: Sequence[float] | None, lab_levels: Sequence[int],
             version: str, day_starts: Sequence[dt.datetime], introduced_today: int = 0) -> str:
    """The digest of everything `feasibility` is computed from (see the module's docstring);
    `day_starts`: when each study day from today to the interview day begins (UTC), what the
    simulation reads of the clock (with no time zone set, the system's: it can change)."""
    def card(c: SimCard) -> list[Any]:
        s, m = c.scheduled, c.memory
        return [c.question_id, c.topic, s.state.ef_hundredths, s.state.repetitions,
                s.state.interval, None if s.due is None else s.due.isoformat(), s.lapses,
                s.leech, None if m is None else [m.stability, m.difficulty,
                                                 m.last_review.isoformat()]]

    parts = {
        "format": FORMAT, "version": version, "code": code_digest(),
        "plan": plan.to_json(), "today": today.isoformat(), "cards": [card(c) for c in cards],
        "pace": asdict(pace), "settings": asdict(settings),
        "parameters": None if parameters is None else list(parameters),
        "lab_levels": list(lab_levels), "day_starts": [t.isoformat() for t in day_starts],
        "introduced_today": introduced_today,
    }
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def plan_feasibility(folder: Path | None, plan: Plan, today: dt.date, cards: Sequence[SimCard],
                     pace: Pace, settings: Settings, parameters: Sequence[float] | None,
                     lab_levels: Sequence[int], version: str, *,
                     computed: Feasibility | None = None,
                     introduced_today: int = 0) -> Feasibility:
    """`feasibility` of the plan followed from `today` (study days start at the settings'
    rollover hour in their time zone), without its forecast or table: from the cache in
    `folder` when computed from the same inputs, else computed and kept there (None: no
    cache). `computed`: the caller's own `feasibility` of these inputs (`dojo plan` computes
    it for its table), kept instead of computing it again. `introduced_today`: as
    `feasibility` takes it."""
    tz = resolve_timezone(settings.timezone)

    def start(day: dt.date) -> dt.datetime:
        return day_start(day, settings.rollover_hour, tz)

    starts = [start(today + dt.timedelta(days=i))
              for i in range(max(0, (plan.interview - today).days) + 1)]
    key = plan_key(plan, today, cards, pace, settings, parameters, lab_levels, version, starts,
                   introduced_today)
    path = None if folder is None else folder / CACHE_NAME
    found = None if computed is not None else _read(path, key)
    if found is not None:
        return found

    fit = computed or feasibility(plan, today, cards, pace, start, settings, parameters,
                                  lab_levels, introduced_today=introduced_today)
    result = Feasibility(fit.feasible, fit.reason, fit.need_minutes, fit.new_per_day)
    _write(path, key, result)
    return result


def _entries(path: Path) -> list[dict[str, Any]]:
    """The file's entries, latest first ([] for a missing or unreadable file)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return []
    entries = data.get("entries")
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict)]


def _read(path: Path | None, key: str) -> Feasibility | None:
    if path is None:
        return None
    for entry in _entries(path):
        if entry.get("key") == key:
            try:
                return Feasibility(bool(entry["feasible"]), str(entry["reason"]),
                                   int(entry["need_minutes"]), int(entry["new_per_day"]))
            except (ValueError, TypeError, KeyError):
                return None
    return None


def _write(path: Path | None, key: str, fit: Feasibility) -> None:
    """Keep the entry first, before the KEEP - 1 latest others (atomically: a reader sees the
    old file or the new one; of two writers at once the last one's entries are kept); an
    unwritable folder keeps nothing."""
    if path is None:
        return
    entry = {"key": key, "feasible": fit.feasible, "reason": fit.reason,
             "need_minutes": fit.need_minutes, "new_per_day": fit.new_per_day}
    others = [e for e in _entries(path) if e.get("key") != key]
    data = {"format": FORMAT, "entries": [entry, *others][:KEEP]}
    try:
        fd, tmp = tempfile.mkstemp(prefix=".plan-cache-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
