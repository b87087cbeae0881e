#!/usr/bin/env bash
# Set up (first run only) and run every check: ruff, mypy, import-linter, then the whole pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff"; ruff check .
echo "== mypy"; mypy
echo "== import-linter"; lint-imports
echo "== pytest"; pytest -q --durations=25 "$@"
