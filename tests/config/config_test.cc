#include <gtest/gtest.h>

#include <string>

#include "plugin/config/config.h"
#include "plugin/config/params.h"

namespace gw::config {
namespace {

// Expects `fn` to throw ConfigError whose message contains every string in `parts`.
template <typename Fn>
void expect_config_error(Fn fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg << " lacks " << p;
  }
}

Registry test_registry() {
  Registry r;
  ParamSpec b{"GRADWIRE_T_BOOL", ParamType::kBool, "0", {}, 0, 0, false, "a bool"};
  ParamSpec i{"GRADWIRE_T_INT", ParamType::kInt, "4", {}, 1, 64, false, "an int"};
  ParamSpec f{"GRADWIRE_T_FLOAT", ParamType::kFloat, "0.5", {}, 0, 1, false, "a float"};
  ParamSpec e{"GRADWIRE_T_ENUM", ParamType::kEnum, "a", {"a", "bb"}, 0, 0, false, "an enum"};
  ParamSpec s{"GRADWIRE_T_PATH", ParamType::kString, "x.json", {}, 0, 0, true, "a path"};
  ParamSpec l{"GRADWIRE_T_LIST", ParamType::kFloatList, "0.75", {}, 0, 1, false, "a list"};
  for (const auto& p : {b, i, f, e, s, l}) r.add(p);
  return r;
}

TEST(Registry, EveryGradwireParameterParsesItsDefaultAndRejectsGarbage) {
  const Registry& reg = registry();
  ASSERT_FALSE(reg.params().empty());
  Config config;
  for (const auto& p : reg.params()) {
    SCOPED_TRACE(p.key);
    EXPECT_EQ(p.key.rfind("GRADWIRE_", 0), 0u);
    EXPECT_FALSE(p.description.empty());
    EXPECT_EQ(config.source(p.key), Source::kDefault);
    EXPECT_EQ(config.text(p.key), p.default_text) << "write the default canonically";
    if (p.allow_empty) {
      // An empty list (GRADWIRE_AMP_ALLOW=""), not an error.
      EXPECT_EQ(p.type, ParamType::kString);
      EXPECT_EQ(std::get<std::string>(reg.parse(p, "")), "");
      continue;
    }
    for (const char* bad : {"%%bad%%", "", " 1"}) {
      if (p.type == ParamType::kString && std::string(bad) != "") continue;
      expect_config_error([&] { reg.parse(p, bad); },
                          {p.key, std::string("'") + bad + "'", "accepted: " + p.accepted()});
    }
  }
}

TEST(Registry, EveryEnumChoiceAndBoolSpellingIsAccepted) {
  const Registry& reg = registry();
  for (const auto& p : reg.params()) {
    if (p.type == ParamType::kEnum) {
      for (const auto& c : p.choices) EXPECT_EQ(std::get<std::string>(reg.parse(p, c)), c);
      expect_config_error([&] { reg.parse(p, "NONE_OF_THESE"); }, {p.key, "one of:"});
    }
    if (p.type == ParamType::kBool) {
      for (const char* t : {"1", "true", "TRUE", "yes", "on"}) {
        EXPECT_TRUE(std::get<bool>(reg.parse(p, t))) << t;
      }
      for (const char* f : {"0", "false", "No", "off"}) {
        EXPECT_FALSE(std::get<bool>(reg.parse(p, f))) << f;
      }
      expect_config_error([&] { reg.parse(p, "2"); }, {p.key, "'2'"});
    }
  }
}

TEST(Registry, IntegersAreStrict) {
  const Registry reg = test_registry();
  const ParamSpec& p = *reg.find("GRADWIRE_T_INT");
  EXPECT_EQ(std::get<std::int64_t>(reg.parse(p, "64")), 64);
  EXPECT_EQ(std::get<std::int64_t>(reg.parse(p, "1")), 1);
  expect_config_error([&] { reg.parse(p, "64MB"); }, {"GRADWIRE_T_INT='64MB'", "units"});
  expect_config_error([&] { reg.parse(p, "65"); }, {"out of range", "[1, 64]"});
  expect_config_error([&] { reg.parse(p, "0"); }, {"out of range"});
  expect_config_error([&] { reg.parse(p, "1.5"); }, {"'1.5'"});
  expect_config_error([&] { reg.parse(p, "x"); }, {"not an integer"});
  expect_config_error([&] { reg.parse(p, "99999999999999999999"); }, {"out of range"});
}

TEST(Registry, FloatsAreStrictAndFinite) {
  const Registry reg = test_registry();
  const ParamSpec& p = *reg.find("GRADWIRE_T_FLOAT");
  EXPECT_DOUBLE_EQ(std::get<double>(reg.parse(p, "0.25")), 0.25);
  EXPECT_DOUBLE_EQ(std::get<double>(reg.parse(p, "1e-3")), 1e-3);
  for (const char* bad : {"nan", "inf", "0x0.1p1", "0.5x", "", "1.5", "-0.1"}) {
    expect_config_error([&] { reg.parse(p, bad); }, {"GRADWIRE_T_FLOAT", "[0, 1]"});
  }
}

TEST(Registry, FloatListsCheckEveryElement) {
  const Registry reg = test_registry();
  const ParamSpec& p = *reg.find("GRADWIRE_T_LIST");
  const auto v = std::get<std::vector<double>>(reg.parse(p, "0.75,0.9375,0.999"));
  ASSERT_EQ(v.size(), 3u);
  EXPECT_DOUBLE_EQ(v[1], 0.9375);
  EXPECT_EQ(to_text(reg.parse(p, "0.75,0.9375")), "0.75,0.9375");
  expect_config_error([&] { reg.parse(p, "0.5,,0.6"); }, {"element 2"});
  expect_config_error([&] { reg.parse(p, "0.5,2"); }, {"element 2 out of range"});
  expect_config_error([&] { reg.parse(p, "0.5,"); }, {"element 2"});
}

TEST(Registry, EnumsAndStrings) {
  const Registry reg = test_registry();
  EXPECT_EQ(std::get<std::string>(reg.parse(*reg.find("GRADWIRE_T_ENUM"), "bb")), "bb");
  expect_config_error([&] { reg.parse(*reg.find("GRADWIRE_T_ENUM"), "BB"); }, {"one of: a, bb"});
  expect_config_error([&] { reg.parse(*reg.find("GRADWIRE_T_PATH"), ""); }, {"non-empty"});
}

TEST(Registry, DeclarationErrorsAreCaught) {
  Registry r = test_registry();
  EXPECT_THROW(r.add(ParamSpec{"GRADWIRE_T_INT", ParamType::kInt, "1", {}, 0, 9, false, "d"}),
               std::logic_error);
  EXPECT_THROW(r.add(ParamSpec{"NOPREFIX", ParamType::kInt, "1", {}, 0, 9, false, "d"}),
               std::logic_error);
  EXPECT_THROW(r.add(ParamSpec{"GRADWIRE_T_X", ParamType::kInt, "10", {}, 0, 9, false, "d"}),
               std::logic_error);
}

TEST(Config, UnknownNamesAreRejectedWithASuggestion) {
  Config config;
  expect_config_error(
      [&] {
        config.apply_environment({{"GRADWIRE_COMPRESOR", "none"}});
      },
      {"unknown variable GRADWIRE_COMPRESOR", "did you mean GRADWIRE_COMPRESSOR?"});
  expect_config_error([&] { config.set("GRADWIRE_ZZZZZZZZZZZZZZZZZZZZ", "1"); },
                      {"unknown variable GRADWIRE_ZZZZZZZZZZZZZZZZZZZZ"});
  try {
    config.set("GRADWIRE_ZZZZZZZZZZZZZZZZZZZZ", "1");
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos);
  }
  // Variables of other programs are none of gradwire's business.
  config.apply_environment({{"OMPI_COMM_WORLD_RANK", "3"}, {"GRADWIRE", "x"}});
}

TEST(Config, EnvironmentOverridesProgramAndNothingIsHalfApplied) {
  const Registry reg = test_registry();
  Config config(reg);
  config.set("GRADWIRE_T_INT", "8");
  EXPECT_EQ(config.get_int("GRADWIRE_T_INT"), 8);
  EXPECT_EQ(config.source("GRADWIRE_T_INT"), Source::kProgram);
  config.apply_environment({{"GRADWIRE_T_INT", "16"}});
  EXPECT_EQ(config.get_int("GRADWIRE_T_INT"), 16);
  EXPECT_EQ(config.source("GRADWIRE_T_INT"), Source::kEnvironment);

  EXPECT_THROW(config.apply_environment({{"GRADWIRE_T_FLOAT", "0.75"}, {"GRADWIRE_T_INT", "x"}}),
               ConfigError);
  EXPECT_DOUBLE_EQ(config.get_float("GRADWIRE_T_FLOAT"), 0.5);
  EXPECT_EQ(config.source("GRADWIRE_T_FLOAT"), Source::kDefault);
}

TEST(Config, TypedGettersCheckTheType) {
  const Registry reg = test_registry();
  Config config(reg);
  EXPECT_FALSE(config.get_bool("GRADWIRE_T_BOOL"));
  EXPECT_EQ(config.get_string("GRADWIRE_T_ENUM"), "a");
  EXPECT_EQ(config.get_float_list("GRADWIRE_T_LIST").size(), 1u);
  EXPECT_THROW(config.get_int("GRADWIRE_T_BOOL"), std::logic_error);
  EXPECT_THROW(config.get_bool("GRADWIRE_T_NOPE"), ConfigError);
}

TEST(Config, CanonicalTextAndHashCoverSharedParametersOnly) {
  const Registry reg = test_registry();
  Config a(reg), b(reg);
  EXPECT_EQ(a.hash(), b.hash());
  b.set("GRADWIRE_T_PATH", "elsewhere.json");  // rank-local: may differ
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.canonical().find("GRADWIRE_T_PATH"), std::string::npos);
  b.set("GRADWIRE_T_ENUM", "bb");
  EXPECT_NE(a.hash(), b.hash());
  const auto parsed = parse_canonical(b.canonical());
  EXPECT_EQ(parsed.at("GRADWIRE_T_ENUM"), "bb");
  EXPECT_EQ(parsed.at("GRADWIRE_T_LIST"), "0.75");
  // A value that parses to the same thing hashes the same ("true" and "1").
  Config c(reg), d(reg);
  c.set("GRADWIRE_T_BOOL", "true");
  d.set("GRADWIRE_T_BOOL", "1");
  EXPECT_EQ(c.hash(), d.hash());
}

// Regression (fuzz_config): a string value with a newline was accepted and went as it was into
// the canonical KEY=value text that ranks compare, where "relu\nGRADWIRE_GRADIENT_REDUCTION=sum"
// read back as a second line that sets another parameter. Control characters are rejected, with
// the variable, the value written on one line, the offending byte and what is accepted.
TEST(Config, StringValuesWithControlCharactersAreRejected) {
  Config config;
  const std::string before = config.canonical();
  expect_config_error(
      [&] {
        config.apply_environment({{"GRADWIRE_AMP_ALLOW", "relu\nGRADWIRE_GRADIENT_REDUCTION=sum"}});
      },
      {"GRADWIRE_AMP_ALLOW='relu\\nGRADWIRE_GRADIENT_REDUCTION=sum' is not valid",
       "(a control character, \\n, at byte 5)",
       "accepted: a string without control characters (may be empty)"});
  EXPECT_EQ(config.canonical(), before);
  expect_config_error([&] { config.set("GRADWIRE_AMP_DENY", "linear\t"); },
                      {"GRADWIRE_AMP_DENY='linear\\t'", "\\t, at byte 7"});
  expect_config_error(
      [&] {
        config.set("GRADWIRE_TIMELINE",
                   "/tmp/a\x01"
                   "b\x7f.json");
      },
      {"GRADWIRE_TIMELINE='/tmp/a\\x01b\\x7F.json'", "\\x01, at byte 7"});
  expect_config_error([&] { config.set("GRADWIRE_AMP_DENY", std::string("a\0b", 3)); },
                      {"\\x00, at byte 2"});
  // Bytes above 0x7F are not control characters: a UTF-8 path is a path.
  config.set("GRADWIRE_TIMELINE", "/tmp/sp\xC3\xBCr.json");
  EXPECT_EQ(config.text("GRADWIRE_TIMELINE"), "/tmp/sp\xC3\xBCr.json");
}

TEST(Config, TablesListEveryParameter) {
  Config config;
  config.apply_environment({{"GRADWIRE_GRADIENT_REDUCTION", "sum"}});
  const std::string table = config.table();
  const std::string markdown = markdown_table(registry());
  for (const auto& p : registry().params()) {
    EXPECT_NE(table.find(p.key), std::string::npos);
    EXPECT_NE(markdown.find("`" + p.key + "`"), std::string::npos);
  }
  EXPECT_NE(table.find("sum"), std::string::npos);
  EXPECT_NE(table.find("environment"), std::string::npos);
}

}  // namespace
}  // namespace gw::config
