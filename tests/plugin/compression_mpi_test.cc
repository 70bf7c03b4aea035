// GRADWIRE_COMPRESSOR through DistributedOptimizer under a real mpirun: DGC against dense momentum
// SGD, fp16's bytes, malformed peer payloads, checkpoint and resume, configuration errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "compressors/sparse_message.h"
#include "compressors/sparsity_schedule.h"
#include "plugin_test_util.h"
#include "reference_trainer/optim/adam.h"
#include "reference_trainer/optim/sgd.h"

namespace gw {
namespace {

namespace keys = config::keys;

std::unique_ptr<trainer::Sgd> momentum_sgd(bool nesterov = false) {
  trainer::Sgd::Options o;
  o.lr = 0.05;
  o.momentum = 0.9;
  o.nesterov = nesterov;
  return std::make_unique<trainer::Sgd>(o);
}

using Model = testing::TwoTensorModel;

using testing::world;

// testing::settings with every tensor above 1000 elements compressible, k without its floor and
// the pairs wire, which the counts below are written for (a test's own values win).
DistributedOptimizerOptions settings(testing::Settings values) {
  values.insert(
      values.begin(),
      {{keys::kDgcMinNumel, "1000"}, {keys::kDgcMinK, "0"}, {keys::kSparseWire, "pairs"}});
  return testing::settings(values);
}

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return worst / scale;
}

TEST(Compression, DgcAtSparsityZeroWithoutMaskingEqualsDenseMomentumSgd) {
  const auto comm = world();
  const int rank = comm->rank();
  // The split keeps everything at sparsity 0 (ceil(k / n) covers each range), so it too is dense.
  for (const char* algo : {"allgather", "padded", "split"}) {
    for (bool nesterov : {false, true}) {
      for (bool fallback : {true, false}) {  // the dense fallback, then the sparse path forced
        Model dense_model, dgc_model;
        DistributedOptimizer dense(comm, momentum_sgd(nesterov), dense_model.specs(), settings({}));
        auto options = settings({{keys::kCompressor, "dgc"},
                                 {keys::kDgcSparsity, "0"},
                                 {keys::kDgcMomentumMasking, "0"},
                                 {keys::kSparseAlgo, algo}});
        options.sparse_dense_fallback = fallback;
        DistributedOptimizer dgc(comm, momentum_sgd(nesterov), dgc_model.specs(), options);
        ASSERT_TRUE(static_cast<trainer::Sgd&>(dgc.inner()).momentum_released());
        for (int step = 0; step < 50; ++step) {
          dense_model.gradients(dense, rank, step);
          dense.step();
          dgc_model.gradients(dgc, rank, step);
          dgc.step();
        }
        EXPECT_LT(relative_difference(dgc_model.big, dense_model.big), 1e-5)
            << algo << " nesterov " << nesterov << " fallback " << fallback;
        EXPECT_LT(relative_difference(dgc_model.small, dense_model.small), 1e-5);
        const CompressionStats& s = dgc.compression_stats();
        EXPECT_EQ(s.dense_fallbacks, fallback && comm->size() > 1 ? 50 : 0);
        EXPECT_EQ(s.sparse_exchanges, fallback && comm->size() > 1 ? 0 : 50);
      }
    }
  }
}

// The compact wire (GRADWIRE_SPARSE_WIRE=compact) at sparsity 0, the sparse path forced: every
// element travels every step in binary16 and what binary16 drops stays in the residual, to go with
// the next step, so the run follows dense momentum SGD to fp16's precision without drifting; and
// it moves fewer gradient bytes than the pairs wire on the same run.
TEST(Compression, CompactWireAtSparsityZeroFollowsDenseMomentumSgd) {
  const auto comm = world();
  const int rank = comm->rank();
  Model dense_model, pairs_model, compact_model;
  DistributedOptimizer dense(comm, momentum_sgd(), dense_model.specs(), settings({}));
  std::vector<std::unique_ptr<DistributedOptimizer>> sparse;
  for (const char* wire : {"pairs", "compact"}) {
    auto options = settings({{keys::kCompressor, "dgc"},
                             {keys::kDgcSparsity, "0"},
                             {keys::kDgcMomentumMasking, "0"},
                             {keys::kSparseWire, wire}});
    options.sparse_dense_fallback = false;
    Model& m = std::string(wire) == "pairs" ? pairs_model : compact_model;
    sparse.push_back(
        std::make_unique<DistributedOptimizer>(comm, momentum_sgd(), m.specs(), options));
  }
  // The three share one communicator, so each one's gradient bytes are counted around its step.
  const auto sent = [&comm] { return comm->counters()[TrafficKind::kGradient].sent_bytes; };
  std::uint64_t bytes[2] = {0, 0};
  for (int step = 0; step < 50; ++step) {
    dense_model.gradients(dense, rank, step);
    dense.step();
    for (int w = 0; w < 2; ++w) {
      const std::uint64_t before = sent();
      (w == 0 ? pairs_model : compact_model).gradients(*sparse[w], rank, step);
      sparse[w]->step();
      bytes[w] += sent() - before;
    }
  }
  const double drift = relative_difference(compact_model.big, dense_model.big);
  if (rank == 0) std::printf("compact wire against dense after 50 steps: %.3g\n", drift);
  EXPECT_LT(drift, 2e-4);
  EXPECT_GT(drift, 0.0);  // it did travel in binary16
  EXPECT_LT(relative_difference(pairs_model.big, dense_model.big), 1e-5);
  EXPECT_EQ(sparse[1]->compression_stats().sparse_exchanges, 50);
  if (comm->size() > 1) {
    // Consecutive indices need no gap bits: 2 bytes per element against 8, beside the small
    // tensor's dense allreduce, which both send alike.
    if (rank == 0)
      std::printf("gradient bytes: pairs %llu, compact %llu\n",
                  static_cast<unsigned long long>(bytes[0]),
                  static_cast<unsigned long long>(bytes[1]));
    EXPECT_LT(bytes[1], bytes[0] * 3 / 10);
  }
}

TEST(Compression, DgcSendsAboutKPairsAndReportsTheRatio) {
  const auto comm = world();
  Model model;
  DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                           settings({{keys::kCompressor, "dgc"},
                                     {keys::kDgcSparsity, "0.9,0.99"},
                                     {keys::kDgcRampupBeginStep, "2"},
                                     {keys::kDgcRampupSteps, "4"},
                                     {keys::kSparseAlgo, "allgather"}}));
  const auto before = comm->counters()[TrafficKind::kGradient];
  for (int step = 0; step < 10; ++step) {
    model.gradients(opt, comm->rank(), step);
    opt.step();
  }
  const CompressionStats& s = opt.compression_stats();
  EXPECT_EQ(s.warmup_end_step, 6);
  EXPECT_EQ(s.steps_after_warmup, 4);
  const int n = comm->size();
  if (n > 1) {
    EXPECT_EQ(s.sparse_exchanges, 8);
    // After warm-up: the small tensor's allreduce plus at most (n - 1) x (1 + 2 x 30) words.
    const std::uint64_t dense_small = CountingCommunicator::allreduce_bytes(40, 4, comm->rank(), n);
    EXPECT_LE(s.gradient_bytes_after_warmup, 4 * (dense_small + (n - 1) * 4 * (1 + 2 * 30)));
    EXPECT_GE(s.gradient_bytes_after_warmup, 4 * (dense_small + (n - 1) * 4 * (1 + 2 * 28)));
    EXPECT_EQ(comm->counters()[TrafficKind::kGradient].calls - before.calls, 2u + 8 * 2);
  }
  EXPECT_EQ(s.dense_bytes_per_step,
            CountingCommunicator::allreduce_bytes(3040, 4, comm->rank(), n));
}

// Note [Sparse allgather in one round]: padded gives the allgatherv's parameters bit for bit, on
// every wire, in one gradient collective per sparse bucket and no control round, and sends the
// padded blocks, no more.
TEST(Compression, PaddedAllgatherEqualsTheAllgathervInOneRound) {
  const auto comm = world();
  const int n = comm->size();
  for (const char* wire : {"pairs", "compact", "compact4", "compact2"}) {
    Model a_model, p_model;
    auto options = [&](const char* algo) {
      return settings({{keys::kCompressor, "dgc"},
                       {keys::kDgcSparsity, "0.99"},
                       {keys::kSparseWire, wire},
                       {keys::kSparseAlgo, algo}});
    };
    DistributedOptimizer a(comm, momentum_sgd(), a_model.specs(), options("allgather"));
    auto padded_comm = std::make_shared<CountingCommunicator>(make_mpi_world_communicator());
    DistributedOptimizer p(padded_comm, momentum_sgd(), p_model.specs(), options("padded"));
    const auto control = padded_comm->counters()[TrafficKind::kControl];
    const auto gradient = padded_comm->counters()[TrafficKind::kGradient];
    for (int step = 0; step < 20; ++step) {
      a_model.gradients(a, comm->rank(), step);
      a.step();
      p_model.gradients(p, comm->rank(), step);
      p.step();
    }
    EXPECT_EQ(p_model.big, a_model.big) << wire;
    EXPECT_EQ(p_model.small, a_model.small) << wire;
    if (n == 1) continue;
    const auto c = padded_comm->counters()[TrafficKind::kControl];
    const auto g = padded_comm->counters()[TrafficKind::kGradient];
    EXPECT_EQ(c.calls - control.calls, 0u) << wire << ": padded runs no count round";
    // Per step: the small tensor's allreduce and one padded allgather of the big one.
    EXPECT_EQ(g.calls - gradient.calls, 20u * 2) << wire;
    compressors::ExchangePlan plan;
    using compressors::SparseWire;
    const std::string w = wire;
    plan.sparse_wire = w == "compact"    ? SparseWire::kCompact
                       : w == "compact4" ? SparseWire::kCompact4
                       : w == "compact2" ? SparseWire::kCompact2
                                         : SparseWire::kPairs;
    compressors::BucketView big;
    big.tensors.push_back({0, 0, a_model.big.size()});
    big.numel = a_model.big.size();
    plan.sparse = {0};
    plan.k = {compressors::sparse_count(a_model.big.size(), 0.99)};
    const std::uint64_t block = 4 * (1 + compressors::padded_message_words(big, plan));
    const std::uint64_t small =
        CountingCommunicator::allreduce_bytes(a_model.small.size(), 4, comm->rank(), n);
    EXPECT_EQ(g.sent_bytes - gradient.sent_bytes, 20 * (small + (n - 1) * block)) << wire;
  }
}

TEST(Compression, Fp16SendsExactlyHalfTheBytesOfNone) {
  const auto comm = world();
  Model a, b;
  DistributedOptimizer none(comm, momentum_sgd(), a.specs(), settings({}));
  DistributedOptimizer fp16(comm, momentum_sgd(), b.specs(),
                            settings({{keys::kCompressor, "fp16"}}));
  const auto start = comm->counters()[TrafficKind::kGradient].sent_bytes;
  for (int step = 0; step < 5; ++step) {
    a.gradients(none, comm->rank(), step);
    none.step();
  }
  const auto mid = comm->counters()[TrafficKind::kGradient].sent_bytes;
  for (int step = 0; step < 5; ++step) {
    b.gradients(fp16, comm->rank(), step);
    fp16.step();
  }
  const auto end = comm->counters()[TrafficKind::kGradient].sent_bytes;
  EXPECT_EQ(2 * (end - mid), mid - start);
  // fp16 rounding only: the weights agree to about 1e-3 relative.
  EXPECT_LT(relative_difference(b.big, a.big), 2e-3);
  EXPECT_GT(relative_difference(b.big, a.big), 0.0) << "fp16 should round somewhere";
}

// Corrupts what arrives from rank 1 in the sparse exchange: an index in its pairs (out of range,
// or its second index made a copy of its first) or the length it announces.
class CorruptingCommunicator : public Communicator {
 public:
  enum class What { kIndex, kDuplicateIndex, kLength };
  // padded: the sparse messages arrive in padded blocks, each after its length word
  // (Note [Sparse allgather in one round]).
  CorruptingCommunicator(std::unique_ptr<Communicator> inner, What what, bool padded = false)
      : inner_(std::move(inner)), what_(what), skip_(padded ? 1 : 0) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  WorkHandle start(const Collective& c) override {
    if (c.op == CollectiveOp::kAllgatherv) return corrupt_allgatherv(c);
    if (c.op == CollectiveOp::kAlltoallv) return corrupt_alltoallv(c);
    return inner_->start(c);
  }
  void barrier() override { inner_->barrier(); }
  bool armed = false;

 private:
  WorkHandle corrupt_allgatherv(const Collective& c) {
    auto w = inner_->start(c);
    w->wait();
    const DataType t = c.type;
    const TrafficKind k = c.kind;
    const std::vector<std::size_t>& rc = c.recv_counts;
    if (t == DataType::kInt32 && k == TrafficKind::kGradient && what_ == What::kIndex) {
      auto* words = static_cast<std::uint32_t*>(c.recv) + skip_;
      words[rc[0] + 1] = 123456789;  // rank 1's first index
    }
    if (t == DataType::kInt32 && k == TrafficKind::kGradient && what_ == What::kDuplicateIndex) {
      auto* words = static_cast<std::uint32_t*>(c.recv) + skip_;
      words[rc[0] + 3] = words[rc[0] + 1];  // rank 1's second index := its first
    }
    if (t == DataType::kInt32 && k == TrafficKind::kGradient && what_ == What::kLength &&
        skip_ != 0 && armed) {
      static_cast<std::uint32_t*>(c.recv)[rc[0]] += 1000000;  // rank 1's block's length
    }
    if (t == DataType::kInt64 && k == TrafficKind::kControl && what_ == What::kLength &&
        rc[0] == 1 && armed) {
      static_cast<std::int64_t*>(c.recv)[1] += 1000000;
    }
    return w;
  }
  WorkHandle corrupt_alltoallv(const Collective& c) {
    const std::vector<std::size_t>& rc = c.recv_counts;
    const std::size_t from_rank_1 = rc.size() > 1 ? rc[1] : 0, before = rc.empty() ? 0 : rc[0];
    auto w = inner_->start(c);
    w->wait();
    // The split's first step: rank 1's first index in its part for this rank.
    if (c.type == DataType::kInt32 && c.kind == TrafficKind::kGradient && what_ == What::kIndex &&
        from_rank_1 >= 3) {
      static_cast<std::uint32_t*>(c.recv)[before + 1] = 123456789;
    }
    return w;
  }

  std::unique_ptr<Communicator> inner_;
  What what_;
  std::size_t skip_;
};

TEST(Compression, AMalformedPeerPayloadIsAnErrorNamingTheSenderOnEveryRank) {
  if (world()->size() < 2) GTEST_SKIP() << "needs a peer";
  using What = CorruptingCommunicator::What;
  // Under split a bad index is caught in its first step (the alltoallv) and the rest in its last.
  for (const char* algo : {"allgather", "padded", "split"})
    for (auto what : {What::kIndex, What::kDuplicateIndex, What::kLength}) {
      auto corrupting = std::make_unique<CorruptingCommunicator>(
          make_mpi_world_communicator(), what, std::string(algo) == "padded");
      CorruptingCommunicator* handle = corrupting.get();
      auto comm = std::make_shared<CountingCommunicator>(std::move(corrupting));
      Model model;
      DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                               settings({{keys::kCompressor, "topk"},
                                         {keys::kDgcSparsity, "0.99"},
                                         {keys::kSparseAlgo, algo}}));
      handle->armed = true;  // after the construction-time checks
      const std::vector<float> big_before = model.big;
      model.gradients(opt, comm->rank(), 0);
      try {
        opt.step();
        ADD_FAILURE() << "a corrupt message was accepted under " << algo;
      } catch (const compressors::PayloadError& e) {
        EXPECT_NE(std::string(e.what()).find("from rank 1"), std::string::npos) << e.what();
        if (what == What::kDuplicateIndex) {
          EXPECT_NE(std::string(e.what()).find("pair 1 has index"), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find("not above pair 0's index"), std::string::npos)
              << e.what();
        }
      }
      EXPECT_EQ(model.big, big_before) << "parameters changed by a rejected step";
    }
}

TEST(Compression, SaveThenLoadContinuesBitIdentically) {
  const auto comm = world();
  const auto config = settings({{keys::kCompressor, "dgc"},
                                {keys::kDgcSparsity, "0.9,0.99"},
                                {keys::kDgcRampupSteps, "4"},
                                {keys::kDgcClipNorm, "30"}});
  Model through;
  DistributedOptimizer a(comm, momentum_sgd(true), through.specs(), config);
  for (int step = 0; step < 6; ++step) {
    through.gradients(a, comm->rank(), step);
    a.step();
  }
  std::stringstream state;
  a.save_state(state);
  const std::string at_step_six = state.str();
  Model resumed = through;
  for (int step = 6; step < 12; ++step) {
    through.gradients(a, comm->rank(), step);
    a.step();
  }
  DistributedOptimizer b(comm, momentum_sgd(true), resumed.specs(), config);
  b.load_state(state);
  EXPECT_EQ(b.steps(), 6);
  for (int step = 6; step < 12; ++step) {
    resumed.gradients(b, comm->rank(), step);
    b.step();
  }
  EXPECT_EQ(resumed.big, through.big);
  EXPECT_EQ(resumed.small, through.small);
  // A stream whose compressor part loads but whose optimizer part is cut short changes nothing:
  // the compressor's state is rolled back too.
  std::stringstream cut(at_step_six.substr(0, at_step_six.size() - 4));
  std::stringstream before;
  b.save_state(before);
  ASSERT_TRUE(before.str() != at_step_six);  // b has moved on: a rollback is observable
  EXPECT_THROW(b.load_state(cut), std::runtime_error);
  std::stringstream after;
  b.save_state(after);
  EXPECT_TRUE(after.str() == before.str()) << "a failed load changed the state";
  // A state from another compressor is refused, and leaves the optimizer usable.
  std::stringstream other;
  DistributedOptimizer none(comm, momentum_sgd(), Model().specs(), settings({}));
  none.save_state(other);
  EXPECT_THROW(b.load_state(other), std::runtime_error);
}

std::string config_error(const std::function<void()>& construct) {
  try {
    construct();
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Compression, DgcUnderAdamIsAConfigurationErrorThatSuggestsTopk) {
  const auto comm = world();
  Model model;
  const std::string what = config_error([&] {
    trainer::Adam::Options o;
    o.lr = 0.001;
    DistributedOptimizer opt(comm, std::make_unique<trainer::Adam>(o), model.specs(),
                             settings({{keys::kCompressor, "dgc"}}));
  });
  EXPECT_NE(what.find("GRADWIRE_COMPRESSOR=dgc"), std::string::npos) << what;
  EXPECT_NE(what.find("adam"), std::string::npos) << what;
  EXPECT_NE(what.find("GRADWIRE_COMPRESSOR=topk"), std::string::npos) << what;
  // topk runs under Adam.
  trainer::Adam::Options o;
  o.lr = 0.001;
  DistributedOptimizer topk(comm, std::make_unique<trainer::Adam>(o), model.specs(),
                            settings({{keys::kCompressor, "topk"}, {keys::kDgcSparsity, "0.99"}}));
  model.gradients(topk, comm->rank(), 0);
  topk.step();
}

// powersgd needs the weights' shapes: without any it stops at start and says what to set; with
// them it runs under Adam too, and from its start step a step's gradient bytes are the two
// allreduces of Note [PowerSGD] (the small tensor whole with P, then Q).
TEST(Compression, PowersgdNeedsMatrixShapesAndRunsUnderAdam) {
  const auto comm = world();
  Model model;
  trainer::Adam::Options o;
  o.lr = 0.001;
  const std::string what = config_error([&] {
    DistributedOptimizer opt(comm, std::make_unique<trainer::Adam>(o), model.specs(),
                             settings({{keys::kCompressor, "powersgd"}}));
  });
  EXPECT_NE(what.find("GRADWIRE_COMPRESSOR=powersgd"), std::string::npos) << what;
  EXPECT_NE(what.find("ParameterSpec::rows"), std::string::npos) << what;
  std::vector<ParameterSpec> specs = model.specs();
  specs[0].rows = 30;  // the 3000-element tensor as [30, 100]
  DistributedOptimizer opt(comm, std::make_unique<trainer::Adam>(o), specs,
                           settings({{keys::kCompressor, "powersgd"},
                                     {keys::kPowerSgdRank, "2"},
                                     {keys::kPowerSgdStartStep, "1"}}));
  const int r = comm->rank(), n = comm->size();
  for (int step = 0; step < 3; ++step) {
    const std::uint64_t before = comm->counters()[TrafficKind::kGradient].sent_bytes;
    model.gradients(opt, r, step);
    opt.step();
    const std::uint64_t sent = comm->counters()[TrafficKind::kGradient].sent_bytes - before;
    const std::uint64_t want =
        step == 0 ? CountingCommunicator::allreduce_bytes(Model::kTotal, 4, r, n)
                  : CountingCommunicator::allreduce_bytes(Model::kSmall + 30 * 2, 4, r, n) +
                        CountingCommunicator::allreduce_bytes(100 * 2, 4, r, n);
    EXPECT_EQ(sent, want) << "step " << step;
  }
  for (float w : model.flat()) ASSERT_TRUE(std::isfinite(w));
}

TEST(Compression, ASparsityListLongerThanTheRampupIsAConfigurationError) {
  const auto comm = world();
  Model model;
  const std::string what = config_error([&] {
    DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                             settings({{keys::kCompressor, "dgc"},
                                       {keys::kDgcSparsity, "0.75,0.9375,0.999"},
                                       {keys::kDgcRampupSteps, "2"}}));
  });
  EXPECT_NE(what.find("GRADWIRE_DGC_SPARSITY=0.75,0.9375,0.999"), std::string::npos) << what;
  EXPECT_NE(what.find("GRADWIRE_DGC_RAMPUP_STEPS=2"), std::string::npos) << what;
}

}  // namespace
}  // namespace gw
