#include "runtime/model.h"

namespace rayo::runtime {

Model::Model(gguf::File file, models::ModelSpec spec, tokenizer::Tokenizer tokenizer,
             const models::Architecture* arch)
    : file_(std::move(file)), spec_(std::move(spec)), tokenizer_(std::move(tokenizer)), architecture_(arch) {}

std::shared_ptr<const Model> Model::load(const std::string& path) {
  gguf::File file = gguf::File::open(path);
  models::ModelSpec spec = models::ModelSpec::from_gguf(file);
  const models::Architecture& arch = models::find_architecture(spec.arch);
  // Building a one-token graph checks every tensor's presence and shape now,
  // rather than at the first step.
  arch.build(file, spec, graph::GraphConfig{1, 1});
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(file);
  return std::shared_ptr<const Model>(new Model(std::move(file), std::move(spec), std::move(tok), &arch));
}

}  // namespace rayo::runtime
