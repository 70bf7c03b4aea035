#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "compressors/dgc_compressor.h"
#include "compressors/fp16_compressor.h"
#include "compressors/kind.h"
#include "compressors/none_compressor.h"
#include "compressors/powersgd_compressor.h"
#include "compressors/topk_compressor.h"
#include "plugin/config/config.h"
#include "plugin/config/params.h"

namespace gw::compressors {
namespace {

TEST(Kind, NamesRoundTripAndUnknownNamesListTheAccepted) {
  for (Kind k : kKinds) EXPECT_EQ(parse_kind(to_string(k)), k);
  try {
    parse_kind("DGC");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'DGC'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("none, fp16, topk, dgc, powersgd"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(is_sparse(Kind::kNone));
  EXPECT_FALSE(is_sparse(Kind::kFp16));
  EXPECT_TRUE(is_sparse(Kind::kTopk));
  EXPECT_TRUE(is_sparse(Kind::kDgc));
  EXPECT_FALSE(is_sparse(Kind::kPowerSgd));
  EXPECT_FALSE(keeps_residuals(Kind::kFp16));
  EXPECT_TRUE(keeps_residuals(Kind::kTopk));
  EXPECT_TRUE(keeps_residuals(Kind::kPowerSgd));
}

TEST(Kind, EachCompressorNamesItsKind) {
  SparsifyOptions s;
  EXPECT_EQ(NoneCompressor().name(), "none");
  EXPECT_EQ(Fp16Compressor().name(), "fp16");
  EXPECT_EQ(TopkCompressor({4}, s).name(), "topk");
  DgcOptions d;
  d.sparsify = s;
  EXPECT_EQ(DgcCompressor({4}, d).kind(), Kind::kDgc);
  EXPECT_EQ(PowerSgdCompressor({4}, {2}, PowerSgdOptions{}).name(), "powersgd");
}

// GRADWIRE_COMPRESSOR accepts exactly the kinds, in the same order, and then auto, which chooses
// among them (plugin/auto/auto_strategy.h): the registry's choices are what the configuration error
// and the README table list.
TEST(Kind, GradwireCompressorAcceptsExactlyTheKindsAndAuto) {
  std::vector<std::string> kinds;
  for (Kind k : kKinds) kinds.push_back(to_string(k));
  kinds.push_back("auto");
  bool found = false;
  for (const auto& p : config::registry().params()) {
    if (std::string(p.key) != config::keys::kCompressor) continue;
    found = true;
    EXPECT_EQ(std::vector<std::string>(p.choices.begin(), p.choices.end()), kinds);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace gw::compressors
