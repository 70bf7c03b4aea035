// OuterOptimizer: DiLoCo's outer step (GRADWIRE_SYNC=diloco), applied tensor by tensor at an
// averaging point to the ranks' mean parameters, and its momentum, which the checkpoint keeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>

#include "kernels/outer_rule.h"
#include "kernels/stream.h"

namespace gw {

// Note [DiLoCo]
// GRADWIRE_SYNC=diloco (Douillard et al., "DiLoCo: Distributed Low-Communication Training of
// Language Models", 2023) runs local_sgd's schedule: every rank takes H = GRADWIRE_LOCAL_SGD_K
// steps of the wrapped (inner) optimizer on its own gradients from the anchor, the parameters
// every rank held after the previous outer step. Then the ranks average their pseudo-gradients,
// anchor - w, and every rank takes the same outer step from the anchor:
//
//   d = anchor - mean(w)                   the averaged pseudo-gradient
//   u = mu u + d                           (nesterov and heavy_ball; average keeps no u)
//   s = d + mu u  |  u  |  d               nesterov | heavy_ball | average
//   w = anchor - lr s;  anchor = w
//
// with lr = GRADWIRE_OUTER_LR (default 0.7) and mu = GRADWIRE_OUTER_MOMENTUM (default 0.9), the
// paper's Nesterov figures. The step is computed as w = mean + (d - lr s), which is the same value
// and makes lr 1 without momentum give mean(w) exactly: that is local_sgd at k = H, bit for bit,
// under the fp32 and fp16 wires alike (the mean is formed as local SGD forms it).
//
// What travels is what GRADWIRE_COMPRESSOR says. none sends the parameters in fp32 (as local SGD
// does, so that the equality above holds); every other compressor sends each rank's change
// w - anchor, the negated pseudo-gradient: fp16 as halves; topk as its k largest values per tensor
// with error feedback (what a point does not send is carried to the next, which is SparseLoCo's
// recipe without the low-bit values); powersgd as low-rank factors with its error feedback. The
// compressor counts outer steps as its steps (its warm-up, GRADWIRE_DGC_RAMPUP_* and
// GRADWIRE_POWERSGD_START_STEP, is in outer steps), and its residuals are in the checkpoint with
// the outer momentum. dgc is refused: its momentum correction would be a second momentum on top
// of the outer one. The inner optimizer's state stays each rank's own unless
// GRADWIRE_LOCAL_SGD_AVERAGE_STATE=1.
//
// A synchronize_parameters() between points (the trainer's final one) takes an outer step over
// the steps since the last point, as local_sgd averages there.
class OuterOptimizer {
 public:
  // numel: the parameters' floats; the momentum (none under average) lives in `stream`'s memory.
  OuterOptimizer(const kernels::OuterStep& step, std::size_t numel, const kernels::Stream& stream);

  // "nesterov (lr 0.7, momentum 0.9)".
  std::string describe() const;

  // The outer step for the floats [offset, offset + n) of the flat parameters: x * alpha is their
  // mean (x_is_delta: their mean change since `anchor`); w and anchor are the tensor's own
  // (anchor at the same offset of the flat anchor).
  void apply(const float* x, float alpha, bool x_is_delta, float* w, float* anchor,
             std::size_t offset, std::size_t n, const kernels::Stream& stream);

  // Outer steps taken (the pseudo-gradient compressor's step count); counted by count_step().
  std::int64_t steps() const { return steps_; }
  void count_step() { ++steps_; }

  // The rule, the steps taken and the momentum. load_state throws std::runtime_error,
  // leaving the state as it was, on a stream from another rule or layout.
  void save_state(std::ostream& out) const;
  void load_state(std::istream& in);

 private:
  kernels::OuterStep step_;
  std::int64_t steps_ = 0;
  kernels::Stream stream_ = kernels::Stream::host();
  kernels::Buffer<float> momentum_;
};

// Throws std::invalid_argument naming the text and the accepted values.
kernels::OuterRule parse_outer_rule(const std::string& text);

namespace kernels {
// GRADWIRE_OUTER_OPTIMIZER's spelling of a rule: "nesterov", "heavy_ball", "average".
const char* to_string(OuterRule rule);
}  // namespace kernels

}  // namespace gw
