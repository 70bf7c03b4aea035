// LossScaler: the loss scale of mixed-precision training, dynamic or static
// (Note [Dynamic loss scaling]), and the record of its changes.
//
//   LossScaler s(options);
//   for (step = 0; ...; ++step) {
//     backward(loss * s.scale());                          // fp16 gradients, scaled
//     bool found_inf = unscale(gradients, 1 / s.scale());  // any inf or nan, over all ranks
//     if (!s.update(step, found_inf)) optimizer.step();    // else: skip, touch nothing
//   }
#pragma once

#include <cstdint>
#include <iosfwd>
#include <vector>

namespace gw::amp {

struct LossScalerOptions {
  float init_scale = 32768.0f;          // GRADWIRE_AMP_INIT_SCALE
  std::int64_t growth_interval = 1000;  // GRADWIRE_AMP_GROWTH_INTERVAL
  float growth_factor = 2.0f;           // GRADWIRE_AMP_GROWTH_FACTOR
  float backoff_factor = 0.5f;          // GRADWIRE_AMP_BACKOFF_FACTOR
  float min_scale = 1.0f;               // GRADWIRE_AMP_MIN_SCALE
  bool dynamic = true;                  // GRADWIRE_AMP_DYNAMIC
};

// Throws std::invalid_argument naming the GRADWIRE_AMP_* variable, its value and what is accepted:
// init_scale finite and > 0; min_scale finite and > 0; init_scale >= min_scale when dynamic;
// growth_interval >= 1; growth_factor finite and > 1; backoff_factor in (0, 1).
void validate(const LossScalerOptions& o);

// Note [Dynamic loss scaling]
// fp16 has a narrow range: the smallest subnormal is 2^-24 (about 6e-8), and many gradient values
// of a real network lie below it, so computed in fp16 they become zero and their updates are lost.
// Micikevicius et al. ("Mixed Precision Training", ICLR 2018) multiply the loss by a scale S
// before the backward pass; by the chain rule every gradient is multiplied by S too, which lifts
// the small ones into fp16's range. The gradients are divided by S (unscaled, in fp32) before the
// optimizer uses them, so the update itself is unchanged.
//
// A fixed S is hard to choose: too small and gradients still flush to zero, too large and the
// largest ones overflow to inf (or give nan). The dynamic scaler looks for the largest S that
// works. It starts high (init_scale); a step whose gradients hold an inf or a nan is skipped and S
// is multiplied by backoff_factor; after growth_interval clean steps in a row S is multiplied by
// growth_factor, probing whether a larger scale has become safe. Overflow steps are thus rare and
// cheap: a skipped step costs one step of compute.
//
// min_scale is a floor for the backoff. When the nan does not come from the scale (the model
// itself diverged, or the input holds a nan), every step overflows whatever S is, and without a
// floor S would halve each step toward zero (and then underflow every gradient, so that even a
// later good step would learn nothing). At the floor the scaler keeps skipping and counting
// (consecutive_skips) at a fixed scale, which makes a run that cannot recover visible instead of
// hiding it behind a vanishing scale.
//
// A skipped step must leave the parameters and the optimizer's state (momentum, Adam moments, its
// step count) untouched, as if the step had not happened. That is the caller's job: update() only
// says that the step is to be skipped.

enum class ScaleEvent { kInitial, kBackoff, kGrowth };

// "initial", "backoff", "growth".
const char* to_string(ScaleEvent e);

// One value of the scale: the step after which it took effect and why.
struct ScaleChange {
  std::int64_t step = 0;
  float scale = 0;
  ScaleEvent event = ScaleEvent::kInitial;
};

class LossScaler {
 public:
  // Throws as validate().
  explicit LossScaler(LossScalerOptions options = {});

  // The scale for the next step's loss.
  float scale() const { return scale_; }

  // Records the outcome of training step `step` (0-based; it must be greater than the last
  // recorded step, else std::logic_error and nothing changes) and returns true when that step must
  // be skipped (found_inf), in both modes.
  // Dynamic: an overflow multiplies the scale by backoff_factor, never below min_scale, and resets
  // the clean-step count; growth_interval consecutive clean steps multiply it by growth_factor
  // (and reset the count), unless the product is not finite in float: then the scale stays and
  // the count resets. Static (dynamic = false): the scale never changes.
  // Every change of the value appends to history() the step it followed and the event; a backoff
  // at the floor, or a growth that would overflow, changes nothing and appends nothing.
  bool update(std::int64_t step, bool found_inf);

  // Steps skipped so far (overflows), in both modes.
  std::int64_t skipped_steps() const { return skipped_; }
  // Overflow steps in a row, up to the last update (0 when the last step was clean).
  std::int64_t consecutive_skips() const { return consecutive_skips_; }
  // Clean steps since the last change of the scale or the last overflow, whichever came later
  // (in static mode: since the last overflow).
  std::int64_t clean_streak() const { return clean_streak_; }
  // Dynamic and the scale is min_scale: a further overflow cannot lower it.
  bool at_floor() const { return options_.dynamic && scale_ == options_.min_scale; }
  // The last step passed to update(); -1 before the first.
  std::int64_t last_step() const { return last_step_; }

  // history()[0] is {-1, init_scale, kInitial}; then one entry per change, oldest first.
  const std::vector<ScaleChange>& history() const { return history_; }
  const LossScalerOptions& options() const { return options_; }

  // Note [Loss scaler state format]: the 8-byte magic "GWSCAL1\0", then in host byte order the
  // options (init_scale as f32, growth_interval as i64, growth_factor, backoff_factor, min_scale
  // as f32, dynamic as u8), the state update() depends on (scale as f32; clean streak, skipped
  // steps, consecutive skips, last step as i64) and the history (its length as u64, then per entry
  // step as i64, scale as f32, event as u32). load_state throws std::runtime_error, leaving the
  // scaler unchanged, on a truncated stream, a wrong magic, an inconsistent state, or a stream
  // written under other options (naming the GRADWIRE_AMP_* variable that differs): a scale found
  // under one growth schedule means nothing under another.
  void save_state(std::ostream& out) const;
  void load_state(std::istream& in);

 private:
  LossScalerOptions options_;
  float scale_ = 0;
  std::int64_t clean_streak_ = 0;
  std::int64_t skipped_ = 0;
  std::int64_t consecutive_skips_ = 0;
  std::int64_t last_step_ = -1;
  std::vector<ScaleChange> history_;
};

}  // namespace gw::amp
