"""Broken meter: copies each event through JSON (level 4: too slow)."""

from _meterbase import make

bill_request, ledger = make(slow=True)
