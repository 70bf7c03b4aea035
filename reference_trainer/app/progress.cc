#include "reference_trainer/app/progress.h"

#include <unistd.h>

#include <chrono>
#include <utility>

namespace gw::trainer {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double percent(std::size_t step, std::size_t steps) {
  return steps == 0 ? 100.0 : 100.0 * static_cast<double>(step) / static_cast<double>(steps);
}

}  // namespace

ProgressOutput::ProgressOutput(std::FILE* out, bool terminal, double every_seconds, Clock now)
    : out_(out),
      terminal_(terminal),
      every_seconds_(every_seconds),
      now_(std::move(now)),
      start_(now_()),
      last_(start_) {}

ProgressOutput ProgressOutput::to_stderr(bool enabled, double every_seconds) {
  return ProgressOutput(enabled ? stderr : nullptr, isatty(STDERR_FILENO) != 0, every_seconds,
                        steady_seconds);
}

void ProgressOutput::update(int epoch, int epochs, std::size_t step, std::size_t steps,
                            double loss) {
  if (out_ == nullptr) return;
  if (terminal_) {
    draw_bar(epoch, epochs, step, steps, loss);
    return;
  }
  if (every_seconds_ <= 0) return;
  const double now = now_();
  if (now - last_ < every_seconds_) return;
  last_ = now;
  std::fprintf(out_, "progress: epoch %d/%d step %zu/%zu (%.1f%%) loss %.4f elapsed %.1f s\n",
               epoch, epochs, step, steps, percent(step, steps), loss, now - start_);
  std::fflush(out_);
}

void ProgressOutput::draw_bar(int epoch, int epochs, std::size_t step, std::size_t steps,
                              double loss) {
  const double now = now_();
  // Redraw at most ten times a second, and always at the end of the epoch.
  if (drawn_ && step != steps && now - last_ < 0.1) return;
  last_ = now;
  constexpr int kWidth = 30;
  const int filled = steps == 0 ? kWidth : static_cast<int>(kWidth * step / steps);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = '\0';
  std::fprintf(out_, "\repoch %d/%d [%s] %5.1f%%  step %zu/%zu  loss %.4f", epoch, epochs, bar,
               percent(step, steps), step, steps, loss);
  std::fflush(out_);
  drawn_ = true;
}

void ProgressOutput::finish() {
  if (out_ == nullptr || !terminal_ || !drawn_) return;
  std::fprintf(out_, "\r\033[K");  // back to the line's start, and erase it
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace gw::trainer
