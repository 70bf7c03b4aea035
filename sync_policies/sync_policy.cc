#include "sync_policies/sync_policy.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <istream>
#include <iterator>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "common/binary_stream.h"
#include "common/enum_names.h"

namespace gw::sync_policies {
namespace {

constexpr SyncMode kModes[] = {SyncMode::kEveryStep, SyncMode::kLocalSgd, SyncMode::kPostLocalSgd,
                               SyncMode::kAdaptiveLocalSgd, SyncMode::kDiloco};

std::string number(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

void check_figure(const char* what, double v, bool positive) {
  if (!std::isfinite(v) || v < 0.0 || (positive && v == 0.0)) {
    throw std::invalid_argument(std::string("adaptive_local_sgd: ") + what + " is " + number(v) +
                                "; it must be finite and " + (positive ? "> 0" : ">= 0"));
  }
}

}  // namespace

const char* to_string(SyncMode mode) {
  switch (mode) {
    case SyncMode::kEveryStep:
      return "every_step";
    case SyncMode::kLocalSgd:
      return "local_sgd";
    case SyncMode::kPostLocalSgd:
      return "post_local_sgd";
    case SyncMode::kAdaptiveLocalSgd:
      return "adaptive_local_sgd";
    case SyncMode::kDiloco:
      return "diloco";
  }
  return "?";
}

SyncMode parse_sync_mode(std::string_view text) {
  if (const auto mode = find_by_name(text, kModes)) return *mode;
  throw std::invalid_argument("unknown sync mode '" + std::string(text) +
                              "'; accepted: " + names_of(kModes));
}

std::int64_t adaptive_period(double lr_0, double lr_t, double loss_0, double loss_t,
                             std::int64_t k_0, std::int64_t k_max) {
  check_figure("the first learning rate (lr_0)", lr_0, true);
  check_figure("the learning rate (lr_t)", lr_t, false);
  check_figure("the first mean loss (loss_0)", loss_0, true);
  check_figure("the mean loss (loss_t)", loss_t, false);
  if (k_0 < 1 || k_max < k_0) {
    throw std::invalid_argument("adaptive_local_sgd: need 1 <= k_0 <= k_max, got k_0 = " +
                                std::to_string(k_0) + ", k_max = " + std::to_string(k_max));
  }
  if (lr_t == 0.0) return k_max;
  const double k =
      std::ceil(std::sqrt((lr_0 / lr_t) * (loss_t / loss_0)) * static_cast<double>(k_0));
  // Compared as doubles first: k may exceed any int64 when lr_t is tiny.
  if (!(k < static_cast<double>(k_max))) return k_max;
  return k < 1.0 ? 1 : static_cast<std::int64_t>(k);
}

SyncPolicy::SyncPolicy(const SyncOptions& options) : options_(options) {
  const auto fail = [](const std::string& what) {
    throw std::invalid_argument("SyncPolicy: " + what);
  };
  if (options.begin_step < 0)
    fail("begin_step must be >= 0, got " + std::to_string(options.begin_step));
  switch (options.mode) {
    case SyncMode::kEveryStep:
      return;
    case SyncMode::kLocalSgd:
    case SyncMode::kDiloco:
      if (options.begin_step != 0) {
        fail(std::string(to_string(options.mode)) + " is local from step 0; a begin step (" +
             std::to_string(options.begin_step) + ") is post_local_sgd");
      }
      [[fallthrough]];
    case SyncMode::kPostLocalSgd:
      if (options.mode == SyncMode::kPostLocalSgd && options.begin_step == 0) {
        fail("post_local_sgd needs a begin step >= 1 (from step 0 it is local_sgd)");
      }
      if (options.period < 1) fail("period must be >= 1, got " + std::to_string(options.period));
      period_ = options.period;
      break;
    case SyncMode::kAdaptiveLocalSgd:
      if (options.initial_period < 1 || options.max_period < options.initial_period) {
        fail("need 1 <= initial_period <= max_period, got " +
             std::to_string(options.initial_period) + " and " + std::to_string(options.max_period));
      }
      period_ = options.initial_period;
      break;
  }
  next_average_step_ = options.begin_step + period_ - 1;
}

bool SyncPolicy::exchanges_gradients(std::int64_t step) const {
  return options_.mode == SyncMode::kEveryStep || step < options_.begin_step;
}

std::int64_t SyncPolicy::averaged(std::int64_t step, double loss, double lr) {
  if (!averages_after(step)) {
    throw std::logic_error(
        "SyncPolicy::averaged: step " + std::to_string(step) +
        " is not an averaging point (next: " + std::to_string(next_average_step_) + ")");
  }
  if (options_.mode == SyncMode::kAdaptiveLocalSgd) {
    // The first point sets the reference figures; adaptive_period checks them before anything
    // changes.
    const double loss_0 = has_reference_ ? loss_0_ : loss;
    const double lr_0 = has_reference_ ? lr_0_ : lr;
    period_ = adaptive_period(lr_0, lr, loss_0, loss, options_.initial_period, options_.max_period);
    loss_0_ = loss_0;
    lr_0_ = lr_0;
    has_reference_ = true;
  }
  next_average_step_ = step + period_;
  return period_;
}

namespace {

constexpr char kMagic[8] = {'G', 'W', 'S', 'Y', 'N', 'C', '1', '\0'};

using binary::put;

template <typename T>
T get(std::istream& in) {
  return binary::get<T>(in, "sync policy state");
}

}  // namespace

// Note [Sync policy state format]: the 8-byte magic "GWSYNC1\0", then in host byte order the
// options (mode as u32, period, begin_step, initial_period, max_period as i64), the schedule
// (period, next averaging step as i64), whether the adaptive reference is set (u8), loss_0 and
// lr_0 (f64).
void SyncPolicy::save_state(std::ostream& out) const {
  out.write(kMagic, sizeof kMagic);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(options_.mode));
  put<std::int64_t>(out, options_.period);
  put<std::int64_t>(out, options_.begin_step);
  put<std::int64_t>(out, options_.initial_period);
  put<std::int64_t>(out, options_.max_period);
  put<std::int64_t>(out, period_);
  put<std::int64_t>(out, next_average_step_);
  put<std::uint8_t>(out, has_reference_ ? 1 : 0);
  put<double>(out, loss_0_);
  put<double>(out, lr_0_);
  if (!out) throw std::runtime_error("sync policy state: error while writing");
}

void SyncPolicy::load_state(std::istream& in) {
  char magic[8];
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    throw std::runtime_error("sync policy state: not a gradwire sync policy state stream");
  }
  const auto mode = get<std::uint32_t>(in);
  SyncOptions saved;
  saved.period = get<std::int64_t>(in);
  saved.begin_step = get<std::int64_t>(in);
  saved.initial_period = get<std::int64_t>(in);
  saved.max_period = get<std::int64_t>(in);
  const auto period = get<std::int64_t>(in);
  const auto next = get<std::int64_t>(in);
  const auto has_reference = get<std::uint8_t>(in);
  const auto loss_0 = get<double>(in);
  const auto lr_0 = get<double>(in);
  if (mode != static_cast<std::uint32_t>(options_.mode)) {
    throw std::runtime_error(
        std::string("sync policy state: saved under ") +
        (mode < std::size(kModes) ? to_string(kModes[mode]) : "an unknown mode") +
        ", this run is " + name());
  }
  const bool same_options = options_.mode == SyncMode::kEveryStep ||
                            (saved.begin_step == options_.begin_step &&
                             (options_.mode == SyncMode::kAdaptiveLocalSgd
                                  ? saved.initial_period == options_.initial_period &&
                                        saved.max_period == options_.max_period
                                  : saved.period == options_.period));
  if (!same_options) {
    throw std::runtime_error("sync policy state: saved with other " + name() +
                             " settings (period " + std::to_string(saved.period) + ", begin " +
                             std::to_string(saved.begin_step) + ", initial " +
                             std::to_string(saved.initial_period) + ", max " +
                             std::to_string(saved.max_period) + ")");
  }
  if (has_reference > 1 ||
      (options_.mode != SyncMode::kEveryStep && (period < 1 || next < options_.begin_step))) {
    throw std::runtime_error("sync policy state: corrupt schedule");
  }
  period_ = period;
  next_average_step_ = next;
  has_reference_ = has_reference == 1;
  loss_0_ = loss_0;
  lr_0_ = lr_0;
}

std::string SyncPolicy::state_bytes() const {
  std::ostringstream out;
  save_state(out);
  return out.str();
}

void SyncPolicy::load_state_bytes(const std::string& bytes) {
  std::istringstream in(bytes);
  load_state(in);
}

}  // namespace gw::sync_policies
