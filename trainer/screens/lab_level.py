"""Open the Lab screen on one exercise's level (a question's lab link names both).

The Lab screen selects an exercise; this subclass then moves the highlight to the named level
once the list has loaded, so `l` on "lab batch-engine L2" lands on level 2, not level 1.
"""

from __future__ import annotations

from textual.widgets import OptionList

from trainer.core.lab import Catalogue
from trainer.screens.lab import LabScreen


class LabAtLevel(LabScreen):
    """The Lab screen, highlighting `level` of `exercise` on its first load."""

    def __init__(self, exercise: str, level: int) -> None:
        super().__init__(exercise)
        self.initial_level: int | None = level

    def _loaded(self, found: Catalogue, number: int | None = None) -> bool:
        wanted, exercise = self.initial_level, self.initial
        if not super()._loaded(found, number):
            return False
        self.initial_level = None
        if wanted is None:
            return True
        index = next((i for i, r in enumerate(found.rows)
                      if r.exercise == exercise and r.level == wanted), None)
        if index is not None:
            self.query_one("#lab-list", OptionList).highlighted = index
            self._describe()
        return True


def lab_screen(exercise: str | None, level: int | None) -> LabScreen:
    """The Lab screen for the app's `lab` action: on a level when both are named."""
    if exercise is not None and level is not None:
        return LabAtLevel(exercise, level)
    return LabScreen(exercise)
