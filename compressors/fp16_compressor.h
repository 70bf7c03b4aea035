// GRADWIRE_COMPRESSOR=fp16: every bucket is exchanged as IEEE half. Each rank sends g / n, so the
// sum over ranks is the average and cannot overflow where the gradients themselves fit in fp16;
// the result comes back to fp32 already averaged. Half the bytes of none, no state.
#pragma once

#include "compressors/compressor.h"

namespace gw::compressors {

class Fp16Compressor final : public Compressor {
 public:
  Kind kind() const override { return Kind::kFp16; }
  void plan_into(const BucketView& bucket, int world_size, ExchangePlan& out) const override;
  void encode(const BucketView& bucket, const ExchangePlan& plan, int world_size,
              const EncodedBucket& out) override;
  void save_state(std::ostream& out) const override;
  void load_state(std::istream& in) override;
};

}  // namespace gw::compressors
