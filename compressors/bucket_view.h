// A bucket: a contiguous run of the flat gradient buffer that holds whole tensors and is exchanged
// as one unit. Compressors encode and decode over these views; they never own gradient memory.
#pragma once

#include <cstddef>
#include <vector>

namespace gw::compressors {

// One tensor of a bucket.
struct TensorSlot {
  std::size_t parameter = 0;  // the parameter's registration index (keys compressor state)
  std::size_t offset = 0;     // first element, relative to BucketView::data
  std::size_t numel = 0;
};

struct BucketView {
  std::size_t index = 0;  // the bucket's position in the launch order (the same on every rank)
  float* data = nullptr;  // this rank's gradients of the bucket; decode leaves the result here
  std::size_t numel = 0;
  std::vector<TensorSlot> tensors;  // in memory order, covering [data, data + numel)
};

}  // namespace gw::compressors
