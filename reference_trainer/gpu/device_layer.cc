#include "reference_trainer/gpu/device_layer.h"

#include <stdexcept>
#include <string>

#include "reference_trainer/nn/conv2d.h"
#include "reference_trainer/nn/flatten.h"
#include "reference_trainer/nn/linear.h"
#include "reference_trainer/nn/max_pool2d.h"
#include "reference_trainer/nn/relu.h"

namespace gw::trainer::gpu {

std::unique_ptr<DeviceLayer> make_device_layer(const ModelLayer& l, Products& products) {
  const trainer::Layer* cpu = l.layer.get();
  if (const auto* linear = dynamic_cast<const Linear*>(cpu)) {
    return make_device_linear(*linear, products);
  }
  if (dynamic_cast<const ReLU*>(cpu)) return make_device_relu(products);
  if (dynamic_cast<const Flatten*>(cpu)) return make_device_flatten(products);
  if (const auto* pool = dynamic_cast<const MaxPool2d*>(cpu)) {
    return make_device_max_pool(*pool, products);
  }
  if (const auto* conv = dynamic_cast<const Conv2d*>(cpu)) {
    return make_device_conv(*conv, products);
  }
  throw std::invalid_argument("DeviceModel: layer '" + l.name + "' (" + cpu->describe() +
                              ") has no device version");
}

}  // namespace gw::trainer::gpu
