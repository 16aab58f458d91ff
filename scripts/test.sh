#!/usr/bin/env bash
# rayo's test command (the README's, and what CI runs):
#   1. installs dependencies, builds the release configuration, runs every CTest
#      test that needs no GPU (labels unit, parity, slow);
#   2. installs the Python package into a fresh virtual environment and runs
#      its tests (scripts/test-python.sh);
#   3. builds with ASan+UBSan and runs the unit tests again under the sanitizers
#      (all but the NVRTC compile tests that spend their time inside NVRTC);
#   4. when clang is present, runs the GGUF reader fuzzer for a short bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== release build and tests"
scripts/build.sh build
ctest --test-dir build --output-on-failure -j"$jobs" -LE gpu

echo "== Python package: pip install . into a fresh venv, pytest"
scripts/test-python.sh

echo "== ASan+UBSan build and unit tests"
# -O1 (what the AddressSanitizer documentation advises) and line tables only
# (-g1: the file:line of every frame a report prints) compile in about half
# the time of -O2 -g; only what the unit tests run is built (the CLI, which
# they call, and the two unit-test executables).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAYO_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
cmake --build build-asan -j"$jobs" --target rayo test_unit test_public_api
export UBSAN_OPTIONS=print_stacktrace=1
# Tests that load NVRTC run without LeakSanitizer: its stop-the-world tracer
# once crashed (signal 11) at the exit of such a test under parallel load, a
# fault inside the leak checker and the closed-source library's threads, not a
# leak. Memory errors are still checked there; every other test checks leaks.
# Of the NVRTC compile tests, two check the compiler's host side here: the
# others spend their minutes inside the (uninstrumented) NVRTC, on kernel
# sources the emulated tests build under the sanitizers too, and the release
# run above has compiled them already.
nvrtc_tests='CudaKernelCache|CudaNvrtcCompile|CudaRuntimeLoading|EmulatedGpu'
nvrtc_here='CudaKernelCache|CudaNvrtcCompile.BadSource|CudaNvrtcCompile.WhisperRowKernels|CudaRuntimeLoading|EmulatedGpu'
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -L unit -E "$nvrtc_tests"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -L unit -R "$nvrtc_here"

if command -v clang++ >/dev/null 2>&1 && [ -d fuzz ] && ls fuzz/*.cpp >/dev/null 2>&1; then
  echo "== fuzzing (bounded)"
  scripts/fuzz.sh 30
fi
