"""Broken meter: remembers the last 10,000 first deliveries in a deque and searches it with
`in` on every event (level 4: 10^4 comparisons per event, far over the time gate)."""

from _meterbase import make

bill_request, ledger = make(window_scan=True)
