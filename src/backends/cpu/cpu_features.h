#pragma once
// Which SIMD instruction set the CPU kernels use, chosen at run time.
//
// rayo is built without -march flags so that one binary runs on any x86-64
// machine; SIMD kernels are compiled per function with
// __attribute__((target(...))) and selected here. Three tiers:
//   scalar  portable C++ (the reference; the only tier off x86-64)
//   avx2    AVX2 + FMA + F16C (the x86-64 baseline rayo targets)
//   avx512  AVX-512 F/BW/VL/DQ + VNNI (vpdpbusd: 64 int8 products per instruction)
// RAYO_CPU_ISA=scalar|avx2|avx512 lowers the tier (tests force each path);
// asking for a tier the CPU lacks is an error, never a crash.
#include <string_view>

namespace rayo::cpu {

enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false;
};

// What the CPU (and the OS, via XCR0) supports. Computed once.
const CpuFeatures& cpu_features();

// The best tier the hardware supports.
Isa best_isa();

// The tier kernels use now: RAYO_CPU_ISA if set (validated), else best_isa().
Isa active_isa();

// Overrides the active tier (tests). Fails if the CPU lacks it.
void set_active_isa(Isa isa);

// True when the hardware can run the tier.
bool isa_supported(Isa isa);

std::string_view isa_name(Isa isa);  // "scalar", "avx2", "avx512"

}  // namespace rayo::cpu
