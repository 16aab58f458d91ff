#!/usr/bin/env bash
# rayo's main job on a real trained model: a chat answer rendered with the
# model's own chat template, then prompt and generation speed, on
# SmolLM2-135M-Instruct, which scripts/install-deps.sh fetched into
# .cache/models/ (scripts/fetch-models.sh; $RAYO_MODEL_CACHE overrides the
# folder). When the set-up could not fetch it (no network), it says so and
# does the same on a small random-weight Llama-shaped model that rayo makes
# itself (random weights give random text).
set -euo pipefail
cd "$(dirname "$0")/.."
rayo=${RAYO:-build/rayo}
model=${RAYO_MODEL_CACHE:-.cache/models}/SmolLM2-135M-Instruct.Q4_1.gguf

if [ -f "$model" ]; then
  echo "== rayo chat -m $model (greedy; a question on standard input, the answer)"
  for question in "Hello! Who are you?" "What is 2 + 2?"; do
    echo "> $question"
    echo "$question" | "$rayo" chat -m "$model" --temp 0 -n 64
  done
  echo
  echo "== rayo bench"
  "$rayo" bench -m "$model" -p 128 -n 32 -r 3
  exit 0
fi

echo "demo: $model is missing (scripts/fetch-models.sh fetches it); using a synthetic random-weight model instead"
out=${TMPDIR:-/tmp}/rayo-demo
mkdir -p "$out"
synthetic=$out/tiny-llama-q4_k_m.gguf
"$rayo" synth --preset tiny --type q4_k_m -o "$synthetic"
"$rayo" inspect "$synthetic"
echo
echo "== rayo run"
"$rayo" run -m "$synthetic" -p "Once upon a time" -n 32 --seed 1
echo
echo "== rayo bench"
"$rayo" bench -m "$synthetic" -p 128 -n 32 -r 3
