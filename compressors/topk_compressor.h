// GRADWIRE_COMPRESSOR=topk: top-k sparsification with error feedback and nothing else. Each
// sparsified tensor keeps a residual r: r += g; the top k of |r| are sent and zeroed in r; the
// rest waits for later steps. No momentum is touched, so it works under any inner optimizer.
#pragma once

#include <vector>

#include "compressors/sparsifying_compressor.h"
#include "compressors/state_arrays.h"

namespace gw::compressors {

class TopkCompressor final : public SparsifyingCompressor {
 public:
  TopkCompressor(std::vector<std::size_t> numels, SparsifyOptions options);

  Kind kind() const override { return Kind::kTopk; }
  void encode(const BucketView& bucket, const ExchangePlan& plan, int world_size,
              const EncodedBucket& out) override;
  void save_state(std::ostream& out) const override;
  void load_state(std::istream& in) override;

  // A host copy of parameter p's residual (empty for tensors below min_numel, which are always
  // sent whole).
  std::vector<float> residual(std::size_t p) const { return residual_.to_host(p); }

 private:
  float* feedback(std::size_t parameter) override { return residual_.data(parameter); }
  void move_state_to(const kernels::Stream& stream) override { residual_.move_to(stream); }

  StateArrays residual_;
};

}  // namespace gw::compressors
