"""Run the app as a learner who is not root, for faults that root never sees (a read-only data
folder or file: root may write anything). As root the child runs as `nobody`; as anyone else it
runs as that user. The data lives in a fresh folder under the system temp dir that the learner
can reach (pytest's own tmp dirs are private to root)."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Learner:
    base: Path  # reachable by the learner; holds home/ (DOJO_HOME) and user/ (HOME)
    uid: int | None  # the uid to drop to (None: run as ourselves)
    gid: int | None
    python: str = sys.executable  # an interpreter the learner may execute
    site: str = ""  # this venv's site-packages, when `python` is not the venv's own

    @property
    def home(self) -> Path:
        return self.base / "home"

    def run(self, *args: str, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`python ARGS` as the learner, with DOJO_HOME set to `home`."""
        path = os.pathsep.join(p for p in (str(ROOT), self.site) if p)
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": path,
                   "DOJO_HOME": str(self.home), "HOME": str(self.base / "user"),
                   "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8", **(env or {})}
        drop = ({} if self.uid is None
                else {"user": self.uid, "group": self.gid, "extra_groups": []})
        return subprocess.run([self.python, *args], env=environ, cwd=self.base,
                              capture_output=True, text=True, timeout=timeout, **drop)

    def dojo(self, *args: str, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
        return self.run("-c", "from trainer.cli import main; main()", *args, env=env)

    def give_home(self) -> None:
        """Make the learner own everything under home/ (as after their own first run)."""
        if self.uid is None or self.gid is None:
            return
        for path in [self.home, *self.home.rglob("*")]:
            os.chown(path, self.uid, self.gid, follow_symlinks=False)


def read_only(path: Path) -> None:
    """`chmod -R a-w path`."""
    for p in [path, *path.rglob("*")]:
        p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)


def listing(folder: Path) -> dict[str, str]:
    """Every file under `folder` with its mode, to show that nothing was created or changed."""
    return {str(p.relative_to(folder)): stat.filemode(p.stat().st_mode)
            for p in sorted(folder.rglob("*"))}


def _runnable(who: Learner) -> Learner:
    """`who` with an interpreter they can run: this one, or (when it lives where they may not
    go, e.g. under /root) the system's Python of the same version with this venv's packages."""
    import site
    import sysconfig

    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    candidates = [Learner(who.base, who.uid, who.gid)]
    if system:
        packages = site.getsitepackages()[0] if site.getsitepackages() else sysconfig.get_path(
            "purelib")
        candidates.append(Learner(who.base, who.uid, who.gid, system, packages))
    why = ""
    for candidate in candidates:
        try:
            probe = candidate.run("-c", "import trainer, sqlalchemy, textual")
        except (OSError, subprocess.SubprocessError) as exc:
            why = str(exc)
            continue
        if probe.returncode == 0:
            return candidate
        why = probe.stderr[-300:]
    pytest.skip(f"cannot start Python with the app's packages as a non-root user here: {why}")


@pytest.fixture
def learner() -> Iterator[Learner]:
    base = Path(tempfile.mkdtemp(prefix="dojo-learner-"))
    base.chmod(0o755)
    (base / "home").mkdir()
    (base / "user").mkdir(mode=0o777)
    (base / "user").chmod(0o777)
    try:
        uid = gid = None
        if os.geteuid() == 0:
            try:
                nobody = pwd.getpwnam("nobody")
            except KeyError:
                pytest.skip("running as root and there is no `nobody` user to drop to")
            uid, gid = nobody.pw_uid, nobody.pw_gid
        yield _runnable(Learner(base, uid, gid))
    finally:  # also after a skip: leave nothing in the system temp dir
        for p in [base, *base.rglob("*")]:
            if not p.is_symlink():
                p.chmod(stat.S_IMODE(p.stat().st_mode) | 0o700)
        shutil.rmtree(base, ignore_errors=True)
