// The gradients the fusion and overlap benchmarks exchange through a DistributedOptimizer: a
// model's tensors over one flat array of parameters, the optimizer's options, an inner optimizer
// that does nothing, and the untimed check that the exchange sums exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "plugin/distributed_optimizer.h"
#include "plugin/optimizer.h"

namespace gw::bench {

// The benches measure the exchange; there is nothing to update. With accepts_scale, step() leaves
// the sum over ranks in the gradients (Note [Who divides by the world size]).
class NoUpdate : public gw::Optimizer {
 public:
  explicit NoUpdate(bool accepts_scale) : accepts_scale_(accepts_scale) {}
  bool accepts_gradient_scale() const override { return accepts_scale_; }
  std::string name() const override { return "none"; }
  void step(const std::vector<gw::ParameterView>&) override {}
  double learning_rate() const override { return 0; }
  void set_learning_rate(double) override {}
  void save_state(std::ostream&) const override {}
  void load_state(std::istream&) override {}

 private:
  bool accepts_scale_;
};

// A workload: tensor names and sizes in registration order, and one flat array of parameter
// values that every optimizer built on it shares (NoUpdate never writes them; the broadcast at
// construction writes rank 0's zeros).
struct Workload {
  std::string name;
  std::vector<std::string> names;
  std::vector<std::size_t> numels;
  std::vector<std::size_t> offsets;  // into the concatenation, registration order
  std::size_t total = 0;             // floats
  std::vector<float> values;

  // Offsets, total and values from names and numels.
  void finish();
  std::vector<gw::ParameterSpec> specs();
};

// ResNet-50's 161 parameter tensors (benchmarks/resnet50_shapes.h).
Workload resnet50_workload();
// Whether `w` holds the table's tensor and float counts; if not, rank 0 says so on stderr.
bool resnet50_table_ok(const Workload& w, int rank);

// Options read from nothing: log level warn, and GRADWIRE_FUSION_THRESHOLD_MB = `threshold_mb`
// unless empty (the registry's default, as a user who sets nothing gets).
gw::DistributedOptimizerOptions make_options(const std::string& threshold_mb);

// gradient_ready for every tensor in backward's order of readiness (n-1 down to 0).
void all_ready(gw::DistributedOptimizer& opt);
// Every gradient to `v`, view by view (the bench does not rely on the views being one buffer).
void fill_gradients(gw::DistributedOptimizer& opt, const Workload& w, float v);

// Untimed: rank r fills element j of the concatenated gradients with r + 1 + (j % 5); after
// `step` each must hold the sum over ranks, n(n+1)/2 + n(j % 5), exact in fp32. Returns the
// elements wrong, summed over ranks.
std::int64_t count_wrong(gw::DistributedOptimizer& opt, const Workload& w, int rank, int n,
                         const std::function<void()>& step);

}  // namespace gw::bench
