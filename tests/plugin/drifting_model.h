// The local SGD and DiLoCo tests' model: the two-tensor model with a nonlinear pull towards zero,
// so ranks drift apart between averaging points and errors would compound (with a gradient linear
// in w, averaging would commute with plain SGD's steps). "big" is a 60 x 50 matrix, so that
// powersgd sends it as factors. And the loop that trains it, and the tests' Adam.
#pragma once

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin_test_util.h"
#include "reference_trainer/optim/adam.h"

namespace gw::testing {

struct DriftingModel : TwoTensorModel {
  DriftingModel() {
    pull = [](float w) { return 0.3f * w + 0.5f * w * w * w; };
  }
  std::vector<ParameterSpec> specs() {
    std::vector<ParameterSpec> s = TwoTensorModel::specs();
    s[0].rows = 60;
    return s;
  }
};

// Steps [from, to): each rank's gradients, then step().
inline void train(DriftingModel& model, DistributedOptimizer& opt, int rank, std::int64_t from,
                  std::int64_t to) {
  for (std::int64_t step = from; step < to; ++step) {
    model.gradients(opt, rank, step);
    opt.step();
  }
}

// Constructing an optimizer under `s` throws config::ConfigError containing `needle`.
inline void expect_config_error(const std::shared_ptr<CountingCommunicator>& comm,
                                const Settings& s, const std::string& needle) {
  DriftingModel model;
  try {
    DistributedOptimizer opt(comm, sgd(0.9), model.specs(), settings(s));
    ADD_FAILURE() << "no error for " << needle;
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// `to` refuses `from`'s checkpoint (std::runtime_error) and is left as it was.
inline void expect_checkpoint_refused(const DistributedOptimizer& from, DistributedOptimizer& to) {
  std::ostringstream saved, before, after;
  from.save_state(saved);
  to.save_state(before);
  std::istringstream in(saved.str());
  EXPECT_THROW(to.load_state(in), std::runtime_error);
  to.save_state(after);
  EXPECT_EQ(before.str(), after.str());
}

// The tests' Adam: lr 1e-3.
inline std::unique_ptr<Optimizer> adam() {
  trainer::Adam::Options a;
  a.lr = 1e-3;
  return std::make_unique<trainer::Adam>(a);
}

}  // namespace gw::testing
