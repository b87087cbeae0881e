"""Broken meter: dedups on (request_id, attempt, tenant), so a redelivery whose tenant tag
changed on the way is billed twice (level 2)."""

from _meterbase import make

bill_request, ledger = make(dup_key_tenant=True)
