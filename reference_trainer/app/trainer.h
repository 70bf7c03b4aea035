// The reference data-parallel training run: a model, its optimizer wrapped in gradwire's
// DistributedOptimizer, per-rank shards of Fashion-MNIST, evaluation, and the run's figures
// (train_result.h). The run itself, step by step: training_run.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/stream.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/config/config.h"
#include "plugin/distributed_optimizer.h"
#include "reference_trainer/app/train_result.h"
#include "reference_trainer/app/trainer_options.h"
#include "reference_trainer/data/fashion_mnist.h"

namespace gw::trainer {

struct Checkpoint;  // checkpoint.h

// The inner optimizer the options name (sgd or adam), before gradwire wraps it, working where
// `stream` works.
std::unique_ptr<Optimizer> make_optimizer(const TrainerOptions& options,
                                          const kernels::Stream& stream = kernels::Stream::host());

// Runs the whole training on every rank of `comm`, or the rest of it from `resume`, this rank's
// checkpoint of the step the ranks agreed on (checkpoint_files.h, agree_resume_point). Writes
// checkpoints as options.checkpoint says. The model, its data and the optimizer live where
// `stream` works (Note [The trainer on a device]). Collective: a TrainingRun (training_run.h)
// from set-up to finish().
TrainResult train(const TrainerOptions& options, const config::Config& config,
                  const FashionMnist& data, std::shared_ptr<CountingCommunicator> comm,
                  const Checkpoint* resume = nullptr,
                  const kernels::Stream& stream = kernels::Stream::host());

}  // namespace gw::trainer
