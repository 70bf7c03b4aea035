#include "reference_trainer/app/checkpoint_figures.h"

#include <climits>
#include <cstdint>
#include <utility>

namespace gw::trainer {
namespace {

// Record sizes, for the counts' checks.
constexpr std::size_t kEpochRecord = 7 * 8;
constexpr std::size_t kEvalRecord = 6 * 8;
constexpr std::size_t kPointRecord = 4 * 8 + 1 + 8 + 1 + 8;
constexpr std::size_t kTimedRecord = 2 * 8;

}  // namespace

std::string report_payload(const RunFigures& f) {
  CheckpointWriter w;
  w.pod(f.epoch_loss_sum);
  w.pod(f.samples);
  w.traffic(f.traffic);
  w.traffic(f.epoch_traffic_start);
  w.pod<std::uint64_t>(f.epochs.size());
  for (const EpochResult& e : f.epochs) {
    w.pod<std::int64_t>(e.epoch);
    w.pod(e.loss);
    w.pod(e.test_accuracy);
    w.pod(e.test_loss);
    w.pod<std::uint64_t>(e.samples);
    w.pod<std::uint64_t>(e.gradient_bytes_sent);
    w.pod<std::uint64_t>(e.parameter_bytes_sent);
  }
  w.pod<std::uint64_t>(f.history.size());
  for (const EvalPoint& p : f.history) {
    w.pod<std::int64_t>(p.step);
    w.pod(p.epoch);
    w.pod(p.test_accuracy);
    w.pod(p.test_loss);
    w.pod<std::uint64_t>(p.gradient_bytes_sent);
    w.pod<std::uint64_t>(p.parameter_bytes_sent);
  }
  w.name(f.sync.policy);
  w.pod<std::int64_t>(f.sync.gradient_exchanges);
  w.pod<std::int64_t>(f.sync.parameter_exchanges);
  w.pod<std::int64_t>(f.sync.state_exchanges);
  w.pod<std::uint64_t>(f.sync.points.size());
  for (const AveragingPoint& p : f.sync.points) {
    w.pod<std::int64_t>(p.step);
    w.pod<std::int64_t>(p.local_steps);
    w.pod<std::int64_t>(p.k);
    w.pod<std::int64_t>(p.next_k);
    w.flag(p.has_loss);
    w.pod(p.loss);
    w.flag(p.requested);
    w.pod<std::int64_t>(p.fragment);
  }
  const CompressionStats& c = f.compression;
  w.name(c.compressor);
  w.pod<std::int64_t>(c.warmup_end_step);
  w.pod<std::int64_t>(c.steps_after_warmup);
  w.pod<std::uint64_t>(c.gradient_bytes_after_warmup);
  w.pod<std::uint64_t>(c.dense_bytes_per_step);
  w.pod<std::int64_t>(c.sparse_exchanges);
  w.pod<std::int64_t>(c.dense_fallbacks);
  return std::move(w.bytes());
}

std::string time_payload(const RunFigures& f) {
  CheckpointWriter w;
  w.pod(f.wall_seconds);
  w.pod(f.train_seconds);
  w.pod(f.epoch_train_seconds);
  w.pod(f.epoch_wall_seconds);
  w.pod<std::uint64_t>(f.epochs.size());
  for (const EpochResult& e : f.epochs) {
    w.pod(e.wall_seconds);
    w.pod(e.train_seconds);
  }
  w.pod<std::uint64_t>(f.history.size());
  for (const EvalPoint& p : f.history) {
    w.pod(p.train_seconds);
    w.pod(p.wall_seconds);
  }
  return std::move(w.bytes());
}

void read_report(CheckpointReader& r, RunFigures& f) {
  f.epoch_loss_sum = r.pod<double>("the epoch's loss sum");
  f.samples = r.pod<std::uint64_t>("the samples");
  f.traffic = r.traffic("the traffic counters");
  f.epoch_traffic_start = r.traffic("the epoch's traffic counters");
  f.epochs.resize(r.count("the epoch count", kEpochRecord));
  for (EpochResult& e : f.epochs) {
    const auto epoch = r.pod<std::int64_t>("an epoch number");
    if (epoch < 1 || epoch > INT_MAX) r.bad("epoch number " + std::to_string(epoch));
    e.epoch = static_cast<int>(epoch);
    e.loss = r.pod<double>("an epoch's loss");
    e.test_accuracy = r.pod<double>("an epoch's test accuracy");
    e.test_loss = r.pod<double>("an epoch's test loss");
    e.samples = r.pod<std::uint64_t>("an epoch's samples");
    e.gradient_bytes_sent = r.pod<std::uint64_t>("an epoch's gradient bytes");
    e.parameter_bytes_sent = r.pod<std::uint64_t>("an epoch's parameter bytes");
  }
  f.history.resize(r.count("the evaluation count", kEvalRecord));
  for (EvalPoint& p : f.history) {
    p.step = r.pod<std::int64_t>("an evaluation's step");
    p.epoch = r.pod<double>("an evaluation's epoch");
    p.test_accuracy = r.pod<double>("an evaluation's test accuracy");
    p.test_loss = r.pod<double>("an evaluation's test loss");
    p.gradient_bytes_sent = r.pod<std::uint64_t>("an evaluation's gradient bytes");
    p.parameter_bytes_sent = r.pod<std::uint64_t>("an evaluation's parameter bytes");
  }
  f.sync.policy = r.name("the sync policy's name");
  f.sync.gradient_exchanges = r.pod<std::int64_t>("the gradient exchanges");
  f.sync.parameter_exchanges = r.pod<std::int64_t>("the parameter exchanges");
  f.sync.state_exchanges = r.pod<std::int64_t>("the state exchanges");
  f.sync.points.resize(r.count("the averaging point count", kPointRecord));
  for (AveragingPoint& p : f.sync.points) {
    p.step = r.pod<std::int64_t>("an averaging point's step");
    p.local_steps = r.pod<std::int64_t>("an averaging point's local steps");
    p.k = r.pod<std::int64_t>("an averaging point's k");
    p.next_k = r.pod<std::int64_t>("an averaging point's next k");
    p.has_loss = r.flag("an averaging point's loss flag");
    p.loss = r.pod<double>("an averaging point's loss");
    p.requested = r.flag("an averaging point's requested flag");
    p.fragment = r.pod<std::int64_t>("an averaging point's fragment");
  }
  CompressionStats& c = f.compression;
  c.compressor = r.name("the compressor's name");
  c.warmup_end_step = r.pod<std::int64_t>("the warm-up's end");
  c.steps_after_warmup = r.pod<std::int64_t>("the steps after the warm-up");
  c.gradient_bytes_after_warmup = r.pod<std::uint64_t>("the gradient bytes after the warm-up");
  c.dense_bytes_per_step = r.pod<std::uint64_t>("the dense bytes per step");
  c.sparse_exchanges = r.pod<std::int64_t>("the sparse exchanges");
  c.dense_fallbacks = r.pod<std::int64_t>("the dense fallbacks");
  r.expect_end();
}

void read_time(CheckpointReader& r, RunFigures& f) {
  f.wall_seconds = r.pod<double>("the wall seconds");
  f.train_seconds = r.pod<double>("the training seconds");
  f.epoch_train_seconds = r.pod<double>("the epoch's training seconds");
  f.epoch_wall_seconds = r.pod<double>("the epoch's wall seconds");
  const auto epochs = r.count("the timed epoch count", kTimedRecord);
  if (epochs != f.epochs.size()) {
    r.bad("times for " + std::to_string(epochs) + " epochs, section RPRT has " +
          std::to_string(f.epochs.size()));
  }
  for (EpochResult& e : f.epochs) {
    e.wall_seconds = r.pod<double>("an epoch's wall seconds");
    e.train_seconds = r.pod<double>("an epoch's training seconds");
  }
  const auto points = r.count("the timed evaluation count", kTimedRecord);
  if (points != f.history.size()) {
    r.bad("times for " + std::to_string(points) + " evaluations, section RPRT has " +
          std::to_string(f.history.size()));
  }
  for (EvalPoint& p : f.history) {
    p.train_seconds = r.pod<double>("an evaluation's training seconds");
    p.wall_seconds = r.pod<double>("an evaluation's wall seconds");
  }
  r.expect_end();
}

}  // namespace gw::trainer
