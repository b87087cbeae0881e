"""`dojo lab …`: list, show, start (and `--interview`), grade, watch, hint and reset; restore,
due and rebuild (labs that come back: `lab.rebuild`) live in `trainer.commands.lab_cards` and
are added to this group at the end of the module. Each command holds one `trainer.core.lab.Lab`
(one open store; `trainer.commands.lab_common.opened`).

Only click and the standard library at top level; the lab core is imported inside each command
so `dojo --help` stays fast. Exit status of `grade`: 0 pass, 1 fail, 2 usage error, 3 the host
could not grade; 130 / 143 / 129 when Ctrl-C, SIGTERM or SIGHUP stopped it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from questions.wording import plural
from trainer.commands.lab_common import DEVICE_CHOICE, DEVICE_HELP, freeze_at_exit, opened
from trainer.commands.lab_common import exercise as _exercise
from trainer.commands.lab_common import usage_error as _usage_error

if TYPE_CHECKING:
    from trainer.core.lab import Lab



class _LabGroup(click.Group):
    """Every `dojo lab` command: a read-only data folder or workspace is said in one line
    ("read-only: answers will not be saved, ..."), never a PermissionError traceback; SIGTERM
    and SIGHUP end it like Ctrl-C, cleaning up, with status 143 / 129 (`lab.grader.stops`)."""

    def invoke(self, ctx: click.Context) -> Any:
        from lab.grader.stops import Stopped, say_stopped, stopping

        freeze_at_exit()  # a lab command may load torch: its exit need not collect it
        try:  # SIGTERM/SIGHUP clean up like Ctrl-C: children killed, folders removed
            with stopping():
                return self._invoke(ctx)
        except Stopped as exc:
            say_stopped(exc)
            sys.exit(exc.status)

    def _invoke(self, ctx: click.Context) -> Any:
        import errno

        try:
            return super().invoke(ctx)
        except OSError as exc:
            from lab.workspace import ReadOnlyLabError, WorkspaceFileError

            if isinstance(exc, WorkspaceFileError):  # a pipe, a device, a huge file: named
                raise click.ClickException(str(exc.strerror)) from exc
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise

            if isinstance(exc, ReadOnlyLabError):  # its message says it all
                raise click.ClickException(str(exc.strerror)) from exc
            raise click.ClickException(
                f"read-only: answers will not be saved, and {exc.filename or 'a lab file'} "
                f"cannot be written ({exc.strerror}). Make it writable, or work in another "
                "folder with --workspace DIR.") from exc


@click.group(cls=_LabGroup)
def lab() -> None:
    """Graded coding labs: start an exercise, edit the file, grade it."""


@lab.command("list")
def list_() -> None:
    """Exercises, their levels, your status and best figures (from your graded attempts)."""
    from lab.exercises import discover

    exercises = discover()
    with opened(say_read_only=True) as lab:
        rows = lab.rows(exercises)  # the Lab screen's rows
    width = max((len(lvl.title) for ex in exercises for lvl in ex.levels), default=0)
    id_width = max((len(ex.id) for ex in exercises), default=0)  # tensor-parallel is 15
    for ex in exercises:
        click.echo(f"{ex.id:<{id_width}}  {ex.title} — {ex.summary}")
        missing = ex.unavailable()
        if missing:
            click.echo(f"  unavailable here: it {missing}")
        for row in (r for r in rows if r.exercise == ex.id):
            extra = "".join(f" · {x}" for x in (row.best, row.back) if x)
            gated = f" [gate: {row.gate}]" if row.gate else ""
            click.echo(f"  L{row.level} {row.level_title:<{width}}  {row.status:<12}"
                       f"{extra}{gated}")


@lab.command()
@click.argument("exercise_id")
def show(exercise_id: str) -> None:
    """Print the exercise statement."""
    with opened() as lab:
        ex = _exercise(lab, exercise_id)
        click.echo(lab.statement(ex))  # without hints sections during an interview rehearsal


@lab.command()
@click.argument("exercise_id")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for your file (default: the data dir).",
)
@click.option("--level", type=int, help="The level you start (default: the first); one file "
              "holds every level, so this marks it started and grades only it.")
@click.option("--interview", is_flag=True, help="Rehearse the level as a coding round: your "
              "file is moved aside (`dojo lab restore` brings it back), a fresh stub, a clock, "
              "no hints; time to first pass and gradings are recorded.")
@click.option("--minutes", type=click.IntRange(1, 600), default=45, show_default=True,
              help="The interview's clock.")
def start(exercise_id: str, workspace: Path | None, level: int | None, interview: bool,
          minutes: int) -> None:
    """Copy the stub into your workspace and print its path (never overwrites your work)."""
    from lab.exercises import ExerciseError

    with opened() as lab:
        ex = _exercise(lab, exercise_id)
        try:
            chosen = ex.level(level if level is not None else ex.level_numbers[0])
        except ExerciseError as exc:
            _usage_error(str(exc))
        if interview:
            path, session = lab.start_interview(ex, chosen.number, minutes, workspace)
        else:
            path, created = lab.start(ex, chosen.number, workspace)
    if interview:
        click.echo(f"Interview rehearsal: {ex.id} level {chosen.number} ({chosen.title}), "
                   f"{plural(minutes, 'minute')}, hints off. The clock is running.")
        if session.moved_aside:
            click.echo(f"Your file was moved aside to {session.moved_aside} "
                       f"(`dojo lab restore {ex.id}` brings it back).")
        click.echo(f"Fresh stub: {path}")
        click.echo(f"Then run: dojo lab grade {ex.id} --level {chosen.number}")
        return
    what = f"{ex.id} level {chosen.number} ({chosen.title})"
    if created:
        click.echo(f"Started {what}: edit {path}")
    else:
        click.echo(f"{what}: already started, your file is untouched: {path}")
    only = f" --level {chosen.number}" if level is not None else ""
    click.echo(f"Then run: dojo lab grade {ex.id}{only}   (or: dojo lab watch {ex.id}{only})")
    click.echo(path)


def _grade_once(
    lab: Lab, ex: Any, path: Path, levels: list[int] | None, device: str, seed: int | None,
    as_json: bool, models: dict[str, str] | None = None, prepared: Any = None,
    host: Any = None, *, record: bool = False,
) -> bool:
    """Grade and record (`trainer.core.lab.Lab.grade`) and print the report or the JSON
    events; `prepared`: a child started ahead by `lab.grader.runner.prepare` (watch, serve);
    `host`: grade there over SSH (a name or an open `RemoteSession`; `RemoteError` when that
    fails, nothing recorded)."""
    from lab.grader.events import Event, to_json
    from lab.grader.report import TextReport
    from trainer.core.lab import first_pass

    def emit(event: Event) -> None:
        if as_json:
            click.echo(to_json(event))
            sys.stdout.flush()
        else:
            report(event)

    status = ProgressLine() if sys.stdout.isatty() and not as_json else None
    report = TextReport(click.echo, status=status)
    try:
        graded = lab.grade(ex, path, levels, device, seed, emit, models, prepared, host,
                           record=record)
    finally:  # an interrupted grading must not leave the progress line on the terminal
        if status is not None:
            status.close()
    if as_json:
        return graded.passed
    if graded.session is not None:
        session = graded.session
        click.echo(f"interview: {session.clock()} · grading {session.gradings}"
                   f"{first_pass(session)}")
    if graded.recorder.card_error:
        click.echo(f"note: {graded.recorder.card_error}", err=True)
    for line in lab.card_lines(ex, graded):
        click.echo(line)
    return graded.passed


class ProgressLine:
    """The grading's progress line ("  L1 case 3/28: name …"), drawn in place by rich's
    progress display on a terminal; `""` clears it before a permanent line is written.

    rich keeps the line within the terminal's width and erases it when cleared; case names are
    shown as written (never read as rich markup)."""

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import Progress, TextColumn
        from rich.table import Column

        column = TextColumn("{task.description}", markup=False,
                            table_column=Column(no_wrap=True, overflow="ellipsis"))
        self.progress = Progress(column, console=console or Console(), transient=True,
                                 auto_refresh=False, redirect_stdout=False,
                                 redirect_stderr=False)
        self._task: Any = None

    def __call__(self, text: str) -> None:
        if not text:
            self.close()
            return
        if self._task is None:
            self.progress.start()
            self._task = self.progress.add_task(text)
        else:
            self.progress.update(self._task, description=text)
        self.progress.refresh()

    def close(self) -> None:
        """Erase the line (if shown) and hand the terminal back."""
        if self._task is not None:
            self.progress.remove_task(self._task)
            self._task = None
            self.progress.stop()


def _resolve_file(lab: Lab, ex: Any, file: Path | None) -> Path:
    path = file if file is not None else lab.state.solution_path(ex)
    if not path.is_file():
        hint = "" if file is not None else f" — run `dojo lab start {ex.id}` first"
        _usage_error(f"no solution file at {path}{hint}")
    if path.suffix != ".py":  # a notes.txt is not a failed attempt: nothing to grade
        _usage_error(f"{path} is not a Python file: --file takes a .py file with the "
                     f"functions of {ex.workspace_file}")
    return path


GRADE_OPTIONS = [
    click.option("--level", type=int, help="Grade only this level (default: all)."),
    click.option(
        "--file",
        "file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Grade this .py file instead of your workspace file (graded, not recorded as "
        "an attempt of the level unless --record).",
    ),
    click.option("--record", is_flag=True, help="Record a --file grading as an attempt of "
                 "the level, like your workspace file's."),
    click.option("--device", type=DEVICE_CHOICE, default="auto", show_default=True,
                 help=DEVICE_HELP),
    click.option("--seed", type=int, help="Replay the hidden cases of an earlier run."),
    click.option("--json", "as_json", is_flag=True, help="One JSON event per line."),
    click.option("--target", "target", metavar="PATH",
                 help="Your own local Hugging Face target checkpoint (spec-verify, batch-engine)."),
    click.option("--draft", "draft", metavar="PATH",
                 help="Your own local draft checkpoint, same tokenizer as the target "
                 "(spec-verify)."),
    click.option("--on", "on", metavar="HOST",
                 help="Grade on this SSH host (set up with `dojo remote setup HOST`; only the "
                 "file is sent, the attempt is recorded here); default: the lab_host setting; "
                 "`--on local` grades here."),
    click.option("--unconfined", is_flag=True,
                 help="Run your code without the sandbox (where neither user namespaces nor "
                 "Landlock can confine it, e.g. macOS); the attempt is recorded as unconfined."),
]


def _setup(
    lab: Lab, exercise_id: str, level: int | None, file: Path | None, target: str | None,
    draft: str | None,
) -> tuple[Any, Path, list[int] | None, dict[str, str]]:
    """Resolve and validate what `grade` and `watch` share (exit 2 on a usage error), so a bad
    level or checkpoint stops at once instead of failing every re-grade."""
    from lab.exercises import ExerciseError
    from lab.grader.plan import UsageError, check_models

    ex = _exercise(lab, exercise_id)
    path = _resolve_file(lab, ex, file)
    wanted = {role: p for role, p in (("target", target), ("draft", draft)) if p}
    try:
        if level is not None:
            ex.level(level)
        checked = check_models(ex, wanted, [level] if level is not None else None)
        models = {role: str(c.folder) for role, c in checked.items()}
    except (ExerciseError, UsageError) as exc:
        _usage_error(str(exc))
    return ex, path, [level] if level is not None else None, models


def _grade_options(fn: Any) -> Any:
    for option in reversed(GRADE_OPTIONS):
        fn = option(fn)
    return fn


@lab.command("grade")
@click.argument("exercise_id")
@_grade_options
def grade_cmd(
    exercise_id: str,
    level: int | None,
    file: Path | None,
    record: bool,
    device: str,
    seed: int | None,
    as_json: bool,
    target: str | None,
    draft: str | None,
    on: str | None,
    unconfined: bool,
) -> None:
    """Grade your solution: exit 0 if every required case passes, 1 if any fails, 2 on a usage
    error, 3 when the host (--on) could not grade it (nothing is recorded then); 130, 143 or
    129 when stopped by Ctrl-C, SIGTERM or SIGHUP (its sandbox removed either way)."""
    from lab.grader.runner import UsageError
    from trainer.core.remote import RemoteError

    with opened() as lab:
        ex, path, levels, models = _setup(lab, exercise_id, level, file, target, draft)
        host = _host(lab, on, models)
        _unconfine(unconfined, host)
        try:
            passed = _grade_once(lab, ex, path, levels, device, seed, as_json, models,
                                 host=host, record=record)
        except UsageError as exc:
            _usage_error(str(exc))
        except RemoteError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(3)
        except KeyboardInterrupt:  # the sandbox child is already gone (runner's finally)
            click.echo("\nInterrupted.", err=True)
            sys.exit(130)
    sys.exit(0 if passed else 1)


def _host(lab: Lab, on: str | None, models: dict[str, str]) -> str | None:
    """The SSH host to grade on: --on, else the lab_host setting; None for here (exit 2 for a
    bad name, or for --target/--draft, which name folders on this machine)."""
    try:
        host = lab.grading_host(on)
    except ValueError as exc:
        _usage_error(str(exc))
    if host is not None and models:
        _usage_error(f"--target/--draft name folders on this machine; they cannot be graded "
                     f"on {host} (use --on local)")
    return host


def _unconfine(unconfined: bool, host: str | None) -> None:
    """--unconfined (grade and watch): what GradeOptions.confine defaults to
    (lab.grader.plan); exit 2 with a host, which grades in its own sandbox."""
    from lab.grader.plan import NO_CONFINE_VAR

    if not unconfined:
        return
    if host is not None:
        _usage_error(f"--unconfined switches off this machine's sandbox; {host} grades in "
                     "its own (use --on local to grade here unconfined)")
    os.environ[NO_CONFINE_VAR] = "1"


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@lab.command()
@click.argument("exercise_id")
@_grade_options
@click.option(
    "--interval",
    type=float,
    default=0.5,
    show_default=True,
    help="Seconds between checks for a saved file.",
)
def watch(
    exercise_id: str,
    level: int | None,
    file: Path | None,
    record: bool,
    device: str,
    seed: int | None,
    as_json: bool,
    target: str | None,
    draft: str | None,
    on: str | None,
    unconfined: bool,
    interval: float,
) -> None:
    """Re-grade every time you save (Ctrl-C to stop); with a host (--on, lab_host) one
    connection stays open between gradings."""
    with opened() as lab:
        ex, path, levels, models = _setup(lab, exercise_id, level, file, target, draft)
        host = _host(lab, on, models)
        _unconfine(unconfined, host)
        try:
            _watch(lab, ex, path, levels, device, seed, as_json, models, interval, host,
                   record)
        except KeyboardInterrupt:
            if not as_json:
                click.echo("\nStopped watching.")
            sys.exit(0)


def _watch(lab: Lab, ex: Any, path: Path, levels: list[int] | None, device: str,
           seed: int | None, as_json: bool, models: dict[str, str], interval: float,
           host: str | None, record: bool = False) -> None:
    """Grade, prepare the next grading's child (or keep the host's connection), wait for a
    save; again (until Ctrl-C)."""
    from lab.grader.runner import GradeOptions, UsageError, prepare
    from lab.grader.stops import remembered_interrupts
    from trainer.core.remote import RemoteError, RemoteSession

    link = RemoteSession(host) if host is not None else None
    prepared = None
    with remembered_interrupts() as interrupted:  # a Ctrl-C a library swallowed still stops
        try:
            while True:
                stamp = _stamp(path)
                try:
                    _grade_once(lab, ex, path, levels, device, seed, as_json, models, prepared,
                                link, record=record)
                except UsageError as exc:  # e.g. the file vanished mid-save: wait for the next
                    click.echo(f"Error: {exc}", err=True)
                except RemoteError as exc:  # said once; the next save connects again
                    click.echo(f"Error: {exc}", err=True)
                    assert link is not None
                    link.close()
                    link = RemoteSession(link.host)
                interrupted()
                # the next grading's child starts (torch imported) while you edit
                if link is None:
                    prepared = prepare(ex, path, GradeOptions(levels=levels, device=device,
                                                              models=models))
                if not as_json:
                    click.echo(f"\nWatching {path} — save to re-grade, Ctrl-C to stop.")
                while _stamp(path) == stamp or _stamp(path) is None:
                    interrupted()
                    time.sleep(interval)
                if not as_json:
                    click.echo("\n── file changed, re-grading ──")
        finally:  # only an exception (Ctrl-C, a stop) ends the loop: the process is leaving
            if prepared is not None:
                prepared.close(leaving=True)
            if link is not None:
                link.close()


def _reply(reply: Any) -> None:
    """One reply of `dojo lab serve` (`trainer.core.lab_serve.Served`/`PrepareReply`), flushed."""
    click.echo(reply.to_json())
    sys.stdout.flush()


def _serve_one(lab: Lab, request: Any, prepared: Any, link: Any = None) -> tuple[int, Any]:
    """Grade one request (on `link`'s host when given: a `RemoteSession`); returns the exit
    status `dojo lab grade` would have had and the arguments to prepare the next child with
    (None after a bad request, or when the grading ran on a host)."""
    from lab.grader.runner import UsageError
    from trainer.core.remote import RemoteError

    try:
        ex, path, levels, models = _setup(lab, request.exercise, request.level, None, None,
                                          None)
        passed = _grade_once(lab, ex, path, levels, "auto", request.seed, True, models, prepared,
                             link)
    except (SystemExit, UsageError, RemoteError) as exc:
        if prepared is not None:
            prepared.close()
        if isinstance(exc, UsageError | RemoteError):
            click.echo(f"Error: {exc}", err=True)
            return (2 if isinstance(exc, UsageError) else 3), None
        return (exc.code if isinstance(exc.code, int) else 2), None  # _setup printed why
    return (0 if passed else 1), (ex, path, levels, models) if link is None else None


class _Link:
    """`dojo lab serve`'s connection to the lab_host setting's host, opened on first use and
    kept between gradings (the setting is read again for each request)."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.session: Any = None

    def current(self) -> Any:
        """The open session for the configured host, or None to grade here."""
        from trainer.core.remote import RemoteSession

        try:
            host = self.lab.grading_host(None)
        except ValueError:
            host = None
        if self.session is not None and (host is None or self.session.host != host):
            self.close()
        if host is not None and self.session is None:
            self.session = RemoteSession(host)
        return self.session

    def broken(self) -> None:
        """After a fault: the next request connects again."""
        self.close()

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


def _serve_prepare(lab: Lab, request: Any, prepared: Any) -> Any:
    """Start (or keep) the child for a likely grading of the request's exercise and level, and
    say {"event": "prepared", "ready": bool} once it is warm; silent about a lab not started
    (there is nothing to grade yet, so nothing to prepare)."""
    from lab.exercises import ExerciseError
    from lab.grader.runner import GradeOptions, prepare
    from trainer.core.lab_serve import PrepareReply

    started, kept = time.monotonic(), False
    lab.refresh()  # the app may have started the exercise since
    try:
        ex = lab.exercise(request.exercise)
        path = lab.state.solution_path(ex)
        level = request.level
        if level is not None:
            ex.level(level)
    except ExerciseError:
        ex = None
    if ex is None or not path.is_file():
        if prepared is not None:
            prepared.close()
        prepared = None
    else:
        earlier = prepared
        prepared = prepare(ex, path,
                           GradeOptions(levels=[level] if level is not None else None),
                           current=prepared)
        kept = prepared is not None and prepared is earlier
    ready = prepared is not None and prepared.wait() is not None and prepared.usable
    _reply(PrepareReply(ready, kept, round(time.monotonic() - started, 3)))
    return prepared


def _die_with_parent(parent: str | None) -> None:
    """The server gets SIGTERM when the app that started it ends, even by SIGKILL, and stops
    like `dojo lab grade` does (`lab.grader.stops`): its sandboxes killed and their folders
    removed (should it not get that far, each sandbox's waiter still kills its tree once the
    server's end of their lifeline pipe closes). Linux only; elsewhere the app's own `stop`
    has to do."""
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    if str(os.getppid()) != parent:  # the app ended before the line above
        os._exit(1)


@lab.command(hidden=True)
def serve() -> None:
    """For the TUI: requests read from stdin, one JSON object a line. {"exercise": ID,
    "level": N} grades (with "seed": S, that run's cases), answered with the `--json` events
    of `dojo lab grade` and a closing {"event": "served", "rc": 0|1|2}; with "prepare": true
    it only starts the child that grading would use (torch imported in both processes) and
    answers {"event": "prepared"}.
    Imports stay warm between requests, and the next grading's child is started while you
    edit. The protocol is written down in `trainer.core.lab_serve`, whose `GradingServer` is
    its client. One `Lab` (one open store) serves every request."""
    with opened() as lab:
        _serve(lab)


def _serve(lab: Lab) -> None:
    from lab.grader.runner import GradeOptions, prepare
    from trainer.core.lab_serve import SERVE_PARENT_VAR, Served, ServeRequest

    _die_with_parent(os.environ.get(SERVE_PARENT_VAR))
    prepared = None
    link = _Link(lab)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            request = ServeRequest.parse(line)
            if request is None:
                click.echo(f"Error: not a grade request: {line.strip()[:80]!r}", err=True)
                _reply(Served(2))
                continue
            session = link.current()
            if request.prepare and session is not None:
                _serve_connect(session, link)
                continue
            if request.prepare:
                prepared = _serve_prepare(lab, request, prepared)
                continue
            rc, again = _serve_one(lab, request, prepared, session)
            prepared = None
            if rc == 3:
                link.broken()
            _reply(Served(rc))
            if again is not None:
                ex, path, levels, models = again
                prepared = prepare(ex, path, GradeOptions(levels=levels, models=models))
    finally:  # on the way out (stdin closed, or SIGTERM from the app: 5 s before SIGKILL),
        if prepared is not None:  # so this process's own imports are not awaited
            prepared.close(leaving=True)
        link.close()


def _serve_connect(session: Any, link: _Link) -> None:
    """A prepare request while grading on a host: connect now (ssh, the host's imports), so
    the grading only sends the file; answered like a prepare."""
    from trainer.core.lab_serve import PrepareReply
    from trainer.core.remote import RemoteError

    started, kept = time.monotonic(), session.hello is not None
    try:
        if not kept:
            session.open()
        ready = True
    except RemoteError as exc:
        click.echo(f"Error: {exc}", err=True)
        link.broken()
        ready = False
    _reply(PrepareReply(ready, kept, round(time.monotonic() - started, 3)))


@lab.command()
@click.argument("exercise_id")
def hint(exercise_id: str) -> None:
    """Reveal the next hint (the count is remembered)."""
    with opened() as lab:
        ex = _exercise(lab, exercise_id)
        revealed, off = lab.next_hint(ex)
        shown = lab.state.hints_shown(ex)
    if off:
        click.echo(f"No hint: {off}.", err=True)
        sys.exit(1)
    if revealed is None:
        click.echo(f"No more hints for {ex.id}: all {len(shown)} are shown. The last one:")
        if shown:
            click.echo(shown[-1])
        return
    from trainer.core.text import reflow

    click.echo(f"Hint {revealed.number}/{revealed.total} for {ex.id}:")
    for line in reflow(revealed.text):  # one line per paragraph: the terminal wraps it
        click.echo(line)


@lab.command()
@click.argument("exercise_id")
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    help="Reset the file in this folder instead of your remembered workspace.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def reset(exercise_id: str, workspace: Path | None, yes: bool) -> None:
    """Replace your file with a fresh stub, keeping a backup of the old one."""
    with opened() as lab:
        ex = _exercise(lab, exercise_id)
        path = lab.state.solution_path(ex, workspace)
        if not yes and not click.confirm(
            f"Replace {path} with a fresh stub? (a backup is kept)", default=False
        ):
            click.echo("Nothing changed.")
            sys.exit(1)
        path, backup = lab.state.reset(ex, workspace)
    if backup is not None:
        click.echo(f"Backed up your file to {backup}")
    click.echo(f"Fresh stub at {path}")


@lab.command("new")
@click.argument("exercise_id")
@click.option("--question", metavar="QID", help="A bank question the example's cases test "
              "(default: the bank's first; concepts.toml names it).")
def new(exercise_id: str, question: str | None) -> None:
    """Scaffold a new exercise: every file of the checklist in docs/extending.md, with one
    working example level (a stub that fails, a reference that passes), so the catalogue
    tests pass as it stands. Then replace the example with your levels."""
    from lab.exercises.scaffold import ScaffoldError
    from trainer.core.lab import new_exercise

    try:
        written = new_exercise(exercise_id, question)
    except (ScaffoldError, ValueError) as exc:
        _usage_error(str(exc))
    for path in written:
        click.echo(f"wrote {path}")
    click.echo("Then: python -m pytest tests/lab/test_catalogue.py tests/lab/test_contracts.py "
               f"tests/lab/test_concepts.py; dojo lab start {exercise_id}; "
               f"dojo lab grade {exercise_id}")


def _add_models_command() -> None:
    """`dojo lab models`: the shipped draft/target pairs and their measured figures; and the
    lab-card commands (restore, rebuild, due), which live in `trainer.commands.lab_cards`."""
    from trainer.commands.lab_cards import due_cmd, rebuild, restore
    from trainer.commands.models import models

    lab.add_command(models)
    for command in (restore, rebuild, due_cmd):
        lab.add_command(command)


_add_models_command()
