// The byte stream DistributedOptimizer::save_state writes and load_state reads, and which the
// reference trainer's checkpoints carry per rank (Note [Optimizer state stream]).
#pragma once

#include <cstdint>
#include <iosfwd>

#include "amp/loss_scaler.h"
#include "compressors/compressor.h"
#include "plugin/local_sgd_averaging.h"
#include "plugin/optimizer.h"

namespace gw {

// Note [Optimizer state stream]: the 8-byte magic "GWDOPT3\0", the step count (i64), the
// compressor's state (Note [Compressor state format]), the inner optimizer's, the sync policy's
// (Note [Sync policy state format]), then in host byte order this rank's loss sum since the last
// averaging point (f64) and its count (i64), the local steps since the last averaging (i64), the
// fp16 anchor: a flag (u8), its element count (u64) and its floats; and mixed precision: a flag
// (u8) and, when set, the loss scaler's state (Note [Loss scaler state format]).

void write_optimizer_state(std::ostream& out, std::int64_t steps,
                           const compressors::Compressor& compressor, const Optimizer& inner,
                           const LocalSgdAveraging& local_sgd, const amp::LossScaler* scaler);

// Loads every part and returns the step count. Throws std::runtime_error on a stream of another
// version, configuration or layout, leaving every part as it was.
std::int64_t read_optimizer_state(std::istream& in, compressors::Compressor& compressor,
                                  Optimizer& inner, LocalSgdAveraging& local_sgd,
                                  amp::LossScaler* scaler);

}  // namespace gw
