"""`dojo remote check` against the loopback host, what `dojo remote setup` copies, and ssh's own
messages turned into one sentence each."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.remote.loopback import REPO, remote_install
from trainer.cli import main
from trainer.core.remote import dojo_version, explain
from trainer.core.remote_setup import install_script, source_archive


@pytest.mark.slow
def test_check_prints_what_the_host_offers_and_what_is_missing(
        on_host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ok = CliRunner().invoke(main, ["remote", "check", on_host])
    assert ok.exit_code == 0, ok.output
    lines = ok.stdout.splitlines()
    assert lines[0] == f"host:          {on_host}"
    assert f"Serving Dojo:  {dojo_version()}" in lines
    assert any(line.startswith("torch:         2.") for line in lines)
    assert "CUDA devices:  none (grades on its CPU)" in lines
    assert lines[-1] == "ready:         it can grade"
    old = remote_install(tmp_path / "old", version="0.0.9")
    monkeypatch.setenv("DOJO_REMOTE_ROOT", str(old))
    behind = CliRunner().invoke(main, ["remote", "check", on_host])
    assert behind.exit_code == 1
    assert f"Serving Dojo:  0.0.9 (here: {dojo_version()})" in behind.stdout
    assert behind.stdout.splitlines()[-1] == (
        f"missing:       Dojo 0.0.9 there, {dojo_version()} here: run "
        f"`dojo remote setup {on_host}`")


@pytest.mark.slow
def test_check_and_setup_say_why_a_host_cannot_be_reached(
        on_host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refused = CliRunner().invoke(main, ["remote", "check", "dojo-closed-port"])
    assert refused.exit_code == 1
    assert refused.output.strip() == ("Error: could not connect to dojo-closed-port: connection "
                                      "refused (is its sshd running?).")
    monkeypatch.setenv("DOJO_REMOTE_ROOT", str(tmp_path / "fresh"))
    missing = CliRunner().invoke(main, ["remote", "check", on_host])
    assert missing.output.strip() == (f"Error: Serving Dojo is not installed on {on_host}: run "
                                      f"`dojo remote setup {on_host}` first.")
    monkeypatch.setenv("DOJO_REMOTE_PYTHON", "python3-not-here")
    setup = CliRunner().invoke(main, ["remote", "setup", on_host])
    assert setup.exit_code == 1
    assert setup.output.splitlines()[-1] == (
        f"Error: {on_host} has no Python (python3-not-here is not on its PATH): install Python "
        f"3.11 or newer there, then run `dojo remote setup {on_host}`.")
    assert not (tmp_path / "fresh").exists()  # nothing written before Python was found


@pytest.mark.slow  # gzips the 18 MB tree (the shipped models included)
def test_setup_copies_the_source_without_caches_and_picks_torch_by_the_gpu() -> None:
    with tarfile.open(fileobj=io.BytesIO(source_archive(REPO)), mode="r:gz") as tar:
        names = set(tar.getnames())
    assert {"pyproject.toml", "trainer/cli.py", "lab/grader/gpu_timing.py",
            "scripts/gpu_check.sh", "bench/spec_decode.py"} <= names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert not any(n.startswith(("tests/", ".venv/", ".git/")) for n in names)
    script = install_script(cpu_only=False)
    assert script.index("nvidia-smi -L") < script.index("installing the CUDA build of torch")
    assert 'INDEX=""' in script and 'INDEX="https://download.pytorch.org/whl/cpu"' in \
        install_script(cpu_only=True)
    # a re-run upgrades: the same version number is reinstalled from the new source
    assert script.index('"$R/src";') < script.index('--no-deps --force-reinstall "$R/src"')


@pytest.mark.parametrize(("stderr", "rc", "sentence"), [
    ("ssh: Could not resolve hostname gpu-box: Name or service not known", 255,
     "unknown host gpu-box: ssh could not resolve its name (check the spelling or the Host "
     "entry in ~/.ssh/config)."),
    ("ssh: connect to host 10.0.0.9 port 22: Connection timed out", 255,
     "could not connect to gpu-box: the connection timed out."),
    ("kex_exchange_identification: read: Connection reset by peer", 255,
     "the connection to gpu-box failed: kex_exchange_identification: read: Connection reset "
     "by peer"),
    ("/home/me/.serving-dojo/venv/bin/python: No module named trainer", 1,
     "Serving Dojo is not installed on gpu-box: run `dojo remote setup gpu-box` first."),
])
def test_ssh_messages_become_one_sentence(stderr: str, rc: int, sentence: str) -> None:
    assert explain("gpu-box", rc, stderr) == sentence


def test_the_hosts_serve_stops_waiting_after_its_idle_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import queue

    from trainer.commands import remote as commands

    monkeypatch.setattr(commands, "IDLE_S", 0.01)
    lines: queue.Queue[str | None] = queue.Queue()
    assert commands._next_request(lines) is None  # silent past the limit: the serve ends
    lines.put('{"exercise": "kv-bytes"}')
    assert commands._next_request(lines) == '{"exercise": "kv-bytes"}'


@pytest.mark.slow
def test_unconfined_is_refused_with_a_host(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.grader.plan import NO_CONFINE_VAR
    from lab.grader.testing import reference_as_solution

    monkeypatch.setenv(NO_CONFINE_VAR, "")  # restored after the test (--unconfined sets it)
    path = reference_as_solution("kv-bytes", tmp_path)
    result = CliRunner().invoke(main, ["lab", "grade", "kv-bytes", "--file", str(path),
                                       "--on", "gpu-box", "--unconfined"])
    assert result.exit_code == 2
    assert result.stderr.strip() == ("Error: --unconfined switches off this machine's sandbox; "
                                     "gpu-box grades in its own (use --on local to grade here "
                                     "unconfined)")
