#include "amp/loss_scaler.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>

#include "common/binary_stream.h"

namespace gw::amp {
namespace {

std::string number(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

[[noreturn]] void reject(const char* variable, const std::string& value, const char* accepted) {
  throw std::invalid_argument(std::string(variable) + " is " + value + "; it must be " + accepted);
}

}  // namespace

void validate(const LossScalerOptions& o) {
  if (!std::isfinite(o.init_scale) || !(o.init_scale > 0.0f)) {
    reject("GRADWIRE_AMP_INIT_SCALE", number(o.init_scale), "finite and > 0");
  }
  if (!std::isfinite(o.min_scale) || !(o.min_scale > 0.0f)) {
    reject("GRADWIRE_AMP_MIN_SCALE", number(o.min_scale), "finite and > 0");
  }
  if (o.dynamic && o.init_scale < o.min_scale) {
    throw std::invalid_argument("GRADWIRE_AMP_INIT_SCALE is " + number(o.init_scale) +
                                ", below GRADWIRE_AMP_MIN_SCALE (" + number(o.min_scale) +
                                "); with dynamic scaling it must be >= GRADWIRE_AMP_MIN_SCALE");
  }
  if (o.growth_interval < 1) {
    reject("GRADWIRE_AMP_GROWTH_INTERVAL", std::to_string(o.growth_interval), ">= 1");
  }
  if (!std::isfinite(o.growth_factor) || !(o.growth_factor > 1.0f)) {
    reject("GRADWIRE_AMP_GROWTH_FACTOR", number(o.growth_factor), "finite and > 1");
  }
  if (!(o.backoff_factor > 0.0f && o.backoff_factor < 1.0f)) {
    reject("GRADWIRE_AMP_BACKOFF_FACTOR", number(o.backoff_factor), "in (0, 1)");
  }
}

const char* to_string(ScaleEvent e) {
  switch (e) {
    case ScaleEvent::kInitial:
      return "initial";
    case ScaleEvent::kBackoff:
      return "backoff";
    case ScaleEvent::kGrowth:
      return "growth";
  }
  return "?";
}

LossScaler::LossScaler(LossScalerOptions options) : options_(options) {
  validate(options_);
  scale_ = options_.init_scale;
  history_.push_back({-1, scale_, ScaleEvent::kInitial});
}

bool LossScaler::update(std::int64_t step, bool found_inf) {
  if (step <= last_step_) {
    throw std::logic_error("LossScaler::update: step " + std::to_string(step) +
                           " is not after the last recorded step " + std::to_string(last_step_));
  }
  last_step_ = step;
  if (found_inf) {
    ++skipped_;
    ++consecutive_skips_;
    clean_streak_ = 0;
    if (options_.dynamic) {
      float next = scale_ * options_.backoff_factor;
      if (next < options_.min_scale) next = options_.min_scale;
      if (next != scale_) {
        scale_ = next;
        history_.push_back({step, scale_, ScaleEvent::kBackoff});
      }
    }
    return true;
  }
  consecutive_skips_ = 0;
  ++clean_streak_;
  if (options_.dynamic && clean_streak_ >= options_.growth_interval) {
    clean_streak_ = 0;
    const float next = scale_ * options_.growth_factor;
    if (std::isfinite(next)) {
      scale_ = next;
      history_.push_back({step, scale_, ScaleEvent::kGrowth});
    }
  }
  return false;
}

namespace {

constexpr char kMagic[8] = {'G', 'W', 'S', 'C', 'A', 'L', '1', '\0'};

using binary::put;

template <typename T>
T get(std::istream& in) {
  return binary::get<T>(in, "loss scaler state");
}

[[noreturn]] void corrupt(const std::string& what) {
  throw std::runtime_error("loss scaler state: corrupt stream (" + what + ")");
}

// A loss scaler state as a stream holds it: read, not yet checked against this run.
struct SavedState {
  LossScalerOptions options;  // but `dynamic`, which is the byte below
  std::uint8_t dynamic = 0;
  float scale = 0;
  std::int64_t streak = 0, skipped = 0, consecutive = 0, last_step = 0;
  std::vector<ScaleChange> history;
};

// The fields in save_state's order. Throws on a wrong magic, a truncated stream, a history count
// that the last step rules out, or an unknown event.
SavedState read_saved(std::istream& in) {
  char magic[8];
  in.read(magic, sizeof magic);
  if (!in || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    throw std::runtime_error("loss scaler state: not a gradwire loss scaler state stream");
  }
  SavedState saved;
  saved.options.init_scale = get<float>(in);
  saved.options.growth_interval = get<std::int64_t>(in);
  saved.options.growth_factor = get<float>(in);
  saved.options.backoff_factor = get<float>(in);
  saved.options.min_scale = get<float>(in);
  saved.dynamic = get<std::uint8_t>(in);
  saved.scale = get<float>(in);
  saved.streak = get<std::int64_t>(in);
  saved.skipped = get<std::int64_t>(in);
  saved.consecutive = get<std::int64_t>(in);
  saved.last_step = get<std::int64_t>(in);
  const auto count = get<std::uint64_t>(in);
  // Each change follows a distinct step, so a count beyond last_step + 2 is corrupt; checked
  // before reading so that a garbage count cannot make the loop run (or allocate) for long.
  // (Unsigned: last_step -1 gives 1, INT64_MAX does not overflow.)
  const std::int64_t last_step = saved.last_step;
  if (last_step < -1 || count < 1 || count > static_cast<std::uint64_t>(last_step) + 2u) {
    corrupt("last step " + std::to_string(last_step) + " with " + std::to_string(count) +
            " history entries");
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    ScaleChange c;
    c.step = get<std::int64_t>(in);
    c.scale = get<float>(in);
    const auto event = get<std::uint32_t>(in);
    if (event > static_cast<std::uint32_t>(ScaleEvent::kGrowth)) {
      corrupt("history entry " + std::to_string(i) + " has event " + std::to_string(event));
    }
    c.event = static_cast<ScaleEvent>(event);
    saved.history.push_back(c);
  }
  return saved;
}

// Options first: a stream from another configuration is the likely mistake, and names it.
void check_same_options(const SavedState& saved, const LossScalerOptions& options) {
  const auto differs = [](const char* variable, const std::string& saved_value,
                          const std::string& value) {
    throw std::runtime_error("loss scaler state: saved with " + std::string(variable) + " = " +
                             saved_value + ", this run has " + value);
  };
  const std::uint8_t dynamic = saved.dynamic;
  if (dynamic > 1) corrupt("dynamic flag " + std::to_string(dynamic));
  if ((dynamic == 1) != options.dynamic) {
    differs("GRADWIRE_AMP_DYNAMIC", dynamic == 1 ? "true" : "false",
            options.dynamic ? "true" : "false");
  }
  const LossScalerOptions& was = saved.options;
  if (was.init_scale != options.init_scale) {
    differs("GRADWIRE_AMP_INIT_SCALE", number(was.init_scale), number(options.init_scale));
  }
  if (was.growth_interval != options.growth_interval) {
    differs("GRADWIRE_AMP_GROWTH_INTERVAL", std::to_string(was.growth_interval),
            std::to_string(options.growth_interval));
  }
  if (was.growth_factor != options.growth_factor) {
    differs("GRADWIRE_AMP_GROWTH_FACTOR", number(was.growth_factor),
            number(options.growth_factor));
  }
  if (was.backoff_factor != options.backoff_factor) {
    differs("GRADWIRE_AMP_BACKOFF_FACTOR", number(was.backoff_factor),
            number(options.backoff_factor));
  }
  if (was.min_scale != options.min_scale) {
    differs("GRADWIRE_AMP_MIN_SCALE", number(was.min_scale), number(options.min_scale));
  }
}

// Then the state must be one that update() could have reached under these options.
void check_reachable(const SavedState& saved, const LossScalerOptions& options) {
  const float scale = saved.scale;
  const std::int64_t streak = saved.streak, skipped = saved.skipped;
  const std::int64_t consecutive = saved.consecutive, last_step = saved.last_step;
  if (!std::isfinite(scale) || !(scale > 0.0f) ||
      (options.dynamic ? scale < options.min_scale : scale != options.init_scale)) {
    corrupt("scale " + number(scale));
  }
  if (streak < 0 || skipped < 0 || consecutive < 0 || consecutive > skipped ||
      (consecutive > 0 && streak > 0) || (options.dynamic && streak >= options.growth_interval) ||
      skipped - 1 > last_step || streak - 1 > last_step) {  // at most one per step
    corrupt("counts: clean streak " + std::to_string(streak) + ", skipped " +
            std::to_string(skipped) + ", consecutive skips " + std::to_string(consecutive) +
            ", last step " + std::to_string(last_step));
  }
  const std::vector<ScaleChange>& history = saved.history;
  const ScaleChange& first = history.front();
  if (first.step != -1 || first.scale != options.init_scale ||
      first.event != ScaleEvent::kInitial || history.back().scale != scale ||
      (!options.dynamic && history.size() != 1)) {
    corrupt("history does not match the scale");
  }
  for (std::size_t i = 1; i < history.size(); ++i) {
    const ScaleChange& c = history[i];
    const bool rose = c.scale > history[i - 1].scale;
    if (c.step <= history[i - 1].step || c.step > last_step || c.event == ScaleEvent::kInitial ||
        rose != (c.event == ScaleEvent::kGrowth) || c.scale == history[i - 1].scale) {
      corrupt("history entry " + std::to_string(i));
    }
  }
}

}  // namespace

void LossScaler::save_state(std::ostream& out) const {
  out.write(kMagic, sizeof kMagic);
  put<float>(out, options_.init_scale);
  put<std::int64_t>(out, options_.growth_interval);
  put<float>(out, options_.growth_factor);
  put<float>(out, options_.backoff_factor);
  put<float>(out, options_.min_scale);
  put<std::uint8_t>(out, options_.dynamic ? 1 : 0);
  put<float>(out, scale_);
  put<std::int64_t>(out, clean_streak_);
  put<std::int64_t>(out, skipped_);
  put<std::int64_t>(out, consecutive_skips_);
  put<std::int64_t>(out, last_step_);
  put<std::uint64_t>(out, history_.size());
  for (const ScaleChange& c : history_) {
    put<std::int64_t>(out, c.step);
    put<float>(out, c.scale);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(c.event));
  }
  if (!out) throw std::runtime_error("loss scaler state: error while writing");
}

void LossScaler::load_state(std::istream& in) {
  SavedState saved = read_saved(in);
  check_same_options(saved, options_);
  check_reachable(saved, options_);
  scale_ = saved.scale;
  clean_streak_ = saved.streak;
  skipped_ = saved.skipped;
  consecutive_skips_ = saved.consecutive;
  last_step_ = saved.last_step;
  history_ = std::move(saved.history);
}

}  // namespace gw::amp
