// The fp16 casts on the CPU: the public API on the host stream and each variant it can pick
// (kernels/cpu/elementwise_cpu.h), against known bit patterns and the bit-level reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/elementwise.h"
#include "tests/kernels/kernels_test_util.h"

namespace gw::kernels {
namespace {

using test_util::bits_float;
using test_util::float_bits;
using test_util::is_fp16_nan;

struct CastVariant {
  const char* name;
  void (*to_fp16)(const float*, Half*, std::size_t);
  void (*to_fp32)(const Half*, float*, std::size_t);
  bool (*runs_here)();
};

void api_to_fp16(const float* in, Half* out, std::size_t n) {
  cast_fp32_to_fp16(in, out, n, Stream::host());
}
void api_to_fp32(const Half* in, float* out, std::size_t n) {
  cast_fp16_to_fp32(in, out, n, Stream::host());
}
bool always() { return true; }

const CastVariant kVariants[] = {
    {"Api", api_to_fp16, api_to_fp32, always},
    {"Portable", cpu::detail::cast_fp32_to_fp16_portable, cpu::detail::cast_fp16_to_fp32_portable,
     always},
#if defined(GW_KERNELS_HAVE_F16C_VARIANT)
    {"F16c", cpu::detail::cast_fp32_to_fp16_f16c, cpu::detail::cast_fp16_to_fp32_f16c,
     cpu::detail::cpu_has_f16c},
#endif
};

// Names the variant in gtest's messages (instead of the struct's bytes).
void PrintTo(const CastVariant& variant, std::ostream* os) { *os << variant.name; }

std::string variant_name(const ::testing::TestParamInfo<CastVariant>& info) {
  return info.param.name;
}

class CpuCastTest : public ::testing::TestWithParam<CastVariant> {
 protected:
  void SetUp() override {
    if (!GetParam().runs_here()) GTEST_SKIP() << GetParam().name << " cast needs F16C and AVX";
  }
};

// f converted in a buffer of 9 copies, so that it goes through a variant's vector loop (8 wide at
// most) and its scalar tail; both must agree.
std::uint16_t to_fp16_bits(const CastVariant& variant, float f) {
  const std::vector<float> in(9, f);
  std::vector<Half> out(in.size(), Half{0x5555});
  variant.to_fp16(in.data(), out.data(), in.size());
  for (const Half& h : out) EXPECT_EQ(h.bits, out.back().bits) << "vector loop and tail disagree";
  return out.back().bits;
}

TEST_P(CpuCastTest, KnownBitPatterns) {
  const float inf = std::numeric_limits<float>::infinity();
  const struct {
    float in;
    std::uint16_t out;
  } cases[] = {
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.5f, 0x3800},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {65504.0f, 0x7bff},  // largest finite fp16
      {65519.0f, 0x7bff},  // below the midpoint to 65536: rounds down
      {65520.0f, 0x7c00},  // the midpoint: ties to even, which is inf
      {-65520.0f, 0xfc00},
      {1e10f, 0x7c00},
      {inf, 0x7c00},
      {-inf, 0xfc00},
      {std::ldexp(1.0f, -14), 0x0400},         // smallest normal
      {std::ldexp(1023.0f, -24), 0x03ff},      // largest subnormal
      {std::ldexp(1.0f, -24), 0x0001},         // smallest subnormal
      {std::ldexp(1.0f, -25), 0x0000},         // tie between 0 and 2^-24: to even, 0
      {std::ldexp(3.0f, -25), 0x0002},         // tie between 2^-24 and 2^-23: to even, 2^-23
      {std::ldexp(1.5f, -25), 0x0001},         // above the tie: up
      {-std::ldexp(1.0f, -26), 0x8000},        // underflow keeps the sign
      {1.0f + std::ldexp(1.0f, -11), 0x3c00},  // tie: to even (down)
      {1.0f + std::ldexp(3.0f, -11), 0x3c02},  // tie: to even (up)
      {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20), 0x3c01},  // just above the tie
  };
  for (const auto& c : cases) {
    EXPECT_EQ(to_fp16_bits(GetParam(), c.in), c.out)
        << std::hexfloat << c.in << " (0x" << std::hex << float_bits(c.in) << ")";
  }
}

TEST_P(CpuCastTest, NanStaysNan) {
  for (const std::uint32_t nan_bits :
       {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fbfffffu, 0x7fffffffu}) {
    const std::uint16_t h = to_fp16_bits(GetParam(), bits_float(nan_bits));
    EXPECT_TRUE(is_fp16_nan(h)) << "fp32 0x" << std::hex << nan_bits << " -> fp16 0x" << h;
  }
}

TEST_P(CpuCastTest, Fp16ToFp32MatchesReferenceForAllBitPatterns) {
  const std::vector<Half> all = test_util::all_fp16_bit_patterns();
  std::vector<float> out(all.size());
  GetParam().to_fp32(all.data(), out.data(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::uint16_t h = all[i].bits;
    if (is_fp16_nan(h)) {
      EXPECT_TRUE(std::isnan(out[i])) << "fp16 0x" << std::hex << h;
    } else {
      EXPECT_EQ(float_bits(out[i]), float_bits(test_util::reference_fp16_to_fp32(h)))
          << "fp16 0x" << std::hex << h;
    }
  }
}

TEST_P(CpuCastTest, RoundTripFp16ToFp32ToFp16KeepsAllBitPatterns) {
  const std::vector<Half> all = test_util::all_fp16_bit_patterns();
  std::vector<float> wide(all.size());
  std::vector<Half> back(all.size());
  GetParam().to_fp32(all.data(), wide.data(), all.size());
  GetParam().to_fp16(wide.data(), back.data(), all.size());
  std::size_t nans = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (is_fp16_nan(all[i].bits)) {
      ++nans;
      EXPECT_TRUE(is_fp16_nan(back[i].bits)) << "fp16 0x" << std::hex << all[i].bits;
    } else {
      EXPECT_EQ(back[i].bits, all[i].bits);
    }
  }
  EXPECT_EQ(nans, 2u * 1023u);
}

INSTANTIATE_TEST_SUITE_P(Variants, CpuCastTest, ::testing::ValuesIn(kVariants), variant_name);

class CpuCastSizesTest : public ::testing::TestWithParam<std::tuple<CastVariant, std::size_t>> {
 protected:
  void SetUp() override {
    const CastVariant& variant = std::get<0>(GetParam());
    if (!variant.runs_here()) GTEST_SKIP() << variant.name << " cast needs F16C and AVX";
  }
};

TEST_P(CpuCastSizesTest, Fp32ToFp16MatchesBitLevelReference) {
  const auto& [variant, n] = GetParam();
  const std::vector<float> in = test_util::random_cast_inputs(n, 51);
  std::vector<Half> out(n, Half{0x5555});
  variant.to_fp16(in.data(), out.data(), n);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint16_t expected = test_util::reference_fp32_to_fp16(in[i]);
    const bool ok = is_fp16_nan(expected) ? is_fp16_nan(out[i].bits) : out[i].bits == expected;
    if (!ok && ++mismatches <= 5) {
      ADD_FAILURE() << "[" << i << "] " << std::hexfloat << in[i] << " (0x" << std::hex
                    << float_bits(in[i]) << "): expected 0x" << expected << " got 0x"
                    << out[i].bits;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST_P(CpuCastSizesTest, Fp16ToFp32MatchesBitLevelReference) {
  const auto& [variant, n] = GetParam();
  std::vector<Half> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i].bits = static_cast<std::uint16_t>(i * 40503u);
  std::vector<float> out(n, -1.0f);
  variant.to_fp32(in.data(), out.data(), n);
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) {
    expected[i] = is_fp16_nan(in[i].bits) ? out[i] : test_util::reference_fp16_to_fp32(in[i].bits);
    if (is_fp16_nan(in[i].bits)) EXPECT_TRUE(std::isnan(out[i])) << i;
  }
  EXPECT_TRUE(test_util::same_bits(expected, out));
}

INSTANTIATE_TEST_SUITE_P(VariantsAndSizes, CpuCastSizesTest,
                         ::testing::Combine(::testing::ValuesIn(kVariants),
                                            ::testing::ValuesIn(test_util::kTestSizes)),
                         [](const ::testing::TestParamInfo<CpuCastSizesTest::ParamType>& info) {
                           return std::string(std::get<0>(info.param).name) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

// The reference itself, on values whose fp16 encoding is known independently: every fp16 value
// converted to float must come back to its own bits.
TEST(Fp16Reference, IsConsistentWithItsInverse) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    if (is_fp16_nan(bits)) continue;
    ASSERT_EQ(test_util::reference_fp32_to_fp16(test_util::reference_fp16_to_fp32(bits)), bits)
        << std::hex << h;
  }
}

}  // namespace
}  // namespace gw::kernels
