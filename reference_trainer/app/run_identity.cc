#include "reference_trainer/app/run_identity.h"

#include <map>
#include <set>

#include "reference_trainer/app/command_line.h"

namespace gw::trainer {

bool may_change_on_resume(const std::string& option) {
  static const std::set<std::string> kMayChange = {
      "--epochs",           "--max-steps",  "--time-budget", "--eval-every",
      "--checkpoint-every", "--checkpoint", "--resume"};
  return kMayChange.count(option) > 0;
}

std::string run_identity(const TrainerOptions& options, const config::Config& config,
                         int world_size, std::size_t train_samples, std::size_t test_samples) {
  std::string out = "world_size=" + std::to_string(world_size) + "\n" +
                    "train_samples=" + std::to_string(train_samples) + "\n" +
                    "test_samples=" + std::to_string(test_samples) + "\n";
  for (const auto& [key, value] : config::parse_canonical(agreed_options_canonical(options))) {
    if (!may_change_on_resume(key)) out += key + "=" + value + "\n";
  }
  return out + config.canonical();
}

std::string identity_differences(const std::string& checkpoint, const std::string& this_run) {
  const auto saved = config::parse_canonical(checkpoint);
  const auto now = config::parse_canonical(this_run);
  std::set<std::string> keys;
  for (const auto& kv : saved) keys.insert(kv.first);
  for (const auto& kv : now) keys.insert(kv.first);
  std::string out;
  for (const auto& key : keys) {
    const auto a = saved.find(key), b = now.find(key);
    const std::string va = a == saved.end() ? "<unset>" : a->second;
    const std::string vb = b == now.end() ? "<unset>" : b->second;
    if (va != vb) out += "  " + key + ": checkpoint '" + va + "', this run '" + vb + "'\n";
  }
  return out;
}

}  // namespace gw::trainer
