#include "common/progress.h"

#include <unistd.h>

#include <cstdio>

#include "common/strings.h"

namespace rayo {

ProgressUnits byte_units() {
  return {[](uint64_t bytes) { return format_bytes(bytes); },
          [](double per_second) {
            char text[32];
            std::snprintf(text, sizeof(text), "%.0f MB/s", per_second / 1e6);
            return std::string(text);
          }};
}

Progress::Progress(std::string label, uint64_t min_total, ProgressUnits units)
    : label_(std::move(label)),
      min_total_(min_total),
      units_(std::move(units)),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

void Progress::update(uint64_t done, uint64_t total) {
  if (total < min_total_) return;
  std::lock_guard lock(mutex_);
  const int percent = total ? static_cast<int>(done * 100 / total) : 100;
  if (percent <= last_ && done != total) return;  // nothing new (or an earlier update arriving late)
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (!shown_ && seconds < 1.0) {
    last_ = percent;  // too soon to matter: a line appears only for work that takes a while
    return;
  }
  shown_ = true;
  const std::string rate = units_.rate(seconds > 0 ? static_cast<double>(done) / seconds : 0.0);
  if (tty_) {
    const int width = 40, filled = percent * width / 100;
    std::fprintf(stderr, "\r%s [%s%s] %3d%%  %s / %s  %s", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), percent, units_.amount(done).c_str(),
                 units_.amount(total).c_str(), rate.c_str());
    if (done == total) std::fprintf(stderr, "\n");
  } else if (percent / 10 != last_ / 10 || done == total) {
    std::fprintf(stderr, "%s: %d%% (%s of %s, %s)\n", label_.c_str(), percent, units_.amount(done).c_str(),
                 units_.amount(total).c_str(), rate.c_str());
  }
  last_ = percent;
}

}  // namespace rayo
