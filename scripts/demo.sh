#!/usr/bin/env bash
# rayo's main job on a model it makes itself: write a small random-weight
# Llama-shaped model, generate from it, and measure its speed. (Random weights
# give random text; see the README for running a real downloaded GGUF.)
set -euo pipefail
cd "$(dirname "$0")/.."
rayo=${RAYO:-build/rayo}
out=${TMPDIR:-/tmp}/rayo-demo
mkdir -p "$out"
model=$out/tiny-llama-q4_k_m.gguf

"$rayo" synth --preset tiny --type q4_k_m -o "$model"
"$rayo" inspect "$model"
echo
echo "== rayo run"
"$rayo" run -m "$model" -p "Once upon a time" -n 32 --seed 1
echo
echo "== rayo bench"
"$rayo" bench -m "$model" -p 128 -n 32 -r 3
