#pragma once
// Progress of a long piece of work on stderr: a bar redrawn in place on a
// terminal; on a pipe or log, a line every 10%. Work under `min_total` units
// finishes before progress matters and prints nothing, and so does work done
// within its first second (a fast load says nothing, whatever its size).
//
//   Progress progress("loading");
//   for (...) progress.update(done, total);   // from any thread
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace rayo {

// How amounts and rates are written: bytes ("12.5 MiB", "340 MB/s") by default.
struct ProgressUnits {
  std::function<std::string(uint64_t amount)> amount;
  std::function<std::string(double per_second)> rate;
};
ProgressUnits byte_units();

class Progress {
 public:
  explicit Progress(std::string label, uint64_t min_total = uint64_t{64} << 20, ProgressUnits units = byte_units());
  // done of total units; the last call should have done == total.
  void update(uint64_t done, uint64_t total);

 private:
  std::string label_;
  uint64_t min_total_;
  ProgressUnits units_;
  bool tty_;
  bool shown_ = false;  // something was printed (the first second has passed)
  int last_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
};

}  // namespace rayo
