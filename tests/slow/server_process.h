#pragma once
// The real `rayo serve` on a free loopback port for a test (tools::ServeProcess
// with the built binary), always stopped when the object goes away.
#include <signal.h>

#include <string>
#include <vector>

#include "tools/serve_process.h"
#include "support/paths.h"

namespace rayo::test {

class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> extra_args)
      : process_(rayo_binary().string(), with_loopback(std::move(extra_args)), 60) {}

  bool ok() const { return process_.ok(); }
  int port() const { return process_.address().port; }
  tools::ServerAddress address(const std::string& api_key = {}) const {
    auto a = process_.address();
    a.api_key = api_key;
    return a;
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port()); }

  // Sends a signal and waits (bounded) for the exit status; -1 if it had to be killed.
  int stop(int sig = SIGTERM, int timeout_s = 20) { return process_.stop(sig, timeout_s); }

 private:
  static std::vector<std::string> with_loopback(std::vector<std::string> args) {
    args.insert(args.begin(), {"--host", "127.0.0.1"});
    return args;
  }
  tools::ServeProcess process_;
};

}  // namespace rayo::test
