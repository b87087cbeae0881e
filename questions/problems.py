"""A problem found in a question file, located as file:line:field so an author can jump to it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Problem:
    file: Path
    line: int
    field: str  # e.g. "kv-cache-001.tolerance.rel", "topic.note", "toml"
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.field}: {self.message}"
