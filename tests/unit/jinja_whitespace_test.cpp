// Whitespace control exactly as jinja2 applies it with trim_blocks and
// lstrip_blocks: these rules decide every newline of a chat prompt.
#include <gtest/gtest.h>

#include "jinja_test_helpers.h"

namespace rayo::jinja {
namespace {
using testing::render;

TEST(JinjaWhitespace, TrimBlocksDropsOneNewlineAfterABlockTag) {
  EXPECT_EQ(render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
  EXPECT_EQ(render("{% if true %}\n\nx{% endif %}"), "\nx");  // only the first newline
}

TEST(JinjaWhitespace, TrimBlocksDoesNotApplyToExpressions) {
  EXPECT_EQ(render("{{ 'a' }}\nb"), "a\nb");
}

TEST(JinjaWhitespace, LstripBlocksRemovesIndentationBeforeBlockTags) {
  EXPECT_EQ(render("  {% if true %}\n    indented\n  {% endif %}\nend"), "    indented\nend");
  EXPECT_EQ(render("\t \t{% if 1 %}\nq\n\t{% endif %}\n"), "q\n");
}

TEST(JinjaWhitespace, LstripBlocksKeepsTextBeforeATagOnTheSameLine) {
  EXPECT_EQ(render("a {% if 1 %}b{% endif %}\n  c"), "a b  c");
  // Indentation before an expression is never stripped.
  EXPECT_EQ(render("  {{ 'x' }}  \n  {% set a = 1 %}  \nz"), "  x  \n  \nz");
}

TEST(JinjaWhitespace, LstripAppliesAfterATrimmedNewline) {
  EXPECT_EQ(render("{{ 1 }}\n  {% if 1 %}x{% endif %}"), "1\nx");
  EXPECT_EQ(render("{% for i in range(3) %}\n  {{ i }}\n{% endfor %}\n"), "  0\n  1\n  2\n");
}

TEST(JinjaWhitespace, MinusStripsAllWhitespaceOnItsSide) {
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("{{- '  x  ' -}}   {{ 'y' }}"), "  x  y");
  EXPECT_EQ(render("{% if 1 -%}\n\n   x{%- endif %}"), "x");
  EXPECT_EQ(render("{% for i in range(2) -%}\n  {{ i }}\n{%- endfor %}"), "01");
}

TEST(JinjaWhitespace, PlusOptsOutOfLstripAndTrim) {
  EXPECT_EQ(render("  {%+ if 1 %}a{% endif %}"), "  a");
  EXPECT_EQ(render("{% if 1 +%}\nkept{% endif %}"), "\nkept");
}

TEST(JinjaWhitespace, CommentsVanishWithTheSameRules) {
  EXPECT_EQ(render("line1\n  {# comment #}\nline2 {# inline #} tail\n  {#- stripped -#}\nafter"),
            "line1\nline2  tailafter");
  EXPECT_EQ(render("{{ 'a' }}{# c #}\nb"), "ab");
}

TEST(JinjaWhitespace, NewlinesAreNormalizedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(render("a\r\nb\r\n{% if 1 %}\r\nc\r\n{% endif %}\r\nd\r\n"), "a\nb\nc\nd");
  EXPECT_EQ(render("x\n"), "x");
  EXPECT_EQ(render("x\n\n"), "x\n");
}

TEST(JinjaWhitespace, RawBlocksAreLiteralText) {
  EXPECT_EQ(render("{% raw %}{{ not rendered }}{% endraw %}"), "{{ not rendered }}");
  EXPECT_EQ(render("x {%- raw -%} {{ y }} {%- endraw -%} z"), "x{{ y }}z");
  EXPECT_EQ(render("{% raw %}\n  a {{ b }}\n  {% endraw %}\nX"), "\n  a {{ b }}\nX");
}

TEST(JinjaWhitespace, TypicalChatTemplateIdiom) {
  nlohmann::ordered_json ctx = {{"messages", {{{"role", "user"}}, {{"role", "assistant"}}}}};
  EXPECT_EQ(render("{%- for message in messages %}\n"
                   "{%- if loop.first %}[{% endif %}\n"
                   "{{- message.role }}\n"
                   "{%- if not loop.last %}, {% endif %}\n"
                   "{%- endfor %}]",
                   ctx),
            "[user, assistant]");
}

}  // namespace
}  // namespace rayo::jinja
