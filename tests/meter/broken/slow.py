"""Broken meter: deep-copies every event three times (level 4: too slow)."""

from _meterbase import make

bill_request, ledger = make(slow=True)
