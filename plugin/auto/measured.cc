#include "plugin/auto/measured.h"

#include <stdexcept>
#include <string>

#include "plugin/auto/link_probe.h"

namespace gw {
namespace {

// The per-candidate inputs, in the order pack() lays them out.
std::vector<const std::vector<double>*> per_candidate(const AutoMeasured& m) {
  return {&m.codec_s,    &m.bytes_per_step, &m.last_codec_s,
          &m.last_bytes, &m.exchange_s,     &m.last_exchange_s};
}

constexpr std::size_t kStepInputs = 3;  // compute, overlap, backward on the host

}  // namespace

AutoMeasured::AutoMeasured(std::size_t candidates)
    : codec_s(candidates, 0.0),
      bytes_per_step(candidates, 0.0),
      last_codec_s(candidates, 0.0),
      last_bytes(candidates, 0.0),
      exchange_s(candidates, -1.0),
      last_exchange_s(candidates, -1.0) {}

std::vector<double> pack(const AutoMeasured& m, bool backward_on_host) {
  const std::size_t count = m.codec_s.size();
  std::vector<double> out = {m.step.compute_s, m.step.overlap_s, backward_on_host ? 1.0 : 0.0};
  for (const std::vector<double>* v : per_candidate(m)) {
    if (v->size() != count) {
      throw std::logic_error("auto: a measured input has " + std::to_string(v->size()) +
                             " values for " + std::to_string(count) + " candidates");
    }
    out.insert(out.end(), v->begin(), v->end());
  }
  return out;
}

void unpack(const std::vector<double>& packed, autotune::StepInputs& step,
            std::vector<autotune::Candidate>& candidates) {
  const std::size_t count = candidates.size();
  if (packed.size() != kStepInputs + 6 * count) {
    throw std::logic_error("auto: " + std::to_string(packed.size()) + " combined inputs for " +
                           std::to_string(count) + " candidates");
  }
  step.compute_s = packed[0];
  step.overlap_s = packed[1];
  step.backward_on_host = packed[2] > 0;  // on any rank: the slowest decides
  for (std::size_t i = 0; i < count; ++i) {
    autotune::Candidate& c = candidates[i];
    const auto at = [&](std::size_t v) { return packed[kStepInputs + v * count + i]; };
    c.codec_s = at(0);
    c.bytes_per_step = at(1);
    c.last_codec_s = at(2);
    c.last_bytes = at(3);
    c.exchange_s = at(4);
    c.last_exchange_s = at(5);
  }
}

void combine_over_ranks(Communicator& comm, const AutoMeasured& m, bool backward_on_host,
                        autotune::StepInputs& step, std::vector<autotune::Candidate>& candidates,
                        const kernels::Stream& stream) {
  std::vector<double> inputs = pack(m, backward_on_host);
  if (comm.size() > 1) max_over_ranks(comm, inputs, stream);
  unpack(inputs, step, candidates);
}

void spread_over_period(std::vector<autotune::Candidate>& candidates) {
  for (autotune::Candidate& c : candidates) {
    if (c.period <= 1) continue;
    for (double* x : {&c.bytes_per_step, &c.collectives_per_step, &c.codec_s, &c.last_bytes,
                      &c.last_collectives, &c.last_codec_s})
      *x /= c.period;
    if (c.exchange_measured()) {
      c.exchange_s /= c.period;
      c.last_exchange_s /= c.period;
    }
  }
}

}  // namespace gw
