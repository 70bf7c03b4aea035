// Rank 0's progress through an epoch, on stderr: a bar redrawn in place when stderr is a
// terminal, else a plain line every few seconds, so that a log holds one line per event and no
// carriage returns (Note [Progress in terminals and logs]).
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>

namespace gw::trainer {

// Note [Progress in terminals and logs]
// A terminal shows a bar that redraws itself with '\r'; written to a file or a pipe the same bytes
// make one endless line of overwritten text. So the bar is drawn only when stderr is a terminal,
// and otherwise a plain "progress: ..." line is written every `every_seconds` (0: never; the
// trainer's evaluation and epoch lines on stdout still mark the run's progress). The test is on
// stderr, not stdout: Open MPI gives every rank a pseudo-terminal for stdout even when mpirun's
// own output goes to a file, so stdout always looks like a terminal under mpirun; its stderr is a
// pipe, so under mpirun progress comes as plain lines.
class ProgressOutput {
 public:
  // Seconds on a monotonic clock; injected so that tests need neither a pty nor to wait.
  using Clock = std::function<double()>;

  // Writes to `out` (nullptr: nothing at all), as a bar when `terminal`, else as a plain line at
  // most every `every_seconds` seconds of `now` (0: never).
  ProgressOutput(std::FILE* out, bool terminal, double every_seconds, Clock now);

  // The trainer's: on stderr when `enabled`, a bar if stderr is a terminal, on the steady clock.
  static ProgressOutput to_stderr(bool enabled, double every_seconds);

  // Step `step` of `steps` of epoch `epoch` of `epochs` is done; `loss` is the epoch's mean so far.
  void update(int epoch, int epochs, std::size_t step, std::size_t steps, double loss);
  // Clears the bar's line, so that the next line prints cleanly (plain lines need nothing).
  void finish();

 private:
  void draw_bar(int epoch, int epochs, std::size_t step, std::size_t steps, double loss);

  std::FILE* out_;
  bool terminal_;
  double every_seconds_;
  Clock now_;
  double start_;        // the clock when constructed: "elapsed" in plain lines counts from here
  double last_ = 0;     // the clock at the last bar drawn or the last plain line written
  bool drawn_ = false;  // a bar is on the screen
};

}  // namespace gw::trainer
