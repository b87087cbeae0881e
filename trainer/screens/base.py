"""The base class of the app's screens: typed access to the app, a `reload` hook, and which
keys the screen takes (`refuses_key`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from textual._time import get_time  # the clock Textual stamps each key with when it is read
from textual.binding import Binding
from textual.screen import Screen

if TYPE_CHECKING:
    from textual import events

    from trainer.app import DojoApp


class DojoScreen(Screen[None]):
    """A screen of the Dojo app. `reload()` is called when the store and bank finish opening
    and when the learner comes back home; a screen that shows data overrides it."""

    # What the keys act on (`view_changed`): its name, and since when it has shown.
    _view_name = ""
    _view_since = -math.inf

    @property
    def dojo(self) -> DojoApp:
        from trainer.app import DojoApp

        assert isinstance(self.app, DojoApp)
        return self.app

    def reload(self) -> None:
        """Fetch and repaint this screen's data (nothing by default)."""

    def view_changed(self, name: str) -> None:
        """What the keys act on has just changed (a new card, its verdict): keys typed before
        now were aimed at what the learner saw then, and are refused. A burst or a repeated
        key must not answer a card nobody has read."""
        self._view_name = name
        self._view_since = get_time()

    def refuses_key(self, event: events.Key | events.Paste) -> str | None:
        """Why this screen ignores a key or paste typed at it, said to the learner, or None
        to take it (`trainer.key_order`: keys reach a screen in order, each once the one
        before has finished). The app's own keys (help, quit) are always taken."""
        if event.time >= self._view_since:  # stamped when the terminal was read
            return None
        if getattr(event, "key", None) in _app_keys(self.app):
            return None
        return f"typed before {self._view_name} appeared"


def _app_keys(app: object) -> set[str]:
    return {key.strip() for binding in getattr(type(app), "BINDINGS", [])
            if isinstance(binding, Binding) for key in binding.key.split(",")}
