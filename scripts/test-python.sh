#!/usr/bin/env bash
# Tests the Python package as a user gets it: a fresh virtual environment,
# `pip install .` from this tree (scikit-build-core compiles librayo and the
# extension; it and nanobind come from PyPI), then pytest on python/tests.
# Usage: scripts/test-python.sh [VENV_DIR] [pytest args]   (default build-python-venv)
# The tests read $RAYO_SHARED (default ../shared) and compare with build/rayo
# when it exists ($RAYO_BIN names another); they skip what is absent, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build-python-venv}
shift || true
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
start=$(date +%s)
"$venv/bin/python" -m pip install --disable-pip-version-check . pytest
echo "pip install . took $(($(date +%s) - start)) s"
# `import rayo` finds the installed package: the source (python/rayo) is not on the path.
"$venv/bin/python" -m pytest -q python/tests "$@"
