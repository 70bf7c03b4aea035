// gradwire_bench_train: the reference trainer's steps per second on the CPU and on a GPU, side by
// side in one run, and how much of a GPU step waits on the exchange.
//
//   gradwire_bench_train --device both --report train.json        (1 rank: the CPU on all cores)
//   mpirun -np 2 gradwire_bench_train --device cuda --report t.json   (the exchange share)
//
// Every variant is one training step of gradwire_train's models (make_training_model, the data
// set a synthetic one of Fashion-MNIST's shape in the device's memory): forward and backward,
// the DistributedOptimizer's exchange and the inner SGD (momentum 0.9) update, the stream waited
// for. The variants are timed in rotation (Note [Rotation]), one step each per iteration, and
// compared by their medians of the slowest rank's time:
//   <device>/<model>/b<batch>/<fp32|amp>   samples/s, for mlp and cnn, batch 32 and 256 per
//           rank, without and with mixed precision (GRADWIRE_AMP=1: fp16 products on the tensor
//           cores on a GPU);
//   cuda/<model>/b256/{no_exchange,dense,dgc}   the step without a DistributedOptimizer (model and
//           inner update only), with the dense exchange and with dgc: the share of the step
//           spent on the exchange is 1 - no_exchange / strategy.
// Targets (on an H100-class GPU): the CNN at batch 256 at least 50x the CPU's samples/s; under
// dgc the step at most 1.1x the step without exchange. Without a usable GPU, --device cuda and
// both are an error (exit 2).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>

#include <nlohmann/json.hpp>

#include "benchmarks/bench_mpi_driver.h"
#include "cli/cli.h"
#include "kernels/device.h"
#include "plugin/comm/world_communicator.h"
#include "plugin/config/params.h"
#include "plugin/distributed_optimizer.h"
#include "reference_trainer/app/training_model.h"
#include "reference_trainer/optim/sgd.h"

namespace {

using gw::trainer::TrainingModel;

constexpr const char* kMethod =
    "median over rotating iterations of the slowest rank's time for one training step (forward, "
    "backward, exchange, SGD update, the stream waited for) of gradwire_train's model on a "
    "synthetic data set of Fashion-MNIST's shape; samples/s = batch x ranks / that time";

gw::trainer::FashionMnist synthetic_data(std::size_t n) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  gw::trainer::FashionMnist data;
  for (gw::trainer::Dataset* d : {&data.train, &data.test}) {
    d->rows = d->cols = 28;
    d->images.resize(n * 784);
    for (float& x : d->images) x = pixel(rng);
    d->labels.resize(n);
    for (auto& l : d->labels) l = static_cast<std::uint8_t>(rng() % 10);
  }
  return data;
}

std::unique_ptr<gw::Optimizer> sgd(const gw::kernels::Stream& stream) {
  gw::trainer::Sgd::Options o;
  o.lr = 0.01;
  o.momentum = 0.9;
  o.stream = stream;
  return std::make_unique<gw::trainer::Sgd>(o);
}

// One step's worth of state: the model, and either a DistributedOptimizer or (no exchange) the
// inner optimizer with gradient buffers of its own.
struct Case {
  std::unique_ptr<TrainingModel> model;
  std::unique_ptr<gw::DistributedOptimizer> optimizer;
  std::unique_ptr<gw::Optimizer> inner;  // no exchange
  gw::kernels::Buffer<float> grads;      // no exchange
  std::vector<gw::ParameterView> views;  // no exchange
  std::vector<std::size_t> rows;
  std::size_t batch = 0;
  int blas_threads = 0;  // the CPU's: OpenBLAS threads for this case's steps

  void step() {
    if (blas_threads > 0) openblas_set_num_threads(blas_threads);
    if (optimizer) {
      model->train_step(
          rows, [this](std::size_t i) { optimizer->gradient_ready(i); }, optimizer->loss_scale());
      optimizer->step();
    } else {
      model->train_step(rows, {}, 1.0f);
      inner->step(views);
    }
    model->stream().synchronize();
  }
};

struct CaseSpec {
  std::string name, device, model, compressor;  // compressor "" : no exchange
  std::size_t batch;
  bool amp;
  int blas_threads = 0;  // CPU cases
};

Case make_case(const CaseSpec& s, const gw::trainer::FashionMnist& data,
               const std::shared_ptr<gw::CountingCommunicator>& comm,
               const gw::kernels::Stream& stream) {
  Case c;
  c.batch = s.batch;
  c.blas_threads = s.blas_threads;
  c.model = gw::trainer::make_training_model(s.model, 7, data, stream);
  std::mt19937_64 rng(static_cast<std::uint64_t>(comm->rank() + 3));
  for (std::size_t i = 0; i < s.batch; ++i) c.rows.push_back(rng() % data.train.size());
  if (s.compressor.empty()) {
    c.inner = sgd(stream);
    c.grads = gw::kernels::Buffer<float>(c.model->num_parameters(), stream);
    gw::kernels::fill_zero(c.grads.data(), c.model->num_parameters() * sizeof(float), stream);
    std::vector<float*> g;
    std::size_t at = 0;
    for (const gw::ParameterSpec& p : c.model->parameter_specs()) {
      g.push_back(c.grads.data() + at);
      c.views.push_back({p.name, p.value, c.grads.data() + at, p.numel, 1.0f});
      at += p.numel;
    }
    c.model->bind_gradients(g);
    return c;
  }
  gw::DistributedOptimizerOptions o;
  o.read_environment = false;
  o.config.set(gw::config::keys::kCompressor, s.compressor);
  if (s.amp) o.config.set(gw::config::keys::kAmp, "1");
  o.config.set(gw::config::keys::kLogLevel, "warn");
  o.stream = stream;
  c.optimizer =
      std::make_unique<gw::DistributedOptimizer>(comm, sgd(stream), c.model->parameter_specs(), o);
  c.model->bind_gradients(c.optimizer->gradient_views());
  if (s.amp) c.model->set_op_policy(&c.optimizer->amp_settings().ops);
  return c;
}

struct Options {
  std::string report_path, device = "cpu", models = "mlp,cnn", batches = "32,256";
  int iterations = 20, warm = 3;
};

void add_options(gw::cli::Parser& app, Options& o) {
  app.add("--report", o.report_path, "Write the JSON report here (rank 0)");
  app.add("--device", o.device, "cpu, cuda, or both side by side")
      .one_of({"cpu", "cuda", "both"})
      .show_default();
  app.add("--models", o.models, "Models, comma-separated (mlp, cnn)").show_default();
  app.add("--batches", o.batches, "Batch sizes per rank, comma-separated").show_default();
  app.add("--iterations", o.iterations, "Timed steps per variant").range(1, 100000).show_default();
  app.add("--warm-up", o.warm, "Untimed steps per variant first").range(1, 1000).show_default();
}

// The entries of a comma-separated list, empty ones left out.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// This machine's cores (at least 1).
int core_count() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// Note [The CPU mode on every core]
// The CPU trainer uses a machine's cores as one rank per core (OpenBLAS one thread each) or as
// one rank with a BLAS thread per core; which is faster depends on the shapes. Each CPU variant
// runs at one BLAS thread and at one per core, and the CPU mode's figure "on every core" is the
// better of: the every-core run, and `cores` x the one-thread run (perfect scaling over ranks, a
// bound no real run of one rank per core exceeds). The GPU's speed-up is over that figure.

// The variants: per device, model, batch and precision (the CPU's at one BLAS thread and at
// `cores`), then the GPU's exchange cases per model.
std::vector<CaseSpec> case_specs(const Options& o, bool cpu, bool cuda, int cores) {
  std::vector<int> cpu_threads = {1};
  if (cores > 1) cpu_threads.push_back(cores);
  std::vector<std::size_t> batch_sizes;
  for (const std::string& b : split_list(o.batches)) batch_sizes.push_back(std::stoul(b));
  std::vector<CaseSpec> specs;
  for (const std::string& dev : {std::string("cpu"), std::string("cuda")}) {
    if ((dev == "cpu" && !cpu) || (dev == "cuda" && !cuda)) continue;
    for (const std::string& m : split_list(o.models)) {
      for (std::size_t b : batch_sizes) {
        for (bool amp : {false, true}) {
          const std::string name =
              dev + "/" + m + "/b" + std::to_string(b) + (amp ? "/amp" : "/fp32");
          if (dev == "cuda") {
            specs.push_back({name, dev, m, "none", b, amp});
            continue;
          }
          for (int t : cpu_threads) {
            specs.push_back({name + "/t" + std::to_string(t), dev, m, "none", b, amp, t});
          }
        }
      }
      if (dev == "cuda") {
        for (const char* c : {"", "none", "dgc"}) {
          const std::string what =
              *c == '\0' ? "no_exchange" : (std::string(c) == "none" ? "dense" : c);
          specs.push_back({dev + "/" + m + "/b256/" + what, dev, m, c, 256, false});
        }
      }
    }
  }
  return specs;
}

// Every case set up, `warm` untimed steps of each, then `iterations` in rotation: the medians.
std::vector<double> time_cases(const std::vector<CaseSpec>& specs, const gw::bench::MpiBench& bench,
                               const gw::kernels::Stream& gpu, const Options& o) {
  const gw::trainer::FashionMnist data = synthetic_data(4096);
  std::vector<Case> cases;
  for (const CaseSpec& s : specs) {
    cases.push_back(
        make_case(s, data, bench.comm(), s.device == "cuda" ? gpu : gw::kernels::Stream::host()));
  }
  gw::bench::Variants variants;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    variants.push_back({specs[i].name, [&cases, i] { cases[i].step(); }});
  }
  gw::bench::warm_up(variants, o.warm);
  return gw::bench::rotate_medians(variants, o.iterations, {});
}

// The figures of a run: per variant its step time and samples/s (rows), samples/s by name
// (sps: the variants' and the CPU modes' on every core), and how each CPU mode's came about.
struct Figures {
  nlohmann::json rows = nlohmann::json::object();
  std::map<std::string, double> sps;
  nlohmann::json cpu_modes = nlohmann::json::object();
};

void add_variant_rows(const std::vector<CaseSpec>& specs, const std::vector<double>& med, int n,
                      Figures& f) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const double s = med[i];
    f.sps[specs[i].name] = static_cast<double>(specs[i].batch * static_cast<std::size_t>(n)) / s;
    f.rows[specs[i].name] = {{"step_seconds", s}, {"samples_per_second", f.sps[specs[i].name]}};
    if (specs[i].blas_threads > 0) {
      // What OpenBLAS ran with (it may cap a request above the threads it started with).
      openblas_set_num_threads(specs[i].blas_threads);
      f.rows[specs[i].name]["blas_threads"] = openblas_get_num_threads();
    }
  }
}

// The CPU mode on every core (Note [The CPU mode on every core]): the better of the every-core
// run and the one-thread run times the cores.
void add_cpu_modes(const std::vector<CaseSpec>& specs, int cores, Figures& f) {
  for (const CaseSpec& spec : specs) {
    const std::string one = "/t1";
    if (spec.device != "cpu" || spec.name.size() < one.size() ||
        spec.name.compare(spec.name.size() - one.size(), one.size(), one) != 0) {
      continue;
    }
    const std::string base = spec.name.substr(0, spec.name.size() - one.size());
    const double scaled = f.sps[spec.name] * cores;
    const std::string all = base + "/t" + std::to_string(cores);
    const double measured = f.sps.count(all) ? f.sps[all] : 0.0;
    f.sps[base] = std::max(scaled, measured);
    f.cpu_modes[base] = {{"samples_per_second", f.sps[base]},
                         {"from", scaled >= measured ? "one BLAS thread x cores (a bound)"
                                                     : "one rank, a BLAS thread per core"},
                         {"one_thread_x_cores", scaled},
                         {"every_core_threads", measured}};
  }
}

void print_figures(const Figures& f, int n) {
  std::printf("# gradwire_bench_train: %d rank(s)\n", n);
  for (const auto& [name, value] : f.sps) {
    if (f.rows.contains(name)) {
      std::printf("  %-28s %10.0f samples/s  (%.3f ms/step)\n", name.c_str(), value,
                  f.rows.at(name).at("step_seconds").get<double>() * 1e3);
    } else {
      std::printf("  %-28s %10.0f samples/s  (every core: %s)\n", name.c_str(), value,
                  f.cpu_modes.at(name).at("from").get<std::string>().c_str());
    }
  }
}

// The GPU's samples/s over the CPU's, per variant run on both; the CNN's at batch 256 in fp32
// is a target.
nlohmann::json gpu_speedups(const Figures& f, std::vector<gw::bench::Target>& targets) {
  nlohmann::json speedups = nlohmann::json::object();
  for (const auto& [name, value] : f.sps) {
    if (name.rfind("cuda/", 0) != 0 || !f.sps.count("cpu/" + name.substr(5))) continue;
    const double x = value / f.sps.at("cpu/" + name.substr(5));
    speedups[name.substr(5)] = x;
    if (name == "cuda/cnn/b256/fp32") {
      targets.push_back(
          gw::bench::at_least(gw::bench::format("cnn batch 256 GPU samples/s vs CPU: %.1fx", x), x,
                              50.0, "cnn_b256_speedup_min", "cnn_b256_speedup_met"));
    }
  }
  return speedups;
}

// Per model run on the GPU with its exchange cases: each strategy's step against the step
// without exchange; dgc's is a target.
nlohmann::json exchange_shares(const Options& o, const Figures& f,
                               std::vector<gw::bench::Target>& targets) {
  nlohmann::json shares = nlohmann::json::object();
  for (const std::string& m : split_list(o.models)) {
    const std::string base = "cuda/" + m + "/b256/";
    if (!f.rows.contains(base + "no_exchange")) continue;
    const double none = f.rows.at(base + "no_exchange").at("step_seconds").get<double>();
    for (const char* c : {"dense", "dgc"}) {
      const double t = f.rows.at(base + c).at("step_seconds").get<double>();
      shares[m + "/" + c] = {{"step_vs_no_exchange", t / none},
                             {"share_waiting_on_exchange", std::max(0.0, 1.0 - none / t)}};
      if (std::string(c) == "dgc") {
        targets.push_back(gw::bench::at_most(
            gw::bench::format("%s batch 256 dgc step vs no exchange: %.3fx", m.c_str(), t / none),
            t / none, 1.1, m + "_dgc_step_vs_no_exchange_max", m + "_dgc_step_met"));
      }
    }
  }
  return shares;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  gw::cli::Parser app{
      "gradwire_train's steps on the CPU and on a GPU, side by side (under mpirun)"};
  add_options(app, o);
  if (const auto code = app.parse(argc, argv)) return *code;
  const bool cpu = o.device != "cuda", cuda = o.device != "cpu";
  if (cuda && !gw::kernels::cuda_device_available()) {
    std::fprintf(stderr,
                 "gradwire_bench_train: --device %s: no usable CUDA device here; use "
                 "--device cpu\n",
                 o.device.c_str());
    return 2;
  }
  const int cores = core_count();
  const std::vector<CaseSpec> specs = case_specs(o, cpu, cuda, cores);

  gw::bench::MpiBench bench("gradwire_bench_train", o.report_path, &argc, &argv);
  const int n = bench.size();
  gw::kernels::Stream gpu = gw::kernels::Stream::host();
  if (cuda) gpu = gw::kernels::Stream::cuda(gw::default_cuda_device());
  const std::vector<double> med = time_cases(specs, bench, gpu, o);

  Figures f;
  add_variant_rows(specs, med, n, f);
  add_cpu_modes(specs, cores, f);
  if (bench.rank() == 0) print_figures(f, n);
  std::vector<gw::bench::Target> targets;
  const nlohmann::json speedups = cpu && cuda ? gpu_speedups(f, targets) : nlohmann::json::object();
  const nlohmann::json shares = exchange_shares(o, f, targets);
  return bench.conclude(
      targets, kMethod,
      {{"iterations", o.iterations},
       {"hardware_threads", std::thread::hardware_concurrency()},
       {"cpu_mode_every_core", f.cpu_modes},
       {"device", cuda ? gw::kernels::cuda_device_name(gpu.cuda_device()) : "cpu"},
       {"variants", f.rows},
       {"gpu_vs_cpu_samples_per_second", speedups},
       {"exchange", shares}});
}
