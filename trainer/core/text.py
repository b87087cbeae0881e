"""One line of plain text from a question's Markdown, for lists (palette, related questions):
a draw's text with the emphasis, code and link markup taken out, so a list never shows a raw
template (`{layers}`) or `**bold**` asterisks."""

from __future__ import annotations

import re

_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"\*\*|__|`|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)|^#+\s*", re.MULTILINE)


def plain_line(markdown: str, width: int = 70) -> str:
    """`markdown` as one plain line of at most `width` characters (… marks a cut)."""
    text = _MARKS.sub("", _LINK.sub(r"\1", markdown))
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
