"""Broken meter: swaps the two retry-tax figures (level 2)."""

from _meterbase import make

bill_request, ledger = make(retry_share_swapped=True)
