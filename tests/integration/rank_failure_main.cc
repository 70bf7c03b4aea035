// A program that embeds gradwire, as a user's would, and throws on one rank (or every rank) in the
// middle of a run: in its backward pass (after some buckets are already on the engine) or inside
// step() (its inner optimizer throws). Its main is written in one of three styles, to show that
// each ends the whole job with the message (Note [Ending the job on an error]):
//   run_mpi_main  gw::run_mpi_main, as the README shows;
//   try           the MpiRuntime inside a try whose catch prints and returns 1 (a common habit);
//   uncaught      nothing catches the exception.
// tests/integration/rank_failure.sh runs it and checks the exit code, the message and the time.
//
//   rank_failure_main backward|step run_mpi_main|try|uncaught one|every
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin/comm/counting_communicator.h"
#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/config/params.h"
#include "plugin/distributed_optimizer.h"
#include "tests/plugin/plugin_test_util.h"

namespace {

constexpr int kFailStep = 3;
constexpr std::size_t kParams = 8;

enum class Where { kBackward, kStep };

bool fails_here(bool every_rank, int rank) { return every_rank || rank == 1; }

std::string failure_text(const char* where, int rank) {
  return std::string("injected failure in ") + where + " (test) on rank " + std::to_string(rank);
}

// An inner optimizer that throws from step() at kFailStep on the failing ranks.
class ThrowingSgd : public gw::Optimizer {
 public:
  ThrowingSgd(bool throws, int rank) : throws_(throws), rank_(rank) {}
  std::string name() const override { return "throwing-sgd"; }
  void step(const std::vector<gw::ParameterView>& params) override {
    if (throws_ && steps_ == kFailStep) throw std::runtime_error(failure_text("step()", rank_));
    ++steps_;
    for (const auto& p : params) {
      for (std::size_t i = 0; i < p.numel; ++i) p.value[i] -= 0.01f * p.grad[i];
    }
  }
  double learning_rate() const override { return 0.01; }
  void set_learning_rate(double) override {}
  void save_state(std::ostream&) const override {}
  void load_state(std::istream&) override {}

 private:
  bool throws_;
  int rank_;
  int steps_ = 0;
};

int train(Where where, bool every_rank) {
  auto comm = std::make_shared<gw::CountingCommunicator>(gw::make_mpi_world_communicator());
  const int rank = comm->rank();
  const bool fails = fails_here(every_rank, rank);
  std::vector<std::vector<float>> values(kParams, std::vector<float>(1000, 1.0f));
  const std::vector<gw::ParameterSpec> specs = gw::testing::specs_of(values);
  // A bucket per parameter.
  const gw::DistributedOptimizerOptions options =
      gw::testing::settings({{gw::config::keys::kFusionThresholdMb, "0"}});
  gw::DistributedOptimizer opt(
      comm, std::make_unique<ThrowingSgd>(fails && where == Where::kStep, rank), specs, options);
  for (int step = 0; step < 10; ++step) {
    // Backward, last parameter first; half-way through, the failing ranks throw, with the first
    // buckets already launched on the engine.
    for (std::size_t i = kParams; i-- > 0;) {
      float* g = opt.gradient(i);
      for (std::size_t j = 0; j < values[i].size(); ++j) g[j] = 0.5f;
      opt.gradient_ready(i);
      if (fails && where == Where::kBackward && step == kFailStep && i == kParams / 2) {
        throw std::runtime_error(failure_text("backward", rank));
      }
    }
    opt.step();
  }
  std::fprintf(stderr, "rank %d: finished without a failure\n", rank);
  return 4;  // no failure reached: rank_failure.sh expects another code
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s backward|step run_mpi_main|try|uncaught one|every\n", argv[0]);
    return 2;
  }
  const Where where = std::strcmp(argv[1], "backward") == 0 ? Where::kBackward : Where::kStep;
  const std::string style = argv[2];
  const bool every_rank = std::strcmp(argv[3], "every") == 0;
  if (style == "run_mpi_main") {
    return gw::run_mpi_main(&argc, &argv, "rank_failure_main",
                            [&] { return train(where, every_rank); });
  }
  if (style == "try") {
    try {
      gw::MpiRuntime mpi(&argc, &argv);
      return train(where, every_rank);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank_failure_main: caught: %s\n", e.what());
      return 1;
    }
  }
  gw::MpiRuntime mpi(&argc, &argv);  // uncaught: nothing catches what train() throws
  return train(where, every_rank);
}
