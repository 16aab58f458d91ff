#pragma once
// rayo's C++ library: load a GGUF model, complete a prompt or a conversation
// (rendered with the model's own chat template), stream the text as it comes.
// Shaped like llama-cpp-python's Llama (the same names, parameters and
// defaults) so that the Python package binds it one to one:
//
//   rayo::Llm llm("stories260K.gguf", {.n_threads = 2});
//   rayo::Completion c = llm.create_completion("Once upon a time", {.max_tokens = 16, .temperature = 0});
//   std::cout << c.text << " [" << c.finish_reason << "]\n";
//
// Every failure (a bad file, a bad option, a prompt longer than the context)
// throws rayo::Error, a std::runtime_error with a one-line message. Only
// standard types cross this header: it compiles with nothing but include/ on
// the include path, and the engine stays behind a pointer.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rayo/error.h"

namespace rayo {

// A seed that asks for a fresh random one (llama.cpp's LLAMA_DEFAULT_SEED).
inline constexpr uint32_t kRandomSeed = 0xFFFFFFFFu;

// How a model is loaded and where it runs: Llama(model_path, n_ctx, n_batch, n_threads, seed, verbose).
struct LlmOptions {
  int64_t n_ctx = 512;          // context length in tokens, at most the model's training context; 0: that context
  int64_t n_batch = 512;        // prompt tokens evaluated per step
  int n_threads = 0;            // CPU threads; 0: the physical cores
  std::string device = "auto";  // "auto" (CUDA when a GPU is usable, else the CPU), "cpu" or "cuda"
  uint32_t seed = kRandomSeed;  // seeds the sampling of every call that gives no seed of its own
  bool verbose = false;         // describe the backend and its step graphs on stderr
};

// Sampling and stopping for one completion, with llama-cpp-python's create_completion defaults.
// The chain is llama.cpp's: penalties -> top-k -> top-p -> min-p -> temperature.
struct CompletionOptions {
  int64_t max_tokens = 16;          // <= 0: until the end of generation or a full context
  float temperature = 0.8f;         // <= 0: greedy
  float top_p = 0.95f;              // 1: off
  int top_k = 40;                   // <= 0: every token
  float min_p = 0.05f;              // 0: off
  float repeat_penalty = 1.0f;      // 1: off (over the last 64 tokens)
  float presence_penalty = 0.0f;    // 0: off
  float frequency_penalty = 0.0f;   // 0: off
  std::vector<std::string> stop{};  // stop strings, not included in the text
  std::optional<uint32_t> seed{};   // absent: the next seed drawn from the Llm's seed
  int logprobs = -1;                // -1: none; 0..20: each token's logprob and this many alternatives
};

// One turn of a conversation: role "system", "user" or "assistant", and its text.
struct ChatMessage {
  std::string role{};
  std::string content{};
};

// A token and its log-probability: the log-softmax of the model's logits at
// its position (before the sampling chain's penalties and temperature).
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

// A generated token's log-probability and the most likely tokens at its
// position, best first (CompletionOptions::logprobs of them).
struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0;
  std::vector<TokenLogprob> top{};
};

// What a completion produced.
struct Completion {
  std::string text{};             // the generated text, cut before a stop string
  std::vector<int32_t> tokens{};  // the generated token ids (an end-of-generation token excluded)
  std::string finish_reason{};    // "stop" (end of generation, a stop string, the callback) or "length"
  int64_t prompt_tokens = 0;      // tokens of the prompt (for a chat, of the rendered conversation)
  int64_t completion_tokens = 0;  // tokens.size()
  std::vector<TokenLogprobs> logprobs{};  // one per token of `tokens` when CompletionOptions::logprobs >= 0
};

// Receives each piece of text as it becomes final: whole UTF-8 characters,
// never part of a possible stop string; the pieces concatenate to the
// Completion's text. Returning false stops the generation after this piece;
// an exception it throws leaves the call (the Llm stays usable).
using StreamCallback = std::function<bool(std::string_view piece)>;

// A loaded model with its context (one sequence and its KV cache). One call
// runs at a time: concurrent calls wait for each other. A call reuses the
// cached tokens that its prompt shares with the previous call's prompt and
// output, so a growing conversation evaluates only its new turn.
class Llm {
 public:
  // Loads and checks the GGUF file, and prepares the backend.
  explicit Llm(const std::string& model_path, const LlmOptions& options = {});
  ~Llm();
  // A moved-from Llm may only be destroyed or assigned to.
  Llm(Llm&&) noexcept;
  Llm& operator=(Llm&&) noexcept;

  // Completes `prompt` (tokenized with the model's BOS token; control tokens
  // written in it, such as "<|im_start|>", are recognised).
  Completion create_completion(const std::string& prompt, const CompletionOptions& options = {},
                               const StreamCallback& on_text = {});
  // Answers a conversation: the messages rendered with the model's chat template
  // (a ChatML or Llama-2 default when the file has none), ready for the assistant's turn.
  Completion create_chat_completion(const std::vector<ChatMessage>& messages, const CompletionOptions& options = {},
                                    const StreamCallback& on_text = {});
  // The prompt text create_chat_completion generates from.
  std::string apply_chat_template(const std::vector<ChatMessage>& messages) const;

  // add_special: the BOS / EOS tokens the vocabulary asks for. parse_special:
  // control tokens written in the text become their ids (else plain text).
  std::vector<int32_t> tokenize(std::string_view text, bool add_special = true, bool parse_special = false) const;
  // The text of token ids; control tokens are shown only with `special`.
  std::string detokenize(const std::vector<int32_t>& tokens, bool special = false) const;

  int64_t n_ctx() const;
  int64_t n_vocab() const;
  int32_t token_bos() const;  // -1 when the vocabulary has none
  int32_t token_eos() const;
  // "cpu" or "cuda": where it runs.
  std::string device() const;
  // The GGUF file's metadata as llama.cpp exposes it: every key that is not an
  // array, its value as text (numbers in decimal, booleans "true"/"false").
  const std::map<std::string, std::string>& metadata() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rayo
