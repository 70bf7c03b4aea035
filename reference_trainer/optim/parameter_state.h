// Per-parameter buffers of an optimizer (momentum, moments) and its step count, with the binary
// checkpoint format shared by Sgd and Adam.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/stream.h"
#include "plugin/optimizer.h"

namespace gw::trainer {

// Note [Optimizer state format]
// save() writes, in host byte order: the 8-byte magic "GWOPTST\0", the optimizer's type tag (u32
// length + bytes), the format version (u32), the step count (u64), whether the layout is known yet
// (u8), the parameter count and buffers per parameter (u64 each), then per parameter its element
// count (u64) followed by its buffers (f32 each). load() reads into temporaries and commits only a
// stream that fully matches, so a failed load leaves the state as it was. The buffers live where
// the optimizer's kernels::Stream works (device memory for the trainer's GPU mode); the format is
// the same, so a state saved on a GPU loads on the host and back.
class ParameterState {
 public:
  // owner names the optimizer in messages and is the type tag of the stream ("sgd", "adam").
  // The buffers live where `stream` works.
  ParameterState(std::string owner, std::size_t buffers_per_parameter,
                 kernels::Stream stream = kernels::Stream::host());

  // The first call records the layout (each parameter's element count) and creates zeroed
  // buffers; later calls throw std::invalid_argument if the layout differs. Also rejects null
  // pointers.
  void prepare(const std::vector<gw::ParameterView>& params);
  float* buffer(std::size_t param, std::size_t which) {
    return buffers_[param * buffers_per_parameter_ + which].data();
  }
  const kernels::Stream& stream() const { return stream_; }
  // Every buffer, parameter by parameter (empty before the first prepare()).
  std::vector<gw::StateBuffer> buffers();
  std::uint64_t step() const { return step_; }
  // Counts a step; returns the new count (1 after the first step).
  std::uint64_t advance() { return ++step_; }

  void save(std::ostream& out) const;
  // Throws std::runtime_error naming the mismatch on another type tag, version, buffer count or
  // layout (when the layout is already known), or on a truncated stream. A stream saved before
  // the first step makes the state fresh again.
  void load(std::istream& in);

 private:
  std::string owner_;
  std::size_t buffers_per_parameter_;
  kernels::Stream stream_;
  bool has_layout_ = false;
  std::uint64_t step_ = 0;
  std::vector<std::size_t> sizes_;
  std::vector<kernels::Buffer<float>> buffers_;  // [param * buffers_per_parameter_ + which]
};

// What Sgd and Adam share: their ParameterState behind the Optimizer interface's state methods.
class StatefulOptimizer : public gw::Optimizer {
 public:
  bool accepts_gradient_scale() const override { return true; }
  // The momentum buffers (sgd) or first and second moments (adam), once the first step made them.
  std::optional<std::vector<gw::StateBuffer>> state_buffers() override { return state_.buffers(); }
  // See Note [Optimizer state format].
  void save_state(std::ostream& out) const override { state_.save(out); }
  void load_state(std::istream& in) override { state_.load(in); }
  std::uint64_t steps() const { return state_.step(); }

 protected:
  StatefulOptimizer(std::string owner, std::size_t buffers_per_parameter,
                    kernels::Stream stream = kernels::Stream::host())
      : state_(std::move(owner), buffers_per_parameter, std::move(stream)) {}

  ParameterState state_;
};

}  // namespace gw::trainer
