"""Broken meter: the blended rate divides the rounded month total, not the exact one (level 1)."""

from _meterbase import make

bill_request, ledger = make(blended_rounded_total=True)
