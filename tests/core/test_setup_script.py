"""scripts/setup.sh says where the `dojo` command is once it has installed it: the app's and
the CLI's messages say "dojo lab grade …", and a fresh clone's shell has no `dojo` on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def test_setup_names_the_dojo_command_after_installing(tmp_path: Path) -> None:
    if not Path("/usr/sbin/sshd").exists() and os.geteuid() == 0:
        pytest.skip("setup.sh would install openssh-server here")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    fake = tmp_path / ".venv" / "bin" / "python"  # a venv whose pip "installs" at once
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": sys.executable}

    def setup() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "scripts/setup.sh"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)

    first = setup()
    assert first.returncode == 0, first.stderr
    assert "Installing Serving Dojo" in first.stderr
    assert ".venv/bin/dojo" in first.stderr and "source .venv/bin/activate" in first.stderr
    again = setup()  # installed: nothing to say
    assert again.returncode == 0 and again.stderr == "", again.stderr
