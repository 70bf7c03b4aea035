#include "plugin/optimizer_state_stream.h"

#include <cstring>
#include <istream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/binary_stream.h"
#include "plugin/config/params.h"

namespace gw {
namespace {

constexpr char kStateMagic[8] = {'G', 'W', 'D', 'O', 'P', 'T', '3', '\0'};
constexpr const char* kLoadContext = "DistributedOptimizer::load_state";

}  // namespace

void write_optimizer_state(std::ostream& out, std::int64_t steps,
                           const compressors::Compressor& compressor, const Optimizer& inner,
                           const LocalSgdAveraging& local_sgd, const amp::LossScaler* scaler) {
  out.write(kStateMagic, sizeof kStateMagic);
  binary::put<std::int64_t>(out, steps);
  compressor.save_state(out);
  inner.save_state(out);
  local_sgd.save_state(out);
  binary::put<std::uint8_t>(out, scaler ? 1 : 0);
  if (scaler) scaler->save_state(out);
  if (!out) throw std::runtime_error("DistributedOptimizer::save_state: error while writing");
}

std::int64_t read_optimizer_state(std::istream& in, compressors::Compressor& compressor,
                                  Optimizer& inner, LocalSgdAveraging& local_sgd,
                                  amp::LossScaler* scaler) {
  char magic[8];
  std::int64_t steps = 0;
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(&steps), sizeof steps);
  if (!in || std::memcmp(magic, kStateMagic, sizeof magic) != 0 || steps < 0) {
    throw std::runtime_error(
        "DistributedOptimizer::load_state: not a gradwire optimizer state" +
        std::string(in && std::memcmp(magic, kStateMagic, 6) == 0
                        ? " of this version (format " + std::string(1, magic[6]) + ", expected 3)"
                        : ""));
  }
  // Each part's load is all-or-nothing; keep copies so that a failure in a later part restores
  // the earlier ones too.
  std::stringstream compressor_before, inner_before, local_sgd_before, scaler_before;
  compressor.save_state(compressor_before);
  inner.save_state(inner_before);
  local_sgd.save_state(local_sgd_before);
  if (scaler) scaler->save_state(scaler_before);
  try {
    compressor.load_state(in);
    inner.load_state(in);
    local_sgd.load_state(in);
    const auto amp_flag = binary::get<std::uint8_t>(in, kLoadContext);
    if (amp_flag != (scaler ? 1 : 0)) {
      throw std::runtime_error(
          std::string("DistributedOptimizer::load_state: the state was saved with ") +
          config::keys::kAmp + "=" + (amp_flag == 1 ? "1" : "0") + ", this run has " +
          config::keys::kAmp + "=" + (scaler ? "1" : "0"));
    }
    if (scaler) scaler->load_state(in);
  } catch (...) {
    compressor.load_state(compressor_before);
    inner.load_state(inner_before);
    local_sgd.load_state(local_sgd_before);
    if (scaler) scaler->load_state(scaler_before);
    throw;
  }
  return steps;
}

}  // namespace gw
