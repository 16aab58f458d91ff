#include "tools/serve_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace rayo::tools {

ServeProcess::ServeProcess(const std::string& exe, const std::vector<std::string>& args, int startup_s) {
  std::vector<std::string> argv_s = {exe, "serve", "--port", "0"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  int out[2];
  if (pipe(out) != 0) return;
  pid_ = fork();
  if (pid_ < 0) {
    close(out[0]);
    close(out[1]);
    return;
  }
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  // The first line on stdout names the address; loading a large model takes a while.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(startup_s);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char c;
    if (read(out[0], &c, 1) != 1 || c == '\n') break;
    line += c;
  }
  close(out[0]);
  const size_t at = line.find("http://");
  if (at != std::string::npos) address_ = parse_url(line.substr(at));
}

ServeProcess::~ServeProcess() { stop(); }

int ServeProcess::stop(int sig, int timeout_s) {
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
    if (r < 0 || std::chrono::steady_clock::now() > deadline) {
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

}  // namespace rayo::tools
