"""Broken meter: rounds half to even (level 1)."""

from _meterbase import make

bill_request, ledger = make(half_even=True)
