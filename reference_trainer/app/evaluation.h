// One evaluation of the test set on every rank: each rank a slice, the sums combined, and under
// local SGD the ranks' average model (Note [Evaluation points]).
#pragma once

#include "plugin/comm/communicator.h"
#include "reference_trainer/app/training_model.h"
#include "reference_trainer/data/fashion_mnist.h"

namespace gw::trainer {

struct Evaluation {
  double accuracy = 0;
  double loss = 0;
  bool stop = false;  // rank 0 voted to stop (its time budget ran out)
};

// Each rank evaluates a contiguous slice of `test`; the sums, and rank 0's `stop_vote`, are
// combined with one allreduce (control traffic). Collective.
Evaluation evaluate(TrainingModel& model, const Dataset& test, Communicator& comm, bool stop_vote);

// As evaluate, of the ranks' average model when they are not in step (local SGD), leaving each
// rank's own parameters as they were (Note [Evaluation points]). Collective.
Evaluation evaluate_average(TrainingModel& model, const Dataset& test, Communicator& comm,
                            bool ranks_in_step, bool stop_vote);

}  // namespace gw::trainer
