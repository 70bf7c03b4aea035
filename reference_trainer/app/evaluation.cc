#include "reference_trainer/app/evaluation.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gw::trainer {

Evaluation evaluate(TrainingModel& model, const Dataset& test, Communicator& comm, bool stop_vote) {
  const std::size_t n = static_cast<std::size_t>(comm.size());
  const std::size_t r = static_cast<std::size_t>(comm.rank());
  const std::size_t begin = test.size() * r / n, end = test.size() * (r + 1) / n;
  constexpr std::size_t kChunk = 500;
  // loss, correct, count, stop votes
  double sums[4] = {0, 0, static_cast<double>(end - begin), r == 0 && stop_vote ? 1.0 : 0.0};
  for (std::size_t i = begin; i < end; i += kChunk) {
    const std::size_t b = std::min(kChunk, end - i);
    std::int64_t correct = 0;
    model.evaluate_test(i, i + b, &sums[0], &correct);
    sums[1] += static_cast<double>(correct);
  }
  comm.allreduce(sums, 4, DataType::kFloat64, ReduceOp::kSum, TrafficKind::kControl);
  return Evaluation{sums[1] / sums[2], sums[0] / sums[2], sums[3] > 0};
}

// Note [Evaluation points]
// An evaluation inside an epoch (--eval-every) must not change the run it measures. Under
// synchronous SGD the ranks hold the same parameters and evaluate them. Under a local SGD policy
// they have drifted apart, and an averaging through the optimizer (synchronize_parameters, as at
// the end of an epoch) would add an averaging point the schedule did not have. So the average is
// taken into the model for the evaluation only, with an allreduce counted as control traffic, and
// each rank's own parameters are put back afterwards: the training goes on exactly as without the
// evaluation, and its gradient and parameter bytes are unchanged. Right after an averaging point
// (an evaluation every multiple of the period) the ranks hold the same parameters again
// (DistributedOptimizer::parameters_in_step), and nothing is averaged: on a slow link that
// allreduce of every parameter costs as much as a point. Under streaming diloco the ranks are
// never in step between points (each fragment's mixing keeps part of each rank's own parameters),
// and the global model, the anchor that every rank holds (Note [Streaming DiLoCo]), is evaluated
// instead, with no communication at all. Evaluation time is kept out of
// the training clock (and so out of time-to-accuracy figures); the barriers around it are too.
Evaluation evaluate_average(TrainingModel& model, const Dataset& test, Communicator& comm,
                            bool ranks_in_step, bool stop_vote) {
  if (ranks_in_step || comm.size() == 1) return evaluate(model, test, comm, stop_vote);
  const std::vector<float> own = model.parameters();
  std::vector<float> average = own;
  comm.allreduce(average.data(), average.size(), DataType::kFloat32, ReduceOp::kSum,
                 TrafficKind::kControl);
  const float inv = 1.0f / static_cast<float>(comm.size());
  for (float& v : average) v *= inv;
  model.set_parameters(average.data());
  const Evaluation e = evaluate(model, test, comm, stop_vote);
  model.set_parameters(own.data());
  return e;
}

}  // namespace gw::trainer
