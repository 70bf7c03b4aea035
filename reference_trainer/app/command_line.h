// gradwire_train's command line (CLI11).
#pragma once

#include <optional>

#include "reference_trainer/app/trainer_options.h"

namespace gw::trainer {

// Parses argv into options. Returns std::nullopt after printing help or a usage error, with the
// process exit code in *exit_code (0 for --help).
std::optional<TrainerOptions> parse_command_line(int argc, char** argv, int* exit_code);

}  // namespace gw::trainer
