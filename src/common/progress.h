#pragma once
// Progress of a long piece of work on stderr: a bar redrawn in place on a
// terminal; on a pipe or log, a line every 10%. Work under `min_total` bytes
// finishes before progress matters and prints nothing.
//
//   Progress progress("loading");
//   for (...) progress.update(done, total);   // from any thread
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace rayo {

class Progress {
 public:
  explicit Progress(std::string label, uint64_t min_total = uint64_t{64} << 20);
  // done of total bytes; the last call should have done == total.
  void update(uint64_t done, uint64_t total);

 private:
  std::string label_;
  uint64_t min_total_;
  bool tty_;
  int last_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
};

}  // namespace rayo
