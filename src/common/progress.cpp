#include "common/progress.h"

#include <unistd.h>

#include <cstdio>

#include "common/strings.h"

namespace rayo {

Progress::Progress(std::string label, uint64_t min_total)
    : label_(std::move(label)),
      min_total_(min_total),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

void Progress::update(uint64_t done, uint64_t total) {
  if (total < min_total_) return;
  std::lock_guard lock(mutex_);
  const int percent = total ? static_cast<int>(done * 100 / total) : 100;
  if (percent <= last_ && done != total) return;  // nothing new (or an earlier update arriving late)
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double mbps = seconds > 0 ? static_cast<double>(done) / 1e6 / seconds : 0.0;
  if (tty_) {
    const int width = 40, filled = percent * width / 100;
    std::fprintf(stderr, "\r%s [%s%s] %3d%%  %s / %s  %.0f MB/s", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), percent, format_bytes(done).c_str(),
                 format_bytes(total).c_str(), mbps);
    if (done == total) std::fprintf(stderr, "\n");
  } else if (percent / 10 != last_ / 10 || done == total) {
    std::fprintf(stderr, "%s: %d%% (%s of %s, %.0f MB/s)\n", label_.c_str(), percent, format_bytes(done).c_str(),
                 format_bytes(total).c_str(), mbps);
  }
  last_ = percent;
}

}  // namespace rayo
