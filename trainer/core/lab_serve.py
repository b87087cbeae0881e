"""The `dojo lab serve` protocol, and `GradingServer`, its typed client (the Lab screen's).

* Requests, one JSON object a line on the server's stdin (`ServeRequest`):
  ``{"exercise": ID, "level": N}`` grades (level may be null: every level; an optional
  ``"seed": S`` replays an earlier run's hidden cases, as `dojo lab grade --seed`), and
  ``{"exercise": ID, "level": N, "prepare": true}`` only starts the sandboxed child that grading
  would use (torch imported), so the next grading answers in about a second.
* Replies, one JSON object a line on its stdout: a grading is answered with the `--json` events
  of `dojo lab grade` (`lab.grader.events`, read back typed with `from_dict`) and closed by
  ``{"event": "served", "rc": 0|1|2}`` (`Served`: the exit status `dojo lab grade` would have
  had; 2 for a bad request, whose reason goes to stderr). A prepare request is answered by
  ``{"event": "prepared", "ready": bool, "kept": bool, "seconds": float}`` (`PrepareReply`), or by
  nothing when the exercise has no workspace file yet. Any other line (the server's stderr is
  merged into stdout by the client) is plain text for the log.
* The server keeps its imports warm between requests and, after a grading, starts the child for
  the next one by itself; closing its stdin ends it (between requests), SIGTERM or SIGHUP end
  it at once with its children and their folders, and killing its process group ends the
  children it started (their folders then wait for the next grading's sweep).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from dataclasses import dataclass
from typing import Any, ClassVar

from lab.grader.events import Event


@dataclass(frozen=True)
class ServeRequest:
    """One request to `dojo lab serve`: grade `exercise` (at `level`), or only prepare it."""

    exercise: str
    level: int | None = None
    prepare: bool = False
    seed: int | None = None  # the grading's seed (None: a random one)

    def to_json(self) -> str:
        data: dict[str, Any] = {"exercise": self.exercise, "level": self.level}
        if self.prepare:
            data["prepare"] = True
        if self.seed is not None:
            data["seed"] = self.seed
        return json.dumps(data)

    @classmethod
    def parse(cls, line: str) -> ServeRequest | None:
        """The request on one stdin line; None when it is not one."""
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                return None
            level, seed = data.get("level"), data.get("seed")
        except ValueError:
            return None
        if not isinstance(data.get("exercise"), str) or not all(
                x is None or (isinstance(x, int) and not isinstance(x, bool))
                for x in (level, seed)):
            return None
        return cls(data["exercise"], level, bool(data.get("prepare")), seed)


@dataclass(frozen=True)
class Served:
    """The end of a grading's replies: the exit status `dojo lab grade` would have had."""

    EVENT: ClassVar[str] = "served"
    rc: int

    def to_json(self) -> str:
        return json.dumps({"event": self.EVENT, "rc": self.rc})


@dataclass(frozen=True)
class PrepareReply:
    """The answer to a prepare request: whether the child is warm, and whether the server
    kept the one it had (`seconds` the request took)."""

    EVENT: ClassVar[str] = "prepared"
    ready: bool
    kept: bool
    seconds: float = 0.0

    def to_json(self) -> str:
        return json.dumps({"event": self.EVENT, "ready": self.ready, "kept": self.kept,
                           "seconds": self.seconds})


def parse_reply(line: str) -> Event | Served | PrepareReply | str | None:
    """One line of the server's output: a typed reply, the line itself when it is plain text,
    or None for a protocol line this version does not know (ignored, as the format says)."""
    if not line.startswith("{"):
        return line
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return line
    if not isinstance(data, dict) or "event" not in data:
        return line
    if data["event"] == Served.EVENT:
        rc = data.get("rc", 1)
        return Served(rc if isinstance(rc, int) else 1)
    if data["event"] == PrepareReply.EVENT:
        return PrepareReply(bool(data.get("ready")), bool(data.get("kept")),
                        float(data.get("seconds") or 0.0))
    from lab.grader.events import from_dict

    return from_dict(data)


SERVE_PARENT_VAR = "DOJO_SERVE_PARENT"  # the app's pid, for `dojo lab serve` to die with it
STOP_GRACE_S = 5.0  # how long `stop` lets the server clean up before it is killed


class GradingServer:
    """A running `dojo lab serve` (started with `start`): send requests, read typed replies.

    Its stderr is merged into its stdout, and it runs in its own session so `stop` kills every
    child it started (they run learner code)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, command: list[str]) -> GradingServer:
        """Start `command` (the lab CLI, e.g. `python -m trainer lab`) with `serve`."""
        process = await asyncio.create_subprocess_exec(
            *command, "serve",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            # the server ends itself when this process ends, however (see `lab serve`)
            env={**os.environ, "PYTHONUNBUFFERED": "1", SERVE_PARENT_VAR: str(os.getpid())},
        )
        return cls(process)

    @property
    def running(self) -> bool:
        return self.process.returncode is None

    async def send(self, request: ServeRequest) -> None:
        """Write one request; BrokenPipeError/ConnectionResetError when the server is gone."""
        stdin = self.process.stdin
        if stdin is None:
            raise BrokenPipeError("the grading server has no stdin")
        stdin.write((request.to_json() + "\n").encode())
        await stdin.drain()

    async def reply(self) -> Event | Served | PrepareReply | str | None:
        """The next reply (a typed one, or a plain line of text); None once the server's
        output has ended. Protocol lines this version does not know are skipped."""
        assert self.process.stdout is not None
        while True:
            raw = await self.process.stdout.readline()
            if not raw:
                return None
            parsed = parse_reply(raw.decode(errors="replace").rstrip("\n"))
            if parsed is not None:
                return parsed

    async def wait(self) -> int:
        return await self.process.wait()

    async def stop(self) -> None:
        """Stop the server and everything it started, and wait for it, its pipes closed:
        SIGTERM first, on which it kills its sandboxes and removes their folders (SIGKILL left
        those folders behind, one per cancel or quit), then SIGKILL to its process group
        for whatever is still there after `STOP_GRACE_S`."""
        proc = self.process
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), STOP_GRACE_S)
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
        await proc.wait()
