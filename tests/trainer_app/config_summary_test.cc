// What rank 0 prints about the configuration (Note [The configuration at the start of a run]):
// one line with what was set, or the whole table.
#include "reference_trainer/app/config_summary.h"

#include <gtest/gtest.h>

#include <string>

namespace gw::trainer {
namespace {

config::Registry sample_registry() {
  config::Registry r;
  config::ParamSpec compressor;
  compressor.key = "GRADWIRE_SAMPLE_COMPRESSOR";
  compressor.type = config::ParamType::kEnum;
  compressor.default_text = "none";
  compressor.choices = {"none", "dgc"};
  compressor.description = "A compressor.";
  r.add(compressor);
  config::ParamSpec sparsity;
  sparsity.key = "GRADWIRE_SAMPLE_SPARSITY";
  sparsity.type = config::ParamType::kFloat;
  sparsity.default_text = "0.999";
  sparsity.min = 0;
  sparsity.max = 1;
  sparsity.description = "A sparsity.";
  r.add(sparsity);
  config::ParamSpec path;
  path.key = "GRADWIRE_SAMPLE_PATH";
  path.type = config::ParamType::kString;
  path.default_text = "";
  path.allow_empty = true;
  path.description = "A path.";
  r.add(path);
  return r;
}

constexpr char kRest[] = "--print-config or GRADWIRE_LOG_LEVEL=debug lists every parameter)\n";

TEST(ConfigSummary, AllDefaultsIsOneLine) {
  const config::Registry registry = sample_registry();
  const config::Config config(registry);
  EXPECT_EQ(config_summary_line(config, 1),
            std::string("gradwire configuration (1 rank): all defaults (") + kRest);
}

TEST(ConfigSummary, NamesWhatWasSetInRegistryOrderOnOneLine) {
  const config::Registry registry = sample_registry();
  config::Config config(registry);
  config.apply_environment({{"GRADWIRE_SAMPLE_SPARSITY", "0.99"}});
  config.set("GRADWIRE_SAMPLE_COMPRESSOR", "dgc");
  config.set("GRADWIRE_SAMPLE_PATH", "a b");
  EXPECT_EQ(config_summary_line(config, 4),
            std::string("gradwire configuration (4 ranks): GRADWIRE_SAMPLE_COMPRESSOR=dgc "
                        "GRADWIRE_SAMPLE_SPARSITY=0.99 GRADWIRE_SAMPLE_PATH='a b' (everything "
                        "else default; ") +
                kRest);
}

TEST(ConfigSummary, AValueSetToItsDefaultIsStillNamed) {
  // What the user set is what they want to see taken: GRADWIRE_SAMPLE_COMPRESSOR=none too.
  const config::Registry registry = sample_registry();
  config::Config config(registry);
  config.apply_environment({{"GRADWIRE_SAMPLE_COMPRESSOR", "none"}});
  const std::string line = config_summary_line(config, 2);
  EXPECT_NE(line.find(": GRADWIRE_SAMPLE_COMPRESSOR=none (everything else default; "),
            std::string::npos)
      << line;
}

TEST(ConfigSummary, TheFullTableListsEveryParameter) {
  const config::Registry registry = sample_registry();
  const config::Config config(registry);
  const std::string table = config_full_table(config, 2);
  EXPECT_EQ(table.rfind("gradwire configuration (2 ranks):\n", 0), 0u) << table;
  for (const char* key :
       {"GRADWIRE_SAMPLE_COMPRESSOR", "GRADWIRE_SAMPLE_SPARSITY", "GRADWIRE_SAMPLE_PATH"}) {
    EXPECT_NE(table.find(key), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace gw::trainer
