// The public Llm (include/rayo/llm.h) on top of the runtime: a Model, one
// Session over it, a Sampler per call and runtime::generate, as `rayo run`
// and `rayo chat` use them; chat prompts are rendered as `rayo chat` and the
// server render them.
#include "rayo/llm.h"

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <type_traits>

#include "common/error.h"
#include "runtime/chat_format.h"
#include "runtime/generation.h"
#include "runtime/model.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "tokenizer/chat_template.h"

namespace rayo {
namespace {

runtime::SessionOptions session_options(const LlmOptions& o, const runtime::Model& model) {
  if (o.n_ctx < 0) fail("n_ctx must be 0 (the model's training context) or a positive number of tokens, got ", o.n_ctx);
  if (o.n_batch <= 0) fail("n_batch must be a positive number of tokens, got ", o.n_batch);
  if (o.n_threads < 0) fail("n_threads must be 0 (the physical cores) or positive, got ", o.n_threads);
  if (o.device != "auto" && o.device != "cpu" && o.device != "cuda")
    fail("device must be auto, cpu or cuda, got ", quote_for_message(o.device));
  runtime::SessionOptions s;
  s.n_ctx = runtime::requested_context(o.n_ctx, model.spec());  // as `rayo run -c`
  s.n_batch = o.n_batch;
  s.backend.device = o.device;
  s.backend.n_threads = o.n_threads;
  s.backend.verbose = o.verbose;
  return s;
}

// The options as the runtime's parameters, checked under their API names.
runtime::SamplingParams sampling_params(const CompletionOptions& o, uint32_t seed) {
  for (const auto& s : o.stop)
    if (s.empty()) fail("a stop string is empty");
  runtime::SamplingParams p;
  p.temperature = o.temperature;
  p.top_p = o.top_p;
  p.top_k = std::max(o.top_k, 0);
  p.min_p = o.min_p;
  p.repeat_penalty = o.repeat_penalty;
  p.presence_penalty = o.presence_penalty;
  p.frequency_penalty = o.frequency_penalty;
  p.seed = seed;
  p.validate(runtime::kApiSamplingNames);
  return p;
}

// llama.cpp's llama_model_meta_val_str: arrays are left out, values are text.
std::map<std::string, std::string> metadata_strings(const gguf::File& file) {
  std::map<std::string, std::string> out;
  for (const auto& e : file.metadata()) {
    const gguf::Value& v = e.value;
    std::string text;
    if (v.type() == gguf::ValueType::ARRAY) continue;
    if (v.type() == gguf::ValueType::STRING)
      text = v.as_string();
    else if (v.type() == gguf::ValueType::BOOL)
      text = v.as_bool() ? "true" : "false";
    else if (v.is_float())
      text = std::to_string(v.as_float());
    else if (v.type() == gguf::ValueType::U64)
      text = std::to_string(v.as_uint());
    else
      text = std::to_string(v.as_int());
    out.emplace(std::string(e.key), std::move(text));
  }
  return out;
}

// The stream callback goes to runtime::generate as it is.
static_assert(std::is_same_v<StreamCallback, runtime::TextCallback>);

}  // namespace

struct Llm::Impl {
  std::shared_ptr<const runtime::Model> model;
  runtime::Session session;
  std::map<std::string, std::string> metadata;
  std::mt19937 seeds;             // the seed of each call that gives none
  std::mutex generating;          // one call at a time owns the session

  Impl(std::shared_ptr<const runtime::Model> m, const LlmOptions& o)
      : model(std::move(m)),
        session(model, session_options(o, *model)),
        metadata(metadata_strings(model->file())),
        seeds(o.seed == kRandomSeed ? std::random_device{}() : o.seed) {}

  const tokenizer::Tokenizer& tok() const { return model->tokenizer(); }

  uint32_t next_seed() {
    const auto s = static_cast<uint32_t>(seeds());
    return s == kRandomSeed ? s - 1 : s;  // kRandomSeed would ask the sampler for a random one
  }

  Completion complete(const std::vector<int32_t>& prompt, const CompletionOptions& options,
                      const StreamCallback& on_text) {
    std::lock_guard lock(generating);
    const runtime::SamplingParams params = sampling_params(options, options.seed ? *options.seed : next_seed());
    if (prompt.empty()) fail("the prompt has no tokens");
    if (static_cast<int64_t>(prompt.size()) >= session.n_ctx())
      fail("the prompt is ", prompt.size(), " tokens, which does not fit the context of ", session.n_ctx(),
           " with room to generate (raise n_ctx)");
    runtime::Sampler sampler(params, session.n_vocab());
    runtime::GenerationOptions g;
    g.max_tokens = options.max_tokens > 0 ? options.max_tokens : -1;
    g.stop = options.stop;
    if (options.logprobs < -1 || options.logprobs > 20)
      fail("logprobs must be -1 (none) or 0 to 20 alternatives, got ", options.logprobs);
    g.logprobs = options.logprobs;

    // Keep what the previous call left in the cache as far as this prompt
    // repeats it; at least one token is evaluated, for its logits. The kept
    // tokens still count for the penalties.
    const size_t keep = session.keep_prefix(prompt);
    for (size_t i = 0; i < keep; ++i) sampler.accept(prompt[i]);
    const std::span<const int32_t> suffix(prompt.data() + keep, prompt.size() - keep);
    runtime::GenerationResult r = runtime::generate(session, sampler, suffix, g, on_text);

    Completion c;
    c.text = std::move(r.text);
    c.tokens = std::move(r.tokens);
    c.finish_reason = r.finish == runtime::FinishReason::Stop ? "stop" : "length";
    c.prompt_tokens = static_cast<int64_t>(prompt.size());
    c.completion_tokens = static_cast<int64_t>(c.tokens.size());
    for (const runtime::GeneratedToken& t : r.logprobs) {
      TokenLogprobs& out = c.logprobs.emplace_back(TokenLogprobs{t.id, t.logprob, {}});
      for (const runtime::TokenLogprob& alt : t.top) out.top.push_back({alt.id, alt.logprob});
    }
    return c;
  }

  // Rendered as `rayo chat` and the server render it (runtime/chat_format.h).
  std::string render_chat(const std::vector<ChatMessage>& messages, const runtime::ChatFormat& format) const {
    if (messages.empty()) fail("a chat needs at least one message");
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
    return tokenizer::apply_chat_template(format.source, list, format.options);
  }

  std::vector<int32_t> chat_tokens(const std::vector<ChatMessage>& messages) const {
    const runtime::ChatFormat format = runtime::chat_format(*model);
    const std::string prompt = render_chat(messages, format);
    const bool add_special = format.needs_bos(prompt);
    return tok().encode(prompt, add_special, /*parse_special=*/true);
  }
};

Llm::Llm(const std::string& model_path, const LlmOptions& options)
    : impl_(std::make_unique<Impl>(runtime::Model::load(model_path), options)) {}

Llm::~Llm() = default;
Llm::Llm(Llm&&) noexcept = default;
Llm& Llm::operator=(Llm&&) noexcept = default;

Completion Llm::create_completion(const std::string& prompt, const CompletionOptions& options,
                                  const StreamCallback& on_text) {
  return impl_->complete(impl_->tok().encode(prompt, /*add_special=*/true, /*parse_special=*/true), options, on_text);
}

Completion Llm::create_chat_completion(const std::vector<ChatMessage>& messages, const CompletionOptions& options,
                                       const StreamCallback& on_text) {
  return impl_->complete(impl_->chat_tokens(messages), options, on_text);
}

std::string Llm::apply_chat_template(const std::vector<ChatMessage>& messages) const {
  return impl_->render_chat(messages, runtime::chat_format(*impl_->model));
}

std::vector<int32_t> Llm::tokenize(std::string_view text, bool add_special, bool parse_special) const {
  return impl_->tok().encode(text, add_special, parse_special);
}

std::string Llm::detokenize(const std::vector<int32_t>& tokens, bool special) const {
  return impl_->tok().decode(tokens, special);
}

int64_t Llm::n_ctx() const { return impl_->session.n_ctx(); }
int64_t Llm::n_vocab() const { return impl_->session.n_vocab(); }
int32_t Llm::token_bos() const { return impl_->tok().bos(); }
int32_t Llm::token_eos() const { return impl_->tok().eos(); }
std::string Llm::device() const { return std::string(impl_->session.device()); }
const std::map<std::string, std::string>& Llm::metadata() const { return impl_->metadata; }

}  // namespace rayo
