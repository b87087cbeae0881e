"""Python's cyclic garbage collector held off while a card paints, run once it has painted.

The collector starts when an allocation count crosses a threshold, wherever that falls: over
200 answers on a 2,000-answer history, 1 card in 25-30 met a full collection inside answer ->
next card (30-45 ms of CPU each, on 26-47 thousand objects that `gc.freeze` at start cannot
cover: Textual's render caches, cyclic through each Strip's own crop cache), and most cards met
1-4 ms of young collections. Held, the same collections run as soon as the card is on screen,
while the learner reads it; nothing is skipped, only moved.
"""

from __future__ import annotations

import gc


class CollectorHold:
    """Holds the collector off between `hold()` and `release()`. Only a hold that turned the
    collector off turns it back on: one someone else disabled (a test, a caller's own hold)
    stays as they left it."""

    def __init__(self) -> None:
        self._holding = False

    @property
    def holding(self) -> bool:
        return self._holding

    def hold(self) -> None:
        if not self._holding and gc.isenabled():
            gc.disable()
            self._holding = True

    def release(self) -> None:
        """Turn the collector back on; the collections that came due meanwhile run at the
        next allocation, as they would have."""
        if self._holding:
            self._holding = False
            gc.enable()
