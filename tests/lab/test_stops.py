"""`lab.grader.stops`: SIGTERM and SIGHUP become `Stopped` in the main thread (every `finally`
runs), a second one during the cleanup is ignored, a cleanup that hangs is cut short with the
signal's status, and outside the block nothing changes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from lab.grader.stops import STOP_SIGNALS, Stopped, stopping
from tests.lab.conftest import ROOT, default_signals

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _run(code: str, ignore: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run `code` in a child started with the default dispositions, but `ignore`d ones."""

    def ignored() -> None:
        for sig in ignore:
            signal.signal(sig, signal.SIG_IGN)

    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, cwd=str(ROOT),
                          env={**os.environ, "PYTHONPATH": str(ROOT)},
                          preexec_fn=default_signals(ignored))


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_raises_stopped_and_finally_runs_deaf_to_a_second_one(
        sig: int, status: int) -> None:
    out = _run(f"""
        import os, signal, sys
        from lab.grader.stops import Stopped, stopping
        try:
            with stopping():
                try:
                    os.kill(os.getpid(), {int(sig)})
                    print("not stopped")
                finally:
                    os.kill(os.getpid(), {int(sig)})  # a second one: ignored while cleaning
                    print("cleaned up")
        except Stopped as exc:
            print(exc, exc.status)
            sys.exit(exc.status)
        """)
    assert out.stdout.splitlines() == ["cleaned up", f"stopped by {signal.Signals(sig).name} "
                                                     f"{status}"]
    assert out.returncode == status


def test_a_signal_ignored_at_the_start_stays_ignored() -> None:
    """`nohup dojo lab grade …`: the terminal's hangup must not stop the grading (SIGTERM still
    does)."""
    out = _run("""
        import os, signal, sys
        from lab.grader.stops import Stopped, stopping
        try:
            with stopping():
                os.kill(os.getpid(), signal.SIGHUP)
                print("went on after SIGHUP", signal.getsignal(signal.SIGHUP) is signal.SIG_IGN)
                os.kill(os.getpid(), signal.SIGTERM)
                print("not stopped")
        except Stopped as exc:
            print(exc)
        print("still ignored", signal.getsignal(signal.SIGHUP) is signal.SIG_IGN)
        """, ignore=(signal.SIGHUP,))
    assert out.stdout.splitlines() == ["went on after SIGHUP True", "stopped by SIGTERM",
                                       "still ignored True"], out.stderr
    assert out.returncode == 0


def test_a_ctrl_c_that_library_code_swallowed_is_still_seen() -> None:
    out = _run("""
        import os, signal, time
        from lab.grader.stops import remembered_interrupts
        with remembered_interrupts() as interrupted:
            interrupted()  # nothing yet
            try:  # library code that swallows the exception (torch's pybind11 code did)
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(30)
            except KeyboardInterrupt:
                print("swallowed")
            try:
                interrupted()
                print("not seen")
            except KeyboardInterrupt:
                print("seen")
        print("restored", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        """)
    assert out.stdout.splitlines() == ["swallowed", "seen", "restored True"], out.stderr


def test_a_cleanup_that_hangs_is_cut_short_with_the_signals_status() -> None:
    out = _run("""
        import os, time
        from lab.grader import stops
        stops.GRACE_S = 0.2
        with stops.stopping():
            try:
                os.kill(os.getpid(), 15)
            finally:
                print("cleaning", flush=True)
                time.sleep(50)
        """)
    assert out.stdout == "cleaning\n"
    assert out.returncode == 143


def test_the_handlers_come_back_after_the_block() -> None:
    # as a terminal starts the command (this test run may ignore SIGHUP: nohup)
    runner = {sig: signal.signal(sig, signal.SIG_DFL) for sig in STOP_SIGNALS}
    try:
        before = [signal.getsignal(sig) for sig in STOP_SIGNALS]
        with stopping():
            assert all(callable(signal.getsignal(sig)) and signal.getsignal(sig) not in before
                       for sig in STOP_SIGNALS)
        assert [signal.getsignal(sig) for sig in STOP_SIGNALS] == before
    finally:
        for sig, handler in runner.items():
            signal.signal(sig, handler)
    assert Stopped(signal.SIGHUP).status == 129 and Stopped(signal.SIGTERM).name == "SIGTERM"
