#pragma once
// A loaded model: the mapped GGUF file, its hyperparameters, its tokenizer and
// its architecture. Immutable once loaded, shared by every session on it.
#include <memory>
#include <string>

#include "gguf/file.h"
#include "models/architecture.h"
#include "models/model_spec.h"
#include "tokenizer/tokenizer.h"

namespace rayo::runtime {

class Model {
 public:
  // Opens, validates and checks the file: architecture supported, every tensor
  // present with its shape and a type rayo can compute with. Throws rayo::Error.
  static std::shared_ptr<const Model> load(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const gguf::File& file() const { return file_; }
  const models::ModelSpec& spec() const { return spec_; }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  const models::Architecture& architecture() const { return *architecture_; }

  // Bytes of weights read per decoded token (all matrices once): the roofline's numerator.
  uint64_t weight_bytes() const { return file_.tensor_bytes(); }

 private:
  Model(gguf::File file, models::ModelSpec spec, tokenizer::Tokenizer tokenizer, const models::Architecture* arch);
  gguf::File file_;
  models::ModelSpec spec_;
  tokenizer::Tokenizer tokenizer_;
  const models::Architecture* architecture_;
};

}  // namespace rayo::runtime
