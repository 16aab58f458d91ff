#pragma once
// A `rayo serve` child process on a free port (--port 0), for the load
// generator (`rayo bench-serve -m`) and the server's integration tests: starts
// it, reads the address from its first line on stdout within a bound, and
// always stops it (SIGTERM, then SIGKILL after a bound) when it goes away.
#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "tools/sse_client.h"

namespace rayo::tools {

class ServeProcess {
 public:
  // Runs `exe serve --port 0 args...`; waits up to startup_s for the address.
  ServeProcess(const std::string& exe, const std::vector<std::string>& args, int startup_s);
  ~ServeProcess();
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  bool ok() const { return address_.port > 0; }  // it printed its address
  const ServerAddress& address() const { return address_; }

  // Sends a signal and waits up to timeout_s for the exit: the exit status
  // (128 + signal when killed by one), or -1 when it had to be SIGKILLed.
  int stop(int sig = SIGTERM, int timeout_s = 20);

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  ServerAddress address_;
};

}  // namespace rayo::tools
