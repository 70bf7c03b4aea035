#include "plugin/outer_optimizer.h"

#include <cstdint>
#include <cstdio>
#include <istream>
#include <iterator>
#include <ostream>
#include <stdexcept>
#include <vector>

#include "common/binary_stream.h"
#include "common/enum_names.h"
#include "kernels/update.h"

namespace gw {
namespace {

constexpr kernels::OuterRule kRules[] = {
    kernels::OuterRule::kNesterov, kernels::OuterRule::kHeavyBall, kernels::OuterRule::kAverage};
constexpr const char* kLoadContext = "DistributedOptimizer::load_state (outer optimizer)";

bool has_momentum(kernels::OuterRule rule) { return rule != kernels::OuterRule::kAverage; }

}  // namespace

namespace kernels {
const char* to_string(OuterRule rule) {
  switch (rule) {
    case OuterRule::kNesterov:
      return "nesterov";
    case OuterRule::kHeavyBall:
      return "heavy_ball";
    case OuterRule::kAverage:
      return "average";
  }
  return "?";
}
}  // namespace kernels

kernels::OuterRule parse_outer_rule(const std::string& text) {
  if (const auto rule = find_by_name(text, kRules)) return *rule;
  throw std::invalid_argument("unknown outer optimizer '" + text +
                              "'; accepted: " + names_of(kRules));
}

OuterOptimizer::OuterOptimizer(const kernels::OuterStep& step, std::size_t numel,
                               const kernels::Stream& stream)
    : step_(step), stream_(stream) {
  if (has_momentum(step_.rule)) {
    momentum_ = kernels::Buffer<float>(numel, stream_);
    kernels::fill_zero(momentum_.data(), numel * sizeof(float), stream_);
    stream_.synchronize();
  }
}

std::string OuterOptimizer::describe() const {
  char text[96];
  if (has_momentum(step_.rule)) {
    std::snprintf(text, sizeof text, "%s (lr %g, momentum %g)", kernels::to_string(step_.rule),
                  static_cast<double>(step_.lr), static_cast<double>(step_.momentum));
  } else {
    std::snprintf(text, sizeof text, "%s (lr %g)", kernels::to_string(step_.rule),
                  static_cast<double>(step_.lr));
  }
  return text;
}

void OuterOptimizer::apply(const float* x, float alpha, bool x_is_delta, float* w, float* anchor,
                           std::size_t offset, std::size_t n, const kernels::Stream& stream) {
  float* u = has_momentum(step_.rule) ? momentum_.data() + offset : nullptr;
  kernels::outer_step(x, alpha, x_is_delta, w, anchor, u, n, step_, stream);
}

// The rule (u32), the steps taken (i64), the momentum's length (u64) and its floats. lr and the
// momentum factor are settings, not state: a resumed run takes its own (the trainer refuses a
// resume whose settings differ).
void OuterOptimizer::save_state(std::ostream& out) const {
  binary::put<std::uint32_t>(out, static_cast<std::uint32_t>(step_.rule));
  binary::put<std::int64_t>(out, steps_);
  const std::uint64_t n = momentum_.size();
  binary::put<std::uint64_t>(out, n);
  std::vector<float> host(n);
  kernels::copy_bytes(host.data(), momentum_.data(), n * sizeof(float), stream_);
  stream_.synchronize();
  out.write(reinterpret_cast<const char*>(host.data()),
            static_cast<std::streamsize>(n * sizeof(float)));
}

void OuterOptimizer::load_state(std::istream& in) {
  const auto rule = binary::get<std::uint32_t>(in, kLoadContext);
  const auto steps = binary::get<std::int64_t>(in, kLoadContext);
  const auto n = binary::get<std::uint64_t>(in, kLoadContext);
  if (steps < 0) throw std::runtime_error(std::string(kLoadContext) + ": corrupt step count");
  if (rule != static_cast<std::uint32_t>(step_.rule) || n != momentum_.size()) {
    throw std::runtime_error(
        std::string(kLoadContext) + ": saved under " +
        (rule < std::size(kRules) ? kernels::to_string(kRules[rule]) : "an unknown rule") +
        " with " + std::to_string(n) + " momentum floats; this run is " +
        kernels::to_string(step_.rule) + " with " + std::to_string(momentum_.size()));
  }
  std::vector<float> host(n);
  binary::read_bytes(in, host.data(), n * sizeof(float), kLoadContext);
  steps_ = steps;
  kernels::copy_bytes(momentum_.data(), host.data(), n * sizeof(float), stream_);
  stream_.synchronize();
}

}  // namespace gw
