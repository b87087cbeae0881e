"""Write-behind: answers are written on one background thread, in order, so the next card paints
without waiting for SQLite's fsync; a read first waits for every queued write."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler.store import Store


class WriteBehind:
    """One writer thread in front of a Store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dojo-store")
        self._last: Future[Any] | None = None

    def submit(self, fn: Callable[[Store], Any]) -> Future[Any]:
        """Queue a write; writes run one at a time in submission order."""
        future = self._pool.submit(fn, self._store)
        self._last = future
        return future

    def flush(self) -> None:
        """Wait for queued writes. A failed write is reported by whoever queued it (the review
        screen shows it); it must not break every later read."""
        last = self._last
        if last is not None:
            wait([last])

    def close(self) -> None:
        """Finish queued writes and stop the thread."""
        self._pool.shutdown(wait=True)
