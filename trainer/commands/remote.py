"""`dojo remote …`: grade on your own GPU machine over SSH.

`setup HOST` installs this same version of Serving Dojo on the host (a virtual environment in
~/.serving-dojo/venv, the CUDA build of torch where the host has a GPU), `check HOST` prints what
the host offers; `serve` and `probe` are what those run on the host (the protocol is written
down in `trainer.core.remote`). `dojo lab grade EX --on HOST` and the `lab_host` setting use it.
"""

from __future__ import annotations

import json
import os
import platform
import queue
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click


@click.group()
def remote() -> None:
    """Grade on another machine over SSH (your GPU box): set it up, check it."""


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _stdin_lines() -> tuple[queue.Queue[str | None], threading.Event]:
    """Requests read by a thread, so the end of input (the connection closed, even in the
    middle of a grading) is seen at once: `eof` is set and None queued. The client's pings
    (`trainer.core.remote.parse_ping`) are not requests: once one has come, a silence longer
    than PING_MISSES of its intervals (plus PING_SLACK_S) counts as the end of input too (a
    link that died without a word, which sshd may not notice for hours)."""
    from trainer.core.remote import PING_MISSES, PING_SLACK_S, parse_ping

    lines: queue.Queue[str | None] = queue.Queue()
    eof = threading.Event()
    heard = [time.monotonic()]
    watching = threading.Event()

    def end() -> None:
        if not eof.is_set():
            eof.set()
            lines.put(None)

    def watch(interval_s: float) -> None:
        quiet_s = PING_MISSES * interval_s + PING_SLACK_S
        while not eof.wait(interval_s):
            if time.monotonic() - heard[0] > quiet_s:
                end()

    def take(line: str) -> None:
        heard[0] = time.monotonic()
        interval = parse_ping(line.strip())
        if interval is None:
            lines.put(line)
        elif not watching.is_set():
            watching.set()
            threading.Thread(target=watch, args=(interval,), daemon=True).start()

    def read() -> None:
        # from the descriptor itself, never through sys.stdin: a thread blocked in its read
        # holds its lock, and the interpreter's exit (after a silence) waited on it for ever
        fd, pending = sys.stdin.fileno(), b""
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            *whole, pending = pending.split(b"\n")
            for raw in whole:
                take(raw.decode("utf-8", errors="replace") + "\n")
        if pending:
            take(pending.decode("utf-8", errors="replace"))
        end()

    threading.Thread(target=read, daemon=True).start()
    return lines, eof


def _write_workspace(data: Path, exercise: str, name: str, source: str) -> Path:
    """The request's file in this install's own data folder (replaced whole, never written
    through a link); OSError when it cannot be written."""
    folder = data / "remote" / exercise
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    partial = folder / f".{name}.partial"
    partial.unlink(missing_ok=True)
    with open(partial, "x", encoding="utf-8") as fh:
        fh.write(source)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(partial, path)
    return path


def _free_mb(folder: Path) -> float:
    return shutil.disk_usage(folder).free / 2**20


class _Server:
    """The host's side of one connection: grade each request, record nothing."""

    def __init__(self, eof: threading.Event) -> None:
        from trainer.core.store import data_dir

        self.eof = eof
        self.data = data_dir()
        self.prepared: Any = None
        self.again: tuple[Any, ...] | None = None  # what the next child is prepared for

    def refuse(self, reason: str, message: str) -> int:
        from trainer.core.remote import Refused

        _say(Refused(reason, message).to_json())
        return 2

    def handle(self, line: str) -> int | None:
        """Grade one request line; its rc, or None when the connection ended meanwhile."""
        import errno

        from lab.exercises import ExerciseError, get
        from lab.grader.events import Event, to_json
        from lab.grader.isolation import Cancelled
        from lab.grader.runner import GradeOptions, UsageError, grade
        from trainer.core.remote import MIN_FREE_MB, RemoteRequest

        try:
            request = RemoteRequest.parse(line)
            ex = get(request.exercise)
            if request.level is not None:
                ex.level(request.level)
        except (ValueError, ExerciseError) as exc:
            return self.refuse("request", str(exc))
        free = _free_mb(self.data)
        if free < MIN_FREE_MB:
            return self.refuse("disk", f"{free:.0f} MiB free in {self.data}, and a grading "
                                       f"needs {MIN_FREE_MB} MiB")
        try:
            path = _write_workspace(self.data, ex.id, request.name, request.source)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                return self.refuse("disk", f"{self.data} is full ({exc.strerror})")
            return self.refuse("request", f"could not write the file there: {exc}")

        def emit(event: Event) -> None:
            _say(to_json(event))

        levels = [request.level] if request.level is not None else None
        prepared, self.prepared = self.prepared, None
        try:
            result = grade(ex, path, GradeOptions(
                levels=levels, device=request.device, seed=request.seed, emit=emit,
                cancel=self.eof.is_set, prepared=prepared))
        except Cancelled:
            return None
        except UsageError as exc:
            return self.refuse("request", str(exc))
        except BrokenPipeError:
            return None
        self.again = (ex, path, GradeOptions(levels=levels, device=request.device))
        return 0 if result.passed else 1

    def prepare_next(self) -> None:
        """After the reply: start the next grading's child while the learner edits (a single
        `dojo lab grade --on` closes the connection first, and nothing is started)."""
        from lab.grader.runner import prepare

        again, self.again = self.again, None
        if again is not None and not self.eof.wait(0.3):  # a one-off grading hangs up at once
            self.prepared = prepare(*again)

    def close(self) -> None:
        if self.prepared is not None:
            self.prepared.close()


@remote.command(hidden=True)
def serve() -> None:
    """Run on the host by `dojo lab grade --on`: a hello line, then one grading per request
    line (the events of `dojo lab grade --json`, then {"event": "served", "rc": N}); nothing is
    recorded here. Ends at the end of input, stopping a grading in progress, when the client's
    pings stop (a silent link) or on SIGTERM or SIGHUP the same way (status 143 / 129), or
    after an hour without a request."""
    from lab.grader.stops import Stopped, stopping
    from trainer.core.lab_serve import Served
    from trainer.core.remote import Hello, dojo_version

    try:
        with stopping():
            lines, eof = _stdin_lines()
            _say(Hello(dojo_version(), platform.python_version()).to_json())
            server = _Server(eof)
            try:
                while (line := _next_request(lines)) is not None:
                    if not line.strip():
                        continue
                    rc = server.handle(line)
                    if rc is None:
                        break
                    _say(Served(rc).to_json())
                    server.prepare_next()
            except BrokenPipeError:
                pass
            finally:
                server.close()
    except Stopped as exc:  # the children are killed and their folders removed by now
        sys.exit(exc.status)


IDLE_S = 3600.0  # a connection silent this long has gone (a link that died without a word)


def _next_request(lines: queue.Queue[str | None]) -> str | None:
    """The next request line; None at the end of input, or after IDLE_S without one (sshd
    may never notice a client that vanished, so the serve does not wait for ever)."""
    try:
        return lines.get(timeout=IDLE_S)
    except queue.Empty:
        return None


def _probe() -> dict[str, Any]:
    """What this install offers: versions, devices, sandbox protections, disk."""
    from trainer.core.remote import dojo_version
    from trainer.core.store import data_dir

    info: dict[str, Any] = {"version": dojo_version(), "python": platform.python_version(),
                            "platform": platform.platform(terse=True)}
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_cuda"] = torch.version.cuda
        info["cuda"] = [torch.cuda.get_device_name(i)
                        for i in range(torch.cuda.device_count())]
    except Exception as exc:  # torch missing or broken: say so, probe the rest
        info["torch_error"] = f"{type(exc).__name__}: {exc}"
    try:
        from lab.grader.confine import missing_here

        info["sandbox_missing"] = missing_here()
    except Exception as exc:
        info["sandbox_missing"] = [f"could not check: {exc}"]
    data = data_dir()
    info["data_dir"] = str(data)
    info["free_mb"] = round(_free_mb(data))
    return info


@remote.command(hidden=True)
def probe() -> None:
    """Run on the host by `dojo remote check`: one JSON line of what it offers."""
    _say(json.dumps(_probe()))


@remote.command()
@click.argument("host")
def check(host: str) -> None:
    """Print what HOST offers for grading (Python, Dojo version, torch, CUDA devices, sandbox
    protections, free disk) and what is missing; exit 1 when it cannot grade."""
    from trainer.core.remote import RemoteError
    from trainer.core.remote_setup import check_report, probe_host

    try:
        info = probe_host(host)
    except (RemoteError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    lines, ok = check_report(host, info)
    for line in lines:
        click.echo(line)
    sys.exit(0 if ok else 1)


@remote.command()
@click.argument("host")
@click.option("--cpu-only", is_flag=True, help="Install the CPU build of torch even where the "
              "host has a GPU.")
def setup(host: str, cpu_only: bool) -> None:
    """Install this same version of Serving Dojo on HOST (over ssh): its source is copied to
    ~/.serving-dojo/src, a virtual environment made in ~/.serving-dojo/venv with its
    dependencies (the CUDA build of torch where the host has an NVIDIA GPU); pip's progress is
    shown. Run again to upgrade it after updating Dojo here."""
    from trainer.core.remote import RemoteError
    from trainer.core.remote_setup import setup_host

    try:
        setup_host(host, click.echo, cpu_only=cpu_only,
                   terminal=sys.stdin.isatty() and sys.stdout.isatty())
    except (RemoteError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
