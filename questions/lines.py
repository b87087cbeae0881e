"""Find the line of a field in a question file (tomllib gives values, never line numbers).

The file is scanned once for table headers and `key =` lines, skipping the inside of multi-line
strings; a field is then looked up within its question's `[[question]]` block. When a field is
missing, the line of the table it should be in is the best place to point at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEYPART = r"(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)"
_KEY = re.compile(rf"^\s*({_KEYPART}(?:\s*\.\s*{_KEYPART})*)\s*=")
_SPLIT = re.compile(rf"{_KEYPART}")


@dataclass
class Section:
    name: str  # "question", "question.params", "topic", ...
    line: int
    keys: dict[tuple[str, ...], int] = field(default_factory=dict)


@dataclass
class Block:
    """One `[[question]]` (or the `[topic]` table) with the sub-tables that follow it."""

    main: Section
    subs: list[Section] = field(default_factory=list)

    def sub(self, name: str, index: int = 0) -> Section | None:
        matches = [s for s in self.subs if s.name == name]
        return matches[index] if index < len(matches) else None


class LineIndex:
    def __init__(self, text: str) -> None:
        self.questions: list[Block] = []
        self.topic: Block | None = None
        current: Block | None = None
        section: Section | None = None
        delimiter: str | None = None  # inside a multi-line string opened with this
        for lineno, line in enumerate(text.splitlines(), start=1):
            if delimiter is not None:
                if line.count(delimiter) % 2 == 1:
                    delimiter = None
                continue
            header = _HEADER.match(line)
            if header:
                name = header.group(2).replace(" ", "")
                section = Section(name, lineno)
                if name == "question" and header.group(1) == "[[":
                    current = Block(section)
                    self.questions.append(current)
                elif name == "topic":
                    current = Block(section)
                    self.topic = current
                elif current is not None and name.startswith(current.main.name + "."):
                    current.subs.append(section)
                else:
                    current, section = None, None
                continue
            key = _KEY.match(line)
            if key and section is not None:
                parts = tuple(p.strip("\"'") for p in _SPLIT.findall(key.group(1)))
                section.keys.setdefault(parts, lineno)
            starts = [(line.find(q), q) for q in ('"""', "'''") if q in line]
            if starts:
                quote = min(starts)[1]  # the first delimiter on the line opens the string
                if line.count(quote) % 2 == 1:
                    delimiter = quote

    def question_line(self, index: int) -> int:
        return self.questions[index].main.line if index < len(self.questions) else 1

    def locate(self, block: Block | None, path: str) -> int:
        """Line of `path` ("answer", "params.layers", "cases[1].n", "tolerance.rel") in block."""
        if block is None:
            return 1
        parts = [p for p in re.split(r"\.", path) if p]
        if not parts:
            return block.main.line
        head, index = parts[0], 0
        indexed = re.fullmatch(r"(.+)\[(\d+)\]", head)
        if indexed:
            head, index = indexed.group(1), int(indexed.group(2))
        rest = tuple(parts[1:])
        sub = block.sub(f"{block.main.name}.{head}", index)
        nested = re.fullmatch(r"(.+)\[(\d+)\]", rest[0]) if sub is not None and rest else None
        if sub is not None and nested:  # "step[1].mistake[0].formula": a table inside a table
            inner = self._nested(block, sub, nested.group(1), int(nested.group(2)))
            if inner is not None:
                sub, rest = inner, rest[1:]
        if sub is not None:
            for n in range(len(rest), 0, -1):
                if rest[:n] in sub.keys:
                    return sub.keys[rest[:n]]
            return sub.line
        keys = block.main.keys
        for n in range(len(parts), 0, -1):
            candidate = (head, *rest)[:n]
            if candidate in keys:
                return keys[candidate]
        return block.main.line

    @staticmethod
    def _nested(block: Block, outer: Section, name: str, index: int) -> Section | None:
        """The `index`-th `[[outer.name]]` table after `outer` and before the next table like
        `outer` (TOML appends it to the latest `outer`)."""
        later = [s.line for s in block.subs if s.name == outer.name and s.line > outer.line]
        end = min(later, default=10**12)
        inside = [s for s in block.subs if s.name == f"{outer.name}.{name}"
                  and outer.line < s.line < end]
        return inside[index] if index < len(inside) else None
