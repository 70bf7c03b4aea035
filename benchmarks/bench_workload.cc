#include "benchmarks/bench_workload.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>

#include "benchmarks/resnet50_shapes.h"
#include "plugin/config/params.h"

namespace gw::bench {

void Workload::finish() {
  offsets.clear();
  total = 0;
  for (std::size_t k : numels) {
    offsets.push_back(total);
    total += k;
  }
  values.assign(total, 0.0f);
}

std::vector<gw::ParameterSpec> Workload::specs() {
  std::vector<gw::ParameterSpec> out;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    out.push_back({names[i], values.data() + offsets[i], numels[i]});
  }
  return out;
}

Workload resnet50_workload() {
  Workload w;
  w.name = "resnet50";
  for (const ModelTensor& t : resnet50_tensors()) {
    w.names.push_back(t.name);
    w.numels.push_back(t.numel);
  }
  w.finish();
  return w;
}

bool resnet50_table_ok(const Workload& w, int rank) {
  if (w.numels.size() == kResnet50Tensors && w.total == kResnet50Numel) return true;
  if (rank == 0) {
    std::fprintf(stderr, "ResNet-50 table: %zu tensors, %zu floats (want %zu, %zu)\n",
                 w.numels.size(), w.total, kResnet50Tensors, kResnet50Numel);
  }
  return false;
}

gw::DistributedOptimizerOptions make_options(const std::string& threshold_mb) {
  gw::DistributedOptimizerOptions o;
  o.read_environment = false;
  o.config.set(gw::config::keys::kLogLevel, "warn");
  if (!threshold_mb.empty()) o.config.set(gw::config::keys::kFusionThresholdMb, threshold_mb);
  return o;
}

void all_ready(gw::DistributedOptimizer& opt) {
  for (std::size_t i = opt.num_parameters(); i-- > 0;) opt.gradient_ready(i);
}

void fill_gradients(gw::DistributedOptimizer& opt, const Workload& w, float v) {
  for (std::size_t i = 0; i < w.numels.size(); ++i) {
    std::fill(opt.gradient(i), opt.gradient(i) + w.numels[i], v);
  }
}

std::int64_t count_wrong(gw::DistributedOptimizer& opt, const Workload& w, int rank, int n,
                         const std::function<void()>& step) {
  for (std::size_t i = 0; i < w.numels.size(); ++i) {
    float* g = opt.gradient(i);
    for (std::size_t e = 0; e < w.numels[i]; ++e) {
      g[e] = static_cast<float>(rank + 1 + (w.offsets[i] + e) % 5);
    }
  }
  step();
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < w.numels.size(); ++i) {
    const float* g = opt.gradient(i);
    for (std::size_t e = 0; e < w.numels[i]; ++e) {
      const double want = n * (n + 1) / 2.0 + n * static_cast<double>((w.offsets[i] + e) % 5);
      wrong += g[e] != static_cast<float>(want);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return wrong;
}

}  // namespace gw::bench
