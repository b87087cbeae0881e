"""Broken meter: a prefix_owner of '' is treated as a tenant that owns the prefix (level 3)."""

from _meterbase import make

bill_request, ledger = make(empty_owner=True)
