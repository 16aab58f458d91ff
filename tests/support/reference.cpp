#include "support/reference.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/paths.h"

namespace rayo::test {
namespace {

ReferenceLogits parse_logits(const nlohmann::json& j) {
  ReferenceLogits r;
  r.lse = j.at("lse").get<double>();
  for (const auto& e : j.at("top")) r.top.emplace_back(e.at(0).get<int32_t>(), e.at(1).get<double>());
  return r;
}

}  // namespace

Reference load_reference(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  Reference ref;
  ref.model = j.at("model").get<std::string>();
  ref.n_vocab = j.at("n_vocab").get<int64_t>();
  for (const auto& c : j.at("cases")) {
    ReferenceCase rc;
    rc.prompt = c.at("prompt").get<std::string>();
    rc.tokens = c.at("tokens").get<std::vector<int32_t>>();
    for (const auto& l : c.at("prompt_logits")) rc.prompt_logits.push_back(parse_logits(l));
    rc.greedy = c.at("greedy").get<std::vector<int32_t>>();
    for (const auto& l : c.at("greedy_logits")) rc.greedy_logits.push_back(parse_logits(l));
    rc.greedy_text = c.at("greedy_text").get<std::string>();
    ref.cases.push_back(std::move(rc));
  }
  return ref;
}

std::vector<std::string> reference_model_names() {
  std::vector<std::string> names;
  const auto dir = shared_dir();
  if (dir.empty()) return names;
  for (const auto& e : std::filesystem::directory_iterator(dir / "reference"))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

double logit_tolerance(const std::string& model_name) {
  const bool float_model = model_name.find("f16") != std::string::npos ||
                           model_name.find("bf16") != std::string::npos || model_name == "stories260K" ||
                           model_name == "llama-2-tiny-random";
  return float_model ? 0.05 : 0.3;
}

}  // namespace rayo::test
