// rayo inspect MODEL.gguf [--json] [--tensors] [--metadata]: what a GGUF file
// holds (architecture, hyperparameters, tokenizer, quantization mix, size)
// from its metadata alone, so that a multi-gigabyte model is inspected in
// milliseconds.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/command.h"
#include "common/error.h"
#include "gguf/file.h"
#include "gguf/summary.h"
#include "models/model_spec.h"

namespace rayo::cli {
namespace {

struct InspectOptions {
  std::string path;
  bool json = false;
  bool tensors = false;
  bool metadata = false;
};

std::string shape_text(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.ne.size(); ++i) s += cat(i ? ", " : "", t.ne[i]);
  return s + "]";
}

// A float32 hyperparameter as the decimal it was written from (1e-05, not 9.99999974e-06).
double as_decimal(float v) { return std::stod(cat(v)); }

// The file's own value for an architecture key, when present.
std::optional<double> arch_number(const gguf::File& f, std::string_view arch, std::string_view suffix) {
  return f.get_optional<double>(models::arch_key(arch, suffix));
}

nlohmann::json to_json(const gguf::File& f, std::string_view arch, const std::optional<models::ModelSpec>& spec,
                       const std::string& spec_error, const InspectOptions& opt) {
  using nlohmann::json;
  json j;
  j["file"] = f.path();
  j["file_bytes"] = f.file_size();
  j["gguf_version"] = f.version();
  j["alignment"] = f.alignment();
  j["architecture"] = arch;
  if (auto name = f.get_optional<std::string_view>("general.name")) j["name"] = *name;
  j["runnable"] = spec.has_value();
  if (!spec) j["not_runnable_reason"] = spec_error;

  json hp = json::object();
  if (spec) {
    hp["n_layers"] = spec->n_layers;
    hp["n_embd"] = spec->n_embd;
    hp["n_ff"] = spec->n_ff;
    hp["n_head"] = spec->n_head;
    hp["n_head_kv"] = spec->n_head_kv;
    hp["head_dim"] = spec->head_dim;
    hp["rope_dim"] = spec->rope_dim;
    hp["n_vocab"] = spec->n_vocab;
    hp["n_ctx_train"] = spec->n_ctx_train;
    hp["rope_freq_base"] = as_decimal(spec->rope_freq_base);
    hp["rope_type"] = models::rope_type_name(spec->rope_type);
    hp["rms_eps"] = as_decimal(spec->rms_eps);
    hp["tied_output"] = spec->tied_output;
    hp["qkv_bias"] = spec->qkv_bias;
    hp["qk_norm"] = spec->qk_norm;
    if (spec->rope_freq_scale != 1.0f) hp["rope_freq_scale"] = as_decimal(spec->rope_freq_scale);
    if (spec->post_norms) hp["post_norms"] = true;
    if (spec->ffn_act == graph::Activation::GeluTanh) hp["ffn_activation"] = "gelu_tanh";
    if (spec->embedding_scale != 1.0f) hp["embedding_scale"] = as_decimal(spec->embedding_scale);
    if (spec->attention_scale != 0.0f) hp["attention_scale"] = as_decimal(spec->attention_scale);
    if (spec->sliding_window) {
      hp["sliding_window"] = spec->sliding_window;
      hp["sliding_window_pattern"] = spec->sliding_window_pattern;
      hp["rope_freq_base_swa"] = as_decimal(spec->rope_freq_base_swa);
      json layers = json::array();
      for (uint32_t l = 0; l < spec->n_layers; ++l)
        if (spec->is_sliding(l)) layers.push_back(l);
      hp["sliding_layers"] = layers;
    }
  } else if (!arch.empty()) {
    const std::pair<const char*, const char*> keys[] = {
        {"n_layers", "block_count"},        {"n_embd", "embedding_length"},
        {"n_ff", "feed_forward_length"},    {"n_head", "attention.head_count"},
        {"n_head_kv", "attention.head_count_kv"}, {"n_ctx_train", "context_length"},
        {"rope_freq_base", "rope.freq_base"}, {"rms_eps", "attention.layer_norm_rms_epsilon"},
    };
    for (const auto& [name, suffix] : keys)
      if (auto v = arch_number(f, arch, suffix)) hp[name] = *v;
  }
  j["hyperparameters"] = hp;

  const gguf::TokenizerSummary tok = gguf::tokenizer_summary(f);
  json tj;
  tj["model"] = tok.model;
  tj["pre"] = tok.pre;
  tj["n_tokens"] = tok.n_tokens;
  tj["n_merges"] = tok.n_merges;
  for (const auto& s : tok.specials) {
    json sj = json::object();
    sj["id"] = s.id ? json(*s.id) : json(nullptr);
    sj["text"] = s.text ? json(std::string(*s.text)) : json(nullptr);
    tj[std::string(s.role)] = sj;
  }
  tj["chat_template"] = tok.has_chat_template;
  if (tok.add_bos) tj["add_bos"] = *tok.add_bos;
  j["tokenizer"] = tj;

  json types = json::object();
  for (const auto& u : gguf::type_usage(f))
    types[std::string(type_name(u.type))] = {{"tensors", u.tensors}, {"bytes", u.bytes}, {"elements", u.elements}};
  j["types"] = types;
  j["tensor_count"] = f.tensors().size();
  j["tensor_bytes"] = f.tensor_bytes();
  j["parameters"] = gguf::parameter_count(f);

  if (opt.tensors) {
    json list = json::array();
    for (const auto& t : f.tensors())
      list.push_back({{"name", t.name}, {"type", type_name(t.type)}, {"shape", t.ne}, {"bytes", t.n_bytes},
                      {"offset", f.data_offset() + t.offset}});
    j["tensors"] = list;
  }
  if (opt.metadata) {
    json meta = json::object();
    for (const auto& e : f.metadata()) meta[std::string(e.key)] = e.value.summary();
    j["metadata"] = meta;
  }
  return j;
}

void print_text(const gguf::File& f, std::string_view arch, const std::optional<models::ModelSpec>& spec,
                const std::string& spec_error, const InspectOptions& opt) {
  std::printf("file          %s\n", f.path().c_str());
  std::printf("format        GGUF v%u, %s, %zu tensors, %zu metadata keys, alignment %llu\n", f.version(),
              format_bytes(f.file_size()).c_str(), f.tensors().size(), f.metadata().size(),
              static_cast<unsigned long long>(f.alignment()));
  std::printf("architecture  %s", arch.empty() ? "(none)" : std::string(arch).c_str());
  if (auto name = f.get_optional<std::string_view>("general.name"))
    std::printf("  (%s)", quote_for_message(*name).c_str());
  std::printf("\n");
  if (spec) {
    const auto& s = *spec;
    std::printf("\nhyperparameters\n");
    std::printf("  %-34s %u\n", "context_length", s.n_ctx_train);
    std::printf("  %-34s %u\n", "embedding_length", s.n_embd);
    std::printf("  %-34s %u\n", "block_count", s.n_layers);
    std::printf("  %-34s %u\n", "feed_forward_length", s.n_ff);
    std::printf("  %-34s %u\n", "attention.head_count", s.n_head);
    std::printf("  %-34s %u\n", "attention.head_count_kv", s.n_head_kv);
    std::printf("  %-34s %u\n", "head_dim", s.head_dim);
    std::printf("  %-34s %u\n", "rope.dimension_count", s.rope_dim);
    std::printf("  %-34s %g (%s)\n", "rope.freq_base", s.rope_freq_base,
                std::string(models::rope_type_name(s.rope_type)).c_str());
    std::printf("  %-34s %g\n", "attention.layer_norm_rms_epsilon", s.rms_eps);
    std::printf("  %-34s %u\n", "vocab size", s.n_vocab);
    std::printf("  %-34s %s\n", "output", s.tied_output ? "tied to token_embd" : "output.weight");
    if (s.qkv_bias) std::printf("  %-34s yes\n", "q/k/v biases");
    if (s.qk_norm) std::printf("  %-34s yes\n", "q/k norms");
    if (s.rope_freq_scale != 1.0f) std::printf("  %-34s %g (linear)\n", "rope.scaling.factor", 1.0 / s.rope_freq_scale);
    if (s.post_norms) std::printf("  %-34s yes\n", "post-attention and post-FFN norms");
    if (s.ffn_act == graph::Activation::GeluTanh) std::printf("  %-34s GELU (tanh)\n", "FFN gate activation");
    if (s.embedding_scale != 1.0f) std::printf("  %-34s %g\n", "embedding scale", s.embedding_scale);
    if (s.attention_scale != 0.0f) std::printf("  %-34s %g\n", "attention scale", s.attention_scale);
    if (s.sliding_window) {
      uint32_t n_sliding = 0;
      for (uint32_t l = 0; l < s.n_layers; ++l) n_sliding += s.is_sliding(l);
      std::printf("  %-34s %u positions\n", "attention.sliding_window", s.sliding_window);
      std::printf("  %-34s %u (%u of %u layers sliding)\n", "attention.sliding_window_pattern",
                  s.sliding_window_pattern, n_sliding, s.n_layers);
      std::printf("  %-34s %g (sliding layers; rope.freq_base for the full ones)\n", "rope.freq_base_swa",
                  s.rope_freq_base_swa);
    }
  } else if (!arch.empty() || !f.tensors().empty()) {
    std::printf("not runnable  %s\n", spec_error.c_str());
  }

  const gguf::TokenizerSummary tok = gguf::tokenizer_summary(f);
  if (!tok.model.empty() || tok.n_tokens) {
    std::printf("\ntokenizer\n");
    std::printf("  model %s, pre-tokenizer %s, %llu tokens", tok.model.empty() ? "-" : std::string(tok.model).c_str(),
                tok.pre.empty() ? "-" : std::string(tok.pre).c_str(), static_cast<unsigned long long>(tok.n_tokens));
    if (tok.n_merges) std::printf(", %llu merges", static_cast<unsigned long long>(tok.n_merges));
    std::printf("\n ");
    for (const auto& s : tok.specials) {
      std::printf(" %s ", std::string(s.role).c_str());
      if (!s.id)
        std::printf("-");
      else if (s.text)
        std::printf("%llu %s", static_cast<unsigned long long>(*s.id), quote_for_message(*s.text).c_str());
      else
        std::printf("%llu (outside the vocabulary)", static_cast<unsigned long long>(*s.id));
    }
    std::printf("\n  chat template %s", tok.has_chat_template ? "yes" : "no");
    if (tok.add_bos) std::printf(", add bos %s", *tok.add_bos ? "yes" : "no");
    std::printf("\n");
  }

  if (!f.tensors().empty()) {
    std::printf("\nquantization\n");
    for (const auto& u : gguf::type_usage(f))
      std::printf("  %-8s %5llu tensors  %12s  %5.1f%%\n", std::string(type_name(u.type)).c_str(),
                  static_cast<unsigned long long>(u.tensors), format_bytes(u.bytes).c_str(),
                  f.tensor_bytes() ? 100.0 * static_cast<double>(u.bytes) / static_cast<double>(f.tensor_bytes()) : 0.0);
    const uint64_t params = gguf::parameter_count(f);
    std::printf("  total    %5zu tensors  %12s  %s parameters, %.2f bits per weight\n", f.tensors().size(),
                format_bytes(f.tensor_bytes()).c_str(), format_count(params).c_str(),
                params ? 8.0 * static_cast<double>(f.tensor_bytes()) / static_cast<double>(params) : 0.0);
  }

  if (opt.metadata) {
    std::printf("\nmetadata\n");
    for (const auto& e : f.metadata())
      std::printf("  %-40s %s\n", quote_for_message(e.key).c_str(), e.value.summary().c_str());
  }
  if (opt.tensors) {
    std::printf("\ntensors\n  %-36s %-8s %-24s %s\n", "name", "type", "shape", "bytes");
    for (const auto& t : f.tensors())
      std::printf("  %-36s %-8s %-24s %llu\n", quote_for_message(t.name).c_str(),
                  std::string(type_name(t.type)).c_str(), shape_text(t).c_str(),
                  static_cast<unsigned long long>(t.n_bytes));
  }
}

void run_inspect(const InspectOptions& opt) {
  const gguf::File f = gguf::File::open(opt.path);
  const std::string_view arch = f.get_optional<std::string_view>("general.architecture").value_or("");
  std::optional<models::ModelSpec> spec;
  std::string spec_error;
  try {
    spec = models::ModelSpec::from_gguf(f);
  } catch (const Error& e) {
    spec_error = e.what();
  }
  if (opt.json) {
    // Token texts and names may be any bytes; invalid UTF-8 is replaced, not fatal.
    std::cout << to_json(f, arch, spec, spec_error, opt).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    print_text(f, arch, spec, spec_error, opt);
  }
}

void setup(CLI::App& root) {
  auto opt = std::make_shared<InspectOptions>();
  auto* cmd = root.add_subcommand("inspect", "Show a GGUF file's architecture, hyperparameters, tokenizer and tensors");
  cmd->add_option("model", opt->path, "GGUF file")->required();
  cmd->add_flag("--json", opt->json, "Print one JSON object");
  cmd->add_flag("--tensors", opt->tensors, "List every tensor (name, type, shape, bytes)");
  cmd->add_flag("--metadata", opt->metadata, "List every metadata key and value");
  cmd->callback([opt] { run_inspect(*opt); });
}

}  // namespace

RAYO_COMMAND(inspect, 20, setup);

}  // namespace rayo::cli
