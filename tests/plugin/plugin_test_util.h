// Helpers shared by the plugin's MPI tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "plugin/comm/mpi/mpi_runtime.h"
#include "plugin/config/params.h"
#include "plugin/distributed_optimizer.h"
#include "reference_trainer/optim/sgd.h"

namespace gw::testing {

using Settings = std::vector<std::pair<const char*, const char*>>;

// Options that ignore the process environment: log level warn, then `values` in order.
inline DistributedOptimizerOptions settings(const Settings& values) {
  DistributedOptimizerOptions o;
  o.read_environment = false;
  o.config.set(config::keys::kLogLevel, "warn");
  for (const auto& [k, v] : values) o.config.set(k, v);
  return o;
}

// The reference trainer's SGD with momentum 0.9 (lr 0.05): an inner optimizer dgc accepts.
inline std::unique_ptr<trainer::Sgd> momentum_sgd() {
  trainer::Sgd::Options o;
  o.lr = 0.05;
  o.momentum = 0.9;
  return std::make_unique<trainer::Sgd>(o);
}

// The whole of a text file ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The MPI world behind a byte-counting communicator.
inline std::shared_ptr<CountingCommunicator> world() {
  return std::make_shared<CountingCommunicator>(make_mpi_world_communicator());
}

// A parameter spec p0, p1, ... for each of `values` (which must outlive the specs).
inline std::vector<ParameterSpec> specs_of(std::vector<std::vector<float>>& values) {
  std::vector<ParameterSpec> specs;
  for (std::size_t i = 0; i < values.size(); ++i) {
    specs.push_back({"p" + std::to_string(i), values[i].data(), values[i].size()});
  }
  return specs;
}

// Two parameters, one of 3000 elements (sparsified once GRADWIRE_DGC_MIN_NUMEL is 1000) and one of
// 40 (always dense).
struct TwoTensorModel {
  static constexpr std::size_t kBig = 3000, kSmall = 40, kTotal = kBig + kSmall;
  std::vector<float> big = std::vector<float>(kBig, 0.5f);
  std::vector<float> small = std::vector<float>(kSmall, -0.25f);
  // What the gradient adds to the noise at w: a pull towards zero, so errors would compound.
  float (*pull)(float) = [](float w) { return 0.3f * w; };

  std::vector<ParameterSpec> specs() {
    return {{"big", big.data(), big.size()}, {"small", small.data(), small.size()}};
  }
  std::vector<float> flat() const {
    std::vector<float> out(big);
    out.insert(out.end(), small.begin(), small.end());
    return out;
  }
  void set(const std::vector<float>& flat) {
    std::copy(flat.begin(), flat.begin() + kBig, big.begin());
    std::copy(flat.begin() + kBig, flat.end(), small.begin());
  }
  // Rank r's gradient at `step`: N(0, 1) noise seeded by (step, rank) plus pull(w), times `scale`
  // (what backward of a loss scaled for AMP gives).
  void gradients(DistributedOptimizer& opt, int rank, std::int64_t step, float scale = 1.0f) {
    std::mt19937 rng(static_cast<unsigned>(1000 * step + rank));
    std::normal_distribution<float> noise(0.0f, 1.0f);
    float* g = opt.gradient(0);
    for (std::size_t i = 0; i < big.size(); ++i) g[i] = (noise(rng) + pull(big[i])) * scale;
    g = opt.gradient(1);
    for (std::size_t i = 0; i < small.size(); ++i) g[i] = (noise(rng) + pull(small[i])) * scale;
  }
};

// The inner optimizer of tests that look only at the exchange: nothing to update, and it accepts
// the gradient scale, so step() leaves the sum over ranks in the gradients.
class NoUpdate : public Optimizer {
 public:
  std::string name() const override { return "none"; }
  void step(const std::vector<ParameterView>&) override {}
  bool accepts_gradient_scale() const override { return true; }
  double learning_rate() const override { return 0; }
  void set_learning_rate(double) override {}
  void save_state(std::ostream&) const override {}
  void load_state(std::istream&) override {}
};

// The tests' SGD: lr 0.05.
inline std::unique_ptr<trainer::Sgd> sgd(double momentum = 0.0, double weight_decay = 0.0) {
  trainer::Sgd::Options o;
  o.lr = 0.05;
  o.momentum = momentum;
  o.weight_decay = weight_decay;
  return std::make_unique<trainer::Sgd>(o);
}

// `base` with `more` appended.
inline Settings with(Settings base, const Settings& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// Every rank's copy of `values`, rank after rank (through the uncounted inner communicator).
inline std::vector<float> gather(CountingCommunicator& comm, const std::vector<float>& values) {
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<float> all(values.size() * n);
  comm.inner().allgatherv(values.data(), values.size(), all.data(),
                          std::vector<std::size_t>(n, values.size()), DataType::kFloat32,
                          TrafficKind::kControl);
  return all;
}

// Whether every rank holds bitwise the same `values`.
inline bool identical_on_all_ranks(CountingCommunicator& comm, const std::vector<float>& values) {
  const std::vector<float> all = gather(comm, values);
  for (int r = 1; r < comm.size(); ++r) {
    if (std::memcmp(all.data(), all.data() + r * values.size(), values.size() * sizeof(float)) !=
        0) {
      return false;
    }
  }
  return true;
}

}  // namespace gw::testing
