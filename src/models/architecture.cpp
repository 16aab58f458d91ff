#include "models/architecture.h"

#include <string>

#include "common/error.h"
#include "models/decoder.h"

namespace rayo::models {

const std::vector<Architecture>& architectures() {
  // Every supported architecture is a variant of the shared decoder, described by its ModelSpec.
  static const std::vector<Architecture> list = [] {
    std::vector<Architecture> l;
    for (std::string_view name : supported_architectures()) l.push_back({name, &build_decoder_graph});
    return l;
  }();
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
