// The reference trainer's models, by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "reference_trainer/nn/model.h"

namespace gw::trainer {

// kind "mlp": 784 -> 1024 -> ReLU -> 512 -> ReLU -> 10 (1,333,770 parameters).
// kind "mlp-small": the same layers, 784 -> 64 -> ReLU -> 32 -> ReLU -> 10 (52,650 parameters):
//             the tests whose subject is not the model (checkpoint and resume) train it, for
//             their many runs' sake, in the sanitizer trees above all.
// kind "cnn": conv(1->16, 5x5, pad 2) -> ReLU -> maxpool 2 -> conv(16->32, 5x5, pad 2) -> ReLU ->
//             maxpool 2 -> flatten -> 1568 -> 128 -> ReLU -> 10 (215,370 parameters), input
//             reshaped to 1x28x28.
// The same seed gives the same parameters. Throws std::invalid_argument on any other kind.
std::unique_ptr<Model> make_model(const std::string& kind, std::uint64_t seed);

}  // namespace gw::trainer
