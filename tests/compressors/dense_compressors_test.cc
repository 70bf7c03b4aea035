#include <gtest/gtest.h>

#include <sstream>

#include "compressor_test_util.h"
#include "compressors/fp16_compressor.h"
#include "compressors/none_compressor.h"
#include "compressors/topk_compressor.h"
#include "kernels/elementwise.h"

namespace gw::compressors {
namespace {

using testing::make_bucket;

TEST(NoneCompressor, SendsEverythingAsFp32InPlace) {
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {3, 4});
  for (std::size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<float>(i);
  NoneCompressor c;
  const ExchangePlan plan = c.plan(bucket, 4);
  EXPECT_EQ(plan.dense, (std::vector<std::size_t>{0, 1}));
  EXPECT_TRUE(plan.all_dense());
  EXPECT_EQ(plan.dense_wire, DenseWire::kFloat32);
  // In place: nothing moves. Into a separate buffer: a copy.
  EncodedBucket in_place{bucket.data, nullptr, bucket.numel, nullptr};
  c.encode(bucket, plan, 4, in_place);
  EXPECT_EQ(storage[6], 6.0f);
  std::vector<float> copy(7, -1.0f);
  c.encode(bucket, plan, 4, EncodedBucket{copy.data(), nullptr, 7, nullptr});
  EXPECT_EQ(copy, storage);
}

TEST(Fp16Compressor, SendsHalfOfTheAverageAndDecodesToFp32) {
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {5000, 3});  // past one 4096-element chunk
  for (std::size_t i = 0; i < storage.size(); ++i) {
    storage[i] = static_cast<float>(i % 64) - 32.0f;  // g / 4 is exact in fp16
  }
  const std::vector<float> g = storage;
  Fp16Compressor c;
  const ExchangePlan plan = c.plan(bucket, 4);
  EXPECT_EQ(plan.dense_wire, DenseWire::kFloat16);
  EXPECT_EQ(plan.dense.size(), 2u);
  std::vector<Half> wire(bucket.numel);
  c.encode(bucket, plan, 4, EncodedBucket{nullptr, wire.data(), bucket.numel, nullptr});
  std::vector<float> back(bucket.numel);
  kernels::cast_fp16_to_fp32(wire.data(), back.data(), back.size(), kernels::Stream::host());
  for (std::size_t i = 0; i < g.size(); ++i) ASSERT_EQ(back[i], g[i] / 4.0f) << i;
  // Four ranks with the same halves: the sum is the average, cast back into the bucket.
  for (auto& h : wire) {
    float f;
    kernels::cast_fp16_to_fp32(&h, &f, 1, kernels::Stream::host());
    f *= 4.0f;
    kernels::cast_fp32_to_fp16(&f, &h, 1, kernels::Stream::host());
  }
  std::fill(storage.begin(), storage.end(), 0.0f);
  decode_dense(bucket, plan, EncodedBucket{nullptr, wire.data(), bucket.numel, nullptr});
  EXPECT_EQ(storage, g);
}

TEST(Fp16Compressor, LargeGradientsDoNotOverflowTheSum) {
  // 60000 fits in fp16 (max 65504); four ranks' sum would not, the sum of g / 4 does.
  std::vector<float> storage;
  const BucketView bucket = make_bucket(storage, {1});
  storage[0] = 60000.0f;
  Fp16Compressor c;
  Half h;
  c.encode(bucket, c.plan(bucket, 4), 4, EncodedBucket{nullptr, &h, 1, nullptr});
  float f;
  kernels::cast_fp16_to_fp32(&h, &f, 1, kernels::Stream::host());
  EXPECT_EQ(f, 15000.0f);
}

TEST(CompressorState, StatelessCompressorsRoundTripAndRefuseOthers) {
  NoneCompressor none;
  none.begin_step(12);
  std::stringstream s;
  none.save_state(s);
  NoneCompressor none2;
  none2.load_state(s);
  EXPECT_EQ(none2.step(), 12);
  std::stringstream t;
  none.save_state(t);
  Fp16Compressor fp16;
  EXPECT_THROW(fp16.load_state(t), std::runtime_error);
  std::stringstream u;
  TopkCompressor({100}, SparsifyOptions{}).save_state(u);
  EXPECT_THROW(fp16.load_state(u), std::runtime_error);
}

}  // namespace
}  // namespace gw::compressors
