#include "support/paths.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace rayo::test {

std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("RAYO_SHARED"); env && *env) {
    std::filesystem::path p(env);
    return std::filesystem::is_directory(p) ? p : std::filesystem::path();
  }
  std::filesystem::path p = std::filesystem::path(RAYO_SOURCE_DIR).parent_path() / "shared";
  return std::filesystem::is_directory(p) ? p : std::filesystem::path();
}

std::filesystem::path shared_path(const std::string& relative) { return shared_dir() / relative; }

std::filesystem::path rayo_binary() {
  if (const char* env = std::getenv("RAYO_BIN"); env && *env) return env;
  return std::filesystem::path(RAYO_BINARY_DIR) / "rayo";
}

namespace {

// The directories temp_dir made in this process, removed when it exits (a
// test that fails half-way leaves nothing behind either).
std::vector<std::filesystem::path>& made_dirs() {
  static std::vector<std::filesystem::path> dirs;
  return dirs;
}

void remove_made_dirs() {
  std::error_code ignored;
  for (const auto& dir : made_dirs()) std::filesystem::remove_all(dir, ignored);
}

}  // namespace

std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("rayo-test-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  if (made_dirs().empty()) std::atexit(remove_made_dirs);
  made_dirs().push_back(dir);
  return dir;
}

CommandResult run_command(const std::string& command, bool merge_stderr) {
  CommandResult result;
  std::string full = command + (merge_stderr ? " 2>&1" : "");
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace rayo::test
