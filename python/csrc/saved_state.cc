#include "saved_state.h"

#include <stdexcept>

namespace gw::torch_bridge {
namespace {

[[noreturn]] void not_a_state(const std::string& what) {
  throw std::runtime_error("load_state_dict: not a gradwire " + what + " state");
}

}  // namespace

SavedState split_saved_state(const std::string& bytes, std::size_t lines, const std::string& magic,
                             const std::string& what) {
  SavedState out;
  std::size_t at = 0;
  for (std::size_t i = 0; i < lines; ++i) {
    const std::size_t end = bytes.find('\n', at);
    if (end == std::string::npos) not_a_state(what);
    out.lines.push_back(bytes.substr(at, end - at));
    at = end + 1;
  }
  if (out.lines.empty() || out.lines[0] != magic) not_a_state(what);
  out.body = bytes.substr(at);
  return out;
}

std::int64_t saved_step(const std::string& line, const std::string& what) {
  if (line.empty() || line.size() > 18) not_a_state(what);
  std::int64_t step = 0;
  for (char c : line) {
    if (c < '0' || c > '9') not_a_state(what);
    step = step * 10 + (c - '0');
  }
  return step;
}

}  // namespace gw::torch_bridge
