#include "jinja/lexer.h"

#include <cstring>

#include "common/error.h"
#include "jinja/python_text.h"

namespace rayo::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// jinja2 reads the source with every newline sequence turned into "\n" and a
// single trailing newline dropped (keep_trailing_newline=False).
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexOptions& options)
      : src_(normalize_newlines(source)), options_(options) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t start = find_tag_start(pos_);
      if (start == std::string::npos) {
        emit_text(src_.substr(pos_));
        pos_ = src_.size();
        break;
      }
      char kind = src_[start + 1];
      char modifier = start + 2 < src_.size() && (src_[start + 2] == '-' || src_[start + 2] == '+') ? src_[start + 2] : 0;
      std::string text = src_.substr(pos_, start - pos_);
      strip_before_tag(text, kind, modifier);
      emit_text(text);
      advance_to(start + 2 + (modifier ? 1 : 0));
      if (kind == '#')
        skip_comment();
      else if (kind == '%' && try_raw_block())
        continue;
      else
        lex_tag(kind);
    }
    tokens_.push_back({TokenType::End, "", line_});
    return std::move(tokens_);
  }

 private:
  std::string src_;
  LexOptions options_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the last tag consumed ended with a newline

  [[noreturn]] void error(int line, const std::string& message) { fail("line ", line, ": ", message); }

  size_t find_tag_start(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // Moves pos_ forward, counting lines.
  void advance_to(size_t p) {
    for (; pos_ < p; ++pos_)
      if (src_[pos_] == '\n') ++line_;
  }

  void emit_text(const std::string& text) {
    // Lines are counted by advance_to over the raw source; the token gets the
    // line it starts on.
    if (!text.empty()) tokens_.push_back({TokenType::Text, text, line_});
  }

  void strip_before_tag(std::string& text, char kind, char modifier) {
    if (modifier == '-') {
      size_t end = text.size();
      while (end > 0 && is_space(text[end - 1])) --end;
      text.resize(end);
    } else if (modifier != '+' && options_.lstrip_blocks && kind != '{') {
      size_t line_start = text.rfind('\n');
      line_start = line_start == std::string::npos ? 0 : line_start + 1;
      if (line_start > 0 || line_starting_) {
        bool only_blanks = line_start < text.size();
        for (size_t i = line_start; i < text.size(); ++i)
          if (!is_space(text[i])) only_blanks = false;
        if (only_blanks) text.resize(line_start);
      }
    }
  }

  // After a block or comment closes: "-" strips all whitespace, "+" keeps it,
  // otherwise trim_blocks drops one newline.
  void after_block_end(char modifier) {
    if (modifier == '-') {
      size_t p = pos_;
      while (p < src_.size() && is_space(src_[p])) ++p;
      advance_to(p);
    } else if (modifier != '+' && options_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      advance_to(pos_ + 1);
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  void skip_comment() {
    int line = line_;
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) error(line, "unterminated comment: missing '#}'");
    char modifier = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    advance_to(end + 2);
    after_block_end(modifier);
  }

  // Matches optional whitespace, `word`, optional whitespace, then an optional
  // modifier and "%}" at p; returns the position after "%}" or npos.
  size_t match_block_word(size_t p, std::string_view word, char* end_modifier) const {
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, word.size(), word) != 0) return std::string::npos;
    p += word.size();
    if (p < src_.size() && is_name_char(src_[p])) return std::string::npos;
    while (p < src_.size() && is_space(src_[p])) ++p;
    char modifier = 0;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) modifier = src_[p++];
    if (src_.compare(p, 2, "%}") != 0) return std::string::npos;
    if (end_modifier) *end_modifier = modifier;
    return p + 2;
  }

  // {% raw %}: everything up to {% endraw %} is text. As in jinja2, no newline
  // is trimmed after the opening tag, while the closing tag behaves like any
  // block tag.
  bool try_raw_block() {
    char open_modifier = 0;
    size_t body = match_block_word(pos_, "raw", &open_modifier);
    if (body == std::string::npos) return false;
    int line = line_;
    advance_to(body);
    if (open_modifier == '-') after_block_end('-');
    for (size_t search = pos_;;) {
      size_t start = src_.find("{%", search);
      if (start == std::string::npos) error(line, "unterminated raw block: missing '{% endraw %}'");
      size_t p = start + 2;
      char modifier = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) modifier = src_[p++];
      char close_modifier = 0;
      size_t after = match_block_word(p, "endraw", &close_modifier);
      if (after == std::string::npos) {
        search = start + 2;
        continue;
      }
      std::string text = src_.substr(pos_, start - pos_);
      line_starting_ = false;
      strip_before_tag(text, '%', modifier);
      emit_text(text);
      advance_to(after);
      after_block_end(close_modifier);
      return true;
    }
  }

  void lex_tag(char kind) {
    int open_line = line_;
    tokens_.push_back({kind == '%' ? TokenType::BlockBegin : TokenType::VarBegin, "", line_});
    int brace_depth = 0;
    for (;;) {
      size_t p = pos_;
      while (p < src_.size() && is_space(src_[p])) ++p;
      advance_to(p);
      if (pos_ >= src_.size())
        error(open_line, kind == '%' ? "unterminated block tag: missing '%}'" : "unterminated expression: missing '}}'");
      if (kind == '%') {
        for (char modifier : {'-', '+', '\0'}) {
          std::string_view end = modifier == '-' ? "-%}" : modifier == '+' ? "+%}" : "%}";
          if (src_.compare(pos_, end.size(), end) == 0) {
            tokens_.push_back({TokenType::BlockEnd, "", line_});
            advance_to(pos_ + end.size());
            after_block_end(modifier);
            return;
          }
        }
      } else if (brace_depth == 0) {
        bool strip = src_.compare(pos_, 3, "-}}") == 0;
        if (strip || src_.compare(pos_, 2, "}}") == 0) {
          tokens_.push_back({TokenType::VarEnd, "", line_});
          advance_to(pos_ + (strip ? 3 : 2));
          if (strip) after_block_end('-');
          line_starting_ = false;
          return;
        }
      }
      lex_expression_token(brace_depth);
    }
  }

  void lex_expression_token(int& brace_depth) {
    char c = src_[pos_];
    int line = line_;
    if (is_name_start(c)) {
      size_t p = pos_;
      while (p < src_.size() && is_name_char(src_[p])) ++p;
      tokens_.push_back({TokenType::Name, src_.substr(pos_, p - pos_), line});
      advance_to(p);
    } else if (is_digit(c)) {
      lex_number();
    } else if (c == '\'' || c == '"') {
      lex_string();
    } else {
      static const char* const two_char[] = {"//", "**", "==", "!=", "<=", ">="};
      for (const char* op : two_char) {
        if (src_.compare(pos_, 2, op) == 0) {
          tokens_.push_back({TokenType::Operator, op, line});
          advance_to(pos_ + 2);
          return;
        }
      }
      if (!std::strchr("+-*/%~|.,:()[]{}<>=", c))
        error(line, cat("unexpected character ", quote_for_message(std::string(1, c)), " in tag"));
      if (c == '{') ++brace_depth;
      if (c == '}' && brace_depth > 0) --brace_depth;
      tokens_.push_back({TokenType::Operator, std::string(1, c), line});
      advance_to(pos_ + 1);
    }
  }

  // Integers and floats as jinja2 reads them: digits with optional underscores,
  // a fraction and/or an exponent make a float.
  void lex_number() {
    size_t p = pos_;
    auto digits = [&] {
      while (p < src_.size() && (is_digit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1]))))
        ++p;
    };
    digits();
    bool is_float = false;
    if (p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
      is_float = true;
      ++p;
      digits();
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        is_float = true;
        p = q;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < p; ++i)
      if (src_[i] != '_') text.push_back(src_[i]);
    tokens_.push_back({is_float ? TokenType::Float : TokenType::Integer, text, line_});
    advance_to(p);
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // A string literal with Python's escapes (\n, \t, \xNN, \uNNNN, \UNNNNNNNN,
  // octal); an unknown escape keeps its backslash, as in Python.
  void lex_string() {
    int line = line_;
    char quote = src_[pos_];
    size_t p = pos_ + 1;
    std::string value;
    for (;;) {
      if (p >= src_.size()) error(line, "unterminated string literal");
      char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        value.push_back(c);
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) error(line, "unterminated string literal");
      char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n': value.push_back('\n'); break;
        case 't': value.push_back('\t'); break;
        case 'r': value.push_back('\r'); break;
        case '\\': value.push_back('\\'); break;
        case '\'': value.push_back('\''); break;
        case '"': value.push_back('"'); break;
        case 'a': value.push_back('\a'); break;
        case 'b': value.push_back('\b'); break;
        case 'f': value.push_back('\f'); break;
        case 'v': value.push_back('\v'); break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          int count = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          char32_t cp = 0;
          for (int k = 0; k < count; ++k) {
            int h = p + k < src_.size() ? hex_value(src_[p + k]) : -1;
            if (h < 0) error(line, cat("truncated \\", e, " escape in string literal"));
            cp = cp * 16 + static_cast<char32_t>(h);
          }
          if (cp > 0x10FFFF) error(line, "invalid \\U escape in string literal");
          p += count;
          append_utf8(value, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k, ++p)
              cp = cp * 8 + static_cast<char32_t>(src_[p] - '0');
            append_utf8(value, cp);
          } else {
            value.push_back('\\');
            value.push_back(e);
          }
      }
    }
    tokens_.push_back({TokenType::String, value, line});
    advance_to(p + 1);
  }
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace rayo::jinja
