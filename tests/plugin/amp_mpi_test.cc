// Mixed precision through DistributedOptimizer under a real mpirun
// (Note [Mixed precision in the step]): an inf or nan on one rank makes every rank skip that step
// and back off, for each place the check runs (after a dense exchange on the fp16 or fp32 wire,
// before a topk/dgc exchange or a local step); unscaling gives exactly the fp32 run's parameters;
// the scaler's state travels with a checkpoint; and the configuration errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "plugin_test_util.h"
#include "reference_trainer/optim/sgd.h"

namespace gw {
namespace {

namespace keys = config::keys;
using testing::Settings;
using testing::settings;
using testing::world;

using testing::sgd;

using Model = testing::TwoTensorModel;

bool all_finite(const std::vector<float>& v) {
  for (float x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

struct InjectCase {
  const char* name;
  Settings settings;
  double momentum;
  const char* wire;
};

class AmpInject : public ::testing::TestWithParam<InjectCase> {};

// Step 2: the last rank's gradient holds an inf (or, at step 5, rank 0's a nan; neither is a
// local_sgd averaging point, which moves parameters anyway). Every rank must
// skip exactly those steps, keep its parameters, and halve the scale after each.
TEST_P(AmpInject, NonFiniteGradientOnOneRankMakesEveryRankSkipAndBackOff) {
  auto comm = world();
  const int rank = comm->rank(), last = comm->size() - 1;
  Settings s = GetParam().settings;
  s.push_back({keys::kAmp, "1"});
  s.push_back({keys::kAmpInitScale, "1024"});
  Model model;
  DistributedOptimizer opt(comm, sgd(GetParam().momentum), model.specs(), settings(s));
  EXPECT_EQ(opt.gradient_wire(), GetParam().wire);
  for (std::int64_t step = 0; step < 9; ++step) {
    const float scale = opt.loss_scale();
    model.gradients(opt, rank, step, scale);
    if (step == 2 && rank == last) opt.gradient(0)[17] = std::numeric_limits<float>::infinity();
    if (step == 5 && rank == 0) opt.gradient(1)[5] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> before = model.flat();
    opt.step();
    const bool skipped = step == 2 || step == 5;
    if (skipped) {
      EXPECT_EQ(model.flat(), before) << "step " << step << " was not skipped on rank " << rank;
    } else {
      EXPECT_NE(model.flat(), before) << "step " << step << " was skipped on rank " << rank;
    }
    EXPECT_EQ(opt.loss_scale(), step >= 5 ? 256.0f : step >= 2 ? 512.0f : 1024.0f) << step;
  }
  const amp::LossScaler& scaler = *opt.loss_scaler();
  EXPECT_EQ(scaler.skipped_steps(), 2);
  ASSERT_EQ(scaler.history().size(), 3u);
  EXPECT_EQ(scaler.history()[1].step, 2);
  EXPECT_EQ(scaler.history()[1].event, amp::ScaleEvent::kBackoff);
  EXPECT_EQ(scaler.history()[2].step, 5);
  // Nothing non-finite reached the parameters, nor (topk, dgc) the residuals that the later
  // steps sent, which were sparse exchanges.
  EXPECT_TRUE(all_finite(model.flat()));
  if (std::string(GetParam().wire) == "sparse") {
    EXPECT_GT(opt.compression_stats().sparse_exchanges, 0);
  }
}

const Settings kLocal = {{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}};

INSTANTIATE_TEST_SUITE_P(
    Checks, AmpInject,
    ::testing::Values(InjectCase{"fp16_wire", {}, 0.0, "fp16"},
                      InjectCase{"fp32_wire", {{keys::kAmpCommFp16, "0"}}, 0.0, "fp32"},
                      InjectCase{"topk",
                                 {{keys::kCompressor, "topk"},
                                  {keys::kDgcSparsity, "0.9"},
                                  {keys::kDgcMinNumel, "1000"}},  // "big" goes sparse
                                 0.0,
                                 "sparse"},
                      InjectCase{"dgc",
                                 {{keys::kCompressor, "dgc"},
                                  {keys::kDgcSparsity, "0.9"},
                                  {keys::kDgcMinNumel, "1000"}},
                                 0.9,
                                 "sparse"},
                      InjectCase{"local_sgd", kLocal, 0.0, "fp16"},
                      // Outer steps after steps 3 and 7; the pseudo-gradients go as topk deltas.
                      InjectCase{"diloco",
                                 {{keys::kSync, "diloco"},
                                  {keys::kLocalSgdK, "4"},
                                  {keys::kCompressor, "topk"},
                                  {keys::kDgcSparsity, "0.9"}},
                                 0.0,
                                 "fp16"}),
    [](const auto& info) { return std::string(info.param.name); });

// With a power-of-two scale, scaling the gradient and unscaling it after the exchange is exact:
// on the fp32 wire AMP's parameters are bitwise those of the fp32 run (2 and 4 ranks: 1/n is a
// power of two too).
TEST(Amp, UnscaledGradientsGiveExactlyTheFp32Parameters) {
  auto comm = world();
  const int rank = comm->rank();
  if ((comm->size() & (comm->size() - 1)) != 0) GTEST_SKIP() << "needs a power-of-two world";
  Model reference, mixed;
  DistributedOptimizer plain(comm, sgd(0.9), reference.specs(), settings({}));
  DistributedOptimizer amp(
      comm, sgd(0.9), mixed.specs(),
      settings({{keys::kAmp, "1"}, {keys::kAmpCommFp16, "0"}, {keys::kAmpGrowthInterval, "5"}}));
  for (std::int64_t step = 0; step < 20; ++step) {
    reference.gradients(plain, rank, step, 1.0f);
    plain.step();
    mixed.gradients(amp, rank, step, amp.loss_scale());
    amp.step();
  }
  EXPECT_EQ(amp.loss_scale(), 32768.0f * 16);  // grew after steps 4, 9, 14 and 19
  EXPECT_EQ(amp.loss_scaler()->skipped_steps(), 0);
  EXPECT_EQ(mixed.flat(), reference.flat());
}

// On the fp16 wire the scaled gradients are rounded to binary16: the same as GRADWIRE_COMPRESSOR=
// fp16 without AMP except where an unscaled value would be subnormal in fp16 (there AMP keeps
// more), so the two agree within 1e-6 after 20 steps, and AMP sends the same bytes. (The scale is
// 1024: at the default 32768 these N(0, 1) gradients overflow fp16 now and then, by design.)
TEST(Amp, Fp16WireMatchesTheFp16CompressorAndHalvesTheBytes) {
  auto comm = world();
  const int rank = comm->rank();
  Model fp16, mixed, fp32;
  DistributedOptimizer half(comm, sgd(), fp16.specs(), settings({{keys::kCompressor, "fp16"}}));
  DistributedOptimizer amp(comm, sgd(), mixed.specs(),
                           settings({{keys::kAmp, "1"}, {keys::kAmpInitScale, "1024"}}));
  DistributedOptimizer full(comm, sgd(), fp32.specs(), settings({}));
  const auto sent = [&] { return comm->counters()[TrafficKind::kGradient].sent_bytes; };
  std::uint64_t half_bytes = 0, amp_bytes = 0, full_bytes = 0;
  for (std::int64_t step = 0; step < 20; ++step) {
    fp16.gradients(half, rank, step, 1.0f);
    std::uint64_t before = sent();
    half.step();
    half_bytes += sent() - before;
    mixed.gradients(amp, rank, step, amp.loss_scale());
    before = sent();
    amp.step();
    amp_bytes += sent() - before;
    fp32.gradients(full, rank, step, 1.0f);
    before = sent();
    full.step();
    full_bytes += sent() - before;
  }
  const std::vector<float> a = mixed.flat(), b = fp16.flat();
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  EXPECT_LE(worst, 1e-6);
  EXPECT_EQ(amp.loss_scaler()->skipped_steps(), 0);
  EXPECT_EQ(amp_bytes, half_bytes);
  EXPECT_EQ(2 * amp_bytes, full_bytes);
}

TEST(Amp, LossScalerStateTravelsWithTheCheckpoint) {
  auto comm = world();
  const int rank = comm->rank();
  const Settings s = {
      {keys::kAmp, "1"}, {keys::kAmpInitScale, "1024"}, {keys::kAmpGrowthInterval, "3"}};
  Model model;
  DistributedOptimizer opt(comm, sgd(), model.specs(), settings(s));
  for (std::int64_t step = 0; step < 5; ++step) {
    model.gradients(opt, rank, step, opt.loss_scale());
    if (step == 1) opt.gradient(1)[0] = std::numeric_limits<float>::infinity();
    opt.step();
  }
  std::stringstream saved;
  opt.save_state(saved);
  Model other;
  DistributedOptimizer resumed(comm, sgd(), other.specs(), settings(s));
  resumed.load_state(saved);
  EXPECT_EQ(resumed.loss_scale(), opt.loss_scale());
  EXPECT_EQ(resumed.loss_scaler()->skipped_steps(), 1);
  EXPECT_EQ(resumed.loss_scaler()->clean_streak(), opt.loss_scaler()->clean_streak());
  EXPECT_EQ(resumed.loss_scaler()->history().size(), opt.loss_scaler()->history().size());

  // A stream with mixed precision does not load into a run without it (same fp16 wire), and
  // changes nothing.
  saved.clear();
  saved.seekg(0);
  Model plain_model;
  DistributedOptimizer plain(comm, sgd(), plain_model.specs(),
                             settings({{keys::kCompressor, "fp16"}}));
  try {
    plain.load_state(saved);
    ADD_FAILURE() << "an AMP state loaded into a run without AMP";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("GRADWIRE_AMP=1, this run has GRADWIRE_AMP=0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(plain.steps(), 0);
}

std::string config_error(const Settings& s) {
  Model model;
  try {
    DistributedOptimizer opt(world(), sgd(), model.specs(), settings(s));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Amp, ConfigurationErrorsNameTheVariable) {
  EXPECT_NE(config_error({{keys::kAmpInitScale, "1024"}})
                .find("GRADWIRE_AMP_INIT_SCALE=1024 has no effect without mixed precision"),
            std::string::npos);
  const std::string unknown = config_error({{keys::kAmp, "1"}, {keys::kAmpDeny, "relu,matmul"}});
  EXPECT_NE(unknown.find("GRADWIRE_AMP_DENY"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("matmul"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("linear, conv2d, relu, max_pool2d, flatten, softmax_cross_entropy"),
            std::string::npos)
      << unknown;
  const std::string both =
      config_error({{keys::kAmp, "1"}, {keys::kAmpAllow, "relu"}, {keys::kAmpDeny, "relu"}});
  EXPECT_NE(both.find("GRADWIRE_AMP_ALLOW"), std::string::npos) << both;
  EXPECT_NE(both.find("GRADWIRE_AMP_DENY"), std::string::npos) << both;
  EXPECT_NE(config_error({{keys::kAmp, "1"}, {keys::kAmpBackoffFactor, "1"}})
                .find("GRADWIRE_AMP_BACKOFF_FACTOR"),
            std::string::npos);
  EXPECT_NE(
      config_error({{keys::kAmp, "1"}, {keys::kAmpInitScale, "0"}}).find("GRADWIRE_AMP_INIT_SCALE"),
      std::string::npos);
}

}  // namespace
}  // namespace gw
