"""Broken meter: rounds every event to the cent before summing (level 1)."""

from _meterbase import make

bill_request, ledger = make(round_each_event=True)
