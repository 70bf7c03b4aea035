// gradwire_train's checkpoint: one file per rank that holds everything a bit-identical
// continuation of the run needs, and what its report continues from (docs/CHECKPOINT.md).
//
// serialize_checkpoint and parse_checkpoint are pure functions over bytes: the file system and the
// ranks' agreement live in checkpoint_files.h. So a fuzzer can drive the parser directly: a
// truncated, corrupt, foreign or forged file is a CheckpointError naming what is wrong, never a
// crash or an allocation larger than the input, and whatever it accepts serializes back to the
// same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plugin/comm/counting_communicator.h"
#include "plugin/config/registry.h"
#include "plugin/distributed_optimizer.h"
#include "reference_trainer/app/trainer.h"

namespace gw::trainer {

// A checkpoint that cannot be used: unreadable, corrupt, of another format, or of another run. A
// ConfigError, so that it ends gradwire_train with exit code 2 (bad input) on every rank.
class CheckpointError : public config::ConfigError {
 public:
  using config::ConfigError::ConfigError;
};

// Note [Checkpoint figures]
// Beside the training state, a checkpoint holds the trainer's running figures, so that the report
// of a resumed run covers the whole run as if it had been one: its steps, epochs, evaluations,
// traffic, averaging points and compression counts from step 0. They are kept in two sections:
// - RPRT, what does not depend on the clock: the current epoch's loss sum (its mean over the
//   epoch's steps is reported when it ends), the samples of the finished epochs, this rank's
//   traffic counters, the finished epochs and evaluations without their times, the sync policy's
//   and the compressor's figures (DistributedOptimizer::load_state starts its own from zero). A run
//   stopped and resumed writes the same bytes here as a straight run at the same step, because
//   the traffic of everything that only a stopped-and-resumed run does (start-up checks, the
//   initial broadcast, the resume agreement) and of the checkpoint writes themselves is left out
//   of the run's counters (RunTraffic, run_traffic.h).
// - TIME, the clock readings: wall seconds since the run started and training seconds (summed over
//   the processes that trained it; the time between them is not counted), the current epoch's
//   time so far, and each finished epoch's and evaluation's times. --time-budget counts the
//   training seconds of the whole run. Two runs never agree here, so comparisons leave it out.
struct RunFigures {
  // RPRT
  double epoch_loss_sum = 0;            // this rank's training losses in the current epoch so far
  std::uint64_t samples = 0;            // training samples of the finished epochs, all ranks
  TrafficCounters traffic;              // this rank's run counters at the checkpoint
  TrafficCounters epoch_traffic_start;  // the same when the current epoch started
  std::vector<EpochResult> epochs;      // wall_seconds and train_seconds live in TIME
  std::vector<EvalPoint> history;       // likewise
  SyncStats sync;
  CompressionStats compression;
  // TIME
  double wall_seconds = 0;
  double train_seconds = 0;        // the finished epochs
  double epoch_train_seconds = 0;  // the current epoch so far
  double epoch_wall_seconds = 0;
};

// Note [Checkpoint format]
// A checkpoint file is, in host byte order (little-endian: checked where it is built):
//   header   the 8-byte magic "GWCKPT\r\n", the format version (u32, 2), the number of sections
//            (u32, 6) and the file's total length in bytes (u64)
//   sections each a 4-byte ASCII tag, its payload length (u64), its payload; in this order:
//     META   rank (u32), world size (u32), steps done (i64), the epoch the next step belongs to
//            (i64, from 1), the next step's index in it (u64), steps per epoch (u64)
//     IDEN   the run identity, "key=value\n" lines (run_identity.h)
//     PARM   this rank's parameters: their count (u64), then the f32 values in registration order
//     OPTS   DistributedOptimizer::save_state's stream (Note [Optimizer state stream]), as it is
//     RPRT   the figures that do not depend on the clock (Note [Checkpoint figures])
//     TIME   the clock readings
//   trailer  zlib's CRC-32 of every byte before it (u32)
// Strings are a u32 length and their bytes; lists a u64 count and their records; flags are u8 0
// or 1. The parser checks, in this order and before allocating anything for the payloads: the
// magic (a foreign file), the version, the total length against the bytes it was given (a
// truncated file), the checksum (a corrupt file), then every section's tag and length against the
// bytes that remain, every count against its section's remaining bytes, and the values (a rank
// below the world size, a position that adds up: steps = (epoch - 1) x steps per epoch + step,
// flags of 0 or 1, as many timed epochs and evaluations in TIME as in RPRT). A section must be
// consumed exactly, and nothing may follow the last one, so a file the parser accepts is the one
// serialize_checkpoint writes for what it returns.
struct Checkpoint {
  // META
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::int64_t steps = 0;
  std::int64_t epoch = 1;
  std::uint64_t step_in_epoch = 0;
  std::uint64_t steps_per_epoch = 1;
  std::string identity;           // IDEN
  std::vector<float> parameters;  // PARM
  std::string optimizer_state;    // OPTS
  RunFigures figures;             // RPRT, TIME
};

// The tags of the sections, in file order.
inline constexpr const char* kCheckpointSections[] = {"META", "IDEN", "PARM",
                                                      "OPTS", "RPRT", "TIME"};

// The file's bytes (Note [Checkpoint format]). Throws CheckpointError for a checkpoint that
// parse_checkpoint would refuse (a rank outside the world, a position that does not add up, ...).
std::string serialize_checkpoint(const Checkpoint& checkpoint);

// The checkpoint in `bytes`, checked as Note [Checkpoint format] says. Throws CheckpointError with
// a message naming the section or field that is wrong.
Checkpoint parse_checkpoint(const std::string& bytes);

// Each section's tag and payload, in file order: what comparisons of checkpoints compare.
std::vector<std::pair<std::string, std::string>> checkpoint_sections(const Checkpoint& checkpoint);

}  // namespace gw::trainer
