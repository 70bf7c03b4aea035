#include "plugin/comm/communicator.h"

namespace gw {

std::size_t size_of(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return 1;
    case DataType::kInt32:
      return 4;
    case DataType::kInt64:
      return 8;
    case DataType::kFloat16:
      return 2;
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
  }
  throw std::logic_error("unknown DataType");
}

const char* to_string(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
  }
  return "?";
}

const char* to_string(TrafficKind kind) {
  switch (kind) {
    case TrafficKind::kGradient:
      return "gradient";
    case TrafficKind::kParameter:
      return "parameter";
    case TrafficKind::kControl:
      return "control";
  }
  return "?";
}

}  // namespace gw
