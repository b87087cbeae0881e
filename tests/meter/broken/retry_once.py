"""Broken meter: dedups on request_id alone, so a retry is billed once (level 2)."""

from _meterbase import make

bill_request, ledger = make(retry_once=True)
