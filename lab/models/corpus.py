"""The training corpus: the running interpreter's standard-library source, split by file.

Splitting by file (not by line) keeps held-out code genuinely unseen. The split is a pure function
of the sorted relative paths and a seed, so anyone with the same interpreter gets the same lists,
and the recorded hash tells them when they do not.
"""

from __future__ import annotations

import hashlib
import random
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# Folders that are tests, data tables or build-specific rather than representative source code.
EXCLUDED_PARTS = frozenset(
    {
        "test",
        "tests",
        "idle_test",
        "site-packages",
        "dist-packages",
        "pydoc_data",
        "encodings",
        "__pycache__",
        "turtledemo",
    }
)
EXCLUDED_PREFIXES = ("_sysconfigdata", "config-")
RULE = (
    "all *.py under sysconfig.get_paths()['stdlib'], skipping any path part in "
    f"{sorted(EXCLUDED_PARTS)} or starting with {list(EXCLUDED_PREFIXES)}; sorted by relative "
    "POSIX path, shuffled with random.Random(seed), the first held_out_fraction of files held out"
)


@dataclass(frozen=True)
class CorpusSplit:
    root: Path
    train: tuple[str, ...]
    held_out: tuple[str, ...]
    seed: int

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8", errors="replace")

    def texts(self, which: str) -> list[str]:
        files = self.train if which == "train" else self.held_out
        return [self.read(rel) for rel in files]

    def digest(self, which: str) -> str:
        """sha256 over the file names and contents, so a different interpreter shows up."""
        h = hashlib.sha256()
        files = self.train if which == "train" else self.held_out
        for rel in files:
            h.update(rel.encode() + b"\0")
            h.update((self.root / rel).read_bytes() + b"\0")
        return h.hexdigest()


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def list_sources(root: Path) -> list[str]:
    out: list[str] = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if any(part in EXCLUDED_PARTS for part in rel.parts[:-1]):
            continue
        if any(part.startswith(EXCLUDED_PREFIXES) for part in rel.parts):
            continue
        out.append(rel.as_posix())
    return sorted(out)


def split_corpus(
    root: Path | None = None, *, seed: int = 1234, held_out_fraction: float = 0.05
) -> CorpusSplit:
    root = root or stdlib_root()
    files = list_sources(root)
    if not files:
        raise FileNotFoundError(f"no Python sources found under {root}")
    shuffled = files[:]
    random.Random(seed).shuffle(shuffled)
    n_held = max(1, round(len(files) * held_out_fraction))
    return CorpusSplit(
        root=root,
        train=tuple(sorted(shuffled[n_held:])),
        held_out=tuple(sorted(shuffled[:n_held])),
        seed=seed,
    )
