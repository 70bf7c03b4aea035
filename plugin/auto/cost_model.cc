#include "plugin/auto/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace gw::autotune {

Link fit_link(double latency_s, const std::vector<ProbePoint>& points) {
  if (points.empty()) throw std::invalid_argument("fit_link: no probe points");
  Link link;
  link.latency_s = std::max(0.0, latency_s);
  const ProbePoint& last = points.back();
  double bytes = 0, seconds = 0;
  for (const ProbePoint& p : points) {
    bytes += p.bytes;
    seconds += std::max(0.0, p.seconds - link.latency_s);
  }
  if (last.bytes > 0) {
    link.seconds_per_byte = std::max(0.0, last.seconds - link.latency_s) / last.bytes;
  }
  if (link.seconds_per_byte > 0) {
    // What went through faster than the sustained rate over the whole sequence: the burst.
    link.burst_bytes = std::clamp(bytes - seconds / link.seconds_per_byte, 0.0, bytes - last.bytes);
  }
  const ProbePoint& first = points.front();
  if (first.bytes > 0 && link.burst_bytes > 0) {
    link.burst_seconds_per_byte =
        std::clamp((first.seconds - link.latency_s) / first.bytes, 0.0, link.seconds_per_byte);
  } else {
    link.burst_seconds_per_byte = link.seconds_per_byte;
  }
  return link;
}

bool probes_settled(double latency_s, const std::vector<ProbePoint>& points) {
  if (points.size() < 2) return false;
  const ProbePoint& a = points[points.size() - 2];
  const ProbePoint& b = points.back();
  const double ta = a.seconds - std::max(0.0, latency_s);
  const double tb = b.seconds - std::max(0.0, latency_s);
  if (ta < kSettledProbeSeconds || tb < kSettledProbeSeconds || a.bytes <= 0 || b.bytes <= 0) {
    return false;
  }
  const double ra = ta / a.bytes, rb = tb / b.bytes;
  return std::abs(ra - rb) <= kSettledTolerance * std::max(ra, rb);
}

namespace {

// The bytes of b, sent after `after` bytes of the same step, that go within the burst.
double in_burst(const Link& link, double b, double after) {
  return std::clamp(link.burst_bytes - after, 0.0, b);
}

// T(b, after): their time on the link.
double transfer(const Link& link, double b, double after) {
  const double i = in_burst(link, b, after);
  return i * link.burst_seconds_per_byte + (b - i) * link.seconds_per_byte;
}

}  // namespace

Prediction predict(const Link& link, const StepInputs& step, const Candidate& c) {
  Prediction p;
  // Per exchange: every step, or one of local SGD's averagings.
  const double every = std::max(1.0, c.period);
  const bool local = every > 1;
  const double b = std::max(0.0, c.bytes_per_step) * every;
  const double last = local ? b : std::clamp(c.last_bytes, 0.0, b);
  const double comm = c.collectives_per_step * every * link.latency_s + transfer(link, b, 0);
  double work = 0, tail = 0;
  if (c.exchange_measured()) {
    const double saved = link.seconds_per_byte - link.burst_seconds_per_byte;
    work = std::max(0.0, c.exchange_s * every - in_burst(link, b, 0) * saved);
    tail = local ? work
                 : std::max(0.0, std::max(0.0, c.last_exchange_s) -
                                     in_burst(link, last, b - last) * saved);
  } else {
    work = c.codec_s * every + comm;
    tail = local ? work
                 : c.last_codec_s + c.last_collectives * link.latency_s +
                       transfer(link, last, b - last);
  }
  // Local SGD averages after the update: nothing of backward is left to hide it.
  const double overlap = step.backward_on_host || local ? 0.0 : step.overlap_s;
  const double exposed = std::max({0.0, tail, work - overlap});
  p.comm_s = comm / every;
  p.work_s = work / every;
  p.tail_s = tail / every;
  p.exposed_s = exposed / every;
  const double stepped = step.compute_s + step.update_s + p.exposed_s;
  const double refill = b * link.seconds_per_byte / every;
  p.link_bound = refill > stepped;
  p.step_s = std::max(stepped, refill);
  return p;
}

bool may_choose(const Candidate& c, double max_accuracy_drop_points) {
  if (!c.excluded.empty()) return false;
  if (c.accuracy_known) return c.accuracy_drop_points <= max_accuracy_drop_points;
  return c.named;
}

Choice choose(const Link& link, const StepInputs& step, const std::vector<Candidate>& candidates,
              double max_accuracy_drop_points) {
  Choice out;
  out.predictions.reserve(candidates.size());
  out.verdicts.assign(candidates.size(), "");
  bool found = false;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    out.predictions.push_back(predict(link, step, c));
    char why[160];
    if (!c.excluded.empty()) {
      out.verdicts[i] = c.excluded;
      continue;
    }
    if (c.accuracy_known && c.accuracy_drop_points > max_accuracy_drop_points) {
      std::snprintf(why, sizeof(why), "accuracy drop %.2f points > the bound %.2f",
                    c.accuracy_drop_points, max_accuracy_drop_points);
      out.verdicts[i] = why;
      continue;
    }
    if (!c.accuracy_known && !c.named) {
      out.verdicts[i] =
          "no accuracy run to bound its cost (name it in GRADWIRE_AUTO_CANDIDATES "
          "to allow it)";
      continue;
    }
    if (!found) {
      out.chosen = i;
      found = true;
    } else if (out.predictions[i].step_s < (1.0 - kMinGain) * out.predictions[out.chosen].step_s) {
      out.verdicts[out.chosen] = "slower";
      out.chosen = i;
    } else {
      out.verdicts[i] = "slower";
      continue;
    }
    out.verdicts[i] = "chosen";
  }
  if (!found) {
    throw std::invalid_argument(
        "GRADWIRE_COMPRESSOR=auto: no candidate is eligible (each cannot run here or exceeds the "
        "accuracy bound GRADWIRE_AUTO_MAX_ACCURACY_DROP)");
  }
  return out;
}

}  // namespace gw::autotune
