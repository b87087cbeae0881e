"""Broken meter: remembers a delivery for 1,000 events instead of 10,000, so a redelivery 9,999
events later is billed twice (caught at level 2, not only by the level 4 stream)."""

from _meterbase import make

bill_request, ledger = make(window_1000=True)
