"""A real OpenSSH server on 127.0.0.1 for the tests, and a second Dojo install for it to run.

The server (`Sshd`) listens on a free loopback port with a host key, an authorized key and a
client config made for the run; it never touches the system's sshd or any other address. The
"remote" Dojo (`remote_install`) is a folder with its own copy of the source (hard links) and a
virtual environment whose packages are this one's (a .pth line: no second 5 GB torch), with its
own version in its own package metadata.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = Path("/usr/sbin/sshd")
REPO = Path(__file__).resolve().parents[2]
ALIAS = "dojo-loopback"


def sshd_missing() -> str:
    """Why a loopback sshd cannot run here ("" when it can)."""
    if not SSHD.is_file():
        return "no /usr/sbin/sshd (scripts/setup.sh installs openssh-server as root with apt)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "no ssh client (openssh-client)"
    return ""


def _die_with_parent() -> None:
    """In the sshd child before exec: a killed test run takes its server with it."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                   check=True, capture_output=True)


@dataclass
class Sshd:
    folder: Path
    port: int
    config: Path  # the client's ssh config (Host ALIAS)
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, folder: Path) -> Sshd:
        folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # sshd's privilege-separation folder (systemd makes it at boot)
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        for name in ("host_key", "client_key", "other_key", "other_host_key"):
            _keygen(folder / name)
        (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
        port = _free_port()
        root = os.geteuid() == 0
        (folder / "sshd_config").write_text("\n".join([
            f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {folder / 'host_key'}",
            f"AuthorizedKeysFile {folder / 'authorized_keys'}", f"PidFile {folder / 'sshd.pid'}",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
            "StrictModes no", "PubkeyAuthentication yes",
            *(["PermitRootLogin prohibit-password"] if root else []),
            "LogLevel ERROR", ""]))
        host_pub = (folder / "host_key.pub").read_text().split()
        (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
        (folder / "empty_known_hosts").write_text("")
        other = (folder / "other_host_key.pub").read_text().split()
        (folder / "changed_known_hosts").write_text(f"[127.0.0.1]:{port} {other[0]} {other[1]}\n")
        config = folder / "ssh_config"
        config.write_text(cls.client_config(folder, port))
        with open(folder / "sshd.log", "wb") as log:
            process = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(folder / "sshd_config")],
                                       stdout=subprocess.DEVNULL, stderr=log,
                                       preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"sshd exited: {(folder / 'sshd.log').read_text()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        return cls(folder, port, config, process)

    @staticmethod
    def client_config(folder: Path, port: int, key: str = "client_key",
                      known: str = "known_hosts") -> str:
        """Host ALIAS on the loopback port, and variants for the fault tests."""
        def block(alias: str, key: str, known: str) -> str:
            return "\n".join([
                f"Host {alias}", "  HostName 127.0.0.1", f"  Port {port}",
                f"  User {getpass.getuser()}", f"  IdentityFile {folder / key}",
                "  IdentitiesOnly yes", f"  UserKnownHostsFile {folder / known}",
                "  StrictHostKeyChecking yes", "  BatchMode yes", "  LogLevel ERROR",
                "  ConnectTimeout 20", ""])
        closed = block("dojo-closed-port", key, known).replace(f"Port {port}",
                                                                 f"Port {_free_port()}")
        return "".join([block(ALIAS, key, known),
                        block("dojo-wrong-key", "other_key", known),
                        block("dojo-unknown-host", key, "empty_known_hosts"),
                        block("dojo-changed-key", key, "changed_known_hosts"), closed])

    def ssh_command(self) -> str:
        return f"ssh -F {self.config}"

    def sessions(self) -> list[int]:
        """The per-connection sshd processes (children of the listener)."""
        out = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True,
                             text=True, check=False).stdout
        return [int(p) for p in out.split()]

    def stop(self) -> None:
        for pid in self.sessions():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.kill()
        self.process.wait()


def remote_install(root: Path, version: str | None = None) -> Path:
    """A second Dojo in `root`: src/ (hard links to this tree's packages), venv/ sharing this
    venv's packages, data/ its own; `version` in its own metadata (default: this one's)."""
    from trainer.core.remote import dojo_version

    src = root / "src"
    src.mkdir(parents=True)
    for name in ("trainer", "lab", "questions", "scheduler"):
        subprocess.run(["cp", "-al", str(REPO / name), str(src / name)], check=True)
        for cache in (src / name).rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    site = next((root / "venv" / "lib").glob("python3*/site-packages"))
    shared = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    (site / "dojo_remote_test.pth").write_text(f"{src}\n{shared}\n")
    meta = site / f"serving_dojo-{version or dojo_version()}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: serving-dojo\nVersion: {version or dojo_version()}\n")
    (root / "data").mkdir()
    return root
