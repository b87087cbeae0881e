"""Broken meter: a tier's total is the sum of its rounded lines, the month's the sum of rounded
tier totals (level 1)."""

from _meterbase import make

bill_request, ledger = make(sum_rounded_lines=True)
