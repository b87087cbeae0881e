"""Broken meter: puts an event in the month it was received (level 2)."""

from _meterbase import make

bill_request, ledger = make(received_month=True)
