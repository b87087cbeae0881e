"""Broken meter: the untagged check compares the 4-place share with 10%, not the exact dollars
(level 3)."""

from _meterbase import make

bill_request, ledger = make(untagged_rounded_share=True)
