"""Keys applied one at a time, in the order they were typed, each to what the key before left.

Textual hands a key to the widget focused when the app reads it from the terminal, and each
widget works through its own queue. An `Input` types a printable key itself, but its other keys
(backspace, arrows, Enter) are bindings that run only once the key has bubbled back up to the
app. In a burst (tmux `send-keys`, a paste without bracketed paste, a key-repeat, a fast typist)
later characters overtake a backspace: "5", backspace, "64", Enter was graded as "56"
(Textualize/textual#6605, open; the Input-only fix proposed upstream is PR #6631). Keys after
Enter or a grade still went to the old focus, because the focus moves later too.

`KeyOrder` lets the app route a key or a paste only when everything the one before started has
finished: while a key is in flight the next ones wait in order. The screen on top may refuse a
key (`DojoScreen.refuses_key`), for instance one typed before the card it would answer had
appeared; the refused keys are counted and reported once a burst is through.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from typing import TYPE_CHECKING, Any

from textual import events

if TYPE_CHECKING:
    from textual.app import App
    from textual.message_pump import MessagePump

# A key's journey: the focused widget, each container above it, the screen, the app (its
# bindings), then what its action posted (a Submitted, a focus change): a few turns of the
# event loop. After BUSY_TURNS the poll sleeps 5 ms a turn; after MAX_TURNS (~1 s: an app that
# is never quiet, a log streaming lab output) the next key goes on anyway.
BUSY_TURNS = 200
MAX_TURNS = BUSY_TURNS + 200

TypedEvent = events.Key | events.Paste


class KeyOrder:
    """The app's keys and pastes from the terminal, routed one at a time (see the module)."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._waiting: deque[TypedEvent] = deque()
        self._released: TypedEvent | None = None
        self._task: asyncio.Task[None] | None = None
        self._refused: Counter[str] = Counter()

    @property
    def idle(self) -> bool:
        """No key waiting or being let through."""
        return self._task is None and not self._waiting

    def take(self, event: TypedEvent) -> bool:
        """Whether the app routes `event` (read from the terminal) now; False: it waits its
        turn, or the screen refused it."""
        if event is self._released:  # its turn came: `_drain` posted it again
            self._released = None
            return True
        if self.idle and self._quiet():
            return self._admit(event, report=True)
        self._waiting.append(event)
        if self._task is None:
            self._task = asyncio.create_task(self._drain())
        return False

    def _admit(self, event: TypedEvent, *, report: bool) -> bool:
        from trainer.screens.base import DojoScreen

        screen = self._app.screen
        reason = screen.refuses_key(event) if isinstance(screen, DojoScreen) else None
        if reason is None:
            return True
        self._refused[reason] += 1
        if report:
            self._report()
        return False

    def _report(self) -> None:
        from questions.wording import plural

        for reason, count in self._refused.items():
            self._app.notify(f"Ignored {plural(count, 'key')} {reason}.", timeout=6)
        self._refused.clear()

    async def _drain(self) -> None:
        try:
            while self._waiting:
                await self._settle()
                event = self._waiting.popleft()
                if self._admit(event, report=False):
                    self._released = event
                    self._app.post_message(event)
            await self._settle()  # the last one through, before a new key may skip the queue
        finally:
            self._task = None
            if self._app.is_running:  # not while the app closes
                self._report()

    def _pumps(self) -> list[MessagePump]:
        try:
            nodes: list[MessagePump] = [self._app, *self._app.screen.walk_children(with_self=True)]
        except Exception:  # no screen yet, or the app is closing
            nodes = [self._app]
        return [pump for pump in nodes if pump.is_running]

    def _quiet(self) -> bool:
        """Nothing queued anywhere: the key before has finished."""
        return all(pump.message_queue_size == 0 for pump in self._pumps())

    async def _settle(self) -> None:
        """Wait until the app and the screen's widgets have nothing queued. A queued message
        stays counted until its widget takes it, and a key's handlers run without yielding
        to other tasks, so once every queue is empty the key before has finished: a cheap
        poll per turn of the event loop (~20 µs), no round trip through every widget."""
        for turn in range(MAX_TURNS):
            await asyncio.sleep(0 if turn < BUSY_TURNS else 0.005)
            if self._quiet():
                return
