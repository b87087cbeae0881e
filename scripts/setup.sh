#!/usr/bin/env bash
# Create ./.venv if missing and (re)install the project with its dev tools when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "Serving Dojo needs Python >= 3.11 with venv; '$PY' is not (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
    .venv/bin/python -m pip install -qq --upgrade pip
fi
stamp=.venv/.dojo-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "Installing Serving Dojo and its dependencies (PyTorch included) into .venv ..." >&2
    # -qq: keep pip's per-index warnings out of the way; errors still print
    .venv/bin/python -m pip install -qq -e '.[dev]'
    echo "$want" > "$stamp"
    # shown again once the app closes (it draws on the terminal's alternate screen)
    echo "Installed. The dojo command is .venv/bin/dojo (or run 'source .venv/bin/activate'," \
         "then dojo); the app's and the CLI's messages call it dojo." >&2
fi
# tests/remote grade over a real OpenSSH server on loopback: install it where it is missing and
# this can (root with apt, as CI runs); elsewhere those tests skip and say why.
if [ ! -x /usr/sbin/sshd ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing openssh-server and openssh-client (for the SSH grading tests) ..." >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y -qq openssh-server openssh-client >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 \
           && apt-get install -y -qq openssh-server openssh-client >/dev/null 2>&1; }; } \
      || echo "note: could not install openssh-server; tests/remote will be skipped" >&2
fi
