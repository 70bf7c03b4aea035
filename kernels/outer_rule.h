// DiLoCo's outer step as the kernels take it (kernels/update.h's outer_step): the rule and its
// figures. Plain data, for the host and the device alike.
#pragma once

namespace gw::kernels {

enum class OuterRule { kNesterov, kHeavyBall, kAverage };

struct OuterStep {
  OuterRule rule = OuterRule::kNesterov;
  float lr = 0.7f;
  float momentum = 0.9f;
};

}  // namespace gw::kernels
