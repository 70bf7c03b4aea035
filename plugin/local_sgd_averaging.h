// LocalSgdAveraging: local SGD's side of DistributedOptimizer's step (GRADWIRE_SYNC): the policy's
// schedule, the averaging of the parameters bucket by bucket (on the engine, with the fp16
// anchor) and of the optimizer state, the training loss adaptive_local_sgd adapts to, and what
// happened over the run (SyncStats). The optimizer decides when; this does the averaging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "compressors/compressor.h"
#include "fusion/bucket_plan.h"
#include "fusion/fragments.h"
#include "kernels/stream.h"
#include "plugin/comm/communicator.h"
#include "plugin/exchange/bucket_exchange.h"
#include "plugin/logger.h"
#include "plugin/optimizer.h"
#include "plugin/outer_optimizer.h"
#include "plugin/parameter_set.h"
#include "plugin/sync_settings.h"
#include "sync_policies/sync_policy.h"

namespace gw {

// One parameter averaging of local SGD.
struct AveragingPoint {
  std::int64_t step = 0;         // after this step's update (0-based)
  std::int64_t local_steps = 0;  // local steps since the previous averaging (or the switch)
  std::int64_t k = 0;            // the period in force when this point was reached
  std::int64_t next_k = 0;       // the period from here on (adaptive_local_sgd changes it)
  bool has_loss = false;         // adaptive_local_sgd: loss is the mean training loss over ranks
  double loss = 0.0;             // and over the steps since the previous scheduled point
  bool requested = false;        // synchronize_parameters(), outside the schedule
  std::int64_t fragment = -1;    // streaming diloco: the fragment whose outer step this was
};

// What the sync policy did over the run so far (the same on every rank).
struct SyncStats {
  std::string policy;
  // How parameters travel at a point: "fp32 parameters", or "<compressor> deltas"
  // (Note [Parameter averaging wire]); diloco's outer optimizer ("nesterov (lr 0.7, momentum
  // 0.9)"), empty under the other policies.
  std::string parameter_wire;
  std::string outer_optimizer;
  std::int64_t gradient_exchanges = 0;   // steps whose gradients were exchanged
  std::int64_t parameter_exchanges = 0;  // averagings of the parameters (= points.size())
  std::int64_t state_exchanges = 0;      // averagings of the optimizer state
  std::vector<AveragingPoint> points;
};

// Note [Optimizer state under local SGD]
// Local SGD averages parameters; the inner optimizer's state (momentum, Adam moments) stays each
// rank's own by default, as in Lin et al.'s local SGD and PyTorch's PostLocalSGDOptimizer. With
// GRADWIRE_LOCAL_SGD_AVERAGE_STATE=1 every array of Optimizer::state_buffers() is averaged (fp32)
// at every averaging point as well, which doubles (SGD momentum) or triples (Adam) the bytes of a
// point. With plain SGD, or any optimizer linear in its gradients and state, k = 1 equals
// synchronous SGD either way.
//
// Note [Parameter averaging wire]
// Averaging points go through BucketExchange, as gradients do, with the bytes charged to the
// parameter kind. Under GRADWIRE_COMPRESSOR=none the parameters themselves are summed in fp32 and
// scaled by 1/n. Under fp16 each rank sends w - anchor, its change since the previous averaging
// point (the anchor, identical on every rank), which fp16 represents far better than w itself:
// rounding falls on the small delta, not on the weight. Every rank then sets w = anchor +
// average(delta) and the anchor to that value. Either way every rank computes the same bits from
// the same reduced buffer, so after a point all ranks hold identical parameters.
//
// Note [Streaming DiLoCo]
// GRADWIRE_DILOCO_FRAGMENTS=F (Douillard et al., "Streaming DiLoCo with overlapping
// communication", 2025) cuts the parameters into F runs of whole tensors of about equal size
// (fusion/fragments.h); each takes diloco's outer step every H steps on its own, fragment f after
// steps H - 1 + floor(f H / F) + j H, so a point moves about 1/F of the model and the points are
// spread over the period. With GRADWIRE_DILOCO_DELAY=tau the fragment's pseudo-gradient (taken
// after step t) travels on an engine thread of its own while the next tau inner steps run; after
// step t + tau the outer step is applied to it as diloco's (anchor and outer momentum per element),
// and the rank's parameters become alpha w + (1 - alpha) w_outer, w the rank's own (which went on
// for tau steps), w_outer the outer step's result, and the anchor w_outer; alpha is
// GRADWIRE_DILOCO_MIXING. F = 1, tau = 0, alpha = 0 is plain diloco bit for bit. While an exchange
// is in flight, every collective of the rank's CountingCommunicator on another thread (the
// program's own, the trainer's per-step divergence vote, AMP's vote) first waits for it
// (CountingCommunicator::set_guard): MPI is initialised MPI_THREAD_SERIALIZED, so the exchange
// overlaps compute, never another collective. A checkpoint taken with an exchange in flight holds
// its result, so the resumed run applies it at the same step. synchronize_parameters() applies
// what is in flight and then takes every fragment's outer step at once without mixing, so that
// all ranks hold the same parameters (the trainer's evaluation). The optimizer state is not cut
// into fragments: GRADWIRE_LOCAL_SGD_AVERAGE_STATE=1 is refused.

class LocalSgdAveraging {
 public:
  // wire: how the parameters travel (GRADWIRE_COMPRESSOR as configured, not AMP's gradient
  // wire): kNone sends them in fp32, any other compressor their change since the anchor
  // (local_sgd takes none or fp16; diloco any but dgc). Keeps references to comm, inner and
  // params, which must outlive it. `stream`: where the averaging runs, on the parameters' device.
  LocalSgdAveraging(const SyncSettings& settings, std::unique_ptr<compressors::Compressor> wire,
                    Communicator& comm, Optimizer& inner, const ParameterSet& params,
                    const fusion::BucketPlan& plan, const kernels::Stream& stream);
  ~LocalSgdAveraging();
  LocalSgdAveraging(const LocalSgdAveraging&) = delete;
  LocalSgdAveraging& operator=(const LocalSgdAveraging&) = delete;

  const sync_policies::SyncPolicy& policy() const { return policy_; }
  const SyncStats& stats() const { return stats_; }
  bool exchanges_gradients(std::int64_t step) const { return policy_.exchanges_gradients(step); }
  bool averages_after(std::int64_t step) const { return policy_.averages_after(step); }
  void count_gradient_exchange() { ++stats_.gradient_exchanges; }
  // Local steps since the last averaging (streaming: the most of any fragment's since its last
  // exchange began, plus the exchanges in flight): synchronize_parameters has nothing to do at 0.
  std::int64_t local_steps_since_average() const;

  // Streaming diloco (Note [Streaming DiLoCo]).
  bool streaming() const { return !streaming_.fragments.empty(); }
  // Some fragment's outer step is still to come after an exchange that began.
  bool in_flight() const;
  // The global model into the parameters, the rank's own kept (false: not streaming, or no
  // anchor yet); restore_own() puts them back.
  bool use_global();
  void restore_own();
  // After step `step`'s update: the fragments whose delay has run out get their outer step, then
  // those due start their exchange (at delay 0 they get their outer step at once).
  void stream_after(std::int64_t step, const Logger& log);
  // synchronize_parameters() after step `step`: what is in flight applied without mixing, then
  // every fragment with local steps exchanged and applied without mixing.
  void stream_all(std::int64_t step, const Logger& log);
  // Blocks until the exchanges in flight have run (their outer steps wait for their step);
  // throws the engine's failure. Returns at once on the exchange's own thread.
  void wait_in_flight() const;
  std::size_t fragment_count() const { return streaming_.fragments.size(); }
  // Where the fragments' exchanges run (DistributedOptimizer's fragment engine): launch(f) queues
  // run_fragment_job(f) there, wait() blocks until every queued one has run and throws a job's
  // failure. Until they are set, an exchange runs at once on the caller's thread.
  void set_fragment_runner(std::function<void(std::size_t)> launch, std::function<void()> wait);
  void run_fragment_job(std::size_t f);  // exchange_fragment, marked as the exchange's thread

  // This rank's training loss for `step`; a period's loss counts from the switch to local steps.
  void add_loss(std::int64_t step, double loss);
  // Throws std::logic_error when the policy adapts to the loss and the program did not report
  // one for `step`.
  void check_loss_reported(std::int64_t step, bool reported) const;

  // Before the inner optimizer's update. A local step after synchronous ones (or the start) takes
  // the fp16 anchor from the parameters, which are then the same on every rank; a synchronous
  // step moves them away from it.
  void before_update(bool local_step);

  // Before the first bucket of an averaging point: the wire's step is the point's number (under
  // diloco the outer steps taken, which the checkpoint keeps).
  void begin_point();
  // The engine's job for bucket b of an averaging point (Note [Parameter averaging wire]; under
  // diloco the outer step follows, Note [DiLoCo]).
  void average_bucket(std::size_t b);
  // Once every bucket is averaged: the optimizer state (GRADWIRE_LOCAL_SGD_AVERAGE_STATE), then
  // the schedule (`scheduled`: a point of the policy after step `step`'s update; otherwise one
  // that synchronize_parameters() requested after it) and the record of the point.
  void finish_point(std::int64_t step, bool scheduled, const Logger& log);

  // The policy's state, this rank's loss since the last scheduled point, the local steps since
  // the last averaging and the fp16 anchor (Note [Optimizer state stream]). load_state throws
  // std::runtime_error on a stream that does not fit, leaving everything as it was.
  void save_state(std::ostream& out) const;
  void load_state(std::istream& in);

 private:
  void average_state();
  void snapshot(std::size_t b);  // flat_ for bucket b: the parameters, or their deltas
  void start_streaming(const SyncSettings::Streaming& streaming);
  void start_fragment(std::size_t f, std::int64_t step);
  void exchange_fragment(std::size_t f);
  void finish_fragment(std::size_t f, float mixing, bool requested, const Logger& log);
  void record_point(AveragingPoint point, const Logger& log);
  void save_streaming(std::ostream& out) const;
  struct Fragment;
  std::vector<Fragment> read_streaming(std::istream& in) const;

  Communicator& comm_;
  Optimizer& inner_;
  const ParameterSet& params_;
  const fusion::BucketPlan& plan_;
  sync_policies::SyncPolicy policy_;
  bool average_state_ = false;
  bool deltas_ = false;  // parameters travel as deltas from anchor_ (any wire but none)
  std::unique_ptr<compressors::Compressor> wire_;
  std::unique_ptr<OuterOptimizer> outer_;  // diloco
  // One view and one exchange per gradient bucket, over flat_ (the parameters, or their deltas).
  // Every flat array lives where the parameters do (ParameterSet::stream), and the averaging's
  // primitives and wire run on `stream_` (the optimizer's communication stream).
  kernels::Stream stream_ = kernels::Stream::host();
  kernels::Buffer<float> flat_;
  std::vector<compressors::BucketView> buckets_;
  std::vector<BucketExchange> exchanges_;
  kernels::Buffer<float> anchor_;
  bool anchor_valid_ = false;
  // The optimizer state's averaging (Note [Optimizer state under local SGD]): one bucket over a
  // flat copy of every state buffer.
  struct StateAveraging {
    BucketExchange exchange;
    compressors::BucketView bucket;
    kernels::Buffer<float> flat;
  } state_;
  std::int64_t local_steps_since_average_ = 0;
  // Streaming diloco: buckets_ and exchanges_ are over streaming_.plan.buckets.
  struct Fragment {
    std::vector<std::size_t> buckets;  // into buckets_ and exchanges_
    std::int64_t outer_steps = 0;
    std::int64_t local_steps = 0;  // since its last exchange began
    bool in_flight = false;        // exchanged (or exchanging), its outer step not yet taken
    std::int64_t started_after = -1;
    std::int64_t started_local_steps = 0;  // its local steps when the exchange began
    std::vector<float> alphas;      // per tensor of its buckets in order: the mean is flat_ * alpha
    std::vector<float> saved_flat;  // load_state: the result in flight, until it is in flat_
  };
  struct Streaming {
    SyncSettings::Streaming settings;
    fusion::FragmentPlan plan;
    std::vector<Fragment> fragments;
    kernels::Buffer<float> own;  // the rank's parameters while the outer step overwrites them
    std::function<void(std::size_t)> launch;  // set_fragment_runner's
    std::function<void()> wait;
    bool guarded = false;  // set_guard on comm_ (delay > 0)
  } streaming_;
  struct LossSince {  // this rank's losses since the last scheduled point
    double sum = 0.0;
    std::int64_t count = 0;
  } loss_;
  SyncStats stats_;
};

}  // namespace gw
