"""Broken meter: the chargeback counts every delivery, so a redelivered shared-prefix event moves
money twice (level 3)."""

from _meterbase import make

bill_request, ledger = make(transfer_before_dedup=True)
