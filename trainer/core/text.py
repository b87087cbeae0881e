"""Text the screens share. One line of plain text from a question's Markdown, for lists (palette,
related questions): a draw's text with the emphasis, code and link markup taken out, so a list
never shows a raw template (`{layers}`) or `**bold**` asterisks; how a numeric answer is asked."""

from __future__ import annotations

import re

_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MARKS = re.compile(r"\*\*|__|`|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)|^#+\s*", re.MULTILINE)


def plain_line(markdown: str, width: int = 70) -> str:
    """`markdown` as one plain line of at most `width` characters (… marks a cut)."""
    text = _MARKS.sub("", _LINK.sub(r"\1", markdown))
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


_KEEP = re.compile(r"^\s*([-*+] |\d+[.)] |```|    |\t|#|\|)")


def reflow(text: str) -> list[str]:
    """Hard-wrapped prose (hints are written wrapped at ~100 columns) as one line per
    paragraph, so a narrower log or terminal wraps it at its own width instead of breaking
    each source line mid-sentence. List items, code and table lines keep their own lines."""
    out: list[str] = []
    paragraph: list[str] = []
    fenced = False

    def flush() -> None:
        if paragraph:
            out.append(" ".join(part.strip() for part in paragraph))
            paragraph.clear()

    for line in text.splitlines():
        if line.strip().startswith("```"):
            flush()
            fenced = not fenced
            out.append(line)
        elif fenced or not line.strip():
            flush()
            out.append(line)
        elif _KEEP.match(line):
            flush()
            paragraph.append(line.rstrip())  # an item starts; its wrapped lines join it
        else:
            paragraph.append(line)
    flush()
    return out


def answer_wanted(unit: str) -> str:
    """What a numeric answer is asked as: "a number in KiB"; a ratio unit (x, ×) is not a word
    to answer "in", so "a ratio, e.g. 2.5". Review's input and the mock round's say the same."""
    if not unit:
        return "a number"
    if unit.strip().lower() in ("x", "×"):
        return "a ratio, e.g. 2.5"
    return f"a number in {unit}"
