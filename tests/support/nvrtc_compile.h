#pragma once
// Shared by the NVRTC compile tests (unit: sm_90 and the preset shapes; slow:
// sm_80 of every shared model): compiles kernel variants with NVRTC, which
// needs no GPU, and checks and prints each one's registers and spills.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/kernel_specs.h"
#include "backends/cuda/nvrtc.h"

#define RAYO_REQUIRE_NVRTC()                                                                     \
  do {                                                                                           \
    if (!::rayo::cuda::Nvrtc::get().is_available())                                              \
      GTEST_SKIP() << "NVRTC not available: " << ::rayo::cuda::Nvrtc::get().unavailable_reason(); \
  } while (0)

namespace rayo::test {

// The kernel variants of a model file's fused decode (1 token) and prefill (64 tokens) graphs.
std::vector<cuda::KernelSpec> model_kernel_specs(const std::filesystem::path& path);

// Compiles the variants of `specs` not in `done` yet for `arch` (on all cores),
// then checks each (a cubin, a ptxas report, registers in 1..255, no spill
// stores) and prints it under `label`. Test assertions: call from a test body.
void compile_all(const std::string& label, const std::vector<cuda::KernelSpec>& specs, const std::string& arch,
                 std::set<std::string>& done);

// Every shared model's kernel variants for `arch`; at least 20 models.
void compile_shared_models(const std::string& arch);

}  // namespace rayo::test
