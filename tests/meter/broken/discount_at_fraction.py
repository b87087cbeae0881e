"""Broken meter: the cached discount is cached x in-rate x cached_fraction (the cached price), not
x (1 - cached_fraction) (level 1)."""

from _meterbase import make

bill_request, ledger = make(discount_at_fraction=True)
