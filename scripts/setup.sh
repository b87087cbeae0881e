#!/usr/bin/env bash
# Create ./.venv if missing and (re)install the project with its dev tools when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi
stamp=.venv/.dojo-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet -e '.[dev]'
    echo "$want" > "$stamp"
fi
