"""Store part: the history export and import (`dojo export`/`dojo import`)."""

from __future__ import annotations

from typing import Any

from scheduler.records import ImportSummary
from scheduler.storage.base import StoreBase


class ExchangePart(StoreBase):
    """Whole-history export and merge-import."""

    # ----------------------------------------------------------------------- export/import
    def export_history(self) -> dict[str, Any]:
        """The whole review history (cards, answer log, lab attempts) as a JSON-ready dict."""
        from scheduler.history import export_history

        with self._read() as s:
            return export_history(s)

    def import_history(self, data: dict[str, Any]) -> ImportSummary:
        """Merge an exported history; validated first, all-or-nothing, idempotent. Every
        card's FSRS memory is then recomputed from the merged log in time order."""
        from scheduler.history import import_history, validate
        from scheduler.storage.memory import recompute

        document = validate(data)
        with self._write() as s:
            summary = import_history(s, document)
            recompute(s)
            return summary
