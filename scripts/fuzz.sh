#!/usr/bin/env bash
# Fuzzes the GGUF reader for a bounded time: scripts/fuzz.sh [SECONDS] (default 60).
# Configures a clang build in build-fuzz, writes a seed corpus from the shared
# models (when ../shared or $RAYO_SHARED is there) and runs libFuzzer. Exits
# non-zero on any finding (crash, sanitizer report, leak, timeout, out of memory);
# the reproducer is left in build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=build-fuzz

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: clang++ not found" >&2
  exit 1
fi
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DRAYO_FUZZ=ON -DRAYO_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target gguf_reader_fuzz gguf_fuzz_seeds

shared=${RAYO_SHARED:-../shared}
seeds="$build/seeds"
corpus="$build/corpus"
rm -rf "$seeds"
mkdir -p "$corpus" "$build/artifacts"
models=()
if [ -d "$shared" ]; then
  for f in "$shared"/models/*.gguf "$shared"/vocab/*.gguf; do
    [ -f "$f" ] && models+=("$f")
  done
fi
"$build/fuzz/gguf_fuzz_seeds" "$seeds" "${models[@]}"

echo "fuzzing the GGUF reader for ${seconds}s ($(ls "$seeds" | wc -l) seeds)"
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$build/fuzz/gguf_reader_fuzz" "$corpus" "$seeds" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$build/artifacts/" -print_final_stats=1
