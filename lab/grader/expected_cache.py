"""Reference answers of fixed cases, kept between gradings (and the inputs the grader builds for
the child: `RunContext.given`).

A level's fixed cases (the same id and params whatever the run's seed) ask the same question in
every grading, and some answers cost seconds: spec-verify's and tensor-parallel's real-model
cases load the shipped pair through transformers (~3 s of CPU for its imports alone) in the
grader, and batch-engine's decode the shipped target's ground truth. Their answers are kept in
one file per exercise and run key, the digest of everything an answer depends on besides the
case itself: the app's version, the source of the exercise, the reference and the model code,
torch's and transformers' versions, the device and dtype, and the content of the model files.
A changed input is a new key (a new file; the old one is left for `dojo` versions that still
use it); a file that fails its checksum or does not decode is rebuilt.

Only untimed cases are kept: a timed call's inputs come from its own `ctx.seed`. The folder is
the app's (`GradeOptions.expected_cache`), never one the learner's sandbox can write: a folder
inside the graded file's folder (the sandbox's writable workspace), or holding it, is not used,
and neither is any folder for an unconfined grading. Values pass through `lab.grader.codec`
(plain data, no pickle) exactly as a freshly computed answer does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from lab.exercises import Exercise
from lab.grader import codec
from lab.grader.api import Case, RunContext

FORMAT = 1
LAB_ROOT = Path(__file__).resolve().parents[1]
CODE = ("grader/codec.py", "grader/api.py", "grader/expected_cache.py", "exercises/untouched.py",
        "reference", "models/*.py", "models/pairs.json")
MAX_ANSWER_BYTES = 16 << 20  # a larger answer is recomputed each time rather than kept
_DIGESTS: dict[tuple[str, int, int], str] = {}  # a file's content digest by (path, size, mtime)


def case_key(case: Case) -> str:
    """A case as the cache tells it: its id, level and params (JSON: the contract's form)."""
    doc = json.dumps([case.id, case.level, case.params], sort_keys=True, default=repr)
    return hashlib.sha256(doc.encode()).hexdigest()


def fixed_cases(cases: list[Case], other: list[Case]) -> set[str]:
    """`case_key`s of the untimed `cases` that `other` (the level's cases for another seed)
    holds too: the level's fixed cases."""
    again = {case_key(c) for c in other}
    return {key for c in cases if not c.timed and (key := case_key(c)) in again}


def _file_digest(path: Path) -> str:
    st = path.stat()
    memo = (str(path), st.st_size, st.st_mtime_ns)
    if memo not in _DIGESTS:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[memo] = h.hexdigest()
    return _DIGESTS[memo]


def _tree_digest(roots: list[Path]) -> list[tuple[str, str]]:
    """(path, content digest) of every file under `roots` (files or folders), caches of
    compiled Python left out."""
    out: list[tuple[str, str]] = []
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        out += [(str(p), _file_digest(p)) for p in files
                if "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return out


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def run_key(exercise: Exercise, ctx: RunContext) -> str:
    """The digest of everything an untimed answer depends on besides its case."""
    code = [exercise.path] + [p for pattern in CODE for p in sorted(LAB_ROOT.glob(pattern))]
    models: list[Path] = []
    if exercise.needs_torch:  # the shipped checkpoints, and the learner's own
        models = sorted(p for p in (LAB_ROOT / "models").iterdir()
                        if (p / "config.json").is_file())
        models += [Path(p) for _, p in sorted((ctx.model_paths or {}).items())]
    doc = json.dumps({
        "format": FORMAT, "app": _version("serving-dojo"), "exercise": exercise.id,
        "torch": _version("torch") if exercise.needs_torch else "",
        "transformers": _version("transformers") if exercise.needs_torch else "",
        "device": ctx.device, "dtype": ctx.dtype,
        "code": _tree_digest(code), "models": _tree_digest(models),
    }, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()


def usable_folder(folder: Path | None, solution: Path, confine: bool) -> Path | None:
    """`folder`, unless the learner's code could write it during this grading: an unconfined
    grading, or a folder inside the graded file's folder (the sandbox's writable workspace) or
    holding it."""
    if folder is None or not confine:
        return None
    cache, workspace = folder.resolve(), solution.resolve().parent
    if cache.is_relative_to(workspace) or workspace.is_relative_to(cache):
        return None
    return folder


@dataclass
class ExpectedCache:
    """The kept answers of one exercise for one run key, read once and written back when a
    grading added some (`save`)."""

    path: Path
    answers: dict[str, Any] = field(default_factory=dict)
    added: bool = False
    rebuilt: str = ""  # why an existing file was not read ("" when it was, or none existed)

    @classmethod
    def open(cls, folder: Path, exercise: Exercise, ctx: RunContext) -> ExpectedCache:
        cache = cls(folder / exercise.id / f"{run_key(exercise, ctx)}.answers")
        cache.answers, cache.rebuilt = _read(cache.path)
        return cache

    def get(self, case: Case, part: str = "expected") -> tuple[bool, Any]:
        """(True, the kept value) or (False, None); `part`: the reference's answer
        ("expected") or the inputs the grader hands the child ("inputs": RunContext.given)."""
        key = f"{part}/{case_key(case)}"
        return (True, self.answers[key]) if key in self.answers else (False, None)

    def put(self, case: Case, value: Any, part: str = "expected") -> None:
        self.answers[f"{part}/{case_key(case)}"] = value
        self.added = True

    def save(self) -> None:
        """Write the answers (atomically: a grading beside this one reads the old file or the
        new, never half of one); a folder that cannot be written keeps nothing."""
        if not self.added:
            return
        kept = {}
        for key, value in sorted(self.answers.items()):
            with contextlib.suppress(Exception):
                if len(codec.encode(value)) <= MAX_ANSWER_BYTES:
                    kept[key] = value
        body = codec.encode({"format": FORMAT, "answers": kept})
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
                os.replace(tmp, self.path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        self.added = False


def _read(path: Path) -> tuple[dict[str, Any], str]:
    """The answers in `path` and "", or none and why the file is not used ("" when absent)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        return {}, f"unreadable ({exc.strerror})"
    digest, _, body = raw.partition(b"\n")
    if digest != hashlib.sha256(body).hexdigest().encode():
        return {}, "its checksum does not match its content"
    try:
        doc = codec.decode(body)
    except Exception as exc:  # a file of a checksum-valid but foreign shape
        return {}, f"it does not decode ({type(exc).__name__})"
    if not (isinstance(doc, dict) and doc.get("format") == FORMAT
            and isinstance(doc.get("answers"), dict)):
        return {}, "it is not an answers file of this format"
    return doc["answers"], ""
