// SyncPolicy: per step, whether ranks exchange gradients (synchronous SGD) or step on their own
// gradients, and after which steps they average their parameters (local SGD and its variants).
//
//   SyncPolicy p({SyncMode::kLocalSgd, /*period=*/8});
//   for (step = 0; ...; ++step) {
//     if (p.exchanges_gradients(step)) allreduce(gradients);
//     inner_optimizer.step();
//     if (p.averages_after(step)) { average(parameters); p.averaged(step, mean_loss, lr); }
//   }
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace gw::sync_policies {

// kDiloco keeps local_sgd's schedule (a point every `period` = H steps from step 0); what happens
// at a point (the outer step on the averaged pseudo-gradient) is plugin/outer_optimizer.h's.
enum class SyncMode { kEveryStep, kLocalSgd, kPostLocalSgd, kAdaptiveLocalSgd, kDiloco };

// "every_step", "local_sgd", "post_local_sgd", "adaptive_local_sgd", "diloco" (GRADWIRE_SYNC's
// values).
const char* to_string(SyncMode mode);
// Throws std::invalid_argument naming the text and the accepted values.
SyncMode parse_sync_mode(std::string_view text);

struct SyncOptions {
  SyncMode mode = SyncMode::kEveryStep;
  // local_sgd, post_local_sgd: k, the local steps between two averaging points; diloco: H, the
  // inner steps between two outer steps.
  std::int64_t period = 4;
  // post_local_sgd, adaptive_local_sgd: steps before this one are synchronous SGD; this one is the
  // first local step. local_sgd starts local at step 0 and takes no begin step.
  std::int64_t begin_step = 0;
  // adaptive_local_sgd: k_0, the first period, and k_max, the longest (Note [Adaptive period]).
  std::int64_t initial_period = 4;
  std::int64_t max_period = 16;
};

// Note [Adaptive period]
// adaptive_local_sgd chooses the next period at every averaging point from the training loss and
// the learning rate:
//
//   k = clamp(ceil(sqrt((lr_0 / lr_t) * (loss_t / loss_0)) * k_0), 1, k_max)
//
// loss_t is the training loss averaged over ranks and over the steps since the previous averaging
// point, lr_t the learning rate at this point; loss_0 and lr_0 are the same figures at the first
// averaging point (the end of the first period of k_0 steps), where k therefore stays k_0.
//
// This is the rule of AdaComm (Wang and Joshi, "Adaptive Communication Strategies to Achieve the
// Best Error-Runtime Trade-off in Local-Update SGD", SysML 2019): the error floor of local SGD
// grows with the period and the learning rate, so the best period shrinks with the square root of
// the loss and grows as the learning rate decays. With a constant learning rate the period
// therefore *shortens* as the loss falls (averaging becomes more frequent near convergence); it
// lengthens when the learning rate is decayed faster than the loss falls. Differences from
// PaddlePaddle's AdaptiveLocalSGDOptimizer: Paddle puts k_0 under the square root, takes loss_0
// from the first step and loss_t from the averaging step alone, and fixes k_max at 16.
//
// A zero learning rate gives k_max (nothing changes, so nothing needs averaging); a loss or a
// learning rate that is negative or not finite, or loss_0 or lr_0 that is not positive, throws
// std::invalid_argument naming it (a run whose loss became nan cannot choose a period).
std::int64_t adaptive_period(double lr_0, double lr_t, double loss_0, double loss_t,
                             std::int64_t k_0, std::int64_t k_max);

class SyncPolicy {
 public:
  // Throws std::invalid_argument naming the option: a period below 1, a negative begin step, a
  // begin step with local_sgd, post_local_sgd without one (begin_step 0 is local_sgd), or
  // initial_period above max_period.
  explicit SyncPolicy(const SyncOptions& options);

  const SyncOptions& options() const { return options_; }
  SyncMode mode() const { return options_.mode; }
  std::string name() const { return to_string(options_.mode); }

  // Whether step `step` (0-based) averages gradients over ranks before the update; otherwise each
  // rank steps on its own gradient.
  bool exchanges_gradients(std::int64_t step) const;
  // Whether parameters are averaged over ranks after step `step`'s update.
  bool averages_after(std::int64_t step) const {
    return options_.mode != SyncMode::kEveryStep && step == next_average_step_;
  }
  // adaptive_local_sgd needs the mean training loss at every averaging point.
  bool needs_loss() const { return options_.mode == SyncMode::kAdaptiveLocalSgd; }

  // The period in force: the local steps from the previous averaging point (or the switch to
  // local SGD) to the next one. 1 under every_step.
  std::int64_t period() const { return period_; }
  // The step after which parameters are averaged next; -1 under every_step.
  std::int64_t next_average_step() const { return next_average_step_; }

  // Records the averaging point after `step` (averages_after(step) must hold; std::logic_error
  // otherwise) and schedules the next one. loss: the training loss averaged over ranks and over
  // the steps since the previous point; lr: the learning rate now. Both are used only by
  // adaptive_local_sgd. Returns the new period.
  std::int64_t averaged(std::int64_t step, double loss, double lr);

  // The schedule (period, next point, the adaptive reference figures). load_state throws
  // std::runtime_error, leaving the policy unchanged, on a stream from another mode or options.
  void save_state(std::ostream& out) const;
  void load_state(std::istream& in);
  // The same as bytes, for callers built apart from this library (the PyTorch bridge:
  // Note [Strings across the bridge]).
  std::string state_bytes() const;
  void load_state_bytes(const std::string& bytes);

 private:
  SyncOptions options_;
  std::int64_t period_ = 1;
  std::int64_t next_average_step_ = -1;
  bool has_reference_ = false;  // adaptive: loss_0 and lr_0 recorded
  double loss_0_ = 0.0;
  double lr_0_ = 0.0;
};

}  // namespace gw::sync_policies
