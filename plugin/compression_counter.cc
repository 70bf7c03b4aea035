#include "plugin/compression_counter.h"

#include <algorithm>

namespace gw {

void CompressionCounter::installed(const compressors::Compressor& compressor,
                                   const std::string& name, std::int64_t steps) {
  stats_.compressor = name;
  stats_.warmup_end_step = compressor.warmup_end_step();
  measure_from_ = std::max(stats_.warmup_end_step, steps);
}

void CompressionCounter::resumed(std::int64_t steps) {
  measure_from_ = std::max(stats_.warmup_end_step, steps);
  stats_.steps_after_warmup = 0;
  stats_.gradient_bytes_after_warmup = 0;
}

}  // namespace gw
