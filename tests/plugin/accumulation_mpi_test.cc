// Gradient accumulation through DistributedOptimizer under a real mpirun
// (Note [Gradient accumulation]): N backward passes give bitwise the step one pass of their mean
// gives, for every compressor, sync policy and mixed precision, exchanging the same bytes once
// per optimizer step; the schedules count optimizer steps; the timeline shows the passes; and the
// calls that would lose a partial sum are refused.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "plugin_test_util.h"

namespace gw {
namespace {

namespace keys = config::keys;
using testing::momentum_sgd;
using testing::Settings;
using testing::settings;
using testing::with;
using testing::world;
using Model = testing::TwoTensorModel;

struct Case {
  const char* name;
  Settings settings;
};

class AccumulationEqualsTheMean : public ::testing::TestWithParam<std::tuple<Case, int, bool>> {};

// Rank r's gradient of pass p of step s: the model's noise seeded by (s * passes + p, r).
void pass_gradients(Model& model, DistributedOptimizer& opt, int rank, std::int64_t step, int pass,
                    int passes, float scale) {
  model.gradients(opt, rank, step * passes + pass, scale);
}

// `accumulated` takes `passes` backward passes per step; `reference` one, of the passes' mean
// computed as the accumulation does ((last + sum of the others) x 1/passes). With passes a power
// of two the mean is exact either way, so the parameters must be bitwise equal after every step,
// as must the gradient bytes each sent; gradient_ready per parameter (the overlapped path) or
// none (all at step()).
TEST_P(AccumulationEqualsTheMean, BitwiseForEveryStrategy) {
  const auto& [c, passes, ready_per_parameter] = GetParam();
  const auto comm_a = world(), comm_b = world();
  const int rank = comm_a->rank();
  Settings with_passes = c.settings;
  const std::string n = std::to_string(passes);
  with_passes.push_back({keys::kAccumulationSteps, n.c_str()});
  Model accumulated_model, reference_model;
  // "big" as a 60 x 50 matrix, for powersgd (the others do not read the rows).
  const auto specs = [](Model& m) {
    std::vector<ParameterSpec> out = m.specs();
    out[0].rows = 60;
    return out;
  };
  DistributedOptimizer accumulated(comm_a, momentum_sgd(), specs(accumulated_model),
                                   settings(with_passes));
  DistributedOptimizer reference(comm_b, momentum_sgd(), specs(reference_model),
                                 settings(c.settings));
  ASSERT_EQ(accumulated.accumulation_steps(), passes);
  for (std::int64_t step = 0; step < 12; ++step) {
    const float scale = accumulated.loss_scale();
    ASSERT_EQ(scale, reference.loss_scale()) << step;
    std::vector<float> sum(Model::kTotal, 0.0f), last;
    for (int pass = 0; pass < passes; ++pass) {
      ASSERT_EQ(accumulated.backward_pass(), pass);
      // The same noise for both, pulled towards each one's own (equal) parameters.
      pass_gradients(accumulated_model, accumulated, rank, step, pass, passes, scale);
      // This pass's gradients as backward wrote them (gradient_ready folds the sum into them in
      // the last pass, and releases them to the exchange).
      const float* g0 = accumulated.gradient(0);
      const float* g1 = accumulated.gradient(1);
      std::vector<float> g(g0, g0 + Model::kBig);
      g.insert(g.end(), g1, g1 + Model::kSmall);
      if (ready_per_parameter) {
        accumulated.gradient_ready(1);
        accumulated.gradient_ready(0);
      }
      if (pass + 1 < passes) {
        for (std::size_t i = 0; i < g.size(); ++i) sum[i] = pass == 0 ? g[i] : sum[i] + g[i];
      } else {
        last = g;
      }
      accumulated.report_loss(1.0 + pass);
      accumulated.step();
      EXPECT_EQ(accumulated.steps(), pass + 1 < passes ? step : step + 1);
    }
    float* r0 = reference.gradient(0);
    float* r1 = reference.gradient(1);
    const float inv = 1.0f / static_cast<float>(passes);
    for (std::size_t i = 0; i < Model::kTotal; ++i) {
      const float mean = (last[i] + (passes > 1 ? sum[i] : 0.0f)) * inv;
      (i < Model::kBig ? r0[i] : r1[i - Model::kBig]) = passes > 1 ? mean : last[i];
    }
    reference.report_loss(1.0 + (passes - 1) / 2.0);  // the passes' mean loss
    reference.step();
    ASSERT_EQ(accumulated_model.flat(), reference_model.flat()) << "step " << step;
    ASSERT_EQ(comm_a->counters()[TrafficKind::kGradient].sent_bytes,
              comm_b->counters()[TrafficKind::kGradient].sent_bytes)
        << "step " << step;
    ASSERT_EQ(comm_a->counters()[TrafficKind::kParameter].sent_bytes,
              comm_b->counters()[TrafficKind::kParameter].sent_bytes)
        << "step " << step;
  }
  EXPECT_EQ(accumulated.steps(), 12);
  if (accumulated.loss_scaler() != nullptr) {
    EXPECT_EQ(accumulated.loss_scaler()->history().size(),
              reference.loss_scaler()->history().size());
  }
}

const Settings kSparse = {{keys::kDgcSparsity, "0.9"}, {keys::kDgcMinNumel, "1000"}};

INSTANTIATE_TEST_SUITE_P(
    Strategies, AccumulationEqualsTheMean,
    ::testing::Combine(
        ::testing::Values(Case{"dense", {}}, Case{"fp16", {{keys::kCompressor, "fp16"}}},
                          Case{"topk", with({{keys::kCompressor, "topk"}}, kSparse)},
                          Case{"dgc", with({{keys::kCompressor, "dgc"},
                                            {keys::kDgcRampupSteps, "6"},
                                            {keys::kDgcSparsity, "0.75,0.9"}},
                                           {{keys::kDgcMinNumel, "1000"}})},
                          Case{"powersgd", {{keys::kCompressor, "powersgd"}}},
                          Case{"local_sgd", {{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "3"}}},
                          Case{"diloco_topk",
                               {{keys::kSync, "diloco"},
                                {keys::kLocalSgdK, "3"},
                                {keys::kCompressor, "topk"},
                                {keys::kDgcSparsity, "0.9"}}},
                          Case{"adaptive_local_sgd",
                               {{keys::kSync, "adaptive_local_sgd"}, {keys::kAdaptiveInitK, "2"}}},
                          Case{"amp",
                               {{keys::kAmp, "1"},
                                {keys::kAmpInitScale, "1024"},
                                {keys::kAmpGrowthInterval, "3"}}}),
        ::testing::Values(1, 2, 4), ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_passes" +
             std::to_string(std::get<1>(info.param)) +
             (std::get<2>(info.param) ? "_ready" : "_at_step");
    });

// What would lose the partial sum, or a pass's gradients, is refused with the pass named.
TEST(Accumulation, RefusesWhatWouldLoseThePartialSum) {
  const auto comm = world();
  Model model;
  DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                           settings({{keys::kAccumulationSteps, "3"}}));
  const auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::logic_error& e) {
      return std::string(e.what());
    }
    return std::string("(no std::logic_error)");
  };
  model.gradients(opt, comm->rank(), 0);
  opt.step();  // pass 1 of 3 ends
  EXPECT_EQ(opt.backward_pass(), 1);
  std::stringstream state;
  EXPECT_NE(message([&] {
              opt.save_state(state);
            }).find("save_state: called in backward pass 2 of 3 (GRADWIRE_ACCUMULATION_STEPS)"),
            std::string::npos);
  EXPECT_NE(message([&] { opt.synchronize_gradients(); }).find("before the last"),
            std::string::npos);
  EXPECT_NE(message([&] { opt.synchronize_parameters(); }).find("inside an optimizer step"),
            std::string::npos);
  opt.gradient_ready(0);
  EXPECT_NE(message([&] { opt.gradient_ready(0); }).find("twice in step 0, backward pass 2 of 3"),
            std::string::npos);
  EXPECT_NE(message([&] { opt.step(); })
                .find("step 0, backward pass 2 of 3 (GRADWIRE_ACCUMULATION_STEPS): "
                      "gradient_ready was not called for: small"),
            std::string::npos);
}

// The timeline marks each pass but the last on the program's track, in the optimizer step it
// belongs to.
TEST(Accumulation, TheTimelineShowsThePasses) {
  const auto comm = world();
  Model model;
  const std::string stem =
      ::testing::TempDir() + "accumulation_timeline_n" + std::to_string(comm->size()) + "_";
  {
    DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                             settings({{keys::kAccumulationSteps, "3"},
                                       {keys::kTimeline, (stem + "{rank}.json").c_str()}}));
    for (int pass = 0; pass < 6; ++pass) {
      model.gradients(opt, comm->rank(), pass);
      opt.step();
    }
  }
  const std::string file = stem + std::to_string(comm->rank()) + ".json";
  const std::string trace = testing::read_text(file);
  ASSERT_FALSE(trace.empty()) << file;
  for (const char* expected :
       {R"("name":"backward pass 1 of 3","ph":"i")", R"("name":"backward pass 2 of 3","ph":"i")",
        R"("name":"step 0","ph":"X")", R"("name":"step 1","ph":"X")"}) {
    EXPECT_NE(trace.find(expected), std::string::npos) << expected;
  }
  EXPECT_EQ(trace.find("backward pass 3 of 3"), std::string::npos);
  EXPECT_EQ(trace.find(R"("name":"step 2")"), std::string::npos);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace gw
