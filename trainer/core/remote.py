"""Grading on another machine over SSH: the client side of `dojo lab grade --on HOST`.

The learner's own host (a `~/.ssh/config` alias, `user@host`, whatever `ssh` accepts) runs
`dojo remote serve` from a Serving Dojo installed there by `dojo remote setup` (a virtual
environment in `~/.serving-dojo/venv`, its data folder `~/.serving-dojo/data`). The protocol over
ssh's stdin/stdout is `dojo lab serve`'s (see `trainer.core.lab`), with three differences:

* the server speaks first: ``{"event": "hello", "version": V, "python": P, "protocol": 1}``,
  and a host whose version differs from this one is refused before anything is sent;
* a request carries the one workspace file (`RemoteRequest`: exercise, level, device, seed and
  the file's text); nothing else of the learner's leaves this machine;
* a request the host cannot take (its disk full, a bad request) is answered by
  ``{"event": "refused", "reason": R, "message": M}`` before the closing ``served``.

The host grades with the same grader and sandbox and records nothing; the events stream back
and this side records the attempt (with the host named) exactly as a local grading would. Any
fault — ssh missing, the host unknown or its key changed, the login refused, Python or Dojo
missing there, the connection dropped, the host's disk full, the grading past its time limit —
is one `RemoteError` sentence, and nothing is recorded. The host's serve stops on EOF even in the
middle of a grading (its children are killed, their folders removed), so a dropped connection
leaves nothing running. A link that dies without a word (sshd on the host may not notice for
hours) is caught by the host too: this side sends ``{"ping": S}`` every S seconds while the
connection is open (`PING_S`, or `DOJO_REMOTE_PING_S`), and the host stops as at EOF after
`PING_MISSES` of them have not come (plus `PING_SLACK_S`).

`DOJO_SSH_COMMAND` replaces `ssh` (a command and its options, as git's `GIT_SSH_COMMAND`);
`DOJO_REMOTE_ROOT` moves the host's install folder, `DOJO_REMOTE_PYTHON` names its Python, and
`DOJO_REMOTE_TIME_LIMIT_S` caps one grading (default: the exercise's own run budget plus slack).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from lab.exercises import Exercise
    from lab.grader.events import Event
    from lab.grader.results import GradeResult
    from trainer.core.attempts import Recorder

PROTOCOL = 1
DEFAULT_ROOT = "$HOME/.serving-dojo"  # expanded by the host's shell
CONNECT_TIMEOUT_S = 60.0  # ssh's handshake plus the host's Python importing the server
NO_PYTHON_RC, NO_DOJO_RC = 97, 98  # exit statuses of the launcher script (remote_script)
LOCAL = ("", "local")
MIN_FREE_MB = 64  # what a host needs free to grade: the file, capture and temporary files
PING_S = 10.0  # how often this side says it is still there (DOJO_REMOTE_PING_S)
PING_MISSES, PING_SLACK_S = 3, 5.0  # the host gives up after 3 missed pings and 5 s more


class RemoteError(Exception):
    """A remote grading could not happen or finish; the message is one sentence for the
    learner, and nothing was recorded."""


def dojo_version() -> str:
    """This install's Serving Dojo version (its package metadata)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("serving-dojo")
    except PackageNotFoundError:
        return "unknown"


def is_local(host: str | None) -> bool:
    return host is None or host.strip().lower() in LOCAL


def check_host(host: str) -> str:
    """`host` as ssh will be given it; a value ssh would read as an option, or one with spaces
    or control characters, is refused (ValueError naming why)."""
    host = host.strip()
    if not host or host.startswith("-") or re.search(r"[\s\x00-\x1f\x7f]", host):
        raise ValueError(f"{host!r} is not an ssh destination (a ~/.ssh/config alias, "
                         "user@host or host:port, no spaces, not starting with '-')")
    return host


# -- the ssh command and the host's launcher --------------------------------------------------

def ssh_command() -> list[str]:
    """`ssh`, or `DOJO_SSH_COMMAND` split as a shell would; RemoteError when it is not there."""
    custom = os.environ.get("DOJO_SSH_COMMAND", "").strip()
    argv = shlex.split(custom) if custom else ["ssh"]
    if shutil.which(argv[0]) is None:
        where = "DOJO_SSH_COMMAND names" if custom else "no `ssh` on PATH:"
        raise RemoteError(f"ssh is not installed here ({where} {argv[0]!r}); install the "
                          "OpenSSH client, or set DOJO_SSH_COMMAND to the command to use.")
    return argv


def remote_root() -> str:
    """The host's install folder, as a shell word ($HOME expanded there)."""
    root = os.environ.get("DOJO_REMOTE_ROOT", "").strip()
    return shlex.quote(root) if root else f'"{DEFAULT_ROOT}"'


def ping_interval_s() -> float:
    """How often a session pings its host: DOJO_REMOTE_PING_S (seconds, > 0), else PING_S."""
    raw = os.environ.get("DOJO_REMOTE_PING_S", "").strip()
    try:
        value = float(raw) if raw else PING_S
    except ValueError:
        return PING_S
    return value if value > 0 else PING_S


def ping_line(interval_s: float) -> str:
    return json.dumps({"ping": interval_s})


def parse_ping(line: str) -> float | None:
    """The interval a ping line announces; None when the line is not a ping."""
    if not line.startswith('{"ping"'):
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    value = data.get("ping") if isinstance(data, dict) and len(data) == 1 else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def remote_python() -> str:
    return os.environ.get("DOJO_REMOTE_PYTHON", "").strip() or "python3"


def remote_script(action: str) -> str:
    """The shell line the host runs: its Dojo's `remote ACTION` with the data folder and temp
    files inside the install folder (nothing is written elsewhere), or exit NO_PYTHON_RC /
    NO_DOJO_RC saying which is missing."""
    root, python = remote_root(), shlex.quote(remote_python())
    return (
        f"R={root}; "
        'if [ -x "$R/venv/bin/python" ]; then '
        'mkdir -p "$R/data/tmp" && '
        'DOJO_HOME="$R/data" TMPDIR="$R/data/tmp" PYTHONDONTWRITEBYTECODE=1 '
        f'exec "$R/venv/bin/python" -m trainer remote {action}; fi; '
        f"if ! command -v {python} >/dev/null 2>&1; then "
        f'echo "dojo-remote: no python {remote_python()}" >&2; exit {NO_PYTHON_RC}; fi; '
        f'echo "dojo-remote: no dojo in $R/venv" >&2; exit {NO_DOJO_RC}'
    )


def ssh_argv(host: str, script: str, batch: bool = True, tty: bool = False) -> list[str]:
    """ssh to `host` running `script`: no terminal (unless `tty`: pip's progress bars), no
    prompts (BatchMode: a password prompt would hang a streamed grading), keep-alives so a
    dead link is noticed in ~15 s."""
    options = ["-tt" if tty else "-T", "-o", "ServerAliveInterval=5", "-o",
               "ServerAliveCountMax=3"]
    if batch:
        options += ["-o", "BatchMode=yes"]
    return [*ssh_command(), *options, check_host(host), "--", script]


# -- what ssh said, in one sentence -----------------------------------------------------------

def explain(host: str, rc: int | None, stderr: str) -> str:
    """One sentence for a connection that ended before the grading did (rc: the exit status
    of ssh, None while it still runs)."""
    text = stderr.strip()
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        return (f"{host}'s host key has changed since you last connected (a reinstalled host, "
                f"or someone in between): nothing was sent; check the key, then remove the old "
                f"one with `ssh-keygen -R {host}` (or edit your known_hosts).")
    if "Host key verification failed" in text or "No matching host key" in text:
        return (f"{host}'s host key is not in your known_hosts, so ssh refused to connect: "
                f"run `ssh {host}` once to check and accept it.")
    if "Could not resolve hostname" in text:
        return (f"unknown host {host}: ssh could not resolve its name (check the spelling or "
                "the Host entry in ~/.ssh/config).")
    if "Permission denied" in text or "Too many authentication failures" in text:
        return (f"{host} refused the login (Permission denied): add your public key to its "
                "~/.ssh/authorized_keys, load it with ssh-add, or set the User in "
                "~/.ssh/config.")
    if "Connection refused" in text:
        return f"could not connect to {host}: connection refused (is its sshd running?)."
    if "timed out" in text.lower():
        return f"could not connect to {host}: the connection timed out."
    if rc == NO_PYTHON_RC:
        return (f"{host} has no Python ({remote_python()} is not on its PATH): install "
                f"Python 3.11 or newer there, then run `dojo remote setup {host}`.")
    if rc == NO_DOJO_RC or "No module named trainer" in text:
        return (f"Serving Dojo is not installed on {host}: run `dojo remote setup {host}` "
                "first.")
    last = text.splitlines()[-1] if text else f"ssh exited with status {rc}"
    return f"the connection to {host} failed: {last}"


# -- the protocol -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Hello:
    """The host's first line: its Dojo version, Python and protocol."""

    EVENT: ClassVar[str] = "hello"
    version: str
    python: str
    protocol: int = PROTOCOL

    def to_json(self) -> str:
        return json.dumps({"event": self.EVENT, "version": self.version,
                           "python": self.python, "protocol": self.protocol})


@dataclass(frozen=True)
class Refused:
    """The host could not take a request: `reason` is "disk" or "request"."""

    EVENT: ClassVar[str] = "refused"
    reason: str
    message: str

    def to_json(self) -> str:
        return json.dumps({"event": self.EVENT, "reason": self.reason, "message": self.message})


@dataclass(frozen=True)
class RemoteRequest:
    """Everything a host is sent for one grading: the exercise, the level (None: all), the
    device and seed, the workspace file's name and text. Nothing else."""

    exercise: str
    level: int | None
    device: str
    seed: int | None
    name: str
    source: str

    KEYS: ClassVar[tuple[str, ...]] = ("exercise", "level", "device", "seed", "name", "source")
    NAME: ClassVar[re.Pattern[str]] = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.py")

    def to_json(self) -> str:
        return json.dumps({k: getattr(self, k) for k in self.KEYS})

    @classmethod
    def parse(cls, line: str) -> RemoteRequest:
        """The request on one line; ValueError saying what is wrong with it."""
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("a request is a JSON object")
        level, seed = data.get("level"), data.get("seed")
        for key, value in (("level", level), ("seed", seed)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ValueError(f"{key} must be a whole number or null, got {value!r}")
        for key in ("exercise", "device", "name", "source"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"{key} must be a string")
        if not cls.NAME.fullmatch(data["name"]):
            raise ValueError(f"name {data['name']!r} is not a plain .py file name")
        return cls(data["exercise"], level, data["device"], seed, data["name"], data["source"])


def parse_remote_reply(line: str) -> Any:
    """A line from the host: Hello, Refused, or what `trainer.core.lab.parse_reply` reads."""
    from trainer.core.lab_serve import parse_reply

    if line.startswith("{"):
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("event") == Hello.EVENT:
            protocol = data.get("protocol")
            return Hello(str(data.get("version")), str(data.get("python")),
                         protocol if isinstance(protocol, int) else 0)
        if isinstance(data, dict) and data.get("event") == Refused.EVENT:
            return Refused(str(data.get("reason")), str(data.get("message")))
    return parse_reply(line)


# -- a session with a host --------------------------------------------------------------------

@dataclass
class _Lines:
    """A pipe read by a thread: stdout lines into a queue (None at EOF), stderr kept."""

    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    stderr: list[str] = field(default_factory=list)

    def pump(self, pipe: IO[bytes], into_queue: bool) -> threading.Thread:
        def run() -> None:
            for raw in iter(pipe.readline, b""):
                text = raw.decode(errors="replace").rstrip("\n")
                if into_queue:
                    self.lines.put(text)
                else:
                    self.stderr.append(text)
            if into_queue:
                self.lines.put(None)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


class RemoteSession:
    """One ssh connection to a host's `dojo remote serve`: opened with its version checked,
    then any number of gradings, then closed (the host's serve ends on EOF)."""

    def __init__(self, host: str) -> None:
        self.host = check_host(host)
        self.hello: Hello | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._io = _Lines()
        self._err: threading.Thread | None = None
        self._writing = threading.Lock()  # a request and a ping never interleave
        self._closing = threading.Event()

    def open(self, timeout_s: float = CONNECT_TIMEOUT_S) -> Hello:
        """Connect and read the host's hello; RemoteError for every way that fails (the
        version included: both named, and the command that fixes it)."""
        argv = ssh_argv(self.host, remote_script("serve"))
        self._closing.clear()
        try:
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise RemoteError(f"ssh could not be started ({argv[0]}: {exc.strerror}).") from exc
        assert self.process.stdout is not None and self.process.stderr is not None
        self._io.pump(self.process.stdout, into_queue=True)
        self._err = self._io.pump(self.process.stderr, into_queue=False)
        deadline = time.monotonic() + timeout_s
        while True:
            line = self._next(deadline, f"{self.host} did not answer within {timeout_s:.0f} s")
            if line is None:
                raise RemoteError(self._ended())
            reply = parse_remote_reply(line)
            if isinstance(reply, Hello):
                break
        self.hello = reply
        mine = dojo_version()
        if reply.version != mine or reply.protocol != PROTOCOL:
            self.close()
            raise RemoteError(
                f"{self.host} runs Serving Dojo {reply.version} and this machine {mine}: run "
                f"`dojo remote setup {self.host}` to install {mine} there.")
        interval = ping_interval_s()
        try:  # the first ping before any request: the host knows the interval from the start
            self._send(ping_line(interval))
        except (OSError, ValueError):
            raise RemoteError(self._ended()) from None
        threading.Thread(target=self._ping, args=(interval,), daemon=True).start()
        return reply

    def _send(self, line: str) -> None:
        """One line to the host's serve; OSError (or ValueError: closed) when it is gone."""
        proc = self.process
        if proc is None or proc.stdin is None:
            raise BrokenPipeError("no connection")
        with self._writing:
            proc.stdin.write((line + "\n").encode())
            proc.stdin.flush()

    def _ping(self, interval_s: float) -> None:
        """Say we are here every `interval_s` until closed: the host stops a grading whose
        client has gone silent (see the module's docstring)."""
        while not self._closing.wait(interval_s):
            try:
                self._send(ping_line(interval_s))
            except (OSError, ValueError):
                return

    def _next(self, deadline: float, late: str) -> str | None:
        try:
            return self._io.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            self.close()
            raise RemoteError(late) from None

    def _ended(self) -> str:
        """Why the connection ended: ssh's exit status and what it printed."""
        proc = self.process
        rc = None
        if proc is not None:
            try:
                rc = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self._err is not None:
            self._err.join(timeout=5)
        return explain(self.host, rc, "\n".join(self._io.stderr))

    def grade(self, request: RemoteRequest, emit: Callable[[Event], None],
              time_limit_s: float) -> tuple[list[Event], int]:
        """Send one request and pass its events on as they come; (the events, the served rc).
        RemoteError when the host refuses it, the link drops or the limit passes (the
        connection is then closed, which stops the host's grading)."""
        from lab.grader.events import Summary
        from trainer.core.lab_serve import Served

        proc = self.process
        if proc is None or proc.stdin is None:
            raise RemoteError(f"no connection to {self.host}")
        try:
            self._send(request.to_json())
        except (OSError, ValueError):
            raise RemoteError(self._dropped()) from None
        events: list[Event] = []
        deadline = time.monotonic() + time_limit_s
        late = (f"the grading on {self.host} ran past its time limit of {time_limit_s:.0f} s "
                "and was stopped; nothing was recorded.")
        refused: Refused | None = None
        while True:
            line = self._next(deadline, late)
            if line is None:
                raise RemoteError(self._dropped())
            reply = parse_remote_reply(line)
            if isinstance(reply, Refused):
                refused = reply
            elif isinstance(reply, Served):
                if refused is not None and refused.reason == "disk":
                    raise RemoteError(f"{self.host} is out of disk space ({refused.message}); "
                                      "nothing was recorded.")
                if refused is not None:
                    raise RemoteError(f"{self.host} refused the grading: {refused.message}")
                if not any(isinstance(e, Summary) for e in events):
                    raise RemoteError(f"the grading on {self.host} ended without a verdict "
                                      f"(status {reply.rc}); nothing was recorded.")
                return events, reply.rc
            elif reply is not None and not isinstance(reply, str | Hello):
                if not isinstance(reply, Summary):  # the summary is the recorder's to send
                    emit(reply)
                events.append(reply)

    def _dropped(self) -> str:
        why = self._ended()
        detail = "" if why.startswith("the connection to") else f" ({why})"
        return (f"the connection to {self.host} dropped during the grading{detail}; nothing "
                "was recorded.")

    def close(self) -> None:
        """Close stdin (the host's serve ends, killing any grading) and end ssh."""
        proc = self.process
        self._closing.set()
        if proc is None:
            return
        if proc.stdin is not None:
            with self._writing, contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- grade and record -------------------------------------------------------------------------

def time_limit_s(ex: Exercise) -> float:
    """One remote grading's limit: DOJO_REMOTE_TIME_LIMIT_S, else the exercise's run budget
    with room for the link and the host's imports."""
    raw = os.environ.get("DOJO_REMOTE_TIME_LIMIT_S", "").strip()
    if raw:
        return float(raw)
    return float(ex.run_timeout_s) * 1.5 + 120.0


def result_from_events(events: list[Event], solution: Path,
                       attempt_metrics: dict[str, Any]) -> GradeResult:
    """The `GradeResult` the host's grader had, rebuilt from its events, for the recorder."""
    from lab.grader.api import Case
    from lab.grader.events import (
        CaseFailed,
        CasePassed,
        CasesSkipped,
        CaseStarted,
        LevelSummary,
        RunStarted,
        Summary,
    )
    from lab.grader.results import CaseResult, GradeResult, LevelResult

    started = next(e for e in events if isinstance(e, RunStarted))
    summary = next(e for e in events if isinstance(e, Summary))
    cases: dict[tuple[int, str], CaseStarted] = {}
    by_level: dict[int, list[CaseResult]] = {}
    durations: dict[int, float] = {}
    for e in events:
        if isinstance(e, CaseStarted):
            cases[(e.level, e.case)] = e
        elif isinstance(e, CasePassed | CaseFailed):
            s = cases.get((e.level, e.case))
            case = Case(e.case, e.level, dict(s.params) if s else {}, s.size if s else 0,
                        e.required, timed=bool(s and s.timed))
            failed = isinstance(e, CaseFailed)
            by_level.setdefault(e.level, []).append(CaseResult(
                case, not failed, kind=e.kind if isinstance(e, CaseFailed) else "",
                message=e.message if isinstance(e, CaseFailed) else e.note,
                duration_s=e.duration_s, metrics=dict(e.metrics or {})))
        elif isinstance(e, CasesSkipped):
            for i, cid in enumerate(e.cases):
                by_level.setdefault(e.level, []).append(CaseResult(
                    Case(cid, e.level, {}, required=i < e.required), False, kind="skipped",
                    message=e.reason))
        elif isinstance(e, LevelSummary):
            durations[e.level] = e.duration_s
    levels = [LevelResult(n, by_level.get(n, []), durations.get(n, 0.0))
              for n in (int(k) for k in summary.levels)]
    return GradeResult(started.exercise, started.device, started.seed, solution, levels,
                       summary.duration_s, events=list(events),
                       attempt_metrics=dict(attempt_metrics))


def grade_remote(
    host: str, ex: Exercise, path: Path, levels: list[int] | None, device: str,
    seed: int | None, emit: Callable[[Event], None], recorder: Recorder,
    attempt_metrics: dict[str, Any] | None = None, session: RemoteSession | None = None,
) -> GradeResult:
    """Grade `path` on `host` and record the attempt here (the host and its device named in
    the attempt's metrics); RemoteError, nothing recorded, when it cannot be done. `session`:
    a connection kept open between gradings (`dojo lab serve`), else one is opened for this."""
    from lab.grader.events import CaseFailed, RunStarted, Summary

    if levels is not None and len(levels) != 1:
        raise RemoteError("a remote grading takes one level or all of them")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RemoteError(f"could not read {path}: {exc}") from exc
    name = path.name if RemoteRequest.NAME.fullmatch(path.name) else "solution.py"
    request = RemoteRequest(ex.id, levels[0] if levels else None, device, seed, name, source)
    own = session is None
    link = session or RemoteSession(host)
    note = ""

    on = f" --on {link.host}"

    def relay(event: Event) -> None:
        nonlocal note
        if isinstance(event, RunStarted):  # the learner's own file, the host named
            note = event.device_note
            event = replace(event, host=link.host, solution=str(path),
                            replay=event.replay + on)
        elif isinstance(event, CaseFailed):
            event = replace(event, replay=event.replay + on)
        emit(event)

    try:
        if link.hello is None:
            link.open()
        events, _rc = link.grade(request, relay, time_limit_s(ex))
    finally:
        if own:
            link.close()
    metrics = {**(attempt_metrics or {}), "host": link.host, "device_name": note}
    result = result_from_events(events, path, metrics)
    stored, store_error = recorder.record(result)
    summary = next(e for e in events if isinstance(e, Summary))
    summary = replace(summary, host=link.host, stored=stored, store_error=store_error,
                      replay=summary.replay + on)
    result.events[result.events.index(next(e for e in result.events
                                            if isinstance(e, Summary)))] = summary
    emit(summary)
    return result


def grading_host(on: str | None, store: Any = None) -> str | None:
    """Where to grade: `--on HOST` when given ("local": here), else the lab_host setting of
    `store` (default: the learner's database, opened for this; here when it is unset or the
    database cannot be read). ValueError for a bad host name."""
    if on is not None:
        return None if is_local(on) else check_host(on)
    try:
        if store is not None:
            configured = store.settings().lab_host
        else:
            from trainer.core.store import open_store

            opened = open_store(browse=True)
            try:
                configured = opened.settings().lab_host
            finally:
                opened.close()
    except Exception:
        return None
    return None if is_local(configured) else check_host(str(configured))
