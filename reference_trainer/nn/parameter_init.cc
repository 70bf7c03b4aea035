#include "reference_trainer/nn/parameter_init.h"

#include <cmath>
#include <stdexcept>

namespace gw::trainer {

float uniform_float(std::mt19937_64& rng) {
  return static_cast<float>(rng() >> 40) * (1.0f / 16777216.0f);
}

void kaiming_uniform(float* values, std::size_t numel, std::size_t fan_in, std::mt19937_64& rng) {
  if (fan_in == 0) throw std::invalid_argument("kaiming_uniform: fan_in must be positive");
  const float bound = static_cast<float>(std::sqrt(6.0 / static_cast<double>(fan_in)));
  for (std::size_t i = 0; i < numel; ++i) values[i] = bound * (2.0f * uniform_float(rng) - 1.0f);
}

}  // namespace gw::trainer
