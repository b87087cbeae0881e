"""Meter deep-copying every event three times: correct, 13-20x the reference at level 4, on the
12x gate (bench/gates.py measures it; no test asserts a verdict)."""

from _meterbase import make

bill_request, ledger = make(slow=True)
