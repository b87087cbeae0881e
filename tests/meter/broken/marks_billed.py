"""Broken meter: marks each event it bills with `event["billed"] = True`, in the caller's dict
(the caller's events are read-only: a stream hands the same dict again for a redelivery)."""

from _meterbase import make

bill_request, ledger = make(marks_billed=True)
