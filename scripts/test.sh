#!/usr/bin/env bash
# Set up (first run only) and run every check: ruff, mypy, import-linter, then the whole pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff"; ruff check .
echo "== mypy"; mypy
echo "== import-linter"; lint-imports
# pytest-xdist, one worker per core, at most 4 (DOJO_TEST_WORKERS overrides, 0 = no workers; a
# later -n in "$@" wins): the slow tests are sandbox subprocesses and model runs, CPU-bound, and
# each test is as isolated on a worker as alone (own DOJO_HOME and tmp dirs, its own children).
# On 2 cores: 3,471 tests in 592 s on 2 workers (fresh clone, 2026-12-07 08:35 UTC, quiet machine).
cores=$(nproc 2>/dev/null || echo 2)
workers=${DOJO_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}
echo "== pytest ($workers workers)"; pytest -q -n "$workers" --dist worksteal --durations=25 "$@"
