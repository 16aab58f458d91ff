#pragma once
// The generation loop: evaluate the prompt, then sample, stream and stop
// (end-of-generation token, a stop string, the token budget or the context).
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/session.h"

namespace rayo::runtime {

struct GenerationOptions {
  int64_t max_tokens = -1;         // -1: until end of generation or the context is full
  std::vector<std::string> stop;   // stop strings (not included in the text)
  bool show_special = false;       // print special tokens' text
  bool ignore_eos = false;         // keep going past end-of-generation tokens (benchmarks)
  int logprobs = -1;               // -1: none; else each token's logprob and this many alternatives
};

enum class FinishReason { Stop, Length, Context };
std::string_view finish_reason_name(FinishReason r);  // "stop", "length", "context"

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated ids (the end-of-generation token excluded)
  std::string text;             // their text, cut at a stop string
  std::vector<GeneratedToken> logprobs;  // one per token of `tokens` when options.logprobs >= 0
  FinishReason finish = FinishReason::Stop;
  int64_t prompt_tokens = 0;
  double prompt_seconds = 0;    // prompt evaluation
  double generate_seconds = 0;  // sampling + decode steps after the prompt
};

// Stop strings while text is generated: advances `emitted` (bytes of `text`
// already final) over what is final now. Text up to the first stop string is
// final, less a tail that could still turn out to start one (unless `last`).
// When a stop string occurs, cuts `text` there and returns true.
bool advance_final_text(std::string& text, size_t& emitted, const std::vector<std::string>& stops, bool last);

// Streams text pieces as they become final (whole UTF-8 characters, never part
// of a possible stop string). Returning false stops the generation there: the
// result then ends with that piece (finish reason Stop), so that the text
// streamed and the text returned agree. The prompt is appended to the session's
// sequence.
using TextCallback = std::function<bool(std::string_view)>;

GenerationResult generate(Session& session, Sampler& sampler, std::span<const int32_t> prompt,
                          const GenerationOptions& options, const TextCallback& on_text);

}  // namespace rayo::runtime
