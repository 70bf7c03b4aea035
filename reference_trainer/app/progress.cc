#include "reference_trainer/app/progress.h"

#include <unistd.h>

#include <cstdio>

namespace gw::trainer {

ProgressBar::ProgressBar(bool enabled) : active_(enabled && isatty(STDOUT_FILENO) != 0) {}

void ProgressBar::update(int epoch, int epochs, std::size_t step, std::size_t steps, double loss) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  // Redraw at most ten times a second, and always at the end of the epoch.
  if (drawn_ && step != steps && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  constexpr int kWidth = 30;
  const int filled = steps == 0 ? kWidth : static_cast<int>(kWidth * step / steps);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = '\0';
  std::printf("\repoch %d/%d [%s] %5.1f%%  step %zu/%zu  loss %.4f", epoch, epochs, bar,
              steps == 0 ? 100.0 : 100.0 * static_cast<double>(step) / static_cast<double>(steps),
              step, steps, loss);
  std::fflush(stdout);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (!active_ || !drawn_) return;
  std::printf("\r\033[K");
  std::fflush(stdout);
  drawn_ = false;
}

}  // namespace gw::trainer
