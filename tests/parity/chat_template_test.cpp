// Chat templates from real models render byte for byte as Hugging Face's
// apply_chat_template does (shared/templates/expected.json), or fail where it
// raises.
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "support/paths.h"
#include "tokenizer/chat_template.h"

namespace {

using nlohmann::ordered_json;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The clock the expected outputs were made with: 2026-11-22 10:00.
std::tm reference_time() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 22;
  tm.tm_hour = 10;
  std::time_t t = timegm(&tm);
  gmtime_r(&t, &tm);  // fills in weekday and day of year
  return tm;
}

TEST(ChatTemplateParity, RendersEveryReferenceCaseExactly) {
  RAYO_REQUIRE_SHARED();
  auto dir = rayo::test::shared_path("templates");
  ordered_json expected = ordered_json::parse(read_text(dir / "expected.json"));
  const auto& cases = expected.at("cases");
  ASSERT_GT(cases.size(), 0u);
  int rendered = 0, raised = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    std::string name = c.at("template").get<std::string>();
    SCOPED_TRACE(rayo::cat("case ", i, " (", name, ")"));
    std::string source = read_text(dir / (name + ".jinja"));
    ASSERT_FALSE(source.empty()) << "missing template file " << name << ".jinja";
    rayo::tokenizer::ChatTemplateOptions options;
    options.bos_token = c.at("bos_token").get<std::string>();
    options.eos_token = c.at("eos_token").get<std::string>();
    options.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
    if (c.contains("tools")) options.tools = c.at("tools");
    options.clock = reference_time;
    if (c.contains("expected_error")) {
      // "TemplateError: System role not supported" -> our message carries the
      // part after the Python exception type.
      std::string error = c.at("expected_error").get<std::string>();
      std::string message = error.substr(error.find(": ") + 2);
      try {
        std::string out = rayo::tokenizer::apply_chat_template(source, c.at("messages"), options);
        ADD_FAILURE() << "expected the error \"" << error << "\" but rendered:\n" << out;
      } catch (const rayo::Error& e) {
        EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
            << "error \"" << e.what() << "\" does not contain \"" << message << "\"";
        ++raised;
      }
      continue;
    }
    std::string want = c.at("expected").get<std::string>();
    try {
      std::string got = rayo::tokenizer::apply_chat_template(source, c.at("messages"), options);
      EXPECT_EQ(got, want) << "rendered text differs from Hugging Face's for messages "
                           << c.at("messages").dump();
      ++rendered;
    } catch (const rayo::Error& e) {
      ADD_FAILURE() << "render failed: " << e.what();
    }
  }
  EXPECT_GT(rendered, 0);
  EXPECT_GT(raised, 0);
}

}  // namespace
