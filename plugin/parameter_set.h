// ParameterSet: the training program's parameters as DistributedOptimizer registered them, and
// the one flat gradient buffer that backward writes into.
//
// Each parameter's values stay where the program keeps them (host memory, or the device of the
// program's stream); its gradient is a view into the flat buffer, which lives in the same memory,
// at `offset`, and the buckets (Note [Bucket plan]) are ranges of that buffer. The same
// offsets index every other flat array over the parameters (local SGD's averaging buffer, its fp16
// anchor).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "compressors/bucket_view.h"
#include "fusion/bucket_plan.h"
#include "kernels/stream.h"
#include "plugin/comm/communicator.h"
#include "plugin/optimizer.h"

namespace gw {

// A parameter of the training program: its values stay where the program keeps them.
struct ParameterSpec {
  std::string name;
  float* value = nullptr;
  std::size_t numel = 0;
  // For a matrix-shaped parameter, its leading dimension (a linear layer's outputs, a
  // convolution's output channels; numel / rows is the rest); 0 for a vector. It must divide
  // numel. Only GRADWIRE_COMPRESSOR=powersgd reads it (Note [PowerSGD]).
  std::size_t rows = 0;
};

class ParameterSet {
 public:
  struct Registered {
    ParameterSpec spec;
    std::size_t offset = 0;  // into the flat gradient buffer (and every flat array like it)
  };

  // Throws std::invalid_argument naming the parameter for a null or empty one, a name given
  // twice, or values that are not where `stream` works (host memory for the host stream, device
  // memory for a CUDA stream). The gradients start at zero, in the stream's memory.
  ParameterSet(std::vector<ParameterSpec> params, const kernels::Stream& stream);
  ParameterSet() = default;
  // Moving keeps the views valid (a moved vector keeps its buffer); copying would not.
  ParameterSet(ParameterSet&&) = default;
  ParameterSet& operator=(ParameterSet&&) = default;
  ParameterSet(const ParameterSet&) = delete;
  ParameterSet& operator=(const ParameterSet&) = delete;

  std::size_t size() const { return params_.size(); }
  const Registered& operator[](std::size_t i) const { return params_[i]; }
  // Elements over all parameters: the length of every flat array over them.
  std::size_t numel() const { return numel_; }
  // Where the values, the gradients and every flat array over them live.
  const kernels::Stream& stream() const { return stream_; }
  std::vector<std::size_t> numels() const;
  std::vector<std::size_t> rows() const;

  float* gradients() { return gradients_.data(); }
  float* gradient(std::size_t i) { return gradients_.data() + params_[i].offset; }
  // What the inner optimizer steps on: value, gradient and its scale per parameter.
  std::vector<ParameterView>& views() { return views_; }

  // One view per bucket of `plan` over a flat array laid out like the gradients (`flat`: the
  // gradient buffer itself, or local SGD's averaging buffer).
  std::vector<compressors::BucketView> bucket_views(const fusion::BucketPlan& plan,
                                                    float* flat) const;
  // "w .. b" for the parameters of `bucket` in the order backward finishes them (last first).
  std::string bucket_names(const fusion::Bucket& bucket) const;
  // One line per parameter (name, elements), so that a cross-rank mismatch names the parameter.
  std::string layout_canonical() const;

  // Copies the values into flat[offset..] / back from it (flat in the stream's memory), on the
  // stream, and waits for the copies.
  void gather_values(float* flat) const;
  void scatter_values(const float* flat) const;

  // Copies rank 0's values to every rank in one broadcast (traffic kind parameter). Collective.
  void broadcast_from_rank0(Communicator& comm) const;

 private:
  std::vector<Registered> params_;
  kernels::Stream stream_ = kernels::Stream::host();
  std::size_t numel_ = 0;
  kernels::Buffer<float> gradients_;
  std::vector<ParameterView> views_;
};

}  // namespace gw
