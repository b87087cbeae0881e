"""Broken meter: fails the untagged check at exactly 10% (level 3)."""

from _meterbase import make

bill_request, ledger = make(untagged_ge=True)
