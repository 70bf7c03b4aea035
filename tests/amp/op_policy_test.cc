// OpPolicy: the default lists (Note [Op lists]), the cast decision, GRADWIRE_AMP_ALLOW /
// GRADWIRE_AMP_DENY overrides and their errors, and parse_op_list.
#include "amp/op_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "amp_test_util.h"

namespace gw::amp {
namespace {

using Names = std::vector<std::string>;

constexpr const char* kKnownOps =
    "linear, conv2d, relu, max_pool2d, flatten, softmax_cross_entropy";

using testing::invalid_argument_of;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Names, PrecisionsAndLists) {
  EXPECT_STREQ(to_string(Precision::kFloat32), "fp32");
  EXPECT_STREQ(to_string(Precision::kFloat16), "fp16");
  EXPECT_STREQ(to_string(OpList::kAllow), "allow");
  EXPECT_STREQ(to_string(OpList::kDeny), "deny");
  EXPECT_STREQ(to_string(OpList::kInfer), "infer");
}

TEST(OpPolicy, DefaultsKnowTheTrainersOpsInDeclarationOrder) {
  const OpPolicy p = OpPolicy::defaults();
  EXPECT_EQ(p.ops(),
            (Names{"linear", "conv2d", "relu", "max_pool2d", "flatten", "softmax_cross_entropy"}));
  EXPECT_EQ(p.ops_in(OpList::kAllow), (Names{"linear", "conv2d"}));
  EXPECT_EQ(p.ops_in(OpList::kDeny), (Names{"softmax_cross_entropy"}));
  EXPECT_EQ(p.ops_in(OpList::kInfer), (Names{"relu", "max_pool2d", "flatten"}));
  EXPECT_EQ(p.list_of("linear"), OpList::kAllow);
  EXPECT_EQ(p.list_of("softmax_cross_entropy"), OpList::kDeny);
  EXPECT_EQ(p.list_of("flatten"), OpList::kInfer);
}

TEST(OpPolicy, DefaultDecisionForEveryOpAndBothInputTypes) {
  const OpPolicy p = OpPolicy::defaults();
  struct Case {
    const char* op;
    Precision after_fp16_inputs, after_an_fp32_input;
  };
  const Case cases[] = {
      {"linear", Precision::kFloat16, Precision::kFloat16},
      {"conv2d", Precision::kFloat16, Precision::kFloat16},
      {"relu", Precision::kFloat16, Precision::kFloat32},
      {"max_pool2d", Precision::kFloat16, Precision::kFloat32},
      {"flatten", Precision::kFloat16, Precision::kFloat32},
      {"softmax_cross_entropy", Precision::kFloat32, Precision::kFloat32},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(p.decide(c.op, false), c.after_fp16_inputs) << c.op;
    EXPECT_EQ(p.decide(c.op, true), c.after_an_fp32_input) << c.op;
  }
}

TEST(OpPolicy, UnknownOpsAreRejectedWithTheKnownOnes) {
  const OpPolicy p = OpPolicy::defaults();
  const std::string m = invalid_argument_of([&] { p.decide("matmul", false); });
  EXPECT_TRUE(contains(m, "'matmul'")) << m;
  EXPECT_TRUE(contains(m, kKnownOps)) << m;
  EXPECT_THROW(p.list_of("Linear"), std::invalid_argument);
  EXPECT_THROW(p.list_of(""), std::invalid_argument);
}

TEST(OpPolicy, DescribePrintsTheThreeLists) {
  OpPolicy p = OpPolicy::defaults();
  EXPECT_EQ(p.describe(),
            "allow: linear, conv2d; deny: softmax_cross_entropy; infer: relu, max_pool2d, flatten");
  p.apply_overrides("relu", "linear,conv2d");
  EXPECT_EQ(p.describe(),
            "allow: relu; deny: linear, conv2d, softmax_cross_entropy; infer: max_pool2d, flatten");
  p.apply_overrides("", "relu,max_pool2d,flatten");
  EXPECT_EQ(p.describe(),
            "allow: -; deny: linear, conv2d, relu, max_pool2d, flatten, softmax_cross_entropy; "
            "infer: -");
}

TEST(OpPolicy, AllowMakesAnInferOpFp16EvenAfterFp32Inputs) {
  OpPolicy p = OpPolicy::defaults();
  EXPECT_EQ(p.decide("relu", true), Precision::kFloat32);
  p.apply_overrides("relu", "");
  EXPECT_EQ(p.list_of("relu"), OpList::kAllow);
  EXPECT_EQ(p.decide("relu", true), Precision::kFloat16);
  EXPECT_EQ(p.decide("relu", false), Precision::kFloat16);
  // The others keep their lists.
  EXPECT_EQ(p.decide("max_pool2d", true), Precision::kFloat32);
  EXPECT_EQ(p.decide("linear", true), Precision::kFloat16);
  EXPECT_EQ(p.decide("softmax_cross_entropy", false), Precision::kFloat32);
}

TEST(OpPolicy, DenyMovesAllowOpsToFp32) {
  OpPolicy p = OpPolicy::defaults();
  p.apply_overrides("", "linear,conv2d");
  for (const char* op : {"linear", "conv2d"}) {
    EXPECT_EQ(p.list_of(op), OpList::kDeny) << op;
    EXPECT_EQ(p.decide(op, false), Precision::kFloat32) << op;
  }
  EXPECT_TRUE(p.ops_in(OpList::kAllow).empty());
  EXPECT_EQ(p.decide("relu", false), Precision::kFloat16);
  // A later override moves an op back.
  p.apply_overrides("conv2d", "");
  EXPECT_EQ(p.ops_in(OpList::kAllow), (Names{"conv2d"}));
  EXPECT_EQ(p.ops_in(OpList::kDeny), (Names{"linear", "softmax_cross_entropy"}));
}

TEST(OpPolicy, BlanksAroundNamesAndRepeatsWithinOneListAreFine) {
  OpPolicy p = OpPolicy::defaults();
  p.apply_overrides("  relu ,\tflatten\t, relu", " softmax_cross_entropy ,  linear ");
  EXPECT_EQ(p.ops_in(OpList::kAllow), (Names{"conv2d", "relu", "flatten"}));
  EXPECT_EQ(p.ops_in(OpList::kDeny), (Names{"linear", "softmax_cross_entropy"}));
  EXPECT_EQ(p.ops_in(OpList::kInfer), (Names{"max_pool2d"}));
}

TEST(OpPolicy, EmptyOverridesChangeNothing) {
  OpPolicy p = OpPolicy::defaults();
  const std::string before = p.describe();
  p.apply_overrides("", "");
  EXPECT_EQ(p.describe(), before);
  p.apply_overrides("  ", "\t");
  EXPECT_EQ(p.describe(), before);
}

TEST(OpPolicy, AnOpInBothListsIsRejectedNamingBothVariables) {
  OpPolicy p = OpPolicy::defaults();
  const std::string before = p.describe();
  const std::string m =
      invalid_argument_of([&] { p.apply_overrides("relu,linear", "max_pool2d, linear"); });
  EXPECT_TRUE(contains(m, "GRADWIRE_AMP_ALLOW")) << m;
  EXPECT_TRUE(contains(m, "GRADWIRE_AMP_DENY")) << m;
  EXPECT_TRUE(contains(m, "'linear'")) << m;
  EXPECT_EQ(p.describe(), before);  // relu and max_pool2d did not move either
  // The sources come from the caller.
  const std::string named =
      invalid_argument_of([&] { p.apply_overrides("relu", "relu", "--amp-allow", "--amp-deny"); });
  EXPECT_TRUE(contains(named, "--amp-allow")) << named;
  EXPECT_TRUE(contains(named, "--amp-deny")) << named;
}

TEST(OpPolicy, AnUnknownOpIsRejectedWithTheVariableAndTheKnownOpsAndChangesNothing) {
  OpPolicy p = OpPolicy::defaults();
  const std::string before = p.describe();
  const std::string allow = invalid_argument_of([&] { p.apply_overrides("relu,matmul", ""); });
  EXPECT_EQ(allow, std::string("GRADWIRE_AMP_ALLOW: unknown op 'matmul'; known ops: ") + kKnownOps);
  EXPECT_EQ(p.describe(), before);  // relu was valid but did not move
  const std::string deny = invalid_argument_of([&] { p.apply_overrides("relu", "Conv2d"); });
  EXPECT_TRUE(contains(deny, "GRADWIRE_AMP_DENY")) << deny;
  EXPECT_TRUE(contains(deny, "'Conv2d'")) << deny;
  EXPECT_TRUE(contains(deny, kKnownOps)) << deny;
  EXPECT_EQ(p.describe(), before);
  EXPECT_EQ(p.decide("relu", true), Precision::kFloat32);
}

TEST(OpPolicy, EmptyItemsAreRejected) {
  OpPolicy p = OpPolicy::defaults();
  const std::string before = p.describe();
  const std::string m = invalid_argument_of([&] { p.apply_overrides("linear,,relu", ""); });
  EXPECT_TRUE(contains(m, "GRADWIRE_AMP_ALLOW")) << m;
  EXPECT_TRUE(contains(m, "'linear,,relu'")) << m;
  const std::string trailing = invalid_argument_of([&] { p.apply_overrides("", "linear,"); });
  EXPECT_TRUE(contains(trailing, "GRADWIRE_AMP_DENY")) << trailing;
  EXPECT_TRUE(contains(trailing, "'linear,'")) << trailing;
  EXPECT_EQ(p.describe(), before);
}

TEST(ParseOpList, SplitsTrimsAndRejectsEmptyItems) {
  EXPECT_EQ(parse_op_list("linear, conv2d", "X"), (Names{"linear", "conv2d"}));
  EXPECT_EQ(parse_op_list(" \tlinear\t ", "X"), (Names{"linear"}));
  EXPECT_EQ(parse_op_list("a,b,a", "X"), (Names{"a", "b", "a"}));
  EXPECT_TRUE(parse_op_list("", "X").empty());
  EXPECT_TRUE(parse_op_list(" \t ", "X").empty());
  for (const char* bad : {"a,,b", "a,", ",a", ",", "a, ,b", " , "}) {
    const std::string m = invalid_argument_of([&] { parse_op_list(bad, "SOURCE_VAR"); });
    EXPECT_TRUE(contains(m, "SOURCE_VAR")) << bad << ": " << m;
    EXPECT_TRUE(contains(m, std::string("'") + bad + "'")) << bad << ": " << m;
  }
}

TEST(OpPolicy, ConstructorRejectsEmptyListsEmptyNamesAndRepeats) {
  using Ops = std::vector<std::pair<std::string, OpList>>;
  EXPECT_THROW(OpPolicy{Ops{}}, std::invalid_argument);
  EXPECT_THROW((OpPolicy{Ops{{"a", OpList::kAllow}, {"", OpList::kDeny}}}), std::invalid_argument);
  const std::string twice = invalid_argument_of([] {
    OpPolicy{Ops{{"a", OpList::kAllow}, {"b", OpList::kDeny}, {"a", OpList::kInfer}}};
  });
  EXPECT_TRUE(contains(twice, "'a'")) << twice;
  EXPECT_THROW((OpPolicy{Ops{{"a b", OpList::kAllow}}}), std::invalid_argument);
  EXPECT_THROW((OpPolicy{Ops{{"a,b", OpList::kAllow}}}), std::invalid_argument);

  const OpPolicy custom(Ops{{"gelu", OpList::kInfer}, {"matmul", OpList::kAllow}});
  EXPECT_EQ(custom.ops(), (Names{"gelu", "matmul"}));
  EXPECT_EQ(custom.describe(), "allow: matmul; deny: -; infer: gelu");
  EXPECT_EQ(custom.decide("gelu", true), Precision::kFloat32);
}

}  // namespace
}  // namespace gw::amp
