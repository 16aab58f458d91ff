// rayo: one binary, many subcommands (see src/cli/cmd_*.cpp).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>

#include "cli/command.h"
#include "common/error.h"

namespace rayo::cli {
std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}
}  // namespace rayo::cli

int main(int argc, char** argv) {
  using namespace rayo::cli;
  CLI::App app{"rayo " RAYO_VERSION " - run GGUF language models on NVIDIA GPUs and CPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "rayo " RAYO_VERSION);
  auto& registry = command_registry();
  std::sort(registry.begin(), registry.end(),
            [](const CommandEntry& a, const CommandEntry& b) { return a.order < b.order; });
  for (const auto& entry : registry) entry.setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ExitCode& e) {
    return e.code;
  } catch (const rayo::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "rayo: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "rayo: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "rayo: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
