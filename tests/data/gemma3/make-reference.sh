#!/usr/bin/env bash
# Makes llama.cpp's reference outputs for the synthetic Gemma 3 models of
# models.txt, which the Gemma3Parity tests compare rayo against. For each line
# NAME ARGS..., `rayo synth ARGS -o NAME.gguf` in a scratch folder, then
#   NAME.json   refgen on prompts.txt: llama.cpp's tokens, top-10 logits at
#               every prompt position, 48 greedy tokens with the top-5 logits
#               after each (the layout of ../shared/reference, see its README)
# Rerun (llama.cpp is a yardstick here, never a dependency of rayo):
#   ../shared/peers/build-llama-cpp.sh /tmp/llama.cpp      # refgen
#   tests/data/gemma3/make-reference.sh /tmp/llama.cpp/b/bin [build/rayo]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
if [ $# -lt 1 ]; then
  echo "usage: $0 LLAMA_CPP_BIN_DIR [RAYO_BINARY]" >&2
  exit 2
fi
bin=$(cd "$1" && pwd)
rayo=$(realpath "${2:-$root/build/rayo}")
for f in "$bin/refgen" "$rayo"; do
  [ -e "$f" ] || { echo "error: $f not found" >&2; exit 1; }
done
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
grep -v '^#' "$here/models.txt" | while read -r name args; do
  [ -n "$name" ] || continue
  # shellcheck disable=SC2086  # the arguments are words
  "$rayo" synth $args -o "$scratch/$name.gguf" >/dev/null
  # refgen records the model path it was given: run it in the scratch folder.
  (cd "$scratch" && "$bin/refgen" "$name.gguf" "$here/prompts.txt" 48 0 >"$here/$name.json" 2>/dev/null)
  echo "wrote $name.json"
done
