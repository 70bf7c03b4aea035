// GRADWIRE_COMPRESSOR=auto's cost model: the step time each candidate compressor would take, from
// the measured link, the measured compute and each candidate's bytes, collectives and codec time
// per step, and the choice among them. Pure: no communicator, no clock; plugin/auto/auto_strategy.h
// measures the inputs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gw::autotune {

// Note [The auto cost model]
// A synchronous step is the program's compute (forward and backward), the inner optimizer's
// update, and whatever of the exchange backward did not hide. For candidate c, with
//   k_c   collectives per step (every bucket's: counts, data, factors),
//   b_c   bytes this rank sends per step through the bottleneck (the links between nodes where
//         there are several nodes of several ranks, else every byte it sends), from c's plans,
//   e_c   c's encode and decode work per step, timed on this run's first gradients,
// and the link's
//   alpha the time of one small collective,
//   beta  seconds per byte sustained,
//   B     the burst: bytes that pass at a faster beta0 before the sustained rate sets in (a token
//         bucket: cloud instances' bandwidth limits and tc's tbf shape links so; B = 0 elsewhere),
// the link's share of a step is
//   comm_c = k_c alpha + T(b_c, 0),  T(b, a) = i beta0 + (b - i) beta,  i = clamp(B - a, 0, b)
// (T: b bytes sent after a bytes of the same step have used the burst first). The exchange's
// work x_c and that of the bucket released last, t_c (whose bytes b'_c, collectives k'_c and
// codec e'_c go after the others'), are
//   modelled: x_c = e_c + comm_c,  t_c = e'_c + k'_c alpha + T(b'_c, b_c - b'_c)
//   measured: every bucket exchanged for real at the decision, back to back after the probes
//     have emptied any token bucket, so its bytes went at beta throughout: x_c = X_c - i (beta -
//     beta0), t_c = X'_c - i' (beta - beta0), with X_c, X'_c the timed exchanges and i, i' the
//     burst shares of T above.
// Local SGD at period K (local_sgd) exchanges every parameter after every K-th update, when
// backward is long over: its exchange is the dense one (b, k, X of the whole exchange, per
// averaging), all of it exposed, once every K steps:
//   step_c = max(compute + update + x_c / K,  b_c beta / K)
// with x_c from the formulas above for b bytes sent at once (the burst applies once per averaging).
// A real exchange is run where its bytes take at most kTrialExchangeSeconds at beta
// (plugin/auto/auto_strategy.h): it holds what the model leaves out (the receiving side's checks,
// merges and decode, and ranks that wait on one another). Then
//   step_c = max(compute + update + max(0, t_c, x_c - overlap),  b_c beta)
// where overlap is the backward time left after the first bucket is released (the buckets'
// encode and collectives run on the engine thread during it; Note [Buckets in the step]), and the
// last bucket's exchange starts when backward ends, so nothing hides it. Where backward runs on
// the host's cores, overlap is taken as 0: backward keeps those cores busy, so the engine
// thread's encode, checks and decode take turns with it rather than run beside it. The outer max
// is the bucket's refill: over many steps a link carries at most one step's time at its sustained
// rate, so a candidate whose bytes fit the burst once does not get it every step unless its step
// is long enough to refill it.
// The choice is the fastest eligible candidate, in the order given (dense first), a later one
// taking the place of an earlier only when it is faster by more than kMinGain: a tie, or a gain
// within the measurements' noise, keeps the simpler strategy. Eligible: it can run here, and its
// expected accuracy cost (the drop in final test accuracy against dense that gradwire's own
// accuracy runs measured) is at most the bound; one without a measured cost only when the user
// named it in GRADWIRE_AUTO_CANDIDATES.

// How the link behaved under the probes (fit_link).
struct Link {
  double latency_s = 0;               // alpha
  double seconds_per_byte = 0;        // beta, sustained
  double burst_bytes = 0;             // B
  double burst_seconds_per_byte = 0;  // beta0, within the burst (at most beta)
};

// One timed probe: a collective that sent `bytes` from this rank and took `seconds`.
struct ProbePoint {
  double bytes = 0;
  double seconds = 0;
};

// The probes run back to back after an idle spell (kRefillSeconds, plugin/auto/auto_strategy.h), each
// twice the one before, the last one long enough to run at the sustained rate throughout: a
// token bucket, full at the start, lets the first ones through at its burst rate and is empty
// before the last. So: alpha as given; beta the last probe's (time - alpha) / bytes; B what the
// whole sequence sent beyond what beta accounts for in its time (the bucket's level at the
// start), at most all but the last probe; beta0 the first probe's (time - alpha) / bytes, at
// most beta (beta where there is no burst). `points` in the order they ran, at least one.
Link fit_link(double latency_s, const std::vector<ProbePoint>& points);

// The probes may stop before kProbeSeconds once the link has settled: the last two each took at
// least kSettledProbeSeconds beyond alpha and ran at the same time per byte within
// kSettledTolerance. A token bucket's burst is then spent (a probe that still drew on it would
// run faster than the next), so beta is known and doubling again would only confirm it: on a
// fast link it saves the largest, longest probes (docs/AUTO.md). Below the floor, latency's
// noise or a burst still in the bucket can make two rates agree by chance.
inline constexpr double kSettledProbeSeconds = 0.005;
inline constexpr double kSettledTolerance = 0.05;
bool probes_settled(double latency_s, const std::vector<ProbePoint>& points);

// What the step spends besides the exchange (measured).
struct StepInputs {
  double compute_s = 0;  // forward and backward, from one step's end to its gradients' readiness
  double update_s = 0;   // the inner optimizer's update
  double overlap_s = 0;  // backward after the first bucket's release
  // Backward runs on the host's cores (the CPU trainer): it leaves none free for the exchange.
  bool backward_on_host = false;
};

struct Candidate {
  std::string name;  // "none", "fp16", "dgc", "topk", "powersgd", "local_sgd"
  // Steps per exchange: 1, or local SGD's period K, whose one exchange (the parameters, after an
  // update) every K steps the per-step figures below spread over K steps.
  double period = 1;
  double bytes_per_step = 0;
  double collectives_per_step = 0;
  double codec_s = 0;
  // The bucket released last, at the end of backward: nothing is left to hide its exchange.
  double last_bytes = 0;
  double last_collectives = 0;
  double last_codec_s = 0;
  // Every bucket exchanged for real at the decision, timed (exchange_s the whole step's,
  // last_exchange_s the last bucket's); negative where it was not run.
  double exchange_s = -1;
  double last_exchange_s = -1;
  // Final test accuracy lost against dense, in points (negative: gained), from gradwire's
  // committed accuracy runs; unknown where none was run.
  bool accuracy_known = false;
  double accuracy_drop_points = 0;
  bool named = false;    // listed in GRADWIRE_AUTO_CANDIDATES
  std::string excluded;  // non-empty: why it cannot run here (then it is never chosen)

  bool exchange_measured() const { return exchange_s >= 0; }
};

struct Prediction {
  double comm_s = 0;        // comm_c: the link's share, from the fit
  double work_s = 0;        // x_c: the whole exchange (codec and collectives)
  double tail_s = 0;        // t_c: the last bucket's exchange
  double exposed_s = 0;     // max(0, t_c, x_c - overlap)
  double step_s = 0;        // step_c
  bool link_bound = false;  // the refill term b_c beta decided step_c
};

Prediction predict(const Link& link, const StepInputs& step, const Candidate& candidate);

// A later candidate must be faster than the one chosen so far by more than this fraction.
inline constexpr double kMinGain = 0.03;

struct Choice {
  std::size_t chosen = 0;               // index into the candidates
  std::vector<Prediction> predictions;  // per candidate
  std::vector<std::string> verdicts;    // per candidate: "chosen", "slower", or why not eligible
};

// Whether it may be chosen at all: it can run here, and its accuracy cost is known and within
// the bound or it was named (Note [The auto cost model]).
bool may_choose(const Candidate& candidate, double max_accuracy_drop_points);

// Throws std::invalid_argument when no candidate is eligible.
Choice choose(const Link& link, const StepInputs& step, const std::vector<Candidate>& candidates,
              double max_accuracy_drop_points);

}  // namespace gw::autotune
