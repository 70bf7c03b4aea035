// The accuracy cost of each auto candidate, as data (Note [Accuracy costs as data]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plugin/auto/auto_option.h"

namespace gw {

// Note [Accuracy costs as data]
// auto chooses only among candidates whose accuracy cost (the drop in final test accuracy against
// dense, in points) is within GRADWIRE_AUTO_MAX_ACCURACY_DROP (Note [The auto cost model]). Those
// costs are data, not code the docs generate: the built-in table holds the figures gradwire's own
// accuracy runs measured (the reference MLP, 4 ranks, 3 epochs), and GRADWIRE_AUTO_ACCURACY_FILE
// may name a file of the same shape with a program's own figures instead. tools/results.py writes
// the measured figures to results/auto_accuracy.json from the committed reports and writes nothing
// into the library; the test auto_accuracy_table_current checks that the built-in table equals
// that file, so new reports change what auto decides only when someone updates built_in() below,
// in a commit of its own. The file's shape:
//   {"about": "...", "entries": [{"candidate": "dgc", "parameter": 0, "drop_points": -0.36,
//    "seeds": 3, "strategy": "dgc"}, ...]}
// `parameter` is powersgd's rank or local_sgd's period (0 for the others); an entry applies to a
// candidate of that option at that parameter.
struct AccuracyEntry {
  AutoOption option = AutoOption::kNone;
  std::int64_t parameter = 0;
  double drop_points = 0;
  int seeds = 0;
  std::string strategy;  // the strategies.json entry whose runs measured it
};

class AccuracyTable {
 public:
  // gradwire's own figures.
  static AccuracyTable built_in();
  // A file of the shape above; throws config::ConfigError naming GRADWIRE_AUTO_ACCURACY_FILE, the
  // file, and the entry and field that are wrong.
  static AccuracyTable from_file(const std::string& path);
  // The same from the file's text (`where` names it in errors).
  static AccuracyTable from_json(const std::string& text, const std::string& where);

  // The entry for `option` at `parameter`, or null.
  const AccuracyEntry* find(AutoOption option, std::int64_t parameter) const;
  const std::vector<AccuracyEntry>& entries() const { return entries_; }

 private:
  std::vector<AccuracyEntry> entries_;
};

}  // namespace gw
