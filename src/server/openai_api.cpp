#include "server/openai_api.h"

#include <cmath>
#include <random>

#include "common/strings.h"
#include "runtime/chat_format.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace rayo::server {
namespace {

ApiError bad(const std::string& param, const std::string& message) { return ApiError(400, message, param); }

// Field accessors: absent or null means "use the default"; a wrong type is a 400.
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number(const json& body, const char* name, double lo, double hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw bad(name, cat("'", name, "' must be a number"));
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) throw bad(name, cat("'", name, "' must be between ", lo, " and ", hi, ", got ", d));
  return d;
}

std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw bad(name, cat("'", name, "' must be an integer"));
  const int64_t i = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                        ? INT64_MAX
                        : v->get<int64_t>();
  if (i < lo || i > hi) throw bad(name, cat("'", name, "' must be between ", lo, " and ", hi, ", got ", i));
  return i;
}

std::optional<bool> boolean(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw bad(name, cat("'", name, "' must be true or false"));
  return v->get<bool>();
}

// A request of either endpoint with the parameters both share.
ApiRequest parse_common(const json& body, Endpoint endpoint) {
  if (!body.is_object()) throw bad("", "the request body must be a JSON object");
  ApiRequest out;
  out.endpoint = endpoint;
  if (const json* m = field(body, "model"); m && !m->is_string()) throw bad("model", "'model' must be a string");
  if (auto n = integer(body, "n", 1, INT32_MAX); n && *n != 1)
    throw bad("n", cat("only n=1 is supported, got ", *n));
  auto& r = out.request;
  auto& s = r.sampling;
  // OpenAI's defaults: temperature 1, top_p 1, no top-k or min-p cut.
  s.temperature = 1.0f;
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.0f;
  if (auto t = number(body, "temperature", 0, 2)) s.temperature = static_cast<float>(*t);
  if (auto p = number(body, "top_p", 0, 1)) s.top_p = static_cast<float>(*p);
  if (auto k = integer(body, "top_k", 0, INT32_MAX)) s.top_k = static_cast<int>(*k);
  if (auto p = number(body, "min_p", 0, 1)) s.min_p = static_cast<float>(*p);
  if (auto p = number(body, "presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*p);
  if (auto p = number(body, "frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*p);
  if (auto p = number(body, "repeat_penalty", 1e-6, 100)) s.repeat_penalty = static_cast<float>(*p);
  if (s.presence_penalty != 0 || s.frequency_penalty != 0) s.repeat_last_n = -1;
  if (auto seed = integer(body, "seed", INT64_MIN, INT64_MAX))
    s.seed = static_cast<uint32_t>(static_cast<uint64_t>(*seed) & 0xFFFFFFFFu) == 0xFFFFFFFFu
                 ? 0xFFFFFFFEu
                 : static_cast<uint32_t>(static_cast<uint64_t>(*seed));
  if (auto n = integer(body, "max_tokens", 1, INT32_MAX)) r.max_tokens = *n;
  if (auto n = integer(body, "max_completion_tokens", 1, INT32_MAX)) r.max_tokens = *n;
  if (auto b = boolean(body, "ignore_eos")) r.ignore_eos = *b;
  if (const json* stop = field(body, "stop")) {
    if (stop->is_string()) {
      r.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const auto& s : *stop) {
        if (!s.is_string()) throw bad("stop", "'stop' must be a string or a list of strings");
        r.stop.push_back(s.get<std::string>());
      }
    } else {
      throw bad("stop", "'stop' must be a string or a list of strings");
    }
    for (const auto& s : r.stop)
      if (s.empty()) throw bad("stop", "stop strings must not be empty");
  }
  if (auto b = boolean(body, "stream")) out.stream = *b;
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) throw bad("stream_options", "'stream_options' must be an object");
    if (auto b = boolean(*so, "include_usage")) out.include_usage = *b;
  }
  return out;
}

std::vector<int32_t> tokenize(const runtime::Model& model, const std::string& text, bool add_special) {
  return model.tokenizer().encode(text, add_special, /*parse_special=*/true);
}

std::string piece(const runtime::Model& model, int32_t id) { return model.tokenizer().token_to_piece(id, true); }

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// Text of a message's content: a string, or a list of {"type": "text", "text": ...} parts.
std::string content_text(const json& content, size_t index) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return "";
  if (content.is_array()) {
    std::string text;
    for (const auto& part : content) {
      if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
          !part["text"].is_string())
        throw bad(cat("messages[", index, "].content"), "only text content parts are supported");
      text += part["text"].get<std::string>();
    }
    return text;
  }
  throw bad(cat("messages[", index, "].content"), "a message's content must be a string or a list of text parts");
}

}  // namespace

json ApiError::body() const {
  return json{{"error",
               {{"message", message},
                {"type", type},
                {"param", param.empty() ? json(nullptr) : json(param)},
                {"code", code.empty() ? json(nullptr) : json(code)}}}};
}

std::string render_chat(const runtime::ChatFormat& format, const json& messages) {
  try {
    return tokenizer::apply_chat_template(format.source, nlohmann::ordered_json::parse(messages.dump()),
                                          format.options);
  } catch (const Error& e) {
    throw ApiError(400, cat("the chat template failed: ", e.what()), "messages");
  }
}

ApiRequest parse_chat_request(const json& body, const runtime::Model& model) {
  ApiRequest out = parse_common(body, Endpoint::Chat);
  const json* messages = field(body, "messages");
  if (!messages) throw bad("messages", "'messages' is required");
  if (!messages->is_array() || messages->empty()) throw bad("messages", "'messages' must be a non-empty list");
  json normalized = json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    if (!m.is_object()) throw bad(cat("messages[", i, "]"), "each message must be an object");
    if (!m.contains("role") || !m["role"].is_string())
      throw bad(cat("messages[", i, "].role"), "each message needs a 'role' string");
    json n = m;
    n["content"] = content_text(m.contains("content") ? m["content"] : json(nullptr), i);
    normalized.push_back(std::move(n));
  }
  if (auto b = boolean(body, "logprobs"); b && *b) out.request.logprobs = 0;
  if (auto n = integer(body, "top_logprobs", 0, 20)) {
    if (out.request.logprobs < 0) throw bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    out.request.logprobs = static_cast<int>(*n);
  }
  const runtime::ChatFormat format = runtime::chat_format(model);
  out.prompt_text = render_chat(format, normalized);
  out.request.prompt = tokenize(model, out.prompt_text, format.needs_bos(out.prompt_text));
  return out;
}

ApiRequest parse_completion_request(const json& body, const runtime::Model& model) {
  ApiRequest out = parse_common(body, Endpoint::Completion);
  const json* prompt = field(body, "prompt");
  if (!prompt) throw bad("prompt", "'prompt' is required");
  const int64_t n_vocab = model.spec().n_vocab;
  auto token_list = [&](const json& list) {
    std::vector<int32_t> ids;
    for (const auto& t : list) {
      if (!t.is_number_integer()) throw bad("prompt", "a token prompt must be a list of integers");
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id >= n_vocab) throw bad("prompt", cat("token id ", id, " is outside the vocabulary of ", n_vocab));
      ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
  };
  if (prompt->is_string()) {
    out.prompt_text = prompt->get<std::string>();
    out.request.prompt = tokenize(model, out.prompt_text, true);
  } else if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number_integer()) {
    out.request.prompt = token_list(*prompt);
  } else if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    out.prompt_text = (*prompt)[0].get<std::string>();
    out.request.prompt = tokenize(model, out.prompt_text, true);
  } else if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_array()) {
    out.request.prompt = token_list((*prompt)[0]);
  } else if (prompt->is_array() && prompt->size() > 1) {
    throw bad("prompt", "only one prompt per request is supported");
  } else {
    throw bad("prompt", "'prompt' must be a string, a list of token ids, or a list of one of them");
  }
  if (auto n = integer(body, "logprobs", 0, 20)) out.request.logprobs = static_cast<int>(*n);
  if (auto b = boolean(body, "echo"); b && *b) throw bad("echo", "'echo' is not supported");
  // Legacy completions default to 16 tokens.
  if (!field(body, "max_tokens") && !field(body, "max_completion_tokens")) out.request.max_tokens = 16;
  if (out.request.prompt.empty()) throw bad("prompt", "the prompt is empty");
  return out;
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_prompt_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_prompt_tokens}}}};
}

std::string finish_reason(runtime::FinishReason r) { return r == runtime::FinishReason::Stop ? "stop" : "length"; }

json logprobs_json(const ResponseContext& ctx, const std::vector<runtime::GeneratedToken>& tokens,
                   size_t text_offset) {
  const runtime::Model& m = *ctx.engine;
  if (ctx.endpoint == Endpoint::Chat) {
    json content = json::array();
    for (const auto& t : tokens) {
      const std::string p = piece(m, t.id);
      json top = json::array();
      for (const auto& a : t.top) {
        const std::string ap = piece(m, a.id);
        top.push_back({{"token", ap}, {"logprob", a.logprob}, {"bytes", bytes_of(ap)}});
      }
      content.push_back({{"token", p}, {"logprob", t.logprob}, {"bytes", bytes_of(p)}, {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const auto& t : tokens) {
    const std::string p = piece(m, t.id);
    toks.push_back(p);
    lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& a : t.top) top[piece(m, a.id)] = a.logprob;
    tops.push_back(top);
    offsets.push_back(text_offset);
    text_offset += p.size();
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json full_response(const ResponseContext& ctx, const runtime::RequestStream::Update& r) {
  json choice;
  choice["index"] = 0;
  if (ctx.endpoint == Endpoint::Chat)
    choice["message"] = {{"role", "assistant"}, {"content", r.text}, {"refusal", nullptr}};
  else
    choice["text"] = r.text;
  choice["logprobs"] = ctx.logprobs ? logprobs_json(ctx, r.tokens) : json(nullptr);
  choice["finish_reason"] = finish_reason(r.finish);
  return {{"id", ctx.id},
          {"object", ctx.endpoint == Endpoint::Chat ? "chat.completion" : "text_completion"},
          {"created", ctx.created},
          {"model", ctx.model},
          {"system_fingerprint", "rayo-" RAYO_VERSION},
          {"choices", json::array({choice})},
          {"usage", usage_json(r.prompt_tokens, r.completion_tokens, r.cached_prompt_tokens)}};
}

json stream_chunk(const ResponseContext& ctx, const std::string& text,
                  const std::vector<runtime::GeneratedToken>& tokens, const runtime::FinishReason* finish, bool role,
                  bool with_usage_null, size_t text_offset) {
  json choice;
  choice["index"] = 0;
  if (ctx.endpoint == Endpoint::Chat) {
    json delta = json::object();
    if (role) delta["role"] = "assistant";
    if (!text.empty() || (role && !finish)) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = ctx.logprobs && !tokens.empty() ? logprobs_json(ctx, tokens, text_offset) : json(nullptr);
  choice["finish_reason"] = finish ? json(finish_reason(*finish)) : json(nullptr);
  json chunk = {{"id", ctx.id},
                {"object", ctx.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion"},
                {"created", ctx.created},
                {"model", ctx.model},
                {"system_fingerprint", "rayo-" RAYO_VERSION},
                {"choices", json::array({choice})}};
  if (with_usage_null) chunk["usage"] = nullptr;
  return chunk;
}

json usage_chunk(const ResponseContext& ctx, int64_t prompt_tokens, int64_t completion_tokens,
                 int64_t cached_prompt_tokens) {
  return {{"id", ctx.id},
          {"object", ctx.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion"},
          {"created", ctx.created},
          {"model", ctx.model},
          {"system_fingerprint", "rayo-" RAYO_VERSION},
          {"choices", json::array()},
          {"usage", usage_json(prompt_tokens, completion_tokens, cached_prompt_tokens)}};
}

std::string make_id(const std::string& prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  return id;
}

}  // namespace rayo::server
