#pragma once
// Splits template source into tokens the way jinja2's lexer does with Hugging
// Face's settings: text between tags, the tags' delimiters, and the expression
// tokens inside them. Whitespace control is settled here, so the parser never
// sees it:
//   {%- / {{- / {#-   strip all whitespace before the tag
//   -%} / -}} / -#}   strip all whitespace after the tag
//   trim_blocks       drop the first newline after a block or comment tag
//   lstrip_blocks     drop spaces and tabs between a line start and a block or
//                     comment tag ({%+ opts out; +%} opts out of trim_blocks)
// Comments vanish, and {% raw %}...{% endraw %} becomes plain text.
#include <string>
#include <string_view>
#include <vector>

namespace rayo::jinja {

enum class TokenType {
  Text,
  BlockBegin,  // {%
  BlockEnd,    // %}
  VarBegin,    // {{
  VarEnd,      // }}
  Name,
  String,      // text holds the decoded value
  Integer,
  Float,
  Operator,
  End,
};

struct Token {
  TokenType type;
  std::string text;
  int line;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws rayo::Error ("line N: ...") on an unterminated tag, comment or string.
std::vector<Token> tokenize(std::string_view source, const LexOptions& options = {});

}  // namespace rayo::jinja
