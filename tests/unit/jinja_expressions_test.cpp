// Expressions with Python semantics: arithmetic, printing of values, strings
// as code points, comparisons, tests, attribute and item lookup.
#include <gtest/gtest.h>

#include "jinja_test_helpers.h"

namespace rayo::jinja {
namespace {
using testing::render;
using testing::render_error;

TEST(JinjaExpressions, Arithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1.5 * 2 }} {{ 10 / 5 }}"),
            "3 3 -4 -2 1024 3.5 3.0 2.0");
  EXPECT_EQ(render("{{ -2 ** 2 }} {{ 2 ** -1 }} {{ 10 // 3 * 3 + 10 % 3 }}"), "4 0.5 10");
  // ~ binds tighter than + and looser than *, as in jinja2.
  EXPECT_EQ(render("{{ (1 + 2) ~ 3 }} {{ 'a' ~ (1 + 2) }} {{ 2 ~ 3 * 2 }}"), "33 a3 26");
  EXPECT_NE(render_error("{{ 1 + 2 ~ 3 }}").find("unsupported operand type(s) for +: 'int' and 'str'"), std::string::npos);
  EXPECT_EQ(render("{{ 'a' * 3 }} {{ [1] * 3 }} {{ [1] + [2] }} {{ 'ab' + 'cd' }}"), "aaa [1, 1, 1] [1, 2] abcd");
  EXPECT_EQ(render("{{ '%s-%d' % ('a', 3) }} {{ '%.2f' % 3.14159 }}"), "a-3 3.14");
}

TEST(JinjaExpressions, PrintsValuesLikePython) {
  EXPECT_EQ(render("{{ [1, 'a', None, True, 1.0, {'k': 'v'}] }} {{ (1,) }} {{ () }} {{ {'a': [1, (2, 3)]} }}"),
            "[1, 'a', None, True, 1.0, {'k': 'v'}] (1,) () {'a': [1, (2, 3)]}");
  EXPECT_EQ(render("{{ \"it's\" }} {{ [\"it's\", 'say \"hi\"'] }} {{ ['\\n\\t\\\\', 'é'] }}"),
            "it's [\"it's\", 'say \"hi\"'] ['\\n\\t\\\\', 'é']");
  EXPECT_EQ(render("{{ true }} {{ True }} {{ none }} {{ None }} {{ false }}"), "True True None None False");
}

TEST(JinjaExpressions, FloatsPrintAsPythonRepr) {
  EXPECT_EQ(render("{{ 3.0 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1/3 }} {{ 100.0 }} {{ 1e-7 }}"),
            "3.0 1e+20 0.30000000000000004 0.3333333333333333 100.0 1e-07");
  EXPECT_EQ(render("{{ 1e16 }} {{ 123456789.123 }} {{ -0.0 }} {{ 1e-5 }} {{ 0.0001 }} {{ 1_000 }} {{ 1.5e3 }}"),
            "1e+16 123456789.123 -0.0 1e-05 0.0001 1000 1500.0");
}

TEST(JinjaExpressions, StringLiteralsAndEscapes) {
  EXPECT_EQ(render("{{ 'a' 'b' }}|{{ 'tab\\tq' }}|{{ '\\x41\\u00e9' }}"), "ab|tab\tq|Aé");
}

TEST(JinjaExpressions, SlicesAndIndexingCountCodePoints) {
  EXPECT_EQ(render("{{ [1,2,3,4,5][1:3] }} {{ [1,2,3,4,5][::-1] }} {{ [1,2,3,4,5][-2:] }} {{ 'hello'[1:] }} "
                   "{{ 'hello'[::2] }} {{ 'héllo'[1] }} {{ [1,2,3][-1] }}"),
            "[2, 3] [5, 4, 3, 2, 1] [4, 5] ello hlo é 3");
  EXPECT_EQ(render("{{ 'abc'[5:10] }}|{{ [1][5:] }}|{{ 'héllo'|length }}"), "|[]|5");
}

TEST(JinjaExpressions, LogicAndConditionals) {
  EXPECT_EQ(render("{{ 1 if true }}|{{ 1 if false }}|{{ 'a' if 0 else 'b' }}|{{ not 1 }}|{{ 1 and 2 }}|{{ 0 or 'x' }}|{{ none or 0 }}"),
            "1||b|False|2|x|0");
  EXPECT_EQ(render("{{ not true == false }}"), "True");
}

TEST(JinjaExpressions, Comparisons) {
  EXPECT_EQ(render("{{ 1 in [1, 2] }} {{ 3 not in [1, 2] }} {{ 'a' in 'abc' }} {{ 'k' in {'k': 1} }} "
                   "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 1 == 1.0 }} {{ 'a' != 'b' }}"),
            "True True True True True False True True");
  EXPECT_EQ(render("{{ {'a': 1} == {'a': 1} }} {{ [1, 2] == [1, 2] }} {{ (1, 2) == [1, 2] }} {{ [1, 2] < [1, 3] }}"),
            "True True False True");
  EXPECT_EQ(render("{{ 'c' in missing }}"), "False");
  EXPECT_NE(render_error("{{ 1 < 'a' }}").find("'<' not supported between instances of 'int' and 'str'"),
            std::string::npos);
}

TEST(JinjaExpressions, Tests) {
  EXPECT_EQ(render("{{ x is defined }} {{ x is undefined }} {{ none is none }} {{ 1 is number }} {{ 1 is integer }} "
                   "{{ 1.0 is float }} {{ true is boolean }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is iterable }} "
                   "{{ 'a' is sequence }} {{ 6 is divisibleby 3 }} {{ 3 is odd }} {{ 1 is true }} {{ true is true }} "
                   "{{ false is false }}"),
            "False True True True True True True True True True True True True False True True");
  EXPECT_EQ(render("{{ 1 is eq 1 }} {{ 2 is gt 1 }} {{ 2 is lt 1 }} {{ 2 is ge 2 }} {{ 'a' is in 'abc' }} "
                   "{{ 'ABC' is upper }} {{ 'abc' is lower }} {{ x is not defined }} {{ 1 is not none }}"),
            "True True False True True True True True True");
  EXPECT_EQ(render("{{ [1, 2, 3] | length is odd }} {{ x is defined and x > 1 }}"), "True False");
}

TEST(JinjaExpressions, UndefinedBehavesLikeJinja2) {
  nlohmann::ordered_json ctx = {{"messages", {{{"role", "user"}}}}};
  // Printing, iterating and testing an undefined value is fine...
  EXPECT_EQ(render("[{{ nothing }}]{% for x in nothing %}x{% endfor %}{{ nothing|length }}", ctx), "[]0");
  // ...and so are missing attributes and elements of defined values...
  EXPECT_EQ(render("{{ messages.foo }}|{{ messages[0].nothing }}|{{ messages[10] }}|{{ none.x }}", ctx), "|||");
  // ...but using one further fails with jinja2's message.
  EXPECT_NE(render_error("{{ nothing.attr }}").find("'nothing' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a' + nothing }}").find("'nothing' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ messages[0].content.strip() }}", ctx).find("has no attribute 'content'"), std::string::npos);
}

TEST(JinjaExpressions, StringMethods) {
  EXPECT_EQ(render("{{ 'a,b,c'.split(',') }} {{ ' a  b '.split() }} {{ 'abc'.startswith('a') }} "
                   "{{ 'abc'.endswith(('x', 'c')) }} {{ 'aXbX'.replace('X', '-') }} {{ 'hello'.find('l') }} "
                   "{{ 'hello'.count('l') }}"),
            "['a', 'b', 'c'] ['a', 'b'] True True a-b- 2 2");
  EXPECT_EQ(render("{{ '  x '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\nhi\\n'.lstrip() }}|{{ 'hi\\n\\n'.rstrip('\\n') }}|"
                   "{{ 'Hello'.upper() }}{{ 'Hello'.lower() }}"),
            "x|hi|hi\n|hi|HELLOhello");
  EXPECT_EQ(render("{{ 'Hello World'.title() }} {{ 'hello world'.capitalize() }} {{ 'a-b_c d'.title() }}"),
            "Hello World Hello world A-B_C D");
  EXPECT_EQ(render("{{ 'é'|upper }} {{ 'ÉCOLE'|lower }} {{ 'straße'|upper }} {{ 'привет мир'|title }}"),
            "É école STRASSE Привет Мир");
  EXPECT_EQ(render("{{ ' '.join(['a', 'b']) }} {{ 'x'.join('abc') }} {{ '{} and {}'.format(1, 'b') }}"),
            "a b axbxc 1 and b");
  EXPECT_EQ(render("{{ 'héllo wörld'.find('w') }}"), "6");
}

TEST(JinjaExpressions, DictAndListMethods) {
  nlohmann::ordered_json ctx = {{"m", {{"role", "user"}, {"content", "hi"}}}};
  EXPECT_EQ(render("{{ m['role'] }} {{ m.get('role') }} {{ m.get('nope', 'dflt') }} {{ m.get('nope') }} "
                   "{{ m.keys()|list }} {{ m.values()|list }}",
                   ctx),
            "user user dflt None ['role', 'content'] ['user', 'hi']");
  EXPECT_EQ(render("{{ [1,2,3].index(2) }} {{ [1,2,2].count(2) }}"), "1 2");
}

TEST(JinjaExpressions, MutatingMethodsAreUnsafeAsInTheSandbox) {
  EXPECT_EQ(render("[{{ [1,2].append }}]"), "[]");
  EXPECT_NE(render_error("{{ [1,2].append(3) }}").find("access to attribute 'append' of 'list' object is unsafe"),
            std::string::npos);
}

TEST(JinjaExpressions, DictKeysKeepInsertionOrder) {
  EXPECT_EQ(render("{% set d = {'z': 1, 'a': 2} %}{% for k in d %}{{ k }}{% endfor %}"), "za");
  nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({"d": {"z": 1, "a": 2, "m": 3}})");
  EXPECT_EQ(render("{{ d|tojson }}", ctx), R"({"z": 1, "a": 2, "m": 3})");
}

}  // namespace
}  // namespace rayo::jinja
