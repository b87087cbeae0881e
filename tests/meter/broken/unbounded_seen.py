"""Broken meter: remembers every request id forever (level 4)."""

from _meterbase import make

bill_request, ledger = make(unbounded_seen=True)
