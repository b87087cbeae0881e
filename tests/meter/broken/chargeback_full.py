"""Broken meter: charges the reader the whole saving on a shared prefix (level 3)."""

from _meterbase import make

bill_request, ledger = make(chargeback_full=True)
