#pragma once
// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) that
// splits text the way llama.cpp's std::regex loop does: every match becomes a
// piece, and so does every run of text between two matches.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rayo::tokenizer {

// A piece of the text being split: [begin, begin + size) in bytes.
struct Span {
  size_t begin = 0;
  size_t size = 0;
};

class SplitRegex {
 public:
  // `pattern` is PCRE2 syntax; throws rayo::Error naming it when it does not compile.
  explicit SplitRegex(const std::string& pattern);
  ~SplitRegex();
  SplitRegex(SplitRegex&&) noexcept;
  SplitRegex& operator=(SplitRegex&&) noexcept;

  // Splits each span of `text` (valid UTF-8) independently: the pattern sees only
  // that span, so lookaheads and `$` stop at its end, as in llama.cpp. Appends the
  // resulting spans, in order, to `out`.
  void split(std::string_view text, const std::vector<Span>& spans, std::vector<Span>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::string pattern_;
  std::unique_ptr<Code> code_;
};

// Translates one of llama.cpp's pre-tokenizer regexes (ECMAScript flavour, run by
// llama.cpp on "collapsed" text) into an equivalent PCRE2 pattern:
//  - \s and \S use llama.cpp's whitespace set (Unicode White_Space: \t-\r, space,
//    U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000);
//  - \p{Lu}, \p{Ll}, \p{Lt}, \p{Lm}, \p{Lo} mean any letter, as in llama.cpp;
//  - a literal non-ASCII range in a class does not match non-ASCII whitespace
//    (llama.cpp replaces such whitespace by '\v' before matching);
//  - capturing groups become non-capturing (faster, same matches).
std::string llama_regex_to_pcre2(std::string_view regex);

}  // namespace rayo::tokenizer
