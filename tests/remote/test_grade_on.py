"""`dojo lab grade --on HOST` through a real sshd on loopback and a second Dojo install: the same
verdict as here, recorded here once with the host named; every fault one sentence, nothing
recorded."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from lab.grader.testing import reference_as_solution
from tests.lab.conftest import default_signals, save
from tests.remote.loopback import REPO, Sshd, remote_install
from trainer.cli import main
from trainer.core.remote import parse_ping

pytestmark = pytest.mark.slow

STUB = REPO / "lab" / "exercises" / "kv_bytes" / "stub.py"
SLEEPY = '''
import time

def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    time.sleep(60)
'''


def grade(*args: str) -> Result:
    return CliRunner().invoke(main, ["lab", "grade", "kv-bytes", *args])


def attempts() -> list[Any]:
    from scheduler.store import Store

    with Store.open() as store:
        return list(store.lab_attempts())


def shape(stdout: str) -> list[tuple[Any, ...]]:
    """What must be the same wherever it ran: each event's kind, case and verdict."""
    out = []
    for line in stdout.splitlines():
        e = json.loads(line)
        out.append((e["event"], e.get("level"), e.get("case"), e.get("kind"), e.get("passed"),
                    e.get("seed"), json.dumps(e.get("params"), sort_keys=True)))
    return out


def test_same_verdict_and_cases_here_and_on_the_host_recorded_here_once_each(
        on_host: str, tmp_path: Path, remote_root: Path) -> None:
    def outside_data() -> dict[str, float]:
        return {str(p): p.stat().st_mtime for p in remote_root.rglob("*")
                if not p.is_relative_to(remote_root / "data")}

    before = outside_data()
    passing = reference_as_solution("kv-bytes", tmp_path / "ok")
    failing = tmp_path / "bad" / "kv_bytes.py"
    failing.parent.mkdir()
    failing.write_text(STUB.read_text())
    for path, rc in ((failing, 1), (passing, 0)):
        here = grade("--level", "1", "--file", str(path), "--record", "--seed", "7", "--json",
                     "--on", "local")
        there = grade("--level", "1", "--file", str(path), "--record", "--seed", "7", "--json",
                      "--on", on_host)
        assert (here.exit_code, there.exit_code) == (rc, rc), there.output
        assert shape(here.stdout) == shape(there.stdout)
        summary = json.loads(there.stdout.splitlines()[-1])
        assert summary["host"] == on_host and summary["stored"] is True
        assert summary["replay"].endswith(f"--on {on_host}")
    rows = attempts()
    assert [(a.passed, a.metrics.get("host")) for a in rows] == [
        (False, None), (False, on_host), (True, None), (True, on_host)]
    remote = [a for a in rows if a.metrics.get("host")]
    assert all(a.metrics["device_name"] == "pure Python exercise, no torch" for a in remote)
    assert [len(a.cases) for a in remote] == [len(a.cases) for a in rows if a not in remote]
    # the host wrote only its copy of the file, in its own data folder, and recorded nothing
    written = sorted(str(p.relative_to(remote_root)) for p in remote_root.joinpath(
        "data").rglob("*") if p.is_file())
    assert written == ["data/remote/kv-bytes/kv_bytes.py"]
    assert outside_data() == before  # its install untouched: no caches, no temporary files


def test_text_report_names_the_host_and_export_keeps_it(on_host: str, tmp_path: Path) -> None:
    path = reference_as_solution("kv-bytes", tmp_path)
    result = grade("--level", "1", "--file", str(path), "--record", "--on", on_host)
    assert result.exit_code == 0, result.output
    assert f"at {on_host} · seed" in result.stdout
    assert "PASSED in" in result.stdout and f"on cpu at {on_host}" in result.stdout
    export = CliRunner().invoke(main, ["export", str(tmp_path / "h.json")])
    assert export.exit_code == 0
    data = json.loads((tmp_path / "h.json").read_text())
    assert data["lab_attempts"][0]["metrics"]["host"] == on_host


def test_the_lab_host_setting_is_the_default_and_on_local_overrides_it(
        on_host: str, tmp_path: Path) -> None:
    path = reference_as_solution("kv-bytes", tmp_path)
    assert CliRunner().invoke(main, ["settings", f"lab_host={on_host}"]).exit_code == 0
    assert grade("--level", "1", "--file", str(path), "--record").exit_code == 0
    assert grade("--level", "1", "--file", str(path), "--record", "--on", "local").exit_code == 0
    assert [a.metrics.get("host") for a in attempts()] == [on_host, None]
    shown = CliRunner().invoke(main, ["settings", "lab_host=local"]).stdout
    assert "lab_host           local" in shown
    bad = CliRunner().invoke(main, ["settings", "lab_host=-oProxyCommand=x"])
    assert bad.exit_code == 2 and "lab_host must be an ssh destination" in bad.output


def fault(path: Path, host: str, sentence: str) -> None:
    result = grade("--level", "1", "--file", str(path), "--record", "--on", host)
    assert result.exit_code == 3, result.output
    assert result.stderr.strip().splitlines() == [f"Error: {sentence}"]
    assert attempts() == []


@pytest.fixture
def stub_file(tmp_path: Path) -> Path:
    path = tmp_path / "kv_bytes.py"
    path.write_text(STUB.read_text())
    return path


def test_wrong_key(on_host: str, stub_file: Path) -> None:
    fault(stub_file, "dojo-wrong-key", "dojo-wrong-key refused the login (Permission denied): "
          "add your public key to its ~/.ssh/authorized_keys, load it with ssh-add, or set the "
          "User in ~/.ssh/config.")


def test_unknown_host(on_host: str, stub_file: Path) -> None:
    fault(stub_file, "dojo-unknown-host", "dojo-unknown-host's host key is not in your "
          "known_hosts, so ssh refused to connect: run `ssh dojo-unknown-host` once to check "
          "and accept it.")


def test_host_key_changed(on_host: str, stub_file: Path) -> None:
    fault(stub_file, "dojo-changed-key", "dojo-changed-key's host key has changed since you "
          "last connected (a reinstalled host, or someone in between): nothing was sent; check "
          "the key, then remove the old one with `ssh-keygen -R dojo-changed-key` (or edit your "
          "known_hosts).")


def test_ssh_missing(on_host: str, stub_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOJO_SSH_COMMAND", "no-such-ssh-here -F x")
    fault(stub_file, on_host, "ssh is not installed here (DOJO_SSH_COMMAND names "
          "'no-such-ssh-here'); install the OpenSSH client, or set DOJO_SSH_COMMAND to the "
          "command to use.")


def test_dojo_missing_on_the_host(on_host: str, stub_file: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOJO_REMOTE_ROOT", str(tmp_path / "none"))
    fault(stub_file, on_host, f"Serving Dojo is not installed on {on_host}: run "
          f"`dojo remote setup {on_host}` first.")


def test_python_missing_on_the_host(on_host: str, stub_file: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOJO_REMOTE_ROOT", str(tmp_path / "none"))
    monkeypatch.setenv("DOJO_REMOTE_PYTHON", "python3-not-here")
    fault(stub_file, on_host, f"{on_host} has no Python (python3-not-here is not on its "
          f"PATH): install Python 3.11 or newer there, then run `dojo remote setup {on_host}`.")


def test_another_version_on_the_host_is_refused_naming_both(
        on_host: str, stub_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainer.core.remote import dojo_version

    old = remote_install(tmp_path / "old", version="0.0.9")
    monkeypatch.setenv("DOJO_REMOTE_ROOT", str(old))
    fault(stub_file, on_host, f"{on_host} runs Serving Dojo 0.0.9 and this machine "
          f"{dojo_version()}: run `dojo remote setup {on_host}` to install {dojo_version()} "
          "there.")
    assert not (old / "data" / "remote").exists()  # nothing was sent


def test_host_out_of_disk(on_host: str, stub_file: Path, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch, remote_root: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs as the host's data folder needs root")
    full = tmp_path / "full"
    full.mkdir()
    (full / "venv").symlink_to(remote_root / "venv")
    (full / "data").mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs",
                              str(full / "data")], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        monkeypatch.setenv("DOJO_REMOTE_ROOT", str(full))
        result = grade("--level", "1", "--file", str(stub_file), "--record", "--on", on_host)
        assert result.exit_code == 3, result.output
        assert result.stderr.strip() == (
            f"Error: {on_host} is out of disk space (1 MiB free in {full}/data, and a grading "
            "needs 64 MiB); nothing was recorded.")
        assert attempts() == []
    finally:
        subprocess.run(["umount", str(full / "data")], check=False)


def _host_processes(root: Path, running: bytes = b"") -> list[int]:
    """Processes running the host's install (its serve, the sandbox children), those whose
    command line also holds `running` when given."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if str(root).encode() in cmdline and running in cmdline:
            found.append(int(proc.name))
    return found


def _wait_for(check: Any, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def _sshd_sessions(server: Sshd) -> list[int]:
    """Every sshd process serving a connection (the listener's descendants named sshd)."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,comm="], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    rows = [line.split(maxsplit=2) for line in out if line.strip()]
    tree: list[int] = []
    frontier = {server.process.pid}
    while frontier:
        children = {int(p) for p, pp, comm in rows if int(pp) in frontier and comm == "sshd"}
        tree += children
        frontier = children
    return tree


def _host_folders(root: Path) -> set[Path]:
    """The sandbox folders in the host's temporary directory (its data folder's tmp)."""
    return set((root / "data" / "tmp").glob("dojo-sandbox-*"))


def _grading_cli(path: Path, host: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "trainer", "lab", "grade", "kv-bytes",
                             "--level", "1", "--file", str(path), "--record", "--on", host],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)


def test_connection_dropped_mid_grading_kills_the_host_children_and_records_nothing(
        on_host: str, sshd: Sshd, tmp_path: Path, remote_root: Path) -> None:
    path = tmp_path / "kv_bytes.py"
    path.write_text(SLEEPY)
    earlier = _host_folders(remote_root)  # another test's, of this session's host
    cli = _grading_cli(path, on_host)
    # the host's sandbox child is running the learner's sleeping call
    assert _wait_for(lambda: _host_processes(remote_root, b"lab.grader")), cli.stderr
    for pid in _sshd_sessions(sshd):
        os.kill(pid, signal.SIGKILL)
    _out, err = cli.communicate(timeout=60)
    assert cli.returncode == 3
    assert err.strip().splitlines()[-1].startswith(
        f"Error: the connection to {on_host} dropped during the grading")
    assert err.strip().endswith("nothing was recorded.")
    assert _wait_for(lambda: not _host_processes(remote_root)), _host_processes(remote_root)
    assert attempts() == []
    # the host's grader removed its sandbox's folder on the way out (TMPDIR is in its data)
    assert _host_folders(remote_root) <= earlier


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_the_hosts_grader_stopped_by_a_signal_ends_its_children_and_folders(
        on_host: str, tmp_path: Path, remote_root: Path, sig: int) -> None:
    """The host's `dojo remote serve` stopped mid-grading (its session hung up, the host's
    admin): it kills its sandbox, removes the folder and ends; this side says the link
    dropped and records nothing."""
    path = tmp_path / "kv_bytes.py"
    path.write_text(SLEEPY)
    earlier = _host_folders(remote_root)
    cli = _grading_cli(path, on_host)
    assert _wait_for(lambda: _host_processes(remote_root, b"lab.grader")), cli.stderr
    assert _host_folders(remote_root) - earlier
    serve = [p for p in _host_processes(remote_root, b"remote\0serve")
             if p not in _host_processes(remote_root, b"lab.grader")]
    assert len(serve) == 1, serve
    os.kill(serve[0], sig)
    _out, err = cli.communicate(timeout=60)
    assert cli.returncode == 3, err
    assert f"Error: the connection to {on_host} dropped during the grading" in err
    assert _wait_for(lambda: not _host_processes(remote_root)), _host_processes(remote_root)
    assert _host_folders(remote_root) <= earlier
    assert attempts() == []


def test_a_link_gone_silent_stops_the_hosts_grading_and_removes_its_folders(
        on_host: str, tmp_path: Path, remote_root: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The learner's ssh frozen mid-grading (a link that died without a word: the host's sshd
    notices nothing): its pings stop, and the host's serve stops the grading as at EOF."""
    monkeypatch.setenv("DOJO_REMOTE_PING_S", "0.5")  # the host gives up after 3 x 0.5 + 5 s
    path = tmp_path / "kv_bytes.py"
    path.write_text(SLEEPY)
    earlier = _host_folders(remote_root)
    cli = _grading_cli(path, on_host)
    try:
        assert _wait_for(lambda: _host_processes(remote_root, b"lab.grader")), cli.stderr
        ssh = _descendants(cli.pid)  # the ssh client (the host's side runs under sshd)
        assert ssh, "no ssh client under the grading"
        for pid in ssh:
            os.kill(pid, signal.SIGSTOP)

        def host_side() -> list[int]:  # (the frozen ssh's command line names the host's root)
            return [p for p in _host_processes(remote_root) if p not in ssh]

        assert _wait_for(lambda: not host_side(), 60), host_side()
        assert _host_folders(remote_root) <= earlier
    finally:
        for pid in _descendants(cli.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    _out, err = cli.communicate(timeout=60)
    assert cli.returncode == 3, err
    assert attempts() == []


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        out.extend(int(c) for c in children)
        todo.extend(int(c) for c in children)
    return out


def test_grading_past_its_time_limit_is_stopped(
        on_host: str, tmp_path: Path, remote_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kv_bytes.py"
    path.write_text(SLEEPY)
    monkeypatch.setenv("DOJO_REMOTE_TIME_LIMIT_S", "2")
    result = grade("--level", "1", "--file", str(path), "--record", "--on", on_host)
    assert result.exit_code == 3
    assert result.stderr.strip() == (f"Error: the grading on {on_host} ran past its time limit "
                                     "of 2 s and was stopped; nothing was recorded.")
    assert _wait_for(lambda: not _host_processes(remote_root)), _host_processes(remote_root)
    assert attempts() == []


def test_only_the_workspace_file_and_the_request_leave_this_machine(
        remote_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "sent.jsonl"
    monkeypatch.setenv("FAKE_SSH_LOG", str(log))
    monkeypatch.setenv("DOJO_SSH_COMMAND",
                       f"{sys.executable} {Path(__file__).parent / 'fake_ssh.py'}")
    monkeypatch.setenv("DOJO_REMOTE_ROOT", str(remote_root))
    path = reference_as_solution("kv-bytes", tmp_path / "mine")
    result = grade("--level", "1", "--file", str(path), "--seed", "3", "--on", "box")
    assert result.exit_code == 0, result.output
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    argv = sent[0]["argv"]
    # besides the request, at most the session's pings, which carry nothing ({"ping": S})
    stdin = [s["stdin"] for s in sent[1:] if parse_ping(s["stdin"].strip()) is None]
    assert argv[argv.index("--") - 1] == "box"
    assert str(tmp_path) not in " ".join(argv) and "DOJO_HOME=\"$R/data\"" in argv[-1]
    assert len(stdin) == 1
    assert json.loads(stdin[0]) == {"exercise": "kv-bytes", "level": 1, "device": "auto",
                                    "seed": 3, "name": "kv_bytes.py",
                                    "source": path.read_text()}


def test_watch_grades_each_save_on_the_host_over_one_connection(
        on_host: str, sshd: Sshd, tmp_path: Path) -> None:
    path = tmp_path / "kv_bytes.py"
    path.write_text(STUB.read_text())
    watch = subprocess.Popen([sys.executable, "-m", "trainer", "lab", "watch", "kv-bytes",
                              "--level", "1", "--file", str(path), "--record", "--on", on_host,
                              "--json", "--interval", "0.1"], stdout=subprocess.PIPE,
                             text=True, cwd=REPO, preexec_fn=default_signals())
    assert watch.stdout is not None

    def next_summary() -> dict[str, Any]:
        for line in watch.stdout:  # type: ignore[union-attr]
            event = json.loads(line)
            if event["event"] == "summary":
                return dict(event)
        raise AssertionError("watch ended")

    try:
        first = next_summary()
        sessions = _sshd_sessions(sshd)
        save(path, reference_as_solution("kv-bytes", tmp_path / "ref").read_text())
        second = next_summary()
        assert _sshd_sessions(sshd) == sessions  # the same connection graded the save
    finally:
        watch.send_signal(signal.SIGINT)
        watch.wait(timeout=30)
    assert (first["passed"], second["passed"]) == (False, True)
    assert first["host"] == second["host"] == on_host
    assert [(a.passed, a.metrics.get("host")) for a in attempts()] == [
        (False, on_host), (True, on_host)]
