// GRADWIRE_COMPRESSOR=auto through DistributedOptimizer under a real mpirun: every rank takes the
// same choice whatever it measured, the chosen compressor runs exactly as the fixed one, a
// checkpoint carries the choice, the check after the decision, and the configuration errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "plugin/auto/cost_model.h"
#include "plugin_test_util.h"
#include "../common/temp_dir.h"
#include "reference_trainer/optim/sgd.h"
#include "sync_policies/sync_policy.h"

namespace gw {
namespace {

namespace keys = config::keys;
using Model = testing::TwoTensorModel;
using testing::settings;
using testing::world;

using testing::momentum_sgd;

std::size_t index_of(const AutoDecision& d, const std::string& name) {
  for (std::size_t i = 0; i < d.candidates.size(); ++i) {
    if (d.candidates[i].name == name) return i;
  }
  ADD_FAILURE() << "no candidate " << name;
  return 0;
}

// Every rank's value of x, in rank order.
std::vector<double> gathered(Communicator& comm, double x) {
  std::vector<double> all(static_cast<std::size_t>(comm.size()));
  comm.allgatherv(&x, 1, all.data(), std::vector<std::size_t>(all.size(), 1), DataType::kFloat64,
                  TrafficKind::kControl);
  return all;
}

TEST(Auto, EveryRankTakesTheSameChoiceWhateverItMeasured) {
  const auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  Model model;
  auto options = settings({{keys::kCompressor, "auto"}, {keys::kAutoCandidates, "none,fp16,dgc"}});
  // Each rank sees another world: alone, rank 0 would take dgc (few bytes, cheap), rank 1 fp16
  // (its dgc is slow), rank 2 dgc again, rank 3 none (its fp16 and dgc are both slow). The
  // slowest rank's figures decide: dgc and fp16 are both slow somewhere, so dense.
  options.inject_auto_measurements = [rank](AutoStrategy::Measured& m) {
    m.step.compute_s = 0.001 * (rank + 1);
    m.step.overlap_s = 0.0;
    // Bytes and a slow codec far beyond what any link the probes find could change: 8 GB and
    // 4 GB a step, a codec of 1e6 s.
    m.bytes_per_step = {8e9, 4e9, 1e4};
    m.codec_s = {0.0, rank == 2 || rank == 3 ? 1e6 : 0.001, rank == 1 || rank == 3 ? 1e6 : 0.001};
    // Priced from the codecs alone: no timed exchange, no last bucket.
    m.exchange_s.assign(3, -1.0);
    m.last_exchange_s.assign(3, -1.0);
    m.last_codec_s.assign(3, 0.0);
    m.last_bytes.assign(3, 0.0);
  };
  DistributedOptimizer opt(comm, momentum_sgd(), model.specs(), options);
  EXPECT_EQ(opt.auto_decision(), nullptr);
  model.gradients(opt, rank, 0);
  opt.step();
  const AutoDecision* d = opt.auto_decision();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->step, 0);
  if (n == 1) {
    EXPECT_EQ(d->how, "one rank");
    EXPECT_EQ(d->chosen, AutoOption::kNone);  // nothing to exchange: no link to save, codecs cost
    return;
  }
  EXPECT_EQ(d->how, "measured");
  // The inputs are the maximum over the ranks, on every rank.
  EXPECT_DOUBLE_EQ(d->inputs.compute_s, 0.001 * n);
  EXPECT_DOUBLE_EQ(d->candidates[index_of(*d, "fp16")].codec_s, n > 2 ? 1e6 : 0.001);
  EXPECT_DOUBLE_EQ(d->candidates[index_of(*d, "dgc")].codec_s, 1e6);
  // The choice is what the cost model gives for them, and the same everywhere.
  const autotune::Choice expected =
      autotune::choose(d->link, d->inputs, d->candidates, d->max_accuracy_drop_points);
  EXPECT_EQ(d->choice.chosen, expected.chosen);
  const std::string want = n > 2 ? "none" : "fp16";
  EXPECT_EQ(to_string(d->chosen), want);
  EXPECT_EQ(opt.compression_stats().compressor, want);
  for (double c : gathered(*comm, static_cast<double>(d->choice.chosen))) {
    EXPECT_EQ(c, static_cast<double>(d->choice.chosen));
  }
  // The link was probed: latency and at least one probe, control traffic only.
  EXPECT_FALSE(d->probes.empty());
  EXPECT_GT(d->probe_bytes, 0u);
  EXPECT_GT(d->probe_collectives, 0);
  EXPECT_GT(d->link.latency_s, 0.0);
  // The small model's exchanges are cheap: each candidate's was run for real unless the probes
  // found a link too slow for it (the injection above then set them aside).
  EXPECT_LE(d->trial_exchanges, 3 * (1 + kTrialExchanges));
  EXPECT_EQ(d->trial_exchanges % (1 + kTrialExchanges), 0);
}

TEST(Auto, TimesARealExchangeOfEveryBucketWhereItIsCheap) {
  const auto comm = world();
  if (comm->size() == 1) GTEST_SKIP() << "one rank exchanges nothing";
  Model model;
  DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                           settings({{keys::kCompressor, "auto"},
                                     {keys::kAutoCandidates, "none,dgc"},
                                     {keys::kFusionThresholdMb, "0"}}));
  model.gradients(opt, comm->rank(), 0);
  opt.step();
  const AutoDecision& d = *opt.auto_decision();
  std::int64_t timed = 0;
  for (const autotune::Candidate& c : d.candidates) {
    // Run where its bytes take at most kTrialExchangeSeconds on the link the probes found (a few
    // kB over shared memory: always, unless the machine is loaded enough to slow the probes).
    ASSERT_EQ(c.exchange_measured(),
              c.bytes_per_step * d.link.seconds_per_byte <= kTrialExchangeSeconds)
        << c.name;
    if (!c.exchange_measured()) continue;
    ++timed;
    EXPECT_GT(c.exchange_s, 0.0) << c.name;
    // One bucket per tensor: the last bucket is a part of the step, no more.
    EXPECT_GT(c.last_exchange_s, 0.0) << c.name;
    EXPECT_LT(c.last_exchange_s, c.exchange_s) << c.name;
    EXPECT_GT(c.last_bytes, 0.0) << c.name;
    EXPECT_LT(c.last_bytes, c.bytes_per_step) << c.name;
  }
  // Control traffic: no gradient byte left before step 0's own exchange.
  const TrafficCounters& t = opt.communicator().counters();
  EXPECT_GT(t[TrafficKind::kControl].sent_bytes, d.probe_bytes);
  EXPECT_EQ(d.trial_exchanges, timed * (1 + kTrialExchanges));
  EXPECT_TRUE(d.inputs.backward_on_host);
}

TEST(Auto, ItsFirstStepIsInTheTimeline) {
  const auto comm = world();
  Model model;
  // Named by the world size: the test runs at several sizes at once.
  const std::string stem =
      ::testing::TempDir() + "auto_timeline_n" + std::to_string(comm->size()) + "_";
  const std::string path = stem + "{rank}.json";
  {
    DistributedOptimizer opt(
        comm, momentum_sgd(), model.specs(),
        settings({{keys::kCompressor, "auto"}, {keys::kTimeline, path.c_str()}}));
    for (int step = 0; step < 2; ++step) {
      model.gradients(opt, comm->rank(), step);
      opt.step();
    }
  }
  const std::string file = stem + std::to_string(comm->rank()) + ".json";
  // Step 0's buckets ran after the decision: their release and their exchange are both traced.
  const std::string trace = testing::read_text(file);
  ASSERT_FALSE(trace.empty()) << file;
  EXPECT_NE(trace.find(R"("name":"encode","ph":"X")"), std::string::npos);
  EXPECT_NE(trace.find(R"("name":"queued","ph":"X")"), std::string::npos);
  EXPECT_NE(trace.find(R"("args":{"step":0})"), std::string::npos);
  std::remove(file.c_str());
}

TEST(Auto, OverTwoLevelsItCountsTheBytesBetweenNodes) {
  const auto flat_comm = world();
  if (flat_comm->size() != 4) GTEST_SKIP() << "2 nodes of 2 ranks need 4 ranks";
  config::Config cfg;
  cfg.set(keys::kHierarchical, "1");
  cfg.set(keys::kHierarchyLocalSize, "2");
  const auto levels_comm = std::make_shared<CountingCommunicator>(make_mpi_world_communicator(cfg));
  const auto options = [] {
    return settings({{keys::kCompressor, "auto"}, {keys::kAutoCandidates, "none,dgc"}});
  };
  const auto decide = [&](const std::shared_ptr<CountingCommunicator>& comm) {
    Model model;
    DistributedOptimizer opt(comm, momentum_sgd(), model.specs(), options());
    model.gradients(opt, comm->rank(), 0);
    opt.step();
    return *opt.auto_decision();
  };
  const AutoDecision flat = decide(flat_comm);
  const AutoDecision two = decide(levels_comm);
  EXPECT_FALSE(flat.bytes_across_nodes);
  EXPECT_TRUE(two.bytes_across_nodes);
  // Dense: the whole gradient's ring over 4 ranks, against each local rank's half across 2 nodes
  // (Note [The auto cost model]); the maximum over the ranks.
  const std::size_t numel = Model::kTotal;
  std::uint64_t flat_dense = 0;
  for (int r = 0; r < 4; ++r) {
    flat_dense = std::max(flat_dense, CountingCommunicator::allreduce_bytes(numel, 4, r, 4));
  }
  std::uint64_t cross_dense = 0;
  for (int r = 0; r < 2; ++r) {
    cross_dense =
        std::max(cross_dense, CountingCommunicator::allreduce_bytes((numel + 1) / 2, 4, r, 2));
  }
  EXPECT_DOUBLE_EQ(flat.candidates[index_of(flat, "none")].bytes_per_step,
                   static_cast<double>(flat_dense));
  EXPECT_DOUBLE_EQ(two.candidates[index_of(two, "none")].bytes_per_step,
                   static_cast<double>(cross_dense));
  // dgc's split: 3 W (n - 1) / n flat, 3 W (N - 1) / (N L) over two levels, on the same gradients.
  const double flat_dgc = flat.candidates[index_of(flat, "dgc")].bytes_per_step;
  const double two_dgc = two.candidates[index_of(two, "dgc")].bytes_per_step;
  EXPECT_GT(flat_dgc, 0.0);
  EXPECT_NEAR(two_dgc / flat_dgc, (1.0 / 4.0) / (3.0 / 4.0), 1e-9);
  // Its counts and data at each of four stages over two levels, against two stages flat.
  EXPECT_EQ(two.candidates[index_of(two, "dgc")].collectives_per_step -
                flat.candidates[index_of(flat, "dgc")].collectives_per_step,
            4.0);
}

TEST(Auto, TheChosenCompressorRunsExactlyAsTheFixedOne) {
  const auto comm = world();
  const int rank = comm->rank();
  Model fixed_model, auto_model;
  DistributedOptimizer fixed(comm, momentum_sgd(), fixed_model.specs(),
                             settings({{keys::kCompressor, "dgc"}, {keys::kDgcSparsity, "0.9"}}));
  DistributedOptimizer chosen(comm, momentum_sgd(), auto_model.specs(),
                              settings({{keys::kCompressor, "auto"},
                                        {keys::kAutoCandidates, "dgc"},
                                        {keys::kDgcSparsity, "0.9"}}));
  for (int step = 0; step < 12; ++step) {
    fixed_model.gradients(fixed, rank, step);
    fixed.step();
    auto_model.gradients(chosen, rank, step);
    chosen.step();
  }
  ASSERT_NE(chosen.auto_decision(), nullptr);
  EXPECT_EQ(chosen.auto_decision()->chosen, AutoOption::kDgc);
  EXPECT_TRUE(static_cast<trainer::Sgd&>(chosen.inner()).momentum_released());
  EXPECT_EQ(auto_model.flat(), fixed_model.flat());  // bit for bit
  EXPECT_EQ(chosen.compression_stats().sparse_exchanges,
            fixed.compression_stats().sparse_exchanges);
  EXPECT_EQ(chosen.communicator().counters()[TrafficKind::kGradient].sent_bytes,
            fixed.communicator().counters()[TrafficKind::kGradient].sent_bytes);
}

TEST(Auto, ACheckpointCarriesTheChoiceAndTheRunContinuesExactly) {
  const auto comm = world();
  const int rank = comm->rank();
  const auto options = [] {
    return settings({{keys::kCompressor, "auto"},
                     {keys::kAutoCandidates, "fp16,dgc"},
                     {keys::kDgcSparsity, "0.9"}});
  };
  Model straight_model, resumed_model;
  DistributedOptimizer straight(comm, momentum_sgd(), straight_model.specs(), options());
  std::stringstream state;
  {
    // Nothing chosen yet: the state says so, and a run loaded from it decides itself.
    std::stringstream early;
    straight.save_state(early);
    EXPECT_EQ(early.str().rfind("gradwire-auto - 0\n", 0), 0u);
  }
  for (int step = 0; step < 6; ++step) {
    straight_model.gradients(straight, rank, step);
    straight.step();
  }
  straight.save_state(state);
  const std::vector<float> at_save = straight_model.flat();
  for (int step = 6; step < 12; ++step) {
    straight_model.gradients(straight, rank, step);
    straight.step();
  }
  resumed_model.set(at_save);
  auto resumed_options = options();
  resumed_options.config.set(keys::kBroadcastParameters, "0");
  DistributedOptimizer resumed(comm, momentum_sgd(), resumed_model.specs(), resumed_options);
  resumed.load_state(state);
  ASSERT_NE(resumed.auto_decision(), nullptr);
  EXPECT_EQ(resumed.auto_decision()->how, "restored from a checkpoint");
  EXPECT_EQ(resumed.auto_decision()->chosen, straight.auto_decision()->chosen);
  EXPECT_EQ(resumed.compression_stats().compressor, to_string(straight.auto_decision()->chosen));
  for (int step = 6; step < 12; ++step) {
    resumed_model.gradients(resumed, rank, step);
    resumed.step();
  }
  EXPECT_EQ(resumed_model.flat(), straight_model.flat());
  // A state without the choice (a run with a fixed compressor) is refused, not misread.
  Model other_model;
  DistributedOptimizer fixed(comm, momentum_sgd(), other_model.specs(),
                             settings({{keys::kCompressor, "dgc"}}));
  std::stringstream fixed_state;
  fixed.save_state(fixed_state);
  Model third_model;
  DistributedOptimizer third(comm, momentum_sgd(), third_model.specs(), options());
  EXPECT_THROW(third.load_state(fixed_state), std::runtime_error);
}

TEST(Auto, ThePredictionIsCheckedOverTheStepsAfterTheDecision) {
  const auto comm = world();
  const int rank = comm->rank();
  Model model;
  DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                           settings({{keys::kCompressor, "auto"}, {keys::kAutoCheckSteps, "5"}}));
  for (int step = 0; step < 5; ++step) {
    model.gradients(opt, rank, step);
    opt.step();
    EXPECT_FALSE(opt.auto_decision()->checked) << step;  // step 0 decided; 4 checked steps
  }
  model.gradients(opt, rank, 5);
  opt.step();
  const AutoDecision& d = *opt.auto_decision();
  EXPECT_TRUE(d.checked);
  EXPECT_EQ(d.check_steps, 5);
  EXPECT_GT(d.measured_step_s, 0.0);
  EXPECT_GT(d.predicted_step_s, 0.0);
  EXPECT_GT(d.check_inputs.update_s, 0.0);
}

TEST(Auto, RefusesWhatItCannotChooseBeforeAnythingIsSent) {
  const auto comm = world();
  const auto refused = [&](testing::Settings values, const std::string& part) {
    Model model;
    try {
      DistributedOptimizer opt(comm, momentum_sgd(), model.specs(), settings(values));
      ADD_FAILURE() << "accepted; expected an error naming: " << part;
    } catch (const config::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refused({{keys::kCompressor, "auto"}, {keys::kAutoCandidates, "dgc,zip"}},
          "'zip' is nothing auto can choose");
  // The model registers no rows, so powersgd cannot run; topk lost more than the bound.
  refused({{keys::kCompressor, "auto"}, {keys::kAutoCandidates, "powersgd"}},
          "powersgd: no parameter was registered with its rows");
  refused({{keys::kCompressor, "auto"}, {keys::kAutoCandidates, "topk"}},
          "GRADWIRE_COMPRESSOR=auto has no candidate it may choose; topk: lost");
  refused({{keys::kCompressor, "auto"}, {keys::kAmp, "1"}}, "GRADWIRE_AMP=1");
  refused({{keys::kCompressor, "auto"}, {keys::kSync, "local_sgd"}},
          "GRADWIRE_SYNC=local_sgd cannot be combined with GRADWIRE_COMPRESSOR=auto");
  // Local SGD is a candidate only when the sync policy is auto's to choose too.
  refused({{keys::kCompressor, "auto"}, {keys::kAutoCandidates, "none,local_sgd"}},
          "names local_sgd, which auto chooses only under GRADWIRE_SYNC=auto");
  refused({{keys::kCompressor, "dgc"}, {keys::kSync, "auto"}},
          "GRADWIRE_SYNC=auto lets GRADWIRE_COMPRESSOR=auto choose local_sgd");
  refused({{keys::kCompressor, "auto"}, {keys::kSync, "auto"}, {keys::kLocalSgdBeginStep, "5"}},
          "GRADWIRE_LOCAL_SGD_BEGIN_STEP=5 has no effect under GRADWIRE_SYNC=auto");
}

// The accuracy costs are data (Note [Accuracy costs as data]): a file of a program's own figures
// replaces gradwire's, on every rank, before anything is sent.
TEST(Auto, AnAccuracyFileDecidesWhatMayBeChosen) {
  const auto comm = world();
  testing::TempDir dir("gw_auto_accuracy");
  const std::string file = dir.file("accuracy.json");
  std::ofstream(file) << R"({"entries": [{"candidate": "dgc", "parameter": 0, "drop_points": 5,
                          "seeds": 1, "strategy": "mine"}]})";
  Model model;
  try {
    DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                             settings({{keys::kCompressor, "auto"},
                                       {keys::kAutoCandidates, "dgc"},
                                       {keys::kAutoAccuracyFile, file.c_str()}}));
    ADD_FAILURE() << "dgc was allowed with a 5-point loss";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("dgc: lost 5.0"), std::string::npos) << e.what();
  }
  // Within the bound, the same file's dgc may be chosen (one rank: the first eligible).
  std::ofstream(file) << R"({"entries": [{"candidate": "dgc", "parameter": 0, "drop_points": 0.1,
                          "seeds": 1, "strategy": "mine"}]})";
  DistributedOptimizer opt(comm, momentum_sgd(), model.specs(),
                           settings({{keys::kCompressor, "auto"},
                                     {keys::kAutoCandidates, "dgc"},
                                     {keys::kAutoAccuracyFile, file.c_str()}}));
  EXPECT_EQ(opt.auto_decision(), nullptr);  // it decides at step 0
  std::ofstream(file) << "{";
  EXPECT_THROW(DistributedOptimizer(comm, momentum_sgd(), model.specs(),
                                    settings({{keys::kCompressor, "auto"},
                                              {keys::kAutoAccuracyFile, file.c_str()}})),
               config::ConfigError);
}

TEST(Auto, UnderSyncAutoLocalSgdIsACandidateAndRunsExactlyAsTheFixedOne) {
  const auto comm = world();
  const int rank = comm->rank();
  const auto options = [] {
    auto o = settings({{keys::kCompressor, "auto"},
                       {keys::kSync, "auto"},
                       {keys::kLocalSgdK, "4"},
                       {keys::kAutoCandidates, "none,local_sgd"}});
    // One exchange of the parameters costs what one of the gradients does, 10 s; local SGD pays
    // it every 4th step only.
    o.inject_auto_measurements = [](AutoStrategy::Measured& m) {
      m.step = {};
      m.codec_s.assign(2, 0.0);
      m.bytes_per_step.assign(2, 1e3);
      m.last_codec_s.assign(2, 0.0);
      m.last_bytes.assign(2, 5e2);
      m.exchange_s.assign(2, 10.0);
      m.last_exchange_s.assign(2, 5.0);
    };
    return o;
  };
  Model fixed_model, auto_model, resumed_model;
  DistributedOptimizer fixed(comm, momentum_sgd(), fixed_model.specs(),
                             settings({{keys::kSync, "local_sgd"}, {keys::kLocalSgdK, "4"}}));
  DistributedOptimizer chosen(comm, momentum_sgd(), auto_model.specs(), options());
  std::stringstream state;
  std::vector<float> at_save;
  for (int step = 0; step < 12; ++step) {
    fixed_model.gradients(fixed, rank, step);
    fixed.step();
    auto_model.gradients(chosen, rank, step);
    chosen.step();
    if (step == 5) {  // between two averagings (after steps 3 and 7)
      chosen.save_state(state);
      at_save = auto_model.flat();
    }
  }
  const AutoDecision& d = *chosen.auto_decision();
  EXPECT_EQ(d.chosen, AutoOption::kLocalSgd);
  const autotune::Candidate& local = d.candidates[index_of(d, "local_sgd")];
  EXPECT_EQ(local.period, 4.0);
  // Its averaging is dense's exchange: measured once, for none, not again for local_sgd.
  EXPECT_LE(d.trial_exchanges, 1 + kTrialExchanges);
  EXPECT_DOUBLE_EQ(local.exchange_s, 2.5);  // one averaging's 10 s over 4 steps
  // Within what a token bucket's burst could give back of 1 kB.
  EXPECT_NEAR(d.choice.predictions[index_of(d, "local_sgd")].step_s, 2.5, 1e-3);
  EXPECT_NEAR(d.choice.predictions[index_of(d, "none")].step_s, 10.0, 1e-3);
  EXPECT_EQ(chosen.sync_policy().name(), fixed.sync_policy().name());
  EXPECT_EQ(chosen.compression_stats().compressor, "none");
  EXPECT_EQ(auto_model.flat(), fixed_model.flat());  // bit for bit
  EXPECT_EQ(chosen.sync_stats().parameter_exchanges, 3);
  EXPECT_EQ(chosen.sync_stats().gradient_exchanges, 0);
  EXPECT_EQ(chosen.communicator().counters()[TrafficKind::kGradient].sent_bytes, 0u);
  EXPECT_EQ(chosen.communicator().counters()[TrafficKind::kParameter].sent_bytes,
            fixed.communicator().counters()[TrafficKind::kParameter].sent_bytes);
  // A checkpoint between two averagings resumes local SGD where it was.
  resumed_model.set(at_save);
  auto resumed_options = options();
  resumed_options.config.set(keys::kBroadcastParameters, "0");
  DistributedOptimizer resumed(comm, momentum_sgd(), resumed_model.specs(), resumed_options);
  resumed.load_state(state);
  EXPECT_EQ(resumed.auto_decision()->chosen, AutoOption::kLocalSgd);
  for (int step = 6; step < 12; ++step) {
    resumed_model.gradients(resumed, rank, step);
    resumed.step();
  }
  EXPECT_EQ(resumed_model.flat(), auto_model.flat());
  EXPECT_EQ(resumed.sync_stats().parameter_exchanges, 2);  // after steps 7 and 11
}

}  // namespace
}  // namespace gw
