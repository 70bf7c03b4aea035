// Deterministic parameter initialisation, identical on every platform and standard library.
#pragma once

#include <cstddef>
#include <random>

namespace gw::trainer {

// Uniform in [0, 1) from the top 24 bits of one draw: every value is exact in float, and unlike
// std::uniform_real_distribution the result does not depend on the standard library.
float uniform_float(std::mt19937_64& rng);

// He/Kaiming uniform for ReLU networks: U(-b, b) with b = sqrt(6 / fan_in), one draw per element
// in order.
void kaiming_uniform(float* values, std::size_t numel, std::size_t fan_in, std::mt19937_64& rng);

}  // namespace gw::trainer
