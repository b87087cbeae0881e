"""Broken meter: blended rate over fresh tokens only (level 1)."""

from _meterbase import make

bill_request, ledger = make(blended_fresh_only=True)
