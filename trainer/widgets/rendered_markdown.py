"""Markdown parsed once and rendered once per width, so a card's text can be made ready before
it is shown.

Textual renders a Static's rich renderable twice a paint (once to count its height, once for
its lines); a card's prompt parsed and rendered inside answer -> next card cost ~1 ms of CPU
each on a quiet machine. The review screen makes the next card's prompt while the learner reads
the current one (`render_lines` at the prompt's width), and the paint reuses the lines.
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console, ConsoleOptions
from rich.markdown import Markdown
from rich.segment import Segment


class RenderedMarkdown:
    """A rich renderable: `markdown` as rich renders it, each width rendered once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.markdown = Markdown(text, code_theme="ansi_dark", hyperlinks=False)
        self._lines: dict[tuple[object, ...], list[list[Segment]]] = {}

    def render_lines(self, console: Console, options: ConsoleOptions) -> list[list[Segment]]:
        """The lines at `options`' width, each ending in a new line (rendered on first use)."""
        key = (id(console), options.max_width, options.min_width, options.justify,
               options.overflow, options.no_wrap, options.encoding, options.markup,
               options.highlight)
        lines = self._lines.get(key)
        if lines is None:
            lines = console.render_lines(self.markdown, options.update(height=None),
                                         pad=False, new_lines=True)
            self._lines[key] = lines
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for line in self.render_lines(console, options):
            yield from line
