#pragma once
// Where the tests find the shared test data and the rayo binary.
#include <filesystem>
#include <string>

namespace rayo::test {

// $RAYO_SHARED, else ../shared next to the source tree. Empty when absent.
std::filesystem::path shared_dir();

// Skips the calling test (GTEST_SKIP) with a clear message when shared/ is missing.
// Use as: RAYO_REQUIRE_SHARED();
#define RAYO_REQUIRE_SHARED()                                                      \
  do {                                                                             \
    if (::rayo::test::shared_dir().empty())                                        \
      GTEST_SKIP() << "shared test data not found (set RAYO_SHARED or place it at " \
                      "../shared next to the source tree)";                        \
  } while (0)

// Path of a file under shared/, e.g. shared_path("models/stories260K.gguf").
std::filesystem::path shared_path(const std::string& relative);

// The rayo executable built with the tests ($RAYO_BIN, set by CTest).
std::filesystem::path rayo_binary();

// A fresh, empty temporary directory, unique to this process and name, removed
// (with what it holds) when the process exits.
std::filesystem::path temp_dir(const std::string& name);

// Runs a shell command, returning its exit status and captured stdout (and stderr
// when merge_stderr). Used to test the command-line front end as a user sees it.
struct CommandResult {
  int exit_code = -1;
  std::string output;
};
CommandResult run_command(const std::string& command, bool merge_stderr = true);

}  // namespace rayo::test
