"""Broken meter: bills a redelivered event twice (level 2)."""

from _meterbase import make

bill_request, ledger = make(dup_twice=True)
