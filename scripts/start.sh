#!/usr/bin/env bash
# Set up (first run only) and open the Serving Dojo app. Extra arguments go to `dojo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/dojo "$@"
