#include "backends/cpu/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "common/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace rayo::cpu {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const bool fma = (c >> 12) & 1, f16c = (c >> 29) & 1, avx = (c >> 28) & 1;
  if (!osxsave || !avx) return f;
  // The OS must save the YMM (and for AVX-512 the opmask/ZMM) state.
  unsigned xlo, xhi;
  __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
  const bool ymm_ok = (xlo & 0x6) == 0x6;
  const bool zmm_ok = (xlo & 0xe6) == 0xe6;
  if (!ymm_ok) return f;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = (b >> 5) & 1;
  f.fma = fma;
  f.f16c = f16c;
  if (zmm_ok) {
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
    f.avx512vnni = (c >> 11) & 1;
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    f.avx512bf16 = (a1 >> 5) & 1;
  }
#endif
  return f;
}

Isa parse_env_isa() {
  const char* env = std::getenv("RAYO_CPU_ISA");
  if (env == nullptr || *env == '\0') return best_isa();
  const std::string s(env);
  Isa want;
  if (s == "scalar") want = Isa::Scalar;
  else if (s == "avx2") want = Isa::Avx2;
  else if (s == "avx512") want = Isa::Avx512;
  else fail("RAYO_CPU_ISA=", quote_for_message(s), " is not one of scalar, avx2, avx512");
  if (!isa_supported(want))
    fail("RAYO_CPU_ISA=", s, " but this CPU lacks it (best available: ", isa_name(best_isa()), ")");
  return want;
}

// -1 until first use; then the tier in force.
std::atomic<int> g_active{-1};

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool isa_supported(Isa isa) {
  const auto& f = cpu_features();
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return f.avx2 && f.fma && f.f16c;
    case Isa::Avx512:
      return f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq &&
             f.avx512vnni;
  }
  return false;
}

Isa best_isa() {
  if (isa_supported(Isa::Avx512)) return Isa::Avx512;
  if (isa_supported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Scalar;
}

Isa active_isa() {
  int v = g_active.load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(parse_env_isa());
    g_active.store(v, std::memory_order_relaxed);
  }
  return static_cast<Isa>(v);
}

void set_active_isa(Isa isa) {
  if (!isa_supported(isa)) fail("CPU instruction set ", isa_name(isa), " is not supported by this CPU");
  g_active.store(static_cast<int>(isa), std::memory_order_relaxed);
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

}  // namespace rayo::cpu
