// Bad templates fail with one clear rayo::Error naming the line; hostile ones
// (deep nesting, runaway loops and recursion, exploding strings) hit a limit
// instead of crashing, hanging or exhausting memory.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "jinja_test_helpers.h"
#include "support/paths.h"
#include "tokenizer/chat_template.h"

namespace rayo::jinja {
namespace {
using testing::render;
using testing::render_error;

void expect_error(const std::string& source, const std::string& fragment, const RenderOptions& options = {}) {
  std::string error = render_error(source, nlohmann::ordered_json::object(), options);
  EXPECT_NE(error.find(fragment), std::string::npos) << "template: " << source.substr(0, 120) << "\nerror: " << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "error message spans lines: " << error;
}

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  expect_error("a\nb\n{{ x ", "line 3: unterminated expression");
  expect_error("{% if x ", "unterminated block tag");
  expect_error("{# never closed", "unterminated comment");
  expect_error("{{ 'abc }}", "unterminated string literal");
  expect_error("{% raw %}abc", "unterminated raw block");
  expect_error("{% for x in y %}\n\nbody", "unexpected end of template, expected 'endfor'");
  expect_error("{% if x %}a{% endfor %}", "line 1: unexpected 'endfor'");
  expect_error("{% if x %}a{% else %}b", "expected 'endif'");
  expect_error("x\n{% endif %}", "line 2: unexpected 'endif'");
  expect_error("{% include 'other.jinja' %}", "unknown or unsupported tag 'include'");
  expect_error("{{ 1 + }}", "unexpected end of expression");
  expect_error("{{ a b }}", "expected end of expression '}}'");
  expect_error("{{ x | }}", "expected a name");
  expect_error("{% set %}", "expected a name");
  expect_error("{{ 99999999999999999999 }}", "too large");
  expect_error("{{ a ? b }}", "unexpected character");
  for (const char* prefix : {"template syntax error"}) expect_error("{% if %}", prefix);
}

TEST(JinjaErrors, RuntimeErrorsNameTheLine) {
  expect_error("ok\n{% for m in none %}{% endfor %}", "line 2: 'NoneType' object is not iterable");
  expect_error("{{ 1 // 0 }}", "integer division or modulo by zero");
  expect_error("{{ 1 / 0 }}", "division by zero");
  expect_error("{{ 'a' + 1 }}", "can only concatenate str (not \"int\") to str");
  expect_error("{{ 2 ** 100 }}", "integer overflow");
  expect_error("{{ 'x'() }}", "'str' object is not callable");
  expect_error("{{ {[1]: 2} }}", "unhashable type: 'list'");
  expect_error("{{ 'a'.split('') }}", "empty separator");
  expect_error("{{ [1][::0] }}", "slice step cannot be zero");
  expect_error("{% macro f(a) %}{% endmacro %}{{ f(1, a=2) }}", "multiple values for argument 'a'");
  expect_error("{% macro m() %}\n{{ nothing.x }}{% endmacro %}\n{{ m() }}", "line 2: 'nothing' is undefined");
  expect_error("{{ raise_exception('custom failure') }}", "custom failure");
}

TEST(JinjaLimits, DeepExpressionNestingIsRefused) {
  expect_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}", "nested more than");
  expect_error("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}", "nested more than");
  expect_error("{{ " + std::string(5000, '-') + "1 }}", "nested more than");
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  expect_error(nots + "1 }}", "nested more than");
}

TEST(JinjaLimits, DeepStatementNestingIsRefused) {
  std::string s;
  for (int i = 0; i < 3000; ++i) s += "{% if true %}";
  expect_error(s, "nested more than");
}

TEST(JinjaLimits, ModerateNestingStillWorks) {
  std::string s;
  for (int i = 0; i < 30; ++i) s += "{% if true %}";
  s += "deep";
  for (int i = 0; i < 30; ++i) s += "{% endif %}";
  EXPECT_EQ(render(s), "deep");
  EXPECT_EQ(render("{{ " + std::string(40, '(') + "7" + std::string(40, ')') + " }}"), "7");
}

TEST(JinjaLimits, RunawayRecursionIsStopped) {
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macro calls nested more than");
}

TEST(JinjaLimits, RunawayLoopsAreStopped) {
  RenderOptions options;
  options.limits.max_steps = 10000;
  expect_error("{% for i in range(100) %}{% for j in range(100) %}{% for k in range(100) %}{% endfor %}{% endfor %}{% endfor %}",
               "steps of work", options);
  expect_error("{% for i in range(1000000000000) %}{% endfor %}", "is too large");
  // Within the limit the same shape renders.
  EXPECT_EQ(render("{% for i in range(10) %}{% for j in range(10) %}.{% endfor %}{% endfor %}", {}, options),
            std::string(100, '.'));
}

TEST(JinjaLimits, ExplodingStringsAreStopped) {
  expect_error("{{ 'x' * 1000000000000 }}", "too large");
  expect_error("{{ [1] * 1000000000000 }}", "too large");
  expect_error("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
               "longer than");
  expect_error("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
               "too large");
  RenderOptions options;
  options.limits.max_output_bytes = 1 << 20;
  expect_error("{% for i in range(100) %}{{ 'y' * 100000 }}{% endfor %}", "output exceeds", options);
}

TEST(JinjaLimits, ValuesCannotNestWithoutBoundOrFormCycles) {
  expect_error("{% set ns = namespace(l=[]) %}{% for i in range(2000) %}{% set ns.l = [ns.l] %}{% endfor %}",
               "nested more than");
  expect_error("{% set a = namespace() %}{% set b = namespace() %}{% set a.b = [b] %}", "cannot hold another namespace");
}

// Every prefix of a real template either renders or fails with rayo::Error.
void render_every_prefix(const std::string& source) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}])");
  for (size_t n = 0; n <= source.size(); n += 3) {
    try {
      tokenizer::ChatTemplateOptions options;
      tokenizer::apply_chat_template(source.substr(0, n), messages, options);
    } catch (const rayo::Error&) {
    }
  }
}

TEST(JinjaRobustness, TruncatedTemplatesNeverCrash) {
  render_every_prefix(tokenizer::default_chat_template("llama").source);
  render_every_prefix(tokenizer::default_chat_template("qwen2").source);
  if (rayo::test::shared_dir().empty()) return;  // the shared templates add coverage when present
  for (const char* name : {"Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407"}) {
    std::ifstream in(rayo::test::shared_path(std::string("templates/") + name + ".jinja"));
    std::stringstream ss;
    ss << in.rdbuf();
    render_every_prefix(ss.str());
  }
}

TEST(JinjaRobustness, ArbitraryBytesNeverCrash) {
  // A fixed pseudo-random sequence over the characters templates are made of.
  const std::string alphabet = "{}%#-+()[]'\"\\|.,:~=<>!*/ \n\tabcdefifforinsetendmacrocallnotandoris0123456789\xc3\xa9\xff";
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int round = 0; round < 2000; ++round) {
    std::string s;
    size_t len = 1 + round % 60;
    for (size_t i = 0; i < len; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      s.push_back(alphabet[(state >> 33) % alphabet.size()]);
    }
    try {
      render(s, {{"x", 1}});
    } catch (const rayo::Error&) {
    }
  }
}

}  // namespace
}  // namespace rayo::jinja
