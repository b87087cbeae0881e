"""The base class of the app's screens: typed access to the app and a `reload` hook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.screen import Screen

if TYPE_CHECKING:
    from trainer.app import DojoApp


class DojoScreen(Screen[None]):
    """A screen of the Dojo app. `reload()` is called when the store and bank finish opening
    and when the learner comes back home; a screen that shows data overrides it."""

    @property
    def dojo(self) -> DojoApp:
        from trainer.app import DojoApp

        assert isinstance(self.app, DojoApp)
        return self.app

    def reload(self) -> None:
        """Fetch and repaint this screen's data (nothing by default)."""
