"""Broken meter: a retry lands in the month of its first attempt, not the month it ran (level 2)."""

from _meterbase import make

bill_request, ledger = make(retry_first_month=True)
