"""Broken meter: the chargeback keys the reader by its raw tag, so a reader tagged '' is charged
under '' instead of the untagged line (level 3)."""

from _meterbase import make

bill_request, ledger = make(reader_raw_tag=True)
