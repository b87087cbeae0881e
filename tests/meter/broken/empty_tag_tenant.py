"""Broken meter: treats the tag '' as a tenant (level 3)."""

from _meterbase import make

bill_request, ledger = make(empty_tag_tenant=True)
