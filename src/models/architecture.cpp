#include "models/architecture.h"

#include <string>

#include "common/error.h"

namespace rayo::models {

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> list = {
      {"llama", build_llama},
      {"qwen2", build_qwen2},
      {"qwen3", build_qwen3},
  };
  return list;
}

const Architecture& find_architecture(std::string_view name) {
  std::string supported;
  for (const auto& a : architectures()) {
    if (a.name == name) return a;
    supported += (supported.empty() ? "" : ", ") + std::string(a.name);
  }
  fail("unsupported architecture '", name, "' (supported: ", supported, ")");
}

}  // namespace rayo::models
