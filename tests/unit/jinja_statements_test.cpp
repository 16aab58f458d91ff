// Statements: if, for (loop variables, else, filters, unpacking, break and
// continue), set (plain, tuple, block, namespace attributes), macros and call
// blocks, with jinja2's scoping.
#include <gtest/gtest.h>

#include "jinja_test_helpers.h"

namespace rayo::jinja {
namespace {
using testing::render;
using testing::render_error;

TEST(JinjaStatements, IfElifElse) {
  nlohmann::ordered_json ctx = {{"n", 2}};
  const char* t = "{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(render(t, ctx), "two");
  EXPECT_EQ(render(t, {{"n", 7}}), "many");
  EXPECT_EQ(render("{% if missing %}a{% endif %}b"), "b");
}

TEST(JinjaStatements, LoopVariables) {
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                   "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}"),
            "1032TrueFalse3|2121FalseFalse3|3210FalseTrue3|");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}"), "-2;1-3;2-;");
  EXPECT_EQ(render("{% for x in 'ab' %}{{ loop.cycle('odd', 'even') }}{{ x }}{% endfor %}"), "oddaevenb");
}

TEST(JinjaStatements, LoopElseAndFilter) {
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in missing %}a{% else %}none{% endfor %}"), "none");
  // The loop counts only the items that pass the filter.
  EXPECT_EQ(render("{% for x in range(10) if x is odd %}{{ x }}{{ loop.index }}{% if loop.last %}L{% endif %} {% endfor %}"),
            "11 32 53 74 95L ");
}

TEST(JinjaStatements, LoopUnpacking) {
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}"), "a=1,b=2,");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}"), "37");
  EXPECT_EQ(render("{% for k, v in {'x': 1}|items %}{{ k }}{{ v }}{% endfor %}"), "x1");
  EXPECT_NE(render_error("{% for a, b in [[1, 2, 3]] %}{% endfor %}").find("too many values to unpack"), std::string::npos);
}

TEST(JinjaStatements, BreakAndContinue) {
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 5 %}{% break %}{% endif %}"
                   "{% if x is even %}{% continue %}{% endif %}{{ x }}{% endfor %}"),
            "13");
}

TEST(JinjaStatements, LoopBodyAssignmentsDoNotLeak) {
  EXPECT_EQ(render("{% set y = 1 %}{% for x in [1] %}{% set y = 2 %}{{ y }}{% endfor %}{{ y }}"), "21");
  // Each iteration starts afresh.
  EXPECT_EQ(render("{% for x in [1, 2] %}{% if loop.first %}{% set y = 5 %}{% endif %}[{{ y }}]{% endfor %}"), "[5][]");
  // An if does not open a scope.
  EXPECT_EQ(render("{% if true %}{% set z = 3 %}{% endif %}{{ z }}"), "3");
}

TEST(JinjaStatements, NamespaceCarriesStateOutOfLoops) {
  EXPECT_EQ(render("{% set ns = namespace(count=0) %}{% for i in range(4) %}{% set ns.count = ns.count + i %}"
                   "{% endfor %}{{ ns.count }}"),
            "6");
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.a = 1 %}{% set ns.a = ns.a + 1 %}{{ ns.a }}"), "2");
  EXPECT_NE(render_error("{% set d = {} %}{% set d.x = 1 %}").find("non-namespace"), std::string::npos);
}

TEST(JinjaStatements, SetForms) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(render("{% set x %}  block {{ 1 }} {% endset %}[{{ x }}]"), "[  block 1 ]");
  EXPECT_EQ(render("{% set x | upper %}abc{% endset %}{{ x }}"), "ABC");
  EXPECT_EQ(render("{% set x = 5 %}{% set x = x + 1 %}{{ x }}"), "6");
}

TEST(JinjaStatements, Macros) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Bob') }} {{ greet('Al', punct='?') }} {{ greet(name='Z') }}"),
            "Hello Bob! Hello Al? Hello Z!");
  EXPECT_EQ(render("{% macro rec(n) %}{% if n > 0 %}{{ n }}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(5) }}"),
            "54321");
  // Macro output is a string that can be concatenated.
  EXPECT_EQ(render("{% macro t(x) %}<{{ x }}>{% endmacro %}{{ 'a' + t(1) + 'b' }}"), "a<1>b");
}

TEST(JinjaStatements, CallBlocks) {
  EXPECT_EQ(render("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner{% endcall %}"), "<inner>");
  EXPECT_EQ(render("{% macro wrap(x) %}<{{ caller(x * 2) }}>{% endmacro %}{% call(v) wrap(21) %}v={{ v }}{% endcall %}"),
            "<v=42>");
}

TEST(JinjaStatements, FilterBlockAndGeneration) {
  EXPECT_EQ(render("{% filter upper %}abc {{ 'd' }}{% endfilter %}"), "ABC D");
  EXPECT_EQ(render("{% generation %}reply{% endgeneration %}"), "reply");
}

}  // namespace
}  // namespace rayo::jinja
