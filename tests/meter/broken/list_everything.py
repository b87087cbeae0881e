"""Broken meter: lists every event before billing (level 4)."""

from _meterbase import make

bill_request, ledger = make(list_everything=True)
