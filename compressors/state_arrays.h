// Per-parameter float arrays of a compressor's state (residuals, DGC's momentum and accumulator),
// kept where the compressor's stream works: host memory, or the memory of that stream's device.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "kernels/stream.h"

namespace gw::compressors {

class StateArrays {
 public:
  StateArrays() = default;
  // Array p holds numels[p] zeros where present[p], and nothing otherwise; in host memory.
  StateArrays(const std::vector<std::size_t>& numels, const std::vector<bool>& present);

  std::size_t count() const { return arrays_.size(); }
  float* data(std::size_t p) { return arrays_[p].data(); }
  std::size_t size(std::size_t p) const { return arrays_[p].size(); }
  bool empty(std::size_t p) const { return arrays_[p].empty(); }

  // Moves every array to where `stream` works, keeping its values.
  void move_to(const kernels::Stream& stream);
  // A host copy of array p (synchronises the stream).
  std::vector<float> to_host(std::size_t p) const;
  // Host copies of every array, and their replacement (sizes must match: the caller has checked).
  std::vector<std::vector<float>> all_to_host() const;
  void assign(const std::vector<std::vector<float>>& host);

 private:
  kernels::Stream stream_ = kernels::Stream::host();
  std::vector<kernels::Buffer<float>> arrays_;
};

// save_arrays/load_arrays (Note [Compressor state format]) over StateArrays groups, in order.
void save_state_arrays(std::ostream& out, const std::string& owner, std::int64_t step,
                       const std::vector<const StateArrays*>& groups);
void load_state_arrays(std::istream& in, const std::string& owner, std::int64_t* step,
                       const std::vector<StateArrays*>& groups);

}  // namespace gw::compressors
