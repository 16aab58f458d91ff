#include "runtime/generation.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "tokenizer/tokenizer.h"

namespace rayo::runtime {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Length of the longest suffix of `text` that is a proper prefix of a stop string:
// that much text must be held back until the next piece decides.
size_t held_back(std::string_view text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const auto& s : stops)
    for (size_t n = std::min(text.size(), s.size() - 1); n > hold; --n)
      if (text.substr(text.size() - n) == std::string_view(s).substr(0, n)) {
        hold = n;
        break;
      }
  return hold;
}

}  // namespace

bool advance_final_text(std::string& text, size_t& emitted, const std::vector<std::string>& stops, bool last) {
  for (const auto& s : stops) {
    const size_t from = emitted >= s.size() ? emitted - s.size() + 1 : 0;
    const size_t at = text.find(s, from);
    if (at != std::string::npos) {
      text.resize(at);
      emitted = at;
      return true;
    }
  }
  const size_t hold = last ? 0 : held_back(std::string_view(text).substr(emitted), stops);
  emitted = std::max(emitted, text.size() - hold);
  return false;
}

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Context: return "context";
  }
  return "?";
}

GenerationResult generate(Session& session, Sampler& sampler, std::span<const int32_t> prompt,
                          const GenerationOptions& options, const TextCallback& on_text) {
  if (prompt.empty()) fail("the prompt has no tokens");
  for (const auto& s : options.stop)
    if (s.empty()) fail("a stop string is empty");
  const auto& tok = session.model().tokenizer();
  GenerationResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());

  auto start = Clock::now();
  for (int32_t t : prompt) sampler.accept(t);
  // The prompt, then each token sampled from the logits after it (on the
  // backend when it can: a decode step then brings back one id).
  const bool budget = options.max_tokens != 0;
  // With logprobs the logits come to the host and are sampled there: the
  // same draw as the backend's (Session::eval_sample), one row more to copy.
  GeneratedToken scored;
  auto eval_next = [&](std::span<const int32_t> tokens) {
    if (options.logprobs < 0) return session.eval_sample(tokens, sampler);
    const std::span<const float> logits = session.eval(tokens);
    scored = token_logprobs(sampler.sample(logits), logits, options.logprobs);
    return scored.id;
  };
  int32_t token = 0;
  if (budget)
    token = eval_next(prompt);
  else
    session.eval(prompt);
  result.prompt_seconds = seconds_since(start);

  start = Clock::now();
  tokenizer::StreamingDecoder decoder(tok, options.show_special, /*at_sequence_start=*/false);
  size_t emitted = 0;  // bytes of result.text already streamed
  // Streams what is final; returns true when a stop string ended the text or,
  // before the last piece, the callback asked to stop (the text then ends with
  // what it was given: the tail held back for a possible stop string goes).
  auto emit = [&](bool last) {
    const size_t before = emitted;
    const bool stopped = advance_final_text(result.text, emitted, options.stop, last);
    if (emitted == before || !on_text) return stopped;
    if (!on_text(std::string_view(result.text).substr(before, emitted - before)) && !last) {
      result.text.resize(emitted);
      return true;
    }
    return stopped;
  };

  bool stopped = false;
  result.finish = FinishReason::Length;
  while (budget) {
    sampler.accept(token);
    if (tok.is_eog(token) && !options.ignore_eos) {
      result.finish = FinishReason::Stop;
      break;
    }
    result.tokens.push_back(token);
    if (options.logprobs >= 0) result.logprobs.push_back(std::move(scored));
    result.text += decoder.push(token);
    if ((stopped = emit(false))) {
      result.finish = FinishReason::Stop;
      break;
    }
    if (options.max_tokens >= 0 && static_cast<int64_t>(result.tokens.size()) >= options.max_tokens) break;
    if (session.n_past() >= session.n_ctx()) {  // no room to evaluate the token just sampled
      result.finish = options.max_tokens < 0 ? FinishReason::Context : FinishReason::Length;
      break;
    }
    token = eval_next(std::span<const int32_t>(&token, 1));
  }
  if (!stopped) {
    result.text += decoder.finish();
    if (emit(true)) result.finish = FinishReason::Stop;
  }
  result.generate_seconds = seconds_since(start);
  return result;
}

}  // namespace rayo::runtime
