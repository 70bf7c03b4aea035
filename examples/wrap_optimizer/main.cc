// Wrapping your own optimizer with gradwire.
//
// Every rank fits the same linear model y = w . x + b to its own shard of data by least squares.
// The program's optimizer (MyMomentumSgd below) knows nothing of MPI: gradwire's
// DistributedOptimizer averages the gradients over ranks before calling it, so every rank takes
// the same step and the ranks together fit the union of their shards.
//
//   mpirun -np 4 ./wrap_optimizer
#include <gradwire/gradwire.h>

#include <cmath>
#include <cstdio>
#include <istream>
#include <ostream>
#include <random>
#include <vector>

namespace {

// The program's existing optimizer: all gradwire asks is the gw::Optimizer interface.
class MyMomentumSgd : public gw::Optimizer {
 public:
  MyMomentumSgd(double lr, double momentum) : lr_(lr), momentum_(momentum) {}
  std::string name() const override { return "my-momentum-sgd"; }
  void step(const std::vector<gw::ParameterView>& params) override {
    if (velocity_.empty()) {
      for (const auto& p : params) velocity_.emplace_back(p.numel, 0.0f);
    }
    for (std::size_t k = 0; k < params.size(); ++k) {
      for (std::size_t i = 0; i < params[k].numel; ++i) {
        velocity_[k][i] = static_cast<float>(momentum_) * velocity_[k][i] + params[k].grad[i];
        params[k].value[i] -= static_cast<float>(lr_) * velocity_[k][i];
      }
    }
  }
  double learning_rate() const override { return lr_; }
  void set_learning_rate(double lr) override { lr_ = lr; }
  void save_state(std::ostream& out) const override {
    for (const auto& v : velocity_) {
      out.write(reinterpret_cast<const char*>(v.data()),
                static_cast<std::streamsize>(v.size() * sizeof(float)));
    }
  }
  void load_state(std::istream& in) override {
    for (auto& v : velocity_) {
      in.read(reinterpret_cast<char*>(v.data()),
              static_cast<std::streamsize>(v.size() * sizeof(float)));
    }
  }

 private:
  double lr_, momentum_;
  std::vector<std::vector<float>> velocity_;
};

}  // namespace

// The whole run, with MPI started: gw::run_mpi_main (below) ends every rank if it throws.
int run() {
  auto comm = std::make_shared<gw::CountingCommunicator>(gw::make_mpi_world_communicator());
  const int rank = comm->rank();

  constexpr std::size_t kFeatures = 8, kSamples = 256;
  const std::vector<float> true_w = {1, -2, 3, -4, 0.5f, -0.25f, 2, 1.5f};
  const float true_b = 0.75f;

  // This rank's shard of data.
  std::mt19937 rng(1234u + static_cast<unsigned>(rank));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kSamples * kFeatures), y(kSamples);
  for (std::size_t s = 0; s < kSamples; ++s) {
    float dot = true_b;
    for (std::size_t f = 0; f < kFeatures; ++f) {
      x[s * kFeatures + f] = normal(rng);
      dot += true_w[f] * x[s * kFeatures + f];
    }
    y[s] = dot;
  }

  // Parameters live where the program keeps them; rank 0's initial values are broadcast.
  std::vector<float> w(kFeatures, static_cast<float>(rank)), b(1, 0.0f);
  gw::DistributedOptimizer opt(comm, std::make_unique<MyMomentumSgd>(0.05, 0.9),
                               {{"w", w.data(), w.size()}, {"b", b.data(), b.size()}});
  float* grad_w = opt.gradient(0);
  float* grad_b = opt.gradient(1);

  double loss = 0;
  for (int step = 0; step < 300; ++step) {
    // Backward of the mean squared error, written by hand.
    loss = 0;
    std::fill(grad_w, grad_w + kFeatures, 0.0f);
    grad_b[0] = 0;
    for (std::size_t s = 0; s < kSamples; ++s) {
      float pred = b[0];
      for (std::size_t f = 0; f < kFeatures; ++f) pred += w[f] * x[s * kFeatures + f];
      const float err = pred - y[s];
      loss += 0.5 * err * err / kSamples;
      for (std::size_t f = 0; f < kFeatures; ++f)
        grad_w[f] += err * x[s * kFeatures + f] / kSamples;
      grad_b[0] += err / kSamples;
    }
    opt.gradient_ready(1);  // in the order backward finishes them
    opt.gradient_ready(0);
    opt.step();  // averages over ranks, then MyMomentumSgd::step
  }

  double max_error = std::fabs(b[0] - true_b);
  for (std::size_t f = 0; f < kFeatures; ++f) {
    max_error = std::max(max_error, static_cast<double>(std::fabs(w[f] - true_w[f])));
  }
  const auto traffic = comm->counters();
  if (rank == 0) {
    std::printf(
        "ranks %d, steps %lld, final local loss %.3g, max |w - w_true| %.3g, "
        "gradient bytes sent by rank 0: %llu\n",
        comm->size(), static_cast<long long>(opt.steps()), loss, max_error,
        static_cast<unsigned long long>(traffic[gw::TrafficKind::kGradient].sent_bytes));
  }
  return max_error < 1e-3 ? 0 : 1;
}

int main(int argc, char** argv) {
  return gw::run_mpi_main(&argc, &argv, "wrap_optimizer", run);
}
