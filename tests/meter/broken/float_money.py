"""Broken meter: float arithmetic for money (level 1)."""

from _meterbase import make

bill_request, ledger = make(float_money=True)
