// The official `openai` Python package talks to `rayo serve` unchanged
// (tests/integration/openai_client_test.py).
#include <gtest/gtest.h>

#include "server_process.h"
#include "support/paths.h"

namespace rayo::test {
namespace {

TEST(ServerOpenAIClient, OfficialPythonPackageWorksUnchanged) {
  RAYO_REQUIRE_SHARED();
  const auto probe = run_command("python3 -c 'import openai' 2>&1");
  if (probe.exit_code != 0)
    GTEST_SKIP() << "the openai Python package cannot be imported (install it with scripts/install-deps.sh): "
                 << probe.output;
  ServerProcess s({"-m", shared_path("models/stories260K.gguf").string(), "-c", "512", "-t", "1", "--parallel", "4"});
  ASSERT_TRUE(s.ok()) << "rayo serve did not start";
  const std::string script = std::string(RAYO_SOURCE_DIR) + "/tests/integration/openai_client_test.py";
  const auto r = run_command("timeout 120 python3 " + script + " " + s.base_url() + "/v1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace rayo::test
