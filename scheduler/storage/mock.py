"""The store's part for mock rounds: one row per round, its whole state saved after every step."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from sqlalchemy import select

from scheduler.days import from_ms, to_ms
from scheduler.models import MockRoundRow
from scheduler.storage.base import StoreBase, json_object


class MockPart(StoreBase):
    """Mock rounds (trainer.core.mock): saved, resumed, charted."""

    def save_mock_round(self, state: dict[str, Any], *, round_id: int | None = None,
                        started: dt.datetime, minutes: int, finished: dt.datetime | None = None,
                        score: float | None = None) -> int:
        """Insert (round_id None) or update one mock round with its whole state; returns its
        id. Saved after every answer, so closing the app loses nothing."""
        state_json = json_object(state, "state") or "{}"
        with self._write() as s:
            row = s.get(MockRoundRow, round_id) if round_id is not None else None
            if row is None:
                row = MockRoundRow(started_ms=to_ms(started), minutes=int(minutes),
                                   state=state_json)
                s.add(row)
            row.state = state_json
            row.finished_ms = to_ms(finished) if finished is not None else None
            row.score = None if score is None else float(score)
            s.flush()
            return row.id

    def open_mock_round(self) -> tuple[int, dict[str, Any]] | None:
        """The latest round not finished yet (id, state), to resume."""
        with self._read() as s:
            row = s.execute(select(MockRoundRow).where(MockRoundRow.finished_ms.is_(None))
                            .order_by(MockRoundRow.id.desc()).limit(1)).scalar_one_or_none()
            return None if row is None else (row.id, json.loads(row.state))

    def mock_rounds(self) -> list[tuple[int, dt.datetime, float, dict[str, Any]]]:
        """Finished rounds, oldest first: (id, finished at, score 0..1, state)."""
        with self._read() as s:
            rows = s.execute(select(MockRoundRow).where(MockRoundRow.finished_ms.is_not(None))
                             .order_by(MockRoundRow.id)).scalars().all()
            return [(r.id, from_ms(r.finished_ms or 0), float(r.score or 0.0),
                     json.loads(r.state)) for r in rows]
