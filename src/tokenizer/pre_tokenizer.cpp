#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

#include "common/error.h"

namespace rayo::tokenizer {
namespace {

// The regexes below are llama.cpp's, in its ECMAScript spelling; they are
// translated for PCRE2 by llama_regex_to_pcre2(). Non-ASCII literals are written
// as \x{...} so that no editor can normalise them.

constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr const char* kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr const char* kCjk =  // 一-龥, U+0800-一, 가-U+D7FF
    R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

constexpr const char* kDeepseekLlmLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";

constexpr const char* kDeepseekLlmPunct =  // ！-／ ：-～ ‘-‟ U+3000-。
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";

constexpr const char* kDeepseekV3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr const char* kBloom =  // …。，、।۔،
    R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)";

struct Family {
  std::vector<const char*> names;
  std::vector<const char*> regexes;
  PreTokenizerOptions options;
};

PreTokenizerOptions opts(bool clean_spaces, bool ignore_merges = false, bool add_bos = false) {
  PreTokenizerOptions o;
  o.clean_spaces = clean_spaces;
  o.ignore_merges = ignore_merges;
  o.add_bos = add_bos;
  return o;
}

const std::vector<Family>& families() {
  static const std::vector<Family> table = [] {
    std::vector<Family> t;
    t.push_back({{"default"},
                 {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"},
                 opts(true)});
    t.push_back({{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
                  "lfm2"},
                 {kLlama3},
                 opts(true, /*ignore_merges=*/true, /*add_bos=*/true)});
    t.push_back({{"dbrx", "smaug-bpe"}, {kLlama3}, opts(true)});
    t.push_back({{"deepseek-llm"},
                 {"[\r\n]", kDeepseekLlmLetters, kDeepseekLlmPunct, R"(\s+$)", kCjk, R"(\p{N}+)"},
                 opts(false)});
    t.push_back({{"deepseek-coder"},
                 {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"},
                 opts(false)});
    t.push_back({{"deepseek-v3"},
                 {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
                  kDeepseekV3Main},
                 opts(false)});
    t.push_back({{"falcon"},
                 {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, "[0-9][0-9][0-9]"},
                 opts(true)});
    t.push_back({{"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"},
                 {R"(\p{N})", kGpt2},
                 opts(true)});
    t.push_back({{"command-r", "smollm"}, {R"(\p{N})", kGpt2}, opts(false)});
    t.push_back({{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
                  "a.x-4.0", "mellum", "modern-bert", "mpt", "olmo", "jais", "exaone4"},
                 {kGpt2},
                 opts(true)});
    t.push_back({{"trillion", "granite-docling"}, {kGpt2}, opts(false)});
    t.push_back({{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "grok-2", "solar-open"},
                 {kQwen2},
                 opts(false)});
    t.push_back({{"stablelm2", "megrez"}, {kQwen2}, opts(true)});
    t.push_back({{"poro-chat"}, {kBloom}, opts(false)});
    t.push_back({{"bloom", "gpt3-finnish"}, {kBloom}, opts(true)});
    t.push_back({{"viking"}, {kBloom, R"(\p{N})"}, opts(false)});
    {
      PreTokenizerOptions o = opts(true);
      o.no_bos_token = true;
      t.push_back({{"chatglm-bpe", "glm4"}, {kLlama3}, o});
    }
    t.push_back({{"tekken"}, {kTekken}, opts(false, /*ignore_merges=*/true, /*add_bos=*/true)});
    t.push_back({{"gpt-4o", "llama4", "kanana2", "minimax-m2"}, {kGpt4o}, opts(false)});
    t.push_back({{"bailingmoe", "bailingmoe2", "llada-moe"},
                 {R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"},
                 opts(false)});
    t.push_back({{"seed-coder"},
                 {R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)"},
                 opts(false)});
    return t;
  }();
  return table;
}

}  // namespace

PreTokenizer::PreTokenizer(std::string_view name) : name_(name.empty() ? "default" : name) {
  for (const Family& family : families()) {
    if (std::find(family.names.begin(), family.names.end(), std::string_view(name_)) ==
        family.names.end()) {
      continue;
    }
    options_ = family.options;
    for (const char* regex : family.regexes) regexes_.emplace_back(llama_regex_to_pcre2(regex));
    return;
  }
  fail("unknown pre-tokenizer ", quote_for_message(name_), " (tokenizer.ggml.pre)");
}

std::vector<Span> PreTokenizer::split(std::string_view text) const {
  std::vector<Span> spans{{0, text.size()}};
  if (text.empty()) return {};
  std::vector<Span> next;
  for (const SplitRegex& regex : regexes_) {
    next.clear();
    next.reserve(spans.size() + text.size() / 4);
    regex.split(text, spans, next);
    spans.swap(next);
  }
  return spans;
}

std::vector<std::string> PreTokenizer::known_names() {
  std::vector<std::string> names;
  for (const Family& family : families())
    for (const char* n : family.names) names.emplace_back(n);
  return names;
}

}  // namespace rayo::tokenizer
