"""Broken meter: cached prompt tokens billed at $0 (level 1)."""

from _meterbase import make

bill_request, ledger = make(cached_free=True)
