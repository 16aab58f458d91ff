#!/usr/bin/env bash
# rayo's main job on a model it makes itself. Grows with the project:
# for now a synthetic model is written and inspected.
set -euo pipefail
cd "$(dirname "$0")/.."
rayo=${RAYO:-build/rayo}
out=${TMPDIR:-/tmp}/rayo-demo
mkdir -p "$out"
"$rayo" --version
