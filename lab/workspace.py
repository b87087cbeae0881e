"""The learner's side of the lab on disk: workspace files and hint progress.

Per exercise, `data_dir()/lab/<id>/` holds the workspace file (unless `--workspace DIR` chose
another folder) and `backups/`. What the app trusts about it — which folder is the workspace,
how many hints were shown, the interview clock — is kept in the learner's database
(`Store.lab_state`), written only by the app, never in the workspace: the learner's code may
write its workspace folder during a grading. It is read and written through a `LabState` over
one open store (`trainer.core.lab.Lab` holds one per command or screen action). A `state.json`
from an older release is read once (without following a symbolic link) and moved into the
database by `LabState.migrate`, when the database is opened, never on a read. Graded results
live in the attempts table (see `trainer.core.attempts`).

Files the app writes into the workspace or `backups/` are never written through a symbolic
link: a link planted there is replaced, not followed (it could point at the database).

Paths inside the data folder (the default workspace, a file moved aside for a rehearsal) are
stored relative to it, so a copied data folder (`cp -a home home_future` to try `DOJO_NOW`)
works on its own files, never on the original's; a `--workspace DIR` outside it stays absolute.
Absolute paths stored by an older release are read as the same place in this data folder
(`_from_stored`) and stored relative by `LabState.migrate`.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import os
import shutil
import stat
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from lab.exercises import Exercise


class ReadOnlyLabError(OSError):
    """The lab's folder (or the workspace) cannot be written; the message says what to do."""


READ_ONLY_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS)
# the largest workspace file the app copies (a solution is kilobytes; graded code may have
# written anything there: a 3 GB sparse file copied whole would write 3 GB)
MAX_COPY_BYTES = 16 << 20


class WorkspaceFileError(OSError):
    """A file in the workspace the app will not copy or move: not a regular file (a named
    pipe, a device, a socket, a link), or too big. The message names it and says why."""


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """Open a workspace file for reading as the app: never through a link, never blocking on
    a named pipe, only a regular file of at most MAX_COPY_BYTES (its size and the blocks it
    holds on disk both count: a sparse file is refused too)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WorkspaceFileError(errno.ELOOP, f"{path} is a symbolic link: the app copies "
                                     "only the file itself, never what a link points to",
                                     str(path)) from exc
        raise
    st = os.fstat(fd)
    kinds = {stat.S_IFIFO: "a named pipe", stat.S_IFCHR: "a character device",
             stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket",
             stat.S_IFDIR: "a folder"}
    kind = kinds.get(stat.S_IFMT(st.st_mode))
    size = max(st.st_size, st.st_blocks * 512)
    if kind is not None or size > MAX_COPY_BYTES:
        os.close(fd)
        why = (f"is {kind}, not a file" if kind is not None
               else f"is {size / 1e6:.1f} MB, over the {MAX_COPY_BYTES >> 20} MiB the app "
                    "copies (a solution file is a few kilobytes)")
        raise WorkspaceFileError(errno.EINVAL, f"{path} {why}: move it away (or delete it) "
                                 "and try again", str(path))
    return fd, st


def _move(source: Path, target: Path) -> None:
    """Move a workspace file: a rename where both are on one file system, else a checked copy
    (`_replace_file`: a regular file of bounded size, never through a link) and the source
    removed."""
    os.close(_open_regular(source)[0])  # checked first: a pipe or a huge file is refused
    try:
        os.rename(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        _replace_file(source, target, metadata=True)
        source.unlink()


@contextmanager
def _writing(folder: Path) -> Iterator[None]:
    """Turn a permission or read-only-filesystem error while writing under `folder` into a
    ReadOnlyLabError that says so (never a raw traceback)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)  # not made by lab_dir when it could not be
        yield
    except ReadOnlyLabError:
        raise
    except OSError as exc:
        if exc.errno not in READ_ONLY_ERRNOS:
            raise
        raise ReadOnlyLabError(
            exc.errno,
            f"read-only: answers will not be saved, and {exc.filename or folder} cannot be "
            f"written ({exc.strerror}). Make it writable, or work in another folder with "
            "--workspace DIR.") from exc


def lab_dir(exercise: Exercise) -> Path:
    from scheduler.paths import data_dir

    path = data_dir() / "lab" / exercise.id
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a read-only data folder: reading still works, writing says why
        if exc.errno not in READ_ONLY_ERRNOS:
            raise
    return path


def _home() -> Path:
    from scheduler.paths import data_dir

    return data_dir().resolve()


def _to_stored(path: str | Path) -> str:
    """How a path is remembered: relative to the data folder when inside it, else absolute."""
    full = Path(path).expanduser().resolve()
    try:
        return full.relative_to(_home()).as_posix()
    except ValueError:
        return str(full)


def _from_stored(value: str, exercise: Exercise) -> Path:
    """A remembered path made absolute: a relative one is inside this data folder. An absolute
    one under `<folder>/lab/<exercise>` where `<folder>` holds a Dojo database was stored by an
    older release inside a data folder — this one's, or the one this folder was copied from —
    and is read as the same place in this data folder."""
    path = Path(value)
    if not path.is_absolute():
        return _home() / path
    parts = path.parts
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] == "lab" and parts[i + 1] == exercise.id:
            from scheduler.paths import DB_NAME

            folder = Path(*parts[:i])
            if folder.resolve() == _home() or (folder / DB_NAME).is_file():
                return _home().joinpath(*parts[i:])
            break
    return path


def _migrate(exercise: Exercise, data: dict[str, Any]) -> bool:
    """Store an older release's absolute data-folder paths relative (see `_from_stored`);
    True when something changed."""
    changed = False
    workspace = data.get("workspace")
    if isinstance(workspace, str) and Path(workspace).is_absolute():
        stored = _to_stored(_from_stored(workspace, exercise))
        changed |= stored != workspace
        data["workspace"] = stored
    session = data.get("interview")
    aside = session.get("moved_aside") if isinstance(session, dict) else None
    if isinstance(session, dict) and isinstance(aside, str) and Path(aside).is_absolute():
        stored = _to_stored(_from_stored(aside, exercise))
        changed |= stored != aside
        session["moved_aside"] = stored
    return changed


def _legacy_state(exercise: Exercise) -> dict[str, Any]:
    """An older release's state.json, read without following a symbolic link."""
    path = lab_dir(exercise) / "state.json"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:
        with os.fdopen(fd, encoding="utf-8") as f:
            data = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _replace_file(source: Path, target: Path, *, metadata: bool = False) -> None:
    """Copy `source` to `target` without writing through a link: a symbolic link at `target`
    is removed first, and the file is opened with O_NOFOLLOW."""
    fd, st = _open_regular(source)
    with os.fdopen(fd, "rb") as src:
        data = src.read(st.st_size)  # what it held when opened, never more
    if target.is_symlink() or (target.exists() and not target.is_file()):
        target.unlink()  # a link, a pipe or a device planted where the app writes
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(target, flags, 0o644), "wb") as dst:
        dst.write(data)
    if metadata:
        with contextlib.suppress(OSError):
            shutil.copystat(source, target)


def _backups(exercise: Exercise) -> Path:
    """`backups/` under the exercise's folder, a real directory (a symbolic link planted there
    is removed rather than followed out of the folder)."""
    backups = lab_dir(exercise) / "backups"
    if backups.is_symlink() or (backups.exists() and not backups.is_dir()):
        backups.unlink()
    backups.mkdir(exist_ok=True)
    return backups


@dataclass(frozen=True)
class Hint:
    number: int
    total: int
    text: str


class HintsOff(Exception):
    """Hints are disabled during an interview rehearsal."""


# -- interview rehearsal --------------------------------------------------------------------
# A rehearsal of one level from a blank stub against a clock: the learner's file is moved aside
# (restorable with `restore`), hints are off, and each grading of the level counts. State lives in
# the database's lab state under "interview" (the learner's code cannot move the clock); what was
# graded is recorded with the attempt (see `interview_metrics`), so time-to-first-pass and the
# number of gradings are in lab_attempts.

DEFAULT_INTERVIEW_MINUTES = 45


@dataclass(frozen=True)
class Interview:
    level: int
    started_at: float  # epoch seconds
    minutes: int
    gradings: int = 0
    first_pass_s: float | None = None
    moved_aside: str | None = None  # the learner's file before the rehearsal
    rebuild: bool = False  # a due lab card's rebuild: its pass grades the card (lab.rebuild)

    def elapsed_s(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.started_at)

    def clock(self, now: float | None = None) -> str:
        """The clock as shown: "12:34 of 45:00" ("47:10 of 45:00, over time")."""
        elapsed = self.elapsed_s(now)
        over = ", over time" if elapsed > self.minutes * 60 else ""
        return f"{_mmss(elapsed)} of {self.minutes}:00{over}"


def _mmss(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def _backup_path(exercise: Exercise, path: Path, tag: str) -> Path:
    """A new, unused name under the exercise's `backups/` (created) for a copy of `path`:
    `<stem>-<tag><time stamp>[-n]<suffix>` (`-n` when two are made within a second)."""
    with _writing(lab_dir(exercise)):
        backups = _backups(exercise)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = backups / f"{path.stem}-{tag}{stamp}{path.suffix}"
    n = 1
    while backup.exists():
        backup = backups / f"{path.stem}-{tag}{stamp}-{n}{path.suffix}"
        n += 1
    return backup


def interview_metrics(session: Interview, now: float | None = None) -> dict[str, float]:
    """What an attempt graded during a rehearsal stores beside its figures."""
    return {"interview_elapsed_s": round(session.elapsed_s(now), 1),
            "interview_grading": float(session.gradings),
            "interview_minutes": float(session.minutes),
            "interview_level": float(session.level),
            "rebuild": 1.0 if session.rebuild else 0.0}


class StateStore(Protocol):
    """What `LabState` needs of its store (`scheduler.store.Store` is one)."""

    def lab_state(self, exercise: str) -> dict[str, Any] | None: ...

    def set_lab_state(self, exercise: str, state: dict[str, Any]) -> None: ...


class LabState:
    """What the app keeps about the learner's workspaces, through one open store: each
    exercise's state is read once and every change written through, so a command or a screen
    opens the database once (`trainer.core.lab.Lab` holds one). `store=None`: the database
    could not be opened (`error` says why): the defaults are read, and a write raises it.

    Older releases' records (a `state.json`, absolute data-folder paths) are brought in by
    `migrate`, once when the store is opened, never on a read."""

    def __init__(self, store: StateStore | None, error: Exception | None = None) -> None:
        self.store = store
        self.error = error
        self._states: dict[str, dict[str, Any]] = {}

    def load(self, exercise: Exercise) -> dict[str, Any]:
        """The remembered workspace state (a copy: change it, then `save` it)."""
        if exercise.id not in self._states:
            data = self.store.lab_state(exercise.id) if self.store is not None else None
            self._states[exercise.id] = data if data is not None else {}
        return copy.deepcopy(self._states[exercise.id])

    def save(self, exercise: Exercise, state: dict[str, Any]) -> None:
        from scheduler.errors import ReadOnlyDatabaseError

        if self.store is None:
            raise self.error or ReadOnlyLabError(errno.EROFS, "the database is not open")
        try:
            self.store.set_lab_state(exercise.id, state)
        except ReadOnlyDatabaseError as exc:  # the data folder or database is read-only
            raise ReadOnlyLabError(errno.EROFS, f"read-only: answers will not be saved "
                                   f"({exc}). Make it writable, or work in another folder "
                                   "with --workspace DIR.") from exc
        self._states[exercise.id] = copy.deepcopy(state)

    def migrate(self, exercises: Iterable[Exercise]) -> None:
        """Bring older releases' records in: a `state.json` where nothing is stored yet (read
        without following a link), absolute data-folder paths made relative. A read-only
        store keeps them as they are, read the same way on a later run."""
        if self.store is None:
            return
        for exercise in exercises:
            stored = self.store.lab_state(exercise.id)
            data = _legacy_state(exercise) if stored is None else stored
            if _migrate(exercise, data) or (stored is None and data):
                with contextlib.suppress(ReadOnlyLabError):
                    self.save(exercise, data)
            self._states[exercise.id] = data

    def solution_path(self, exercise: Exercise, workspace: Path | None = None) -> Path:
        """The learner's file: `--workspace DIR` if given, else the remembered one, else the
        default."""
        if workspace is not None:
            return workspace.expanduser().resolve() / exercise.workspace_file
        remembered = self.load(exercise).get("workspace")
        if isinstance(remembered, str) and remembered:
            return _from_stored(remembered, exercise) / exercise.workspace_file
        return lab_dir(exercise) / exercise.workspace_file

    def start(self, exercise: Exercise, workspace: Path | None = None,
              level: int | None = None) -> tuple[Path, bool]:
        """Copy the stub into the workspace; never overwrites. Returns (path, created).

        `level` (default: the first) is remembered as started, so `dojo lab list` marks only the
        levels the learner actually opened (one file holds every level of an exercise)."""
        path = self.solution_path(exercise, workspace)
        state = self.load(exercise)
        state["workspace"] = _to_stored(path.parent)
        opened = set(self.levels_started(exercise, state))
        opened.add(level if level is not None else exercise.level_numbers[0])
        state["levels_started"] = sorted(opened)
        try:
            self.save(exercise, state)
        except ReadOnlyLabError:
            if workspace is None:
                raise
            # A writable --workspace beside a read-only data folder: the file can still be made;
            # only the reminder of where it is (and which levels were started) is lost.
        if path.exists() and not path.is_symlink():
            return path, False
        with _writing(path.parent):
            path.parent.mkdir(parents=True, exist_ok=True)
            _replace_file(exercise.stub_path, path)
        return path, True

    def reset(self, exercise: Exercise, workspace: Path | None = None) -> tuple[Path, Path | None]:
        """Back the current file up under `backups/`, then put a fresh stub in its place (what
        is not a regular file of a sane size is replaced without a backup: `_open_regular`)."""
        path = self.solution_path(exercise, workspace)
        backup: Path | None = None
        if path.exists() or path.is_symlink():
            backup = _backup_path(exercise, path, "")
            try:
                with _writing(backup.parent):
                    _replace_file(path, backup, metadata=True)
            except WorkspaceFileError:
                backup = None  # a pipe, a device, a link or a huge file: nothing worth keeping
        with _writing(path.parent):
            path.parent.mkdir(parents=True, exist_ok=True)
            _replace_file(exercise.stub_path, path)
        return path, backup

    def next_hint(self, exercise: Exercise) -> Hint | None:
        """Reveal the next hint and remember it; None when every hint has been shown. Raises
        `HintsOff` during an interview rehearsal."""
        if self.interview(exercise) is not None:
            raise HintsOff(f"hints are off during the interview rehearsal of {exercise.id} "
                           f"(`dojo lab restore {exercise.id}` ends it)")
        hints = exercise.hints()
        state = self.load(exercise)
        shown = int(state.get("hints_shown", 0))
        if shown >= len(hints):
            return None
        state["hints_shown"] = shown + 1
        self.save(exercise, state)
        return Hint(shown + 1, len(hints), hints[shown])

    def hints_shown(self, exercise: Exercise) -> list[str]:
        return exercise.hints()[: int(self.load(exercise).get("hints_shown", 0))]

    def levels_started(self, exercise: Exercise, state: dict[str, Any] | None = None
                       ) -> list[int]:
        """Levels the learner started (`start --level`); a workspace from before levels were
        remembered counts as level 1 started."""
        state = self.load(exercise) if state is None else state
        remembered = state.get("levels_started")
        if isinstance(remembered, list):
            return [n for n in remembered if isinstance(n, int)]
        return [exercise.level_numbers[0]] if self.solution_path(exercise).exists() else []


    def interview(self, exercise: Exercise) -> Interview | None:
        """The rehearsal in progress for this exercise, if any."""
        data = self.load(exercise).get("interview")
        if not isinstance(data, dict):
            return None
        try:
            session = Interview(**data)
        except TypeError:
            return None
        if session.moved_aside:
            session = replace(session, moved_aside=str(_from_stored(session.moved_aside, exercise)))
        return session

    def _save_interview(self, exercise: Exercise, session: Interview) -> None:
        """Remember the rehearsal (the file moved aside relative to the data folder)."""
        state = self.load(exercise)
        data = asdict(session)
        if session.moved_aside:
            data["moved_aside"] = _to_stored(session.moved_aside)
        state["interview"] = data
        self.save(exercise, state)

    def start_interview(self, exercise: Exercise, level: int,
                        minutes: int = DEFAULT_INTERVIEW_MINUTES,
                        workspace: Path | None = None, *, rebuild: bool = False
                        ) -> tuple[Path, Interview]:
        """Move the learner's file aside (kept under backups/, restorable), put a fresh stub in its
        place and start the clock. A rehearsal already running is replaced (its file is kept too).
        `rebuild` flags a due lab card's rebuild (`lab.rebuild.start_rebuild`)."""
        if minutes <= 0:
            raise ValueError(f"--minutes must be positive, got {minutes}")
        path = self.solution_path(exercise, workspace)
        previous = self.interview(exercise)
        moved: str | None = previous.moved_aside if previous is not None else None
        if path.exists():
            aside = _backup_path(exercise, path, "interview-" if previous else "before-interview-")
            _move(path, aside)
            if previous is None:
                moved = str(aside)
        self.start(exercise, workspace, level)
        session = Interview(level=level, started_at=time.time(), minutes=minutes, moved_aside=moved,
                            rebuild=rebuild)
        self._save_interview(exercise, session)
        return path, session

    def count_grading(self, exercise: Exercise, levels: list[int]) -> Interview | None:
        """Called before grading the workspace file: one more grading of the rehearsal's level
        (None when no rehearsal is running or another level is graded)."""
        session = self.interview(exercise)
        if session is None or session.level not in levels:
            return None
        session = replace(session, gradings=session.gradings + 1)
        self._save_interview(exercise, session)
        return session

    def passed_interview(self, exercise: Exercise, session: Interview, now: float | None = None
                         ) -> Interview:
        """Remember the time of the first pass (later passes keep the first)."""
        if session.first_pass_s is not None:
            return session
        session = replace(session, first_pass_s=round(session.elapsed_s(now), 1))
        self._save_interview(exercise, session)
        return session

    def end_interview(self, exercise: Exercise, workspace: Path | None = None
                      ) -> tuple[Path, Path | None]:
        """End the rehearsal and put the learner's own file back; the rehearsal's file is kept
        under backups/. Returns (the workspace file, where the rehearsal file went)."""
        session = self.interview(exercise)
        if session is None:
            raise ValueError(f"no interview rehearsal of {exercise.id} is running")
        path = self.solution_path(exercise, workspace)
        kept: Path | None = None
        if path.exists():
            kept = _backup_path(exercise, path, "interview-")
            _move(path, kept)
        if session.moved_aside and Path(session.moved_aside).exists():
            _replace_file(Path(session.moved_aside), path, metadata=True)
        else:
            _replace_file(exercise.stub_path, path)
        state = self.load(exercise)
        state.pop("interview", None)
        self.save(exercise, state)
        return path, kept

    def statement(self, exercise: Exercise) -> str:
        """The statement, without its hints sections ("## Hint…") while a rehearsal runs."""
        text = exercise.statement()
        if self.interview(exercise) is None:
            return text
        out: list[str] = []
        hiding = False
        for line in text.splitlines():
            if line.startswith("#"):
                hiding = line.lstrip("#").strip().lower().startswith("hint")
            if not hiding:
                out.append(line)
        return "\n".join(out)
