"""The pure SM-2 step, exactly as pinned in docs/scheduling.md.

Readings of the published text (Wozniak 1987/1990) that this module pins:

* A card starts with EF 2.50 and n = 0 repetitions.
* A pass (q >= 3): n += 1; I(1) = 1, I(2) = 6, I(n) = ceil(I(n-1) * EF) with the EF from
  *before* this review; then EF += 0.1 - (5-q)(0.08 + (5-q)*0.02), floored at 1.30.
* A lapse (q < 3): n = 0, next interval 1 day, EF *unchanged*.
* EF is kept as an integer number of hundredths (250 = 2.50) and ceil is done with integers,
  so 90 days x 2.70 is exactly 243, never 244 as float rounding would give.

The rules around this step (due date, lapses, leech, re-drill; re-drill and cram answers leave
the state alone) are in `scheduler.transition`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

INITIAL_EF = 250
MIN_EF = 130
PASS_QUALITY = 3
GRADES = range(6)


def _ef_delta(quality: int) -> int:
    """Change of EF in hundredths for a pass: q5 +10, q4 0, q3 -14."""
    miss = 5 - quality
    return 10 - miss * (8 + miss * 2)


def check_quality(quality: object) -> int:
    """Return `quality` if it is an int grade 0-5, else raise ValueError saying why."""
    if isinstance(quality, bool) or not isinstance(quality, int):
        raise ValueError(f"quality must be an int from 0 to 5, got {quality!r}")
    if quality not in GRADES:
        raise ValueError(f"quality must be from 0 to 5, got {quality}")
    return quality


def _hundredths(ef: Decimal | str | int | float) -> int:
    """EF as exact hundredths: Decimal('2.7') -> 270; refuses what is not a whole 0.01."""
    try:
        scaled = Decimal(str(ef)) * 100
    except ArithmeticError as exc:
        raise ValueError(f"EF must be a number, got {ef!r}") from exc
    if not scaled.is_finite() or scaled != scaled.to_integral_value():
        raise ValueError(f"EF moves in steps of 0.01, got {ef!r}")
    return int(scaled)


@dataclass(frozen=True, slots=True, init=False)
class CardState:
    """SM-2 state of one card: EF in hundredths, repetitions n, current interval in days.

    `interval` is 0 only for a card never reviewed. Build one as `CardState(270, 3, 90)` or
    `CardState(ef=Decimal("2.70"), repetitions=3, interval=90)`.
    """

    ef_hundredths: int
    repetitions: int
    interval: int

    def __init__(
        self,
        ef_hundredths: int = INITIAL_EF,
        repetitions: int = 0,
        interval: int = 0,
        *,
        ef: Decimal | str | int | float | None = None,
    ) -> None:
        if ef is not None:
            ef_hundredths = _hundredths(ef)
        for name, value in (("ef_hundredths", ef_hundredths), ("repetitions", repetitions),
                            ("interval", interval)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an int, got {value!r}")
            object.__setattr__(self, name, value)
        if ef_hundredths < MIN_EF:
            raise ValueError(f"EF must be >= 1.30, got {ef_hundredths / 100}")
        if repetitions < 0 or interval < 0:
            raise ValueError("repetitions and interval must be >= 0")

    @classmethod
    def new(cls) -> CardState:
        """A card that was never reviewed."""
        return cls()

    @property
    def ef(self) -> Decimal:
        """The exact easiness factor, e.g. Decimal('2.50')."""
        return Decimal(self.ef_hundredths).scaleb(-2)


def next_state(state: CardState, quality: int) -> CardState:
    """Return the state after a scheduled review graded `quality` (an int 0-5)."""
    return advance(state, check_quality(quality))


def advance(state: CardState, quality: int) -> CardState:
    """`next_state` for a grade its caller has already checked (`transition.apply`)."""
    return CardState(*advance_numbers(state.ef_hundredths, state.repetitions, state.interval,
                                      quality))


def advance_numbers(ef_hundredths: int, repetitions: int, interval: int,
                    quality: int) -> tuple[int, int, int]:
    """`advance` on a state's plain numbers (EF in hundredths, repetitions, interval), for a
    checked grade: the plan's simulation steps thousands of cards without building states."""
    if quality < PASS_QUALITY:
        return ef_hundredths, 0, 1
    reps = repetitions + 1
    if reps == 1:
        interval = 1
    elif reps == 2:
        interval = 6
    else:
        interval = -(-interval * ef_hundredths // 100)  # ceil, in integers
    return max(MIN_EF, ef_hundredths + _ef_delta(quality)), reps, interval
