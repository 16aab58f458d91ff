// Prints the emulator's kernel variants for cuda_emulated_backend_test.cpp
// (tests/support/emulated_variants.h). After a change of the kernel specs:
//   build/tests/print_emulated_variants > tests/unit/cuda_emulated_backend_variants.inc
#include <cstdio>
#include <exception>

#include "support/emulated_variants.h"
#include "support/paths.h"

int main() {
  try {
    if (rayo::test::shared_dir().empty()) {
      std::fprintf(stderr, "print_emulated_variants: shared test data not found (set RAYO_SHARED)\n");
      return 2;
    }
    std::fputs(rayo::test::render_emulated_variants(rayo::test::emulated_variant_specs()).c_str(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "print_emulated_variants: %s\n", e.what());
    return 1;
  }
}
