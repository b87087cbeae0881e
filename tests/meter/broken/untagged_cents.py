"""Broken meter: the untagged check compares the dollars rounded to the cent (untagged $3.00 of
$30.00 passes when the exact amounts are $3.000003 of $30.000003) (level 3)."""

from _meterbase import make

bill_request, ledger = make(untagged_cents=True)
