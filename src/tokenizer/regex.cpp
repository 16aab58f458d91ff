#include "tokenizer/regex.h"

#include <pcre2.h>

#include "common/error.h"

namespace rayo::tokenizer {

struct SplitRegex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() {
    if (code) pcre2_code_free(code);
  }
};

SplitRegex::SplitRegex(const std::string& pattern) : pattern_(pattern), code_(std::make_unique<Code>()) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error, &error_offset,
                              nullptr);
  if (!code_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    fail("pre-tokenizer regex ", quote_for_message(pattern), " does not compile at offset ",
         error_offset, ": ", reinterpret_cast<const char*>(message));
  }
  code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

SplitRegex::~SplitRegex() = default;
SplitRegex::SplitRegex(SplitRegex&&) noexcept = default;
SplitRegex& SplitRegex::operator=(SplitRegex&&) noexcept = default;

void SplitRegex::split(std::string_view text, const std::vector<Span>& spans,
                       std::vector<Span>& out) const {
  struct MatchData {
    pcre2_match_data* data;
    explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
    ~MatchData() { pcre2_match_data_free(data); }
  } match(code_->code);
  RAYO_CHECK(match.data != nullptr);

  for (const Span& span : spans) {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + span.begin);
    size_t pos = 0;       // where the next search starts
    size_t emitted = 0;   // end of what has been appended so far
    while (pos < span.size) {
      const int rc = code_->jit
                         ? pcre2_jit_match(code_->code, subject, span.size, pos, PCRE2_NO_UTF_CHECK,
                                           match.data, nullptr)
                         : pcre2_match(code_->code, subject, span.size, pos, PCRE2_NO_UTF_CHECK,
                                       match.data, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof message);
        fail("pre-tokenizer regex failed: ", reinterpret_cast<const char*>(message));
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
      const size_t begin = ovector[0];
      size_t end = ovector[1];
      if (begin > emitted) out.push_back({span.begin + emitted, begin - emitted});
      if (end == begin) {
        // An empty match splits nothing; step over one character so the loop ends.
        pos = end + 1;
        while (pos < span.size && (static_cast<uint8_t>(subject[pos]) & 0xC0) == 0x80) ++pos;
        continue;
      }
      out.push_back({span.begin + begin, end - begin});
      emitted = end;
      pos = end;
    }
    if (emitted < span.size) out.push_back({span.begin + emitted, span.size - emitted});
  }
}

namespace {

constexpr std::string_view kWhitespaceRanges =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

constexpr std::string_view kNonAsciiWhitespace =
    "[\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]";

}  // namespace

std::string llama_regex_to_pcre2(std::string_view re) {
  std::string out;
  out.reserve(re.size() * 2);
  bool in_class = false;
  bool class_negated = false;
  bool class_has_non_ascii = false;
  size_t class_start = 0;  // position in `out` of the '[' of the current class
  for (size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      const char e = re[i + 1];
      if (e == 's') {
        if (in_class) out += kWhitespaceRanges;
        else out += cat("[", kWhitespaceRanges, "]");
        ++i;
        continue;
      }
      if (e == 'S') {
        RAYO_CHECK(!in_class, "\\S inside a character class is not supported");
        out += cat("[^", kWhitespaceRanges, "]");
        ++i;
        continue;
      }
      if (e == 'p' && i + 2 < re.size() && re[i + 2] == '{') {
        const size_t close = re.find('}', i + 3);
        RAYO_CHECK(close != std::string_view::npos);
        std::string_view name = re.substr(i + 3, close - (i + 3));
        if (name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" || name == "Lo") name = "L";
        out += cat("\\p{", name, "}");
        i = close;
        continue;
      }
      out += c;
      out += e;
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      class_start = out.size();
      class_negated = i + 1 < re.size() && re[i + 1] == '^';
      class_has_non_ascii = false;
      out += c;
      continue;
    }
    if (in_class && c == ']' && out.size() > class_start + 1 + (class_negated ? 1 : 0)) {
      in_class = false;
      out += c;
      if (class_has_non_ascii && !class_negated) {
        // llama.cpp turns non-ASCII whitespace into '\v' before matching, so a
        // literal range such as U+0800-U+4E00 never matches U+3000 there.
        const std::string cls = out.substr(class_start);
        out.resize(class_start);
        out += cat("(?:(?!", kNonAsciiWhitespace, ")", cls, ")");
      }
      continue;
    }
    if (in_class && (static_cast<uint8_t>(c) & 0x80)) class_has_non_ascii = true;
    if (!in_class && c == '(' && (i + 1 >= re.size() || re[i + 1] != '?')) {
      out += "(?:";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace rayo::tokenizer
