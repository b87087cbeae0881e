"""What one answer does to a card, as a pure function: the study rules in one place.

`sm2.next_state` is the bare SM-2 step; `apply` checks the grade once and wraps the step
(`sm2.advance`) with the rules around it (see docs/scheduling.md): which modes reschedule, the
due date, lapses, the leech flag and whether the card must be re-drilled today. The Store loads
a card, calls `apply` and writes the result in one transaction; the study session asks
`needs_redrill` rather than keeping its own rule.
"""

from __future__ import annotations

import datetime as dt

from scheduler.records import MODES, Mode, Scheduled, Settings
from scheduler.sm2 import PASS_QUALITY, advance, check_quality

# Same-day re-drill: a card graded below this comes back until it is graded at least this.
REDRILL_UNTIL = 4


def needs_redrill(quality: int) -> bool:
    """Whether an answer graded `quality` sends its card back for re-drill today."""
    return check_quality(quality) < REDRILL_UNTIL


def apply(
    card: Scheduled, quality: int, mode: Mode, day: dt.date, settings: Settings
) -> tuple[Scheduled, bool]:
    """The card after an answer graded `quality` on study `day`, and whether to re-drill it.

    `mode="review"` applies SM-2 to a card due by `day` (or new): due = day + interval; a
    failing grade (< 3) adds a lapse and at `settings.leech_lapses` lapses the card becomes a leech.
    `"redrill"` and `"cram"` leave the card as it was. Raises ValueError for a bad grade or
    mode, or for a review of a card not due until after `day`.
    """
    quality = check_quality(quality)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    redrill = quality < REDRILL_UNTIL  # needs_redrill, on the grade checked above
    if mode != "review":
        return card, redrill
    if card.due is not None and card.due > day:
        raise ValueError(
            f"the card is not due until {card.due.isoformat()}; answer it with "
            "mode='redrill' or mode='cram' to practise without rescheduling"
        )
    state = advance(card.state, quality)
    lapses = card.lapses + (quality < PASS_QUALITY)
    leech = card.leech or (quality < PASS_QUALITY and lapses >= settings.leech_lapses)
    return Scheduled(state, day + dt.timedelta(days=state.interval), lapses, leech), redrill
