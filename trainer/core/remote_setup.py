"""`dojo remote check` and `dojo remote setup`: what a host offers for grading, and installing
this same version of Serving Dojo there over ssh (see `trainer.core.remote` for the protocol
and the host's layout)."""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from trainer.core.remote import (
    CONNECT_TIMEOUT_S,
    MIN_FREE_MB,
    NO_PYTHON_RC,
    RemoteError,
    check_host,
    dojo_version,
    explain,
    remote_python,
    remote_root,
    remote_script,
    ssh_argv,
)


def _run(host: str, script: str, stdin: bytes | None = None,
         timeout_s: float = CONNECT_TIMEOUT_S) -> subprocess.CompletedProcess[bytes]:
    argv = ssh_argv(host, script)
    try:
        return subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired:
        raise RemoteError(f"{host} did not answer within {timeout_s:.0f} s.") from None


def probe_host(host: str) -> dict[str, Any]:
    """What the host's Dojo reports of itself (`dojo remote probe`); RemoteError when the host
    cannot be reached or has no Dojo (the sentence says which)."""
    done = _run(host, remote_script("probe"), timeout_s=CONNECT_TIMEOUT_S * 2)
    lines = done.stdout.decode(errors="replace").strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RemoteError(explain(host, done.returncode, done.stderr.decode(errors="replace")))
    try:
        info = json.loads(lines[-1])
    except ValueError:
        raise RemoteError(f"{host} answered with something that is not Dojo's probe: "
                          f"{lines[-1][:120]!r}") from None
    return info if isinstance(info, dict) else {}


def check_report(host: str, info: dict[str, Any]) -> tuple[list[str], bool]:
    """`dojo remote check`'s lines, and whether the host can grade."""
    mine = dojo_version()
    lines = [f"host:          {host}",
             f"Python:        {info.get('python')} ({info.get('platform', '?')})"]
    problems: list[str] = []
    version = str(info.get("version"))
    lines.append(f"Serving Dojo:  {version}" + ("" if version == mine else f" (here: {mine})"))
    if version != mine:
        problems.append(f"Dojo {version} there, {mine} here: run `dojo remote setup {host}`")
    if "torch" in info:
        lines.append(f"torch:         {info['torch']} (CUDA {info.get('torch_cuda') or 'none'})")
    else:
        lines.append(f"torch:         missing ({info.get('torch_error', '?')})")
        problems.append(f"torch cannot be imported there: run `dojo remote setup {host}`")
    cuda = info.get("cuda") or []
    lines.append("CUDA devices:  " + (", ".join(f"cuda:{i} {name}" for i, name in
                                               enumerate(cuda)) or "none (grades on its CPU)"))
    missing = info.get("sandbox_missing") or []
    lines.append("sandbox:       " + ("every protection" if not missing
                                      else "running without " + ", ".join(map(str, missing))))
    free = info.get("free_mb")
    lines.append(f"data folder:   {info.get('data_dir')} ({free} MiB free)")
    if isinstance(free, int | float) and free < MIN_FREE_MB:
        problems.append(f"only {free} MiB free in its data folder ({MIN_FREE_MB} MiB needed)")
    lines += [f"missing:       {p}" for p in problems] or ["ready:         it can grade"]
    return lines, not problems


# the packages, and what `scripts/gpu_check.sh --on HOST` runs there
SETUP_FILES = ("pyproject.toml", "README.md", "trainer", "lab", "questions", "scheduler",
               "scripts", "bench")


def source_archive(root: Path) -> bytes:
    """This install's source as a gzipped tar (the packages and pyproject.toml, without
    caches): what `dojo remote setup` copies to the host."""
    import io
    import tarfile

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        name = Path(info.name).name
        return None if name in ("__pycache__", ".pytest_cache") or name.endswith(".pyc") \
            else info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in SETUP_FILES:
            if (root / name).exists():
                tar.add(root / name, arcname=name, filter=keep)
    return buffer.getvalue()


def copy_script() -> str:
    """The host's first step: Python 3.11+ found, the source (read from stdin) unpacked into
    $R/src (replacing an older copy whole)."""
    root, python = remote_root(), shlex.quote(remote_python())
    return (
        f"set -e; R={root}; PY={python}; "
        f'command -v "$PY" >/dev/null 2>&1 || {{ echo "dojo-remote: no python $PY" >&2; '
        f"exit {NO_PYTHON_RC}; }}; "
        '"$PY" -c "import sys; sys.exit(sys.version_info < (3, 11))" || '
        '{ echo "dojo-remote: $PY is older than 3.11" >&2; exit 96; }; '
        'mkdir -p "$R/data" && rm -rf "$R/src.new" && mkdir -p "$R/src.new" && '
        'tar -xzf - -C "$R/src.new" && rm -rf "$R/src" && mv "$R/src.new" "$R/src"; '
        'echo "source copied to $R/src"'
    )


def install_script(cpu_only: bool) -> str:
    """The host's install: $R/venv, torch (the CUDA build where nvidia-smi lists a GPU, else
    the CPU build, or PyPI's default where PyTorch's own index cannot be reached), then Dojo
    from $R/src (reinstalled, so a re-run upgrades it); pip's own progress is shown."""
    root, python = remote_root(), shlex.quote(remote_python())
    torch_index = ("https://download.pytorch.org/whl/cpu" if cpu_only else "")
    pip = '"$R/venv/bin/python" -m pip install --progress-bar on'
    return (
        f"set -e; R={root}; PY={python}; "
        '[ -x "$R/venv/bin/python" ] || "$PY" -m venv "$R/venv"; '
        f"{pip} --upgrade pip; "
        f'INDEX="{torch_index}"; '
        'if [ -z "$INDEX" ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L; then '
        'echo "== a GPU: installing the CUDA build of torch"; '
        f"{pip} torch; "
        'else echo "== no GPU (or --cpu-only): installing the CPU build of torch"; '
        f"{pip} torch --index-url https://download.pytorch.org/whl/cpu || {pip} torch; fi; "
        'echo "== installing Serving Dojo and its dependencies"; '
        f'{pip} "$R/src"; {pip} --no-deps --force-reinstall "$R/src"; '
        'echo "== done"'
    )


def setup_host(host: str, say: Callable[[str], None], cpu_only: bool = False,
               terminal: bool = False) -> None:
    """`dojo remote setup HOST`: copy this version's source over ssh, then install it there
    (with `terminal`, on a terminal of the host's own so pip draws its progress bars; else
    pip's output streamed to `say` line by line); then check the host answers with this
    version. RemoteError naming what failed."""
    check_host(host)
    root = Path(__file__).resolve().parents[2]
    archive = source_archive(root)
    say(f"Installing Serving Dojo {dojo_version()} on {host} "
        f"({len(archive) / 2**20:.1f} MiB of source; torch and the rest from PyPI there) ...")
    _stream(host, ssh_argv(host, copy_script()), say, archive)
    if terminal:
        rc = subprocess.run(ssh_argv(host, install_script(cpu_only), tty=True),
                            check=False).returncode
        if rc != 0:
            raise RemoteError(explain(host, rc, "") if rc == 255 else
                              f"the install on {host} failed (status {rc}): see pip's "
                              "output above.")
    else:
        _stream(host, ssh_argv(host, install_script(cpu_only)), say, None)
    info = probe_host(host)
    if info.get("version") != dojo_version():
        raise RemoteError(f"{host} still reports Serving Dojo {info.get('version')} after the "
                          "install.")
    devices = info.get("cuda") or []
    say(f"{host} is ready: Serving Dojo {info.get('version')}, torch {info.get('torch')}, "
        + (f"{len(devices)} CUDA device(s): {', '.join(devices)}" if devices else "no GPU")
        + f". Grade there with: dojo lab grade EX --on {host}")


def _stream(host: str, argv: list[str], say: Callable[[str], None],
            stdin: bytes | None) -> None:
    """Run one ssh step, its output passed to `say` line by line; RemoteError when it fails."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    assert proc.stdin is not None and proc.stdout is not None
    threading.Thread(target=_feed, args=(proc.stdin, stdin or b""), daemon=True).start()
    tail: list[str] = []
    for raw in iter(proc.stdout.readline, b""):
        line = raw.decode(errors="replace").rstrip()
        tail = [*tail, line][-20:]
        say(f"  {line}")
    rc = proc.wait()
    if rc != 0:
        raise RemoteError(explain(host, rc, "\n".join(tail))
                          if rc in (255, NO_PYTHON_RC) else
                          f"the install on {host} failed (status {rc}): {tail[-1] if tail else ''}")


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except OSError:
        pass
