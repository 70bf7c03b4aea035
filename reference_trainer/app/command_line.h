// gradwire_train's command line (CLI11).
#pragma once

#include <optional>
#include <string>

#include "reference_trainer/app/trainer_options.h"

namespace gw::trainer {

// Parses argv into options. Returns std::nullopt after printing help or a usage error, with the
// process exit code in *exit_code (0 for --help). With `error`, a usage error's message goes there
// instead of stderr (gradwire_train prints it once for the job: Note [One verdict on the input]).
// A usage error is exit code 2, like every other bad input.
std::optional<TrainerOptions> parse_command_line(int argc, char** argv, int* exit_code,
                                                 std::string* error = nullptr);

// "--option=value\n" for every option that must be the same on every rank
// (Note [Options that must agree across ranks]), for the cross-rank check
// (plugin/config_check.h): a rank that differs is a clear error naming the option and each rank's
// value.
std::string agreed_options_canonical(const TrainerOptions& options);

}  // namespace gw::trainer
