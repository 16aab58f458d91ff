#!/usr/bin/env bash
# Makes llama.cpp's reference outputs for the real trained model,
# SmolLM2-135M-Instruct Q4_1 (scripts/fetch-models.sh), which the RealModel
# parity tests and the server's real-model test compare rayo against. Writes,
# next to this script:
#   chat-prompts.txt      chats.json's conversations rendered with the model's
#                         own chat template by `rayo template` (the renderer the
#                         ChatTemplateParity tests hold to Hugging Face's), one
#                         a line with newlines written as \n, as refgen reads them
#   reference-plain.json  refgen on prompts.txt: llama.cpp's tokens, top-10
#                         logits at every prompt position, 48 greedy tokens with
#                         the top-5 logits after each (the layout of
#                         ../shared/reference, described in its README)
#   reference-chat.json   the same on chat-prompts.txt, special-token text
#                         (<|im_start|>) read as the special tokens
#   perplexity-c128.txt   llama-perplexity -c 128 -b 128 on
#                         ../shared/texts/moores-law.txt: the running estimate
#                         per chunk, then the final estimate
#   exact-plain.json,     refgen on the same prompts with the model's weights
#   exact-chat.json       dequantized to F32 (build/tests/dequantize_gguf): the
#                         product without quantized activations, which the
#                         teacher-forced test measures rayo and llama.cpp against
# Rerun (llama.cpp is a yardstick here, never a dependency of rayo):
#   ../shared/peers/build-llama-cpp.sh /tmp/llama.cpp      # refgen, llama-perplexity
#   tests/data/smollm2/make-reference.sh /tmp/llama.cpp/b/bin [build/rayo]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
if [ $# -lt 1 ]; then
  echo "usage: $0 LLAMA_CPP_BIN_DIR [RAYO_BINARY]" >&2
  exit 2
fi
bin=$(cd "$1" && pwd)
rayo=$(realpath "${2:-$root/build/rayo}")
dequantize=$(dirname "$rayo")/tests/dequantize_gguf
cache=${RAYO_MODEL_CACHE:-.cache/models}
case "$cache" in /*) ;; *) cache="$root/$cache" ;; esac
model_name=SmolLM2-135M-Instruct.Q4_1.gguf
shared=${RAYO_SHARED:-$root/../shared}
text=$(realpath -m "$shared/texts/moores-law.txt")
for f in "$bin/refgen" "$bin/llama-perplexity" "$rayo" "$dequantize" "$cache/$model_name" "$text"; do
  [ -e "$f" ] || { echo "error: $f not found" >&2; exit 1; }
done
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# One conversation at a time through `rayo template`; refgen's prompt file has
# one prompt a line, so a literal backslash-n in a rendering would be misread.
python3 - "$rayo" "$cache/$model_name" "$here/chats.json" "$here/chat-prompts.txt" <<'EOF'
import json, subprocess, sys
rayo, model, chats, out = sys.argv[1:]
lines = []
for chat in json.load(open(chats)):
    rendered = subprocess.run([rayo, "template", "-m", model, "--messages", "-"], input=json.dumps(chat),
                              capture_output=True, text=True, check=True).stdout
    if "\\n" in rendered:
        sys.exit("error: a rendered chat holds a literal \\n, which refgen's prompt file cannot carry")
    lines.append(rendered.replace("\n", "\\n"))
open(out, "w").write("\n".join(lines) + "\n")
EOF

# refgen writes the model path it was given into the JSON; run it from the
# cache so the file records the bare file name.
cd "$cache"
"$bin/refgen" "$model_name" "$here/prompts.txt" 48 0 >"$here/reference-plain.json" 2>/dev/null
REFGEN_PARSE_SPECIAL=1 "$bin/refgen" "$model_name" "$here/chat-prompts.txt" 48 0 >"$here/reference-chat.json" 2>/dev/null

# The same prompts on the weights dequantized to F32 (540 MB, in a scratch folder).
scratch=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$scratch" "$log"' EXIT
exact_name=SmolLM2-135M-Instruct.F32-from-Q4_1.gguf
"$dequantize" "$model_name" "$scratch/$exact_name"
(cd "$scratch" && "$bin/refgen" "$exact_name" "$here/prompts.txt" 48 0 >"$here/exact-plain.json" 2>/dev/null)
(cd "$scratch" && REFGEN_PARSE_SPECIAL=1 "$bin/refgen" "$exact_name" "$here/chat-prompts.txt" 48 0 \
  >"$here/exact-chat.json" 2>/dev/null)

# llama-perplexity prints the per-chunk estimates to stdout and the final
# estimate in its log (stderr).
# (less its estimate of the time it will take).
"$bin/llama-perplexity" -m "$model_name" -f "$text" -c 128 -b 128 -t 2 2>"$log" | grep -v " minutes$" \
  >"$here/perplexity-c128.txt"
grep -o "Final estimate: PPL = .*" "$log" >>"$here/perplexity-c128.txt"
echo "wrote chat-prompts.txt reference-plain.json reference-chat.json perplexity-c128.txt exact-plain.json exact-chat.json in $here"
