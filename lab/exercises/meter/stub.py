"""meter: a token ledger (see `dojo lab show meter`).

Edit the bodies below, then run `dojo lab grade meter` (or `dojo lab watch meter`).
Money is exact: use decimal.Decimal built from the price sheet's strings, never float.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any


def bill_request(event: Mapping[str, Any], prices: Mapping[str, Any]) -> dict[str, Decimal]:
    """Exact (unrounded) dollars of one event (level 1).

    Returns {"fresh_input", "cached_input", "output", "cached_discount", "total"} as Decimals.
    Raise ValueError for a tier the price sheet lacks or cached_tokens > prompt_tokens.
    """
    raise NotImplementedError("bill_request")


def ledger(events: Iterable[Mapping[str, Any]], prices: Mapping[str, Any]) -> dict[str, Any]:
    """The month-by-month bill of a stream of usage events (every level).

    `events` is an iterator: walk it once. Returns {"months": {"YYYY-MM": {...}}} with the
    figures listed in the statement (levels 2 and 3 add keys to each month).
    """
    raise NotImplementedError("ledger")
