// GRADWIRE_COMPRESSOR=none: every bucket is summed as fp32 with one allreduce, in place.
#pragma once

#include "compressors/compressor.h"

namespace gw::compressors {

class NoneCompressor final : public Compressor {
 public:
  Kind kind() const override { return Kind::kNone; }
  void plan_into(const BucketView& bucket, int world_size, ExchangePlan& out) const override;
  void encode(const BucketView& bucket, const ExchangePlan& plan, int world_size,
              const EncodedBucket& out) override;
  void save_state(std::ostream& out) const override;
  void load_state(std::istream& in) override;
};

// Fills `out` with the plan that sends every tensor of `bucket` dense, as `wire`.
void all_dense_plan(const BucketView& bucket, DenseWire wire, ExchangePlan& out);

}  // namespace gw::compressors
