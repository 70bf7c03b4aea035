// Streaming diloco (Note [Streaming DiLoCo]) through DistributedOptimizer under a real mpirun: one
// fragment without delay or mixing is plain diloco bit for bit; the mixing against its closed
// form; the staggered schedule and the bytes of each fragment; collectives of the program's own
// between steps leave an overlapped run unchanged; save and resume with an exchange in flight
// bit-identically; and the configuration errors, a fragment count that differs across ranks
// included.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "drifting_model.h"
#include "plugin_test_util.h"
#include "reference_trainer/optim/sgd.h"

namespace gw {
namespace {

namespace keys = config::keys;
using testing::identical_on_all_ranks;
using testing::Settings;
using testing::settings;
using testing::sgd;
using testing::with;
using testing::world;

constexpr std::size_t kTotal = testing::TwoTensorModel::kTotal;
constexpr std::size_t kBig = testing::TwoTensorModel::kBig;

using Model = testing::DriftingModel;
using testing::adam;
using testing::train;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const Settings kTopk = {
    {keys::kCompressor, "topk"}, {keys::kDgcSparsity, "0.9"}, {keys::kDgcMinK, "1"}};

TEST(StreamingDiloco, OneFragmentWithoutDelayOrMixingIsDilocoBitForBit) {
  const auto comm = world();
  const int rank = comm->rank();
  const std::vector<Settings> wires = {
      {{keys::kCompressor, "none"}},
      {{keys::kCompressor, "fp16"}},
      kTopk,
      with(kTopk, {{keys::kSparseWire, "compact2"}}),
      {{keys::kCompressor, "powersgd"}, {keys::kPowerSgdStartStep, "1"}},
  };
  for (std::size_t w = 0; w < wires.size(); ++w) {
    for (bool use_adam : {false, true}) {
      SCOPED_TRACE("wire " + std::to_string(w) + (use_adam ? ", adam" : ", sgd"));
      const Settings plain = with({{keys::kSync, "diloco"}, {keys::kLocalSgdK, "3"}}, wires[w]);
      Model a, b;
      DistributedOptimizer diloco(comm, use_adam ? adam() : sgd(0.9), a.specs(), settings(plain));
      const auto before = comm->counters()[TrafficKind::kParameter].sent_bytes;
      train(a, diloco, rank, 0, 20);
      diloco.synchronize_parameters();  // a requested point after two local steps
      const auto plain_bytes = comm->counters()[TrafficKind::kParameter].sent_bytes - before;
      DistributedOptimizer streaming(comm, use_adam ? adam() : sgd(0.9), b.specs(),
                                     settings(with(plain, {{keys::kDilocoFragments, "1"},
                                                           {keys::kDilocoDelay, "0"},
                                                           {keys::kDilocoMixing, "0"}})));
      const auto streaming_before = comm->counters()[TrafficKind::kParameter].sent_bytes;
      train(b, streaming, rank, 0, 20);
      streaming.synchronize_parameters();
      EXPECT_TRUE(same_bits(a.flat(), b.flat()));
      EXPECT_EQ(comm->counters()[TrafficKind::kParameter].sent_bytes - streaming_before,
                plain_bytes);
      EXPECT_EQ(streaming.sync_stats().parameter_exchanges, 7);  // 6 scheduled, 1 requested
      EXPECT_TRUE(streaming.sync_stats().points.back().requested);
      EXPECT_TRUE(identical_on_all_ranks(*comm, b.flat()));
    }
  }
}

TEST(StreamingDiloco, MixingKeepsAlphaOfTheRanksOwnParameters) {
  // Without delay the rank's own parameters at the outer step are those the pseudo-gradient was
  // taken from: after the first outer step w = alpha w_own + (1 - alpha) w_diloco, each product and
  // the sum rounded once, with w_own from local steps alone and w_diloco from plain diloco.
  const auto comm = world();
  const int rank = comm->rank();
  const Settings plain = {{keys::kSync, "diloco"}, {keys::kLocalSgdK, "4"}};
  Model own, global, mixed;
  DistributedOptimizer local(comm, sgd(0.9), own.specs(),
                             settings({{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "1000"}}));
  DistributedOptimizer diloco(comm, sgd(0.9), global.specs(), settings(plain));
  DistributedOptimizer streaming(
      comm, sgd(0.9), mixed.specs(),
      settings(with(plain, {{keys::kDilocoFragments, "1"}, {keys::kDilocoMixing, "0.3"}})));
  train(own, local, rank, 0, 4);
  train(global, diloco, rank, 0, 4);
  train(mixed, streaming, rank, 0, 4);
  const std::vector<float> w_own = own.flat(), w_global = global.flat();
  std::vector<float> expected(kTotal);
  const float alpha = 0.3f, beta = 1.0f - alpha;
  for (std::size_t i = 0; i < kTotal; ++i) {
    const float a = alpha * w_own[i], b = beta * w_global[i];
    expected[i] = a + b;
  }
  EXPECT_TRUE(same_bits(mixed.flat(), expected));
  if (comm->size() > 1) EXPECT_FALSE(identical_on_all_ranks(*comm, mixed.flat()));
}

TEST(StreamingDiloco, FragmentsTakeTheirOuterStepsStaggeredAndMoveTheirOwnBytes) {
  const auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  // Two fragments ("big", then "small"), H = 4, delay 1: fragment 0 exchanges after steps 3, 7,
  // 11 and 15, fragment 1 (offset 2) after 5, 9 and 13; each outer step follows one step later.
  for (const char* mixing : {"0", "0.5"}) {
    SCOPED_TRACE(std::string("mixing ") + mixing);
    Model model;
    DistributedOptimizer opt(comm, sgd(0.9), model.specs(),
                             settings({{keys::kSync, "diloco"},
                                       {keys::kLocalSgdK, "4"},
                                       {keys::kCompressor, "none"},
                                       {keys::kDilocoFragments, "2"},
                                       {keys::kDilocoDelay, "1"},
                                       {keys::kDilocoMixing, mixing}}));
    EXPECT_EQ(opt.sync_stats().outer_optimizer,
              std::string("nesterov (lr 0.7, momentum 0.9); streamed in 2 fragments, delay 1, "
                          "mixing ") +
                  mixing);
    const auto before = comm->counters()[TrafficKind::kParameter].sent_bytes;
    train(model, opt, rank, 0, 17);
    comm->barrier();  // through the guard: nothing in flight below
    std::vector<std::pair<std::int64_t, std::int64_t>> points;  // (fragment, exchanged after)
    for (const AveragingPoint& p : opt.sync_stats().points) points.emplace_back(p.fragment, p.step);
    const std::vector<std::pair<std::int64_t, std::int64_t>> want = {
        {0, 3}, {1, 5}, {0, 7}, {1, 9}, {0, 11}, {1, 13}, {0, 15}};
    EXPECT_EQ(points, want);
    // fp32: each exchange an allreduce of its fragment's floats alone.
    EXPECT_EQ(comm->counters()[TrafficKind::kParameter].sent_bytes - before,
              4 * CountingCommunicator::allreduce_bytes(kBig, 4, rank, n) +
                  3 * CountingCommunicator::allreduce_bytes(kTotal - kBig, 4, rank, n));
    // The global model, for an evaluation between points: the same on every rank, and the
    // rank's own parameters back afterwards.
    const std::vector<float> own = model.flat();
    EXPECT_FALSE(opt.parameters_in_step());
    ASSERT_TRUE(opt.use_global_parameters());
    EXPECT_TRUE(identical_on_all_ranks(*comm, model.flat()));
    if (comm->size() > 1) EXPECT_FALSE(same_bits(model.flat(), own));
    opt.restore_own_parameters();
    EXPECT_TRUE(same_bits(model.flat(), own));
    opt.synchronize_parameters();
    EXPECT_TRUE(identical_on_all_ranks(*comm, model.flat()));
    EXPECT_TRUE(opt.parameters_in_step());
  }
}

TEST(StreamingDiloco, CollectivesOfTheProgramBetweenStepsLeaveAnOverlappedRunUnchanged) {
  // The exchange in flight runs on the fragment engine's thread; the program's own collectives
  // on its thread wait for it first (the guard). Both runs must agree bit for bit.
  const auto comm = world();
  const int rank = comm->rank();
  const Settings s = with({{keys::kSync, "diloco"},
                           {keys::kLocalSgdK, "4"},
                           {keys::kDilocoFragments, "2"},
                           {keys::kDilocoDelay, "3"}},
                          kTopk);
  Model quiet, busy;
  DistributedOptimizer a(comm, sgd(0.9), quiet.specs(), settings(s));
  DistributedOptimizer b(comm, sgd(0.9), busy.specs(), settings(s));
  train(quiet, a, rank, 0, 24);
  for (std::int64_t step = 0; step < 24; ++step) {
    train(busy, b, rank, step, step + 1);
    double sum = rank;
    comm->allreduce(&sum, 1, DataType::kFloat64, ReduceOp::kSum, TrafficKind::kControl);
    EXPECT_EQ(sum, comm->size() * (comm->size() - 1) / 2.0);
  }
  comm->barrier();
  EXPECT_TRUE(same_bits(quiet.flat(), busy.flat()));
}

TEST(StreamingDiloco, SaveWithAnExchangeInFlightThenLoadContinuesBitIdentically) {
  const auto comm = world();
  const int rank = comm->rank();
  const Settings base = {{keys::kSync, "diloco"},
                         {keys::kLocalSgdK, "4"},
                         {keys::kDilocoFragments, "2"},
                         {keys::kDilocoDelay, "2"}};
  const std::vector<Settings> configs = {
      {},
      {{keys::kCompressor, "fp16"}, {keys::kOuterOptimizer, "heavy_ball"}},
      with(kTopk, {{keys::kSparseWire, "compact4"}}),
  };
  for (std::size_t c = 0; c < configs.size(); ++c) {
    SCOPED_TRACE("config " + std::to_string(c));
    const Settings s = with(base, configs[c]);
    Model a;
    DistributedOptimizer first(comm, sgd(0.9), a.specs(), settings(s));
    // Steps 0..6: fragment 1 exchanged after step 5, its outer step due after step 7.
    train(a, first, rank, 0, 7);
    const std::vector<float> saved_params = a.flat();
    std::ostringstream out;
    first.save_state(out);
    train(a, first, rank, 7, 20);

    Model b;
    DistributedOptimizer second(comm, sgd(0.9), b.specs(), settings(s));
    b.set(saved_params);
    std::istringstream in(out.str());
    second.load_state(in);
    train(b, second, rank, 7, 20);
    comm->barrier();
    EXPECT_TRUE(same_bits(a.flat(), b.flat()));

    // Without the result in flight (and the rest of the state) the run would differ.
    Model fresh;
    DistributedOptimizer third(comm, sgd(0.9), fresh.specs(), settings(s));
    fresh.set(saved_params);
    train(fresh, third, rank, 7, 20);
    comm->barrier();
    EXPECT_FALSE(same_bits(a.flat(), fresh.flat()));
  }
  // A checkpoint of plain diloco, or of another fragment count, is refused.
  Model x, y;
  DistributedOptimizer plain(comm, sgd(0.9), x.specs(),
                             settings({{keys::kSync, "diloco"}, {keys::kLocalSgdK, "4"}}));
  DistributedOptimizer two(comm, sgd(0.9), y.specs(), settings(base));
  train(x, plain, rank, 0, 2);
  testing::expect_checkpoint_refused(plain, two);
  EXPECT_FALSE(plain.use_global_parameters());  // plain diloco has no global model between points
}

TEST(StreamingDiloco, SettingsThatCannotWorkAreConfigurationErrors) {
  const auto comm = world();
  const auto expect_error = [&](const Settings& s, const std::string& needle) {
    testing::expect_config_error(comm, s, needle);
  };
  const Settings diloco = {{keys::kSync, "diloco"}, {keys::kLocalSgdK, "4"}};
  expect_error({{keys::kSync, "local_sgd"}, {keys::kDilocoFragments, "2"}},
               "GRADWIRE_DILOCO_FRAGMENTS=2 has no effect under GRADWIRE_SYNC=local_sgd");
  expect_error(with(diloco, {{keys::kDilocoDelay, "1"}}),
               "GRADWIRE_DILOCO_DELAY=1 applies to streaming diloco only");
  expect_error(with(diloco, {{keys::kDilocoMixing, "0.2"}}),
               "GRADWIRE_DILOCO_MIXING=0.2 applies to streaming diloco only");
  expect_error(with(diloco, {{keys::kDilocoFragments, "5"}}),
               "GRADWIRE_DILOCO_FRAGMENTS=5 exceeds GRADWIRE_LOCAL_SGD_K=4");
  expect_error(with(diloco, {{keys::kDilocoFragments, "2"}, {keys::kDilocoDelay, "4"}}),
               "GRADWIRE_DILOCO_DELAY=4 is not below GRADWIRE_LOCAL_SGD_K=4");
  expect_error(with(diloco, {{keys::kDilocoFragments, "3"}}),
               "GRADWIRE_DILOCO_FRAGMENTS=3 exceeds the model's 2 parameter tensors");
  expect_error(with(diloco, {{keys::kDilocoFragments, "2"}, {keys::kLocalSgdAverageState, "1"}}),
               "the optimizer state is not cut into fragments");
}

TEST(StreamingDiloco, EveryRankRefusesAFragmentCountThatDiffersAcrossRanks) {
  const auto comm = world();
  if (comm->size() < 2) GTEST_SKIP() << "needs a peer";
  Model model;
  try {
    DistributedOptimizer opt(comm, sgd(0.9), model.specs(),
                             settings({{keys::kSync, "diloco"},
                                       {keys::kLocalSgdK, "4"},
                                       {keys::kDilocoFragments, comm->rank() == 1 ? "2" : "1"}}));
    ADD_FAILURE() << "no error";
  } catch (const config::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("configuration differs across ranks"), std::string::npos) << what;
    EXPECT_NE(what.find("GRADWIRE_DILOCO_FRAGMENTS: rank 0 '1', rank 1 '2'"), std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace gw
