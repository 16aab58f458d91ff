#!/usr/bin/env bash
# Everything that needs a GPU, from a build made elsewhere (builds nothing):
#   scripts/gpu-check.sh [BUILD_DIR]      (default: build)
# Build it portably on the development machine first:
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRAYO_STATIC_RUNTIME=ON
#   cmake --build build -j2
# then carry the source tree with BUILD_DIR (and ../shared) to the GPU machine.
# At run time rayo opens libcuda.so.1 (the driver) and libnvrtc (from
# /usr/local/cuda/lib64, $CUDA_HOME/lib64 or pip's nvidia/cuda_nvrtc). The
# static runtime takes libstdc++ out of rayo itself, but the Debian libraries
# it links stay shared: `ldd build/rayo` and `ldd build/tests/test_gpu` list
# them (libpcre2-8, libcpp-httplib 0.11 with OpenSSL, zlib, brotli and its own
# libstdc++; the tests also libsndfile, libsoxr and kissfft, with their codecs).
# Where the GPU machine lacks them, copy those .so files beside the build and
# set LD_LIBRARY_PATH to that folder.
#
# Runs, the figures that matter most first (a borrowed GPU's time may run out
# before the end; on an H100 the whole script takes well over 5 minutes): the
# device query, the kernel precompile into the cache, the GPU tests (kernels
# natively vs the references, every shared model vs the CPU backend, transfers
# and launches per token), the issue's files end to end (first and cached
# starts, tg at depth 0 and 4096, batched decode of 1 to 32 sequences, the
# server under 1 to 32 clients), Whisper's encoder and decoder at tiny.en's
# and large-v3's shapes, each matmul kernel alone (rayo bench
# --kernels: decode, the tensor-core GEMMs, the GEMV/GEMM crossover), an ncu
# profile of a prompt's and decode's kernels (when ncu is installed), the CPU,
# and last the emulator and NVRTC tests again on this machine. With
# LLAMA_BENCH=/path/to/llama-bench and LLAMA_BATCHED_BENCH=/path/to/llama-batched-bench
# (built from ../shared/peers), llama.cpp runs on the same files right after each.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rayo="$build/rayo"
status=0
step() { echo; echo "== $*"; }
run() { echo "+ $*"; "$@" || { echo "FAILED: $*"; status=1; }; }

[ -x "$rayo" ] || { echo "gpu-check.sh: $rayo not found; build first (see the header of this script)"; exit 2; }
export RAYO_SHARED=${RAYO_SHARED:-$(cd .. && pwd)/shared}
export RAYO_BIN="$rayo"

step "machine"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.memory --format=csv
ldd "$rayo" | grep -E "libstdc|libgcc|libcuda|libnvrtc" || true

step "kernel precompile (fills the cache; a second run compiles nothing)"
for m in "$RAYO_SHARED"/models/synth-llama-q4_k_m.gguf "$RAYO_SHARED"/models/synth-qwen2-q4_k_m.gguf; do
  run "$rayo" kernels --precompile -m "$m"
done

step "GPU tests"
run "$build/tests/test_gpu" --gtest_color=no

step "benchmarks: the issue's files on CUDA (first start on an empty kernel cache, then a cached start) and on the CPU"
# rayo bench prints tg's fraction of the memory roofline (a device-to-device
# copy measured in the same run), the kernel launches per decode step without
# the CUDA graph, the NVRTC compiles of the start and the start time.
files=$(mktemp -d)
trap 'rm -rf "$files"' EXIT
for preset in llama3-8b qwen2.5-1.5b; do
  run "$rayo" synth --preset "$preset" --type q4_k_m -o "$files/$preset-q4_k_m.gguf"
  for start in first cached; do
    echo "-- $preset q4_k_m, $start start"
    run env XDG_CACHE_HOME="$files/cache" "$rayo" bench -m "$files/$preset-q4_k_m.gguf" -p 512 -n 128 -d 0,4096 \
      --device cuda
    if [ -n "${LLAMA_BENCH:-}" ]; then
      echo "-- llama.cpp on the same file"
      run "$LLAMA_BENCH" -m "$files/$preset-q4_k_m.gguf" -p 512 -n 128 -d 0,4096 -ngl 99
    fi
  done
  echo "-- $preset q4_k_m, decode with GEMVs of one K slice and of two where they take two (RAYO_GEMV_SLICES)"
  for slices in 1 2 1 2; do
    run env RAYO_GEMV_SLICES=$slices "$rayo" bench -m "$files/$preset-q4_k_m.gguf" -p 0 -n 128 -r 2 --device cuda
  done
  echo "-- $preset q4_k_m, prompts with every format's GEMMs on one tile (RAYO_GEMM_TILE; beside the cached start's pp512)"
  for tile in f16 int8; do
    run env RAYO_GEMM_TILE=$tile "$rayo" bench -m "$files/$preset-q4_k_m.gguf" -p 512 -n 0 -r 3 --device cuda
  done
  echo "-- $preset q4_k_m, prompts on the dense GEMM (RAYO_PROMPT_GEMM=dense: weights decoded to f16 once a step),"
  echo "   then on the f16 tile again, then dense again"
  for gemm in dense tile dense; do
    run env RAYO_PROMPT_GEMM=$gemm "$rayo" bench -m "$files/$preset-q4_k_m.gguf" -p 512 -n 0 -r 3 --device cuda
  done
  echo "-- $preset q4_k_m, decode with programmatic dependent launch (experimental; beside the cached start's tg128)"
  run "$rayo" bench -m "$files/$preset-q4_k_m.gguf" -p 0 -n 128 --device cuda --programmatic-launch
  echo "-- $preset q4_k_m, batched decode (1, 8, 16 and 32 sequences, 64 tokens each)"
  run "$rayo" bench -m "$files/$preset-q4_k_m.gguf" -p 0 -n 64 -B 1,8,16,32 -r 3 --device cuda
  echo "-- the same at 8 and 16 sequences with GEMV tiles of 4 tokens, then of 8 (RAYO_GEMV_TOKEN_TILE), then with the"
  echo "   tensor-core GEMMs from 16 tokens (RAYO_GEMM_MIN_TOKENS; the default: tiles of 4 up to 8 sequences, of 8"
  echo "   above, GEMMs from 32)"
  for tile in 4 8; do
    run env RAYO_GEMV_TOKEN_TILE=$tile "$rayo" bench -m "$files/$preset-q4_k_m.gguf" -p 0 -n 64 -B 8,16 -r 3 --device cuda
  done
  run env RAYO_GEMM_MIN_TOKENS=16 "$rayo" bench -m "$files/$preset-q4_k_m.gguf" -p 0 -n 64 -B 16 -r 3 --device cuda
  if [ -n "${LLAMA_BATCHED_BENCH:-}" ]; then
    echo "-- llama.cpp's batched decode on the same file"
    run "$LLAMA_BATCHED_BENCH" -m "$files/$preset-q4_k_m.gguf" -c 16384 -b 2048 -ub 512 -npp 32 -ntg 64 \
      -npl 1,8,16,32 -ngl 99
  fi
  clients=1,8,32
  [ "$preset" = llama3-8b ] && clients=1,16
  echo "-- $preset q4_k_m, rayo serve on the GPU ($clients clients, 32-token prompts, 64 tokens each; KV cache from 80% of the GPU)"
  run "$rayo" bench-serve -m "$files/$preset-q4_k_m.gguf" -N "$clients" -r 4 -n 64 -p 32 --passes 2 \
    --serve-args "--device cuda --parallel 32 -c 1024 --kv-fraction 0.8"
  echo "-- the same with --batch-invariant (exact int8 GEMMs, decode-sized attention splits): what invariance costs"
  run "$rayo" bench-serve -m "$files/$preset-q4_k_m.gguf" -N "$clients" -r 4 -n 64 -p 32 --passes 2 \
    --serve-args "--device cuda --parallel 32 -c 1024 --kv-fraction 0.8 --batch-invariant"
done

step "benchmark: Whisper on the GPU (#23), tiny.en's and large-v3's shapes (synthetic weights), as stored and int8"
# The encoder's milliseconds per 30-s window and the decoder's per token (the
# real-time factor of a clip follows), and the transfers and graph launches of
# a window and of a decoder step, measured.
for preset in tiny.en large-v3; do
  run "$rayo" synth --whisper "$preset" -o "$files/whisper-$preset"
  for compute in default int8; do
    echo "-- whisper $preset, $compute, CUDA"
    run "$rayo" bench -m "$files/whisper-$preset" --device cuda --compute-type "$compute" -r 3
  done
done
echo "-- whisper tiny.en, int8, on this machine's CPU"
run "$rayo" bench -m "$files/whisper-tiny.en" --device cpu --compute-type int8 -r 3

step "benchmark: each matmul kernel of a decode step alone, every format, llama3-8b and qwen2.5-1.5b shapes"
run "$rayo" bench --kernels -r 5
echo "-- the same with one K slice in every GEMV (the 4096-row and narrower ones take two by default)"
run env RAYO_GEMV_SLICES=1 "$rayo" bench --kernels -r 5

step "benchmark: the tensor-core GEMMs of steps of 16 to 2048 tokens, the Q4_K_M formats"
run "$rayo" bench --kernels -r 3 --types q4_k,q6_k --tokens 16,64,512,2048

step "benchmark: the GEMV/GEMM crossover (kGemmMinTokens is 32): both kernels at each token count"
run "$rayo" bench --kernels -r 3 --preset llama3-8b --types q4_k,q6_k --tokens 4,8,16,24,32,48,64 --kernel-path both

step "benchmark: the GEMMs' blocks of 64 tokens (the default) against blocks of 32 (RAYO_GEMM_BLOCK_TOKENS=32), which give steps of few tokens on narrow matrices twice the blocks"
for block in 64 32; do
  run env RAYO_GEMM_BLOCK_TOKENS=$block "$rayo" bench --kernels -r 3 --preset llama3-8b --types q4_k,q8_0,q6_k \
    --tokens 32,48,64,128,512
done

step "benchmark: the int8 and exact int8 GEMMs beside the f16 ones and the GEMVs (which tile each format should take)"
run "$rayo" bench --kernels -r 3 --preset llama3-8b --types q4_0,q8_0,q4_k,q5_k,q6_k --tokens 16,32,64,512 \
  --kernel-path all

step "benchmark: a dense f16 GEMM on weights decoded once per step (not yet in any graph) beside the f16 tile: dense16 is the GEMM alone on f16 weights, dense adds the decode of each matrix"
run "$rayo" bench --kernels -r 3 --preset llama3-8b --types q4_k,q6_k --tokens 128,512,2048 --kernel-path dense

if command -v ncu >/dev/null; then
  step "profile: llama3-8b q4_k_m's matmul and attention kernels (time, % of DRAM and of tensor-core peak)"
  metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  echo "-- the first layers of a 512-token prompt (GEMMs, flash attention)"
  run ncu --metrics "$metrics" -k 'regex:gemm|gemv|attention|qkv' --launch-count 60 \
    "$rayo" bench -m "$files/llama3-8b-q4_k_m.gguf" -p 512 -n 0 -r 1 --device cuda
  echo "-- decode steps (GEMVs, split attention; L2 sectors the loads asked for against DRAM's: about 1 with"
  echo "   the whole-sector weight layout, about 2 before it)"
  run ncu --metrics "$metrics,lts__t_sectors_srcunit_tex_op_read.sum,dram__sectors_read.sum" \
    -k 'regex:gemm|gemv|attention|qkv' --launch-count 60 \
    "$rayo" bench -m "$files/llama3-8b-q4_k_m.gguf" -p 0 -n 4 -r 1 --device cuda
fi
run "$rayo" bench -m "$files/llama3-8b-q4_k_m.gguf" -p 512 -n 128 -r 1 --device cpu
for m in "$RAYO_SHARED"/models/synth-llama-q4_k_m.gguf "$RAYO_SHARED"/models/tinystories-656k-q8_0.gguf; do
  run "$rayo" bench -m "$m" -p 128 -n 64 --device cuda
done

step "emulator, NVRTC and cache tests"
run "$build/tests/test_unit" --gtest_filter='Cuda*' --gtest_color=no

echo
[ $status -eq 0 ] && echo "gpu-check: all passed" || echo "gpu-check: FAILURES above"
exit $status
