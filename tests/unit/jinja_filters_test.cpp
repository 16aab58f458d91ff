// Builtin filters as jinja2 defines them, and Hugging Face's tojson.
#include <gtest/gtest.h>

#include <ctime>

#include "jinja_test_helpers.h"

namespace rayo::jinja {
namespace {
using testing::render;
using testing::render_error;

const nlohmann::ordered_json kMessages = nlohmann::ordered_json::parse(R"({"messages": [
  {"role": "system", "content": "Sys"},
  {"role": "user", "content": "Hi é"},
  {"role": "assistant", "content": "Yo", "tool_calls": [{"function": {"name": "f", "arguments": {"b": 1, "a": "x"}}}]}
]})");

TEST(JinjaFilters, TextFilters) {
  EXPECT_EQ(render("{{ '  x  '|trim }}|{{ 'abc'|upper }}|{{ 'ABC'|lower }}|{{ 'hello world'|title }}|{{ 'hELLO'|capitalize }}"),
            "x|ABC|abc|Hello World|Hello");
  EXPECT_EQ(render("{{ 'x\\ny'|indent(2) }}|{{ 'x\\ny'|indent(2, true) }}|{{ 'a b  c'|wordcount }}"), "x\n  y|  x\n  y|3");
  EXPECT_EQ(render("{{ 'aXbX'|replace('X', '-') }} {{ 'aXbX'|replace('X', '-', 1) }} {{ '<a>'|e }}"), "a-b- a-bX &lt;a&gt;");
}

TEST(JinjaFilters, SequenceFilters) {
  EXPECT_EQ(render("{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} "
                   "{{ [1,2,2,3,1]|unique|list }}"),
            "[1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] [1, 2, 3]");
  EXPECT_EQ(render("{{ [1,2,3]|join(', ') }} {{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ [1,2,3]|length }} "
                   "{{ [1,2,3]|reverse|list }} {{ 'abc'|reverse }}"),
            "1, 2, 3 1 3 3 [3, 2, 1] cba");
  EXPECT_EQ(render("{{ [1,2]|string }} {{ 'ab'|list }} {{ {'a':1, 'b':2}|list }} {{ [1,2,3]|sum }} {{ [3,1,2]|min }} "
                   "{{ [3,1,2]|max }} {{ []|first }}|"),
            "[1, 2] ['a', 'b'] ['a', 'b'] 6 1 3 |");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|dictsort }} {{ {'a': 1}|items|list }}"), "[('a', 2), ('b', 1)] [('a', 1)]");
}

TEST(JinjaFilters, SelectRejectAndMap) {
  EXPECT_EQ(render("{{ messages|map(attribute='role')|join(',') }} {{ messages|selectattr('role', 'equalto', 'user')|list|length }} "
                   "{{ messages|rejectattr('role', 'eq', 'user')|map(attribute='content')|list }}",
                   kMessages),
            "system,user,assistant 1 ['Sys', 'Yo']");
  EXPECT_EQ(render("{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('even')|list }} "
                   "{{ ['a', 'b']|map('upper')|list }} {{ [0, 1, '', 'x']|select|list }}"),
            "[1, 3] [1, 3] ['A', 'B'] [1, 'x']");
  EXPECT_EQ(render("{{ [{'a': 2}, {'a': 1}]|sort(attribute='a') }} {{ [{'n': {'m': 'y'}}]|map(attribute='n.m')|list }}"),
            "[{'a': 1}, {'a': 2}] ['y']");
  EXPECT_EQ(render("{{ ['code_interpreter', 'x']|reject('equalto', 'code_interpreter')|join(', ') }}"), "x");
}

TEST(JinjaFilters, DefaultAndConversions) {
  EXPECT_EQ(render("{{ x|default('dflt') }} {{ none|default('d') }} {{ ''|default('e', true) }} {{ x|d('z') }}"),
            "dflt None e z");
  EXPECT_EQ(render("{{ 2.5|round }} {{ 3.5|round }} {{ 2.567|round(2) }} {{ -3|abs }} {{ '42'|int }} {{ '3.5'|float }} "
                   "{{ 'x'|int }} {{ 3.9|int }} {{ 1|string }} {{ none|string }}"),
            "2.0 4.0 2.57 3 42 3.5 0 3 1 None");
}

TEST(JinjaFilters, ToJsonMatchesPythonJsonDumps) {
  EXPECT_EQ(render("{{ messages[2].tool_calls[0].function.arguments|tojson }}", kMessages), R"({"b": 1, "a": "x"})");
  EXPECT_EQ(render("{{ messages[2].tool_calls[0]|tojson(indent=2) }}", kMessages),
            "{\n  \"function\": {\n    \"name\": \"f\",\n    \"arguments\": {\n      \"b\": 1,\n      \"a\": \"x\"\n    }\n  }\n}");
  // Non-ASCII stays as is; control characters are escaped.
  EXPECT_EQ(render("{{ {'a': 'é', 'b': [1, 2.5, None, true], 'c': {}}|tojson }} {{ [] | tojson(indent=4) }} "
                   "{{ \"x\\u0001\\\"\\\\\"|tojson }}"),
            "{\"a\": \"é\", \"b\": [1, 2.5, null, true], \"c\": {}} [] \"x\\u0001\\\"\\\\\"");
  EXPECT_EQ(render("{{ 'x'|tojson }} {{ 1.0|tojson }} {{ none|tojson }} {{ (1, 2)|tojson }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }}"),
            "\"x\" 1.0 null [1, 2] {\"a\": 2, \"b\": 1}");
  EXPECT_EQ(render("{{ 'é'|tojson(ensure_ascii=true) }} {{ '😀'|tojson(ensure_ascii=true) }}"), "\"\\u00e9\" \"\\ud83d\\ude00\"");
  EXPECT_NE(render_error("{{ nothing|tojson }}").find("not JSON serializable"), std::string::npos);
}

TEST(JinjaFilters, UnknownFilterIsAnError) {
  EXPECT_NE(render_error("{{ 'x'|frobnicate }}").find("no filter named 'frobnicate'"), std::string::npos);
  EXPECT_NE(render_error("{{ 'x' is frobnicated }}").find("no test named 'frobnicated'"), std::string::npos);
}

TEST(JinjaGlobals, RangeNamespaceDict) {
  EXPECT_EQ(render("{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(3, 0, -1)|list }}"), "[0, 1, 2] [1, 3, 5] [3, 2, 1]");
  EXPECT_EQ(render("{{ namespace(a=1, b='x').b }} {{ dict(a=1) }}"), "x {'a': 1}");
}

TEST(JinjaGlobals, StrftimeNowReadsTheInjectedClock) {
  RenderOptions options;
  options.clock = [] {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 10;
    tm.tm_mday = 22;
    tm.tm_hour = 10;
    tm.tm_wday = 0;
    return tm;
  };
  EXPECT_EQ(render("{{ strftime_now('%Y-%m-%d %H:%M %A %B') }}|{{ strftime_now('%d %b %Y') }}", {}, options),
            "2026-11-22 10:00 Sunday November|22 Nov 2026");
}

TEST(JinjaGlobals, RaiseExceptionCarriesTheMessage) {
  std::string error = render_error("line one\n{{ raise_exception('System role not supported') }}");
  EXPECT_NE(error.find("System role not supported"), std::string::npos) << error;
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
}

TEST(JinjaGlobals, RenderVariablesShadowGlobals) {
  EXPECT_EQ(render("{{ range }}", {{"range", "mine"}}), "mine");
}

}  // namespace
}  // namespace rayo::jinja
