#include "kernels/device.h"

namespace gw {

const char* to_string(Device device) {
  switch (device) {
    case Device::kHost:
      return "host";
    case Device::kCuda:
      return "cuda";
  }
  return "invalid Device";  // a value cast from outside the enumerators
}

}  // namespace gw
