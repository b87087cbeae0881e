"""Broken meter: forgets a delivery 9,999 events after it, so the latest redelivery the window
allows is billed twice (level 4)."""

from _meterbase import make

bill_request, ledger = make(window_short=True)
