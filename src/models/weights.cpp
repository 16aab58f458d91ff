#include "models/weights.h"

#include "common/error.h"

namespace rayo::models {
namespace {

std::string shape_text(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

graph::Weight to_weight(const gguf::File& file, const gguf::TensorInfo& t, const std::string& name, int64_t cols,
                        int64_t rows) {
  const uint64_t ne0 = t.ne.empty() ? 0 : t.ne[0];
  const uint64_t rest = ne0 ? t.n_elements / ne0 : 0;
  if (ne0 != static_cast<uint64_t>(cols) || rest != static_cast<uint64_t>(rows))
    fail("tensor '", name, "' has shape ", shape_text(t.ne), ", expected [", cols, rows > 1 ? ", " : "",
         rows > 1 ? std::to_string(rows) : std::string(), "]");
  return graph::Weight{name, t.type, rows, cols, t.data, file.mapped()};
}

}  // namespace

graph::Weight require_weight(const gguf::File& file, const std::string& name, int64_t cols, int64_t rows) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (!t) fail(file.path(), ": missing tensor '", name, "'");
  return to_weight(file, *t, name, cols, rows);
}

std::optional<graph::Weight> optional_weight(const gguf::File& file, const std::string& name, int64_t cols,
                                             int64_t rows) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (!t) return std::nullopt;
  return to_weight(file, *t, name, cols, rows);
}

std::string layer_tensor(int layer, const char* suffix) { return "blk." + std::to_string(layer) + "." + suffix; }

}  // namespace rayo::models
