#include "reference_trainer/app/trainer.h"

#include <utility>

#include "reference_trainer/app/training_run.h"
#include "reference_trainer/optim/adam.h"
#include "reference_trainer/optim/sgd.h"

namespace gw::trainer {

std::unique_ptr<Optimizer> make_optimizer(const TrainerOptions& o, const kernels::Stream& stream) {
  if (o.optimizer == "adam") {
    Adam::Options a;
    a.lr = o.lr;
    a.weight_decay = o.weight_decay;
    a.stream = stream;
    return std::make_unique<Adam>(a);
  }
  Sgd::Options s;
  s.stream = stream;
  s.lr = o.lr;
  s.momentum = o.momentum;
  s.nesterov = o.nesterov;
  s.weight_decay = o.weight_decay;
  return std::make_unique<Sgd>(s);
}

TrainResult train(const TrainerOptions& options, const config::Config& config,
                  const FashionMnist& data, std::shared_ptr<CountingCommunicator> comm,
                  const Checkpoint* resume, const kernels::Stream& stream) {
  TrainingRun run(options, config, data, std::move(comm), stream);
  if (resume != nullptr) run.resume(*resume);
  run.start();
  while (run.more_epochs()) run.train_epoch();
  return run.finish();
}

}  // namespace gw::trainer
