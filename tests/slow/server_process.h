#pragma once
// Starts the real `rayo serve` on a free loopback port for a test and always
// stops it (SIGTERM, then SIGKILL after a bound) when the object goes away.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "server/sse_client.h"
#include "support/paths.h"

namespace rayo::test {

class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> extra_args) {
    std::vector<std::string> args = {rayo_binary().string(), "serve", "--host", "127.0.0.1", "--port", "0"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    // The first line on stdout names the address; loading gets a generous bound.
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char c;
      if (read(out[0], &c, 1) != 1) break;
      if (c == '\n') break;
      line += c;
    }
    close(out[0]);
    const size_t at = line.find("http://");
    if (at != std::string::npos) {
      address_ = server::parse_url(line.substr(at));
      port_ = address_.port;
    }
  }

  ~ServerProcess() { stop(); }

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  server::ServerAddress address(const std::string& api_key = {}) const {
    auto a = address_;
    a.api_key = api_key;
    return a;
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Sends a signal and waits (bounded) for the exit status; -1 if it had to be killed.
  int stop(int sig = SIGTERM, int timeout_s = 20) {
    if (pid_ <= 0) return exit_code_;
    kill(pid_, sig);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    int status = 0;
    while (true) {
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        exit_code_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
    return exit_code_;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_code_ = -1;
  server::ServerAddress address_;
};

}  // namespace rayo::test
