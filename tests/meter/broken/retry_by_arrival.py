"""Broken meter: a request's first delivery counts as its first attempt, whatever its attempt
number, so an attempt 2 that arrives before its attempt 1 (or alone) is billed as a first
attempt (level 2)."""

from _meterbase import make

bill_request, ledger = make(retry_by_arrival=True)
