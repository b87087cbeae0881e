"""meter's judge for every level: the reference's answer, and the exact comparison with it.

Every amount is compared exactly with the reference's (Decimal, rounded once to the cent, half
up); a wrong figure is reported with its path in the ledger and, where a known mistake reproduces
it (see `diagnose.py`), the rule that was missed. The reference is imported only when an answer
is wanted.
"""

from __future__ import annotations

import functools
import json
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from lab.exercises import untouched
from lab.exercises.meter.grading.common import DIAGNOSE_MAX_EVENTS, LEVEL_BUGS, fields
from lab.grader.api import Case, RunContext, Verdict


@functools.lru_cache(maxsize=4)
def _stream_expected(params: str) -> Any:
    from lab.exercises.meter import drive
    from lab.reference import meter as reference

    case = Case(id="", level=4, params=json.loads(params))
    return drive.run(reference, case, RunContext())


def expected(case: Case, ctx: RunContext) -> Any:
    """The reference's answer (the judge runner prefers this hook): a 10^6-event stream is
    priced once per process however many times it is graded (watch mode, tests)."""
    from lab.exercises.meter import drive
    from lab.reference import meter as reference

    if "stream" in case.params:
        return _stream_expected(json.dumps(drive.call_params(case, ctx), sort_keys=True))
    return drive.run(reference, case, ctx)


class Mismatch(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def _show(x: Any) -> str:
    return "missing" if x is _MISSING else repr(x) if not isinstance(x, str) else x


_MISSING = object()


def _same(path: str, want: Any, got: Any) -> None:
    """Raise Mismatch at the first difference (want is the reference's plain output)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            raise Mismatch(path, f"{path}: expected a dict, got {_show(got)}")
        for key in want:
            if key not in got:
                shown = (f"a dict with keys {list(want[key])[:6]}" if isinstance(want[key], dict)
                         else _show(want[key]))
                raise Mismatch(path, f"{path}.{key} is missing (expected {shown}; you have "
                                     f"{list(got)[:6]})")
        extra = [k for k in got if k not in want]
        if extra:
            raise Mismatch(path, f"{path} has unexpected entries {extra[:3]} "
                                 f"(expected keys {list(want)[:6]})")
        for key in want:
            _same(f"{path}.{key}", want[key], got[key])
        return
    if isinstance(want, bool) or want is None:
        if got is not want:
            raise Mismatch(path, f"{path}: expected {want!r}, got {_show(got)}")
        return
    if isinstance(want, int):
        if isinstance(got, bool) or not isinstance(got, int) or got != want:
            raise Mismatch(path, f"{path}: expected {want:,} tokens, got {_show(got)}")
        return
    if isinstance(got, float):
        raise Mismatch(path, f"{path}: got the float {got!r} (expected Decimal('{want}')) — "
                             "money is exact: use decimal.Decimal, never float")
    if not isinstance(got, str):
        raise Mismatch(path, f"{path}: expected Decimal('{want}'), got {_show(got)}")
    try:
        same = Decimal(got) == Decimal(want)
    except InvalidOperation:
        same = False
    if not same:
        raise Mismatch(path, f"{path}: expected {want}, got {got}")


def _pick(value: Any, path: str) -> Any:
    for part in path.split(".")[1:]:
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _diagnose(case: Case, path: str, got_value: Any, want_value: Any) -> str:
    events = case.params.get("events")
    if events is None or len(events) > DIAGNOSE_MAX_EVENTS:
        return ""
    from lab.exercises.meter import diagnose
    from lab.exercises.meter.drive import plain

    level = min(case.level, 3)
    bugs = [b for lvl in range(1, level + 1) for b in LEVEL_BUGS[lvl]]
    got_here, want_here = _pick(got_value, path), _pick(want_value, path)
    for bug in reversed(bugs):  # this level's own mistakes first
        try:
            variant = plain(diagnose.variant(events, case.params["prices"], bug))
        except (ValueError, KeyError, TypeError, ArithmeticError):
            continue
        here = _pick(_graded(variant, case.level, "ledger"), path)
        if here is _MISSING or _equal(here, want_here):
            continue
        if not _equal(here, got_here):
            continue
        if isinstance(want_here, bool) and not _month_agrees(variant, got_value, path, case):
            continue  # a yes/no figure agrees by chance: the variant must explain its month
        return diagnose.BUGS[bug]
    return ""


def _month_agrees(variant: Any, got: Any, path: str, case: Case) -> bool:
    """Whether the variant's month (the one `path` is in) equals the learner's, figure by figure
    on what this level grades."""
    month = ".".join(path.split(".")[:3])
    return _equal(_pick(_graded(variant, case.level, "ledger"), month), _pick(got, month))


def _equal(a: Any, b: Any) -> bool:
    """Plain ledgers equal figure by figure (Decimal strings compared as numbers)."""
    try:
        _same("", a, b)
    except Mismatch:
        return False
    return True


def _request_diagnosis(case: Case, path: str, got: Any) -> str:
    """bill_request: rounding, or cached tokens priced free or at the full rate."""
    from lab.exercises.meter import diagnose

    event, prices = case.params["event"], case.params["prices"]
    key = path.rsplit(".", 1)[-1]
    try:
        value = Decimal(got)
        rate_in = Decimal(prices["tiers"][event["tier"]]["in"])
    except (InvalidOperation, KeyError, TypeError):
        return ""
    cached = Decimal(event["cached_tokens"])
    exact = {"cached_input": cached * rate_in * Decimal(prices["cached_fraction"]) / 1_000_000}
    if key == "cached_input" and cached and value in (0, cached * rate_in / 1_000_000):
        return diagnose.BUGS["cached_free" if value == 0 else "cached_full"]
    if value == value.quantize(Decimal("0.01")) and key in ("fresh_input", "output", "total",
                                                              "cached_input") and (
            key != "cached_input" or exact["cached_input"] != value):
        return "bill_request returns the exact amount: do not round a single request"
    return ""


def _graded(value: Any, level: int, function: str) -> Any:
    """Only the figures this level grades (a later level's keys may be absent or anything)."""
    if function == "bill_request" or not isinstance(value, dict):
        return value
    months = value.get("months", _MISSING)
    if not isinstance(months, dict):
        return value
    keep = fields(level)
    return {"months": {m: ({k: v for k, v in fig.items() if k in keep}
                           if isinstance(fig, dict) else fig) for m, fig in months.items()}}


def _figure_hint(path: str, got: Any, want: Any) -> str:
    """A figure computed from another rounded figure instead of its own exact value."""
    month = _pick(want, path.rsplit(".", 1)[0])
    here = _pick(got, path)
    if not isinstance(month, dict):
        return ""
    try:
        if path.endswith(".blended_per_m") and month.get("tokens") and here is not None:
            from_rounded = (Decimal(month["total"]) / month["tokens"] * 1_000_000).quantize(
                Decimal("0.0001"), rounding=ROUND_HALF_UP)
            if Decimal(here) == from_rounded:
                return ("blended_per_m is rounded from the exact total ÷ tokens, not computed "
                        "from the rounded total")
        if (path.endswith(".untagged_ok") and month.get("untagged_share") is not None
                and here is (Decimal(month["untagged_share"]) <= Decimal("0.10"))):
            return ("the check compares the exact dollars (untagged ≤ 10% × total), not the "
                    "share rounded to 4 places")
        if (path.endswith(".untagged_ok") and month.get("untagged") is not None
                and here is (Decimal(month["untagged"]) <= Decimal("0.10")
                             * Decimal(month["total"]))):
            return ("the check compares the exact dollars (untagged ≤ 10% × total), not "
                    "amounts rounded to the cent")
    except (InvalidOperation, TypeError, ValueError):
        return ""
    return ""


def check(case: Case, got: Any, expected: Any) -> Verdict:
    fn = case.params["function"]
    if not isinstance(got, dict) or not isinstance(expected, dict):
        return Verdict(False, f"internal: unexpected observation {got!r}")
    if got.get("touched"):
        return Verdict(False, untouched.message(fn, list(got["touched"])))
    if "raised" in expected:
        if "raised" in got:
            return Verdict(True)
        return Verdict(False, f"{fn} should raise ValueError here ({expected['message']}), but "
                              f"returned a result")
    if "raised" in got:
        return Verdict(False, f"{fn} raised ValueError({got['message']!r}) but the input is "
                              "valid")
    want = _graded(expected["value"], case.level, fn)
    value = _graded(got["value"], case.level, fn)
    try:
        _same(fn, want, value)
    except Mismatch as miss:
        if fn == "bill_request":
            why = _request_diagnosis(case, miss.path, _pick(value, miss.path))
        else:
            why = _diagnose(case, miss.path, value, want)
            why = why or _figure_hint(miss.path, value, want) or case.params.get("hint", "")
        return Verdict(False, str(miss) + (f" — {why}" if why else ""))
    return Verdict(True)
