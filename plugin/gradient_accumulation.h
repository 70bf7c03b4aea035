// GradientAccumulation: several backward passes per optimizer step, summed locally and exchanged
// once (GRADWIRE_ACCUMULATION_STEPS, Note [Gradient accumulation]).
#pragma once

#include <cstddef>
#include <string>

#include "kernels/stream.h"

namespace gw {

// Note [Gradient accumulation]
// GRADWIRE_ACCUMULATION_STEPS=N: an optimizer step takes N backward passes (micro-batches), and
// the program calls gradient_ready and step() in each, as it does without accumulation (Horovod's
// backward_passes_per_step, DDP's no_sync, Paddle's gradient merge). In the first N-1 passes the
// gradient backward wrote is added into an fp32 sum (the first pass copies it), parameter by
// parameter as gradient_ready reports it (all at step() for a program that never calls it);
// nothing is exchanged, the inner optimizer does not run and the step count does not advance, so
// every schedule counts optimizer steps: local SGD's periods, DGC's warm-up, the compressor's
// state, the loss scale's growth. In the last pass each parameter's gradient becomes the sum plus
// its own, times 1/N (under GRADWIRE_GRADIENT_REDUCTION=sum, times 1), before its bucket is
// released: the compressor, mixed precision's one unscale-and-check and the exchange see the
// gradient of N micro-batches as they see one batch's, once. A pass's loss given to report_loss
// joins the step's mean. A state save, a synchronize or a parameter broadcast in the middle of an
// optimizer step is a std::logic_error: a checkpoint holds no partial sum.
class GradientAccumulation {
 public:
  GradientAccumulation() = default;
  // `passes` backward passes per optimizer step (1: none); `average`: the last pass scales the
  // sum by 1/passes. The sum's `numel` floats live where `stream` works.
  GradientAccumulation(int passes, bool average, std::size_t numel, const kernels::Stream& stream);

  int passes() const { return passes_; }
  bool on() const { return passes_ > 1; }
  // The running pass of the optimizer step, 0 .. passes()-1.
  int pass() const { return pass_; }
  // Whether the running pass is the last, which exchanges and updates (always, without
  // accumulation).
  bool last() const { return pass_ + 1 == passes_; }
  // Whether an optimizer step is part-way: a pass before the last has ended.
  bool part_way() const { return pass_ > 0; }

  // The running pass's gradient of one parameter, `grad[0..n)`, at `offset` of the flat buffer, is
  // final: before the last pass it goes into the sum; in the last the sum goes into it, scaled.
  // On `stream` (the program's), after backward's writes.
  void fold(float* grad, std::size_t offset, std::size_t n, const kernels::Stream& stream);
  // A pass before the last has ended; the next begins.
  void next_pass() { ++pass_; }
  // The last pass's optimizer step has ended.
  void step_ended();

  // A pass's loss; returns the mean over the step's passes so far.
  double add_loss(double loss);
  // "backward pass 2 of 4 (GRADWIRE_ACCUMULATION_STEPS)", for std::logic_error messages.
  std::string where() const;

 private:
  int passes_ = 1;
  int pass_ = 0;
  float multiplier_ = 1.0f;  // of the last pass's sum
  double loss_sum_ = 0;
  int losses_ = 0;
  kernels::Buffer<float> sum_;
};

}  // namespace gw
