"""The meter base solution with no mistake switched on (must pass every level)."""

from _meterbase import make

bill_request, ledger = make()
