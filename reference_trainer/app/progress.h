// A live progress bar on rank 0 when stdout is a terminal; silent otherwise (logs stay clean).
#pragma once

#include <chrono>
#include <cstddef>

namespace gw::trainer {

class ProgressBar {
 public:
  // Shows anything only when `enabled` and stdout is a terminal.
  explicit ProgressBar(bool enabled);
  void update(int epoch, int epochs, std::size_t step, std::size_t steps, double loss);
  // Clears the bar's line so the next line prints cleanly.
  void finish();

 private:
  bool active_ = false;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace gw::trainer
