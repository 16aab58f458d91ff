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

std::vector<ReferenceModel> shared_reference_models() {
  std::vector<ReferenceModel> models;
  for (const auto& name : reference_model_names())
    models.push_back({name, shared_path("reference/" + name + ".json"), shared_path("models"), {}});
  return models;
}

size_t greedy_steps_before_near_tie(const ReferenceCase& c, double tolerance) {
  // The decision before greedy step i reads the last prompt position for
  // i = 0, else the logits recorded after greedy token i-1.
  auto margin_before = [&](size_t i) {
    const auto& l = i == 0 ? c.prompt_logits.back() : c.greedy_logits[i - 1];
    return l.top.size() >= 2 ? l.top[0].second - l.top[1].second : 1e9;
  };
  size_t n = 0;
  while (n < c.greedy.size() && margin_before(n) > tolerance) ++n;
  return n;
}

double logit_tolerance(const std::string& model_name) {
  const bool float_model = model_name.find("f16") != std::string::npos || model_name.find("f32") != std::string::npos ||
                           model_name.find("bf16") != std::string::npos || model_name == "stories260K" ||
                           model_name == "llama-2-tiny-random";
  return float_model ? 0.05 : 0.3;
}

}  // namespace rayo::test
