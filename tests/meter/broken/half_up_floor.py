"""Broken meter: rounds half up as floor(x + 1/2), so a credit of -$0.135 becomes -$0.13, not
-$0.14 (level 3)."""

from _meterbase import make

bill_request, ledger = make(half_up_floor=True)
