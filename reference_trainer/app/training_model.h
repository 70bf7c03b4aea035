// The model gradwire_train trains, where --device puts it: the CPU Model on the host (its batches
// gathered from the data set in host memory), or a gpu::DeviceModel on a CUDA stream with the data
// set copied to the device once (Note [The trainer on a device]). The training loop sees only
// this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "amp/op_policy.h"
#include "kernels/stream.h"
#include "plugin/distributed_optimizer.h"
#include "reference_trainer/data/fashion_mnist.h"
#include "reference_trainer/nn/model.h"

namespace gw::trainer {

// Note [The trainer on a device]
// With --device cuda each rank trains on one GPU: its local rank modulo the GPUs it sees
// (CUDA_VISIBLE_DEVICES narrows them), so several ranks may share one for testing. The model is a
// gpu::DeviceModel on a CUDA stream of that GPU (Note [The model on a stream]); the training and
// test sets are copied to the device once, and each step sends only the batch's row indices
// (8 bytes a sample) before the batch is gathered there. The DistributedOptimizer works on the
// same stream (Note [The step on a device]) and so does the inner optimizer. Parameters come back
// to the host only where the run needs them there: checkpoints, the averaged evaluation under
// local SGD (Note [Evaluation points]) and the final report.
class TrainingModel {
 public:
  virtual ~TrainingModel() = default;

  virtual std::string describe() const = 0;
  virtual std::size_t num_parameters() const = 0;
  // Where the model's memory is: the host, or the CUDA stream it runs on.
  virtual const kernels::Stream& stream() const = 0;
  // The parameters for the DistributedOptimizer (values in the model's memory).
  virtual std::vector<ParameterSpec> parameter_specs() const = 0;
  virtual void bind_gradients(const std::vector<float*>& grads) = 0;
  // Mixed precision's op policy (Note [CPU rendering of fp16 ops]); nullptr: everything fp32.
  virtual void set_op_policy(const amp::OpPolicy* policy) = 0;
  // The matrix products run with fp16 and with fp32 operands so far (gpu::DeviceModel counts
  // them; the CPU model does not: {0, 0}).
  virtual std::pair<std::int64_t, std::int64_t> products() const { return {0, 0}; }

  // Forward and backward of the training rows `indices`, as Model::forward_backward.
  virtual float train_step(const std::vector<std::size_t>& indices,
                           const Model::GradientReadyFn& on_gradient_ready, float loss_scale) = 0;
  // Evaluates test rows [begin, end), as Model::evaluate.
  virtual void evaluate_test(std::size_t begin, std::size_t end, double* loss_sum,
                             std::int64_t* correct) = 0;

  // Every parameter, in registration order, in host memory.
  virtual std::vector<float> parameters() const = 0;
  // Sets every parameter from `values` (num_parameters() floats, host memory).
  virtual void set_parameters(const float* values) = 0;
};

// --device cuda where it cannot run (gradwire_train exits 2, before MPI starts).
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws DeviceError saying why when --device cuda cannot run here: a build without CUDA, or no
// usable CUDA device.
void check_device_usable();

// The model of `kind` for the data set, on `stream` (the host: the CPU Model). The data set must
// outlive it. Throws as make_model, and std::runtime_error when the stream's device cannot run it.
std::unique_ptr<TrainingModel> make_training_model(const std::string& kind, std::uint64_t seed,
                                                   const FashionMnist& data,
                                                   const kernels::Stream& stream);

// The GPU mode's model (gpu::DeviceModel, the data set copied where `stream` works) on any stream:
// make_training_model's choice for a CUDA stream. On the host stream it computes the CPU mode's
// bits, which is how the GPU mode's plumbing is tested without a GPU.
std::unique_ptr<TrainingModel> make_device_training_model(const std::string& kind,
                                                          std::uint64_t seed,
                                                          const FashionMnist& data,
                                                          const kernels::Stream& stream);

}  // namespace gw::trainer
