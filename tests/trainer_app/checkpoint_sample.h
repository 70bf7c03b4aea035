// A checkpoint with every section filled and values that are easy to get wrong (NaN, -0, a
// denormal, bytes of every kind in the optimizer state): what the checkpoint tests round-trip, and
// a seed of fuzz_checkpoint (tests/fuzz/checkpoint_seeds.cc).
#pragma once

#include <limits>
#include <string>

#include "reference_trainer/app/checkpoint.h"

namespace gw::trainer {

inline Checkpoint sample_checkpoint() {
  Checkpoint c;
  c.rank = 2;
  c.world_size = 4;
  c.steps_per_epoch = 32;
  c.epoch = 2;
  c.step_in_epoch = 7;
  c.steps = 39;
  c.identity = "world_size=4\n--lr=0.05\nGRADWIRE_COMPRESSOR=dgc\n";
  c.parameters = {1.5f, -2.25f, 0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), 3e-39f};
  c.optimizer_state = std::string("GWDOPT3\0opaque\xff", 15);
  RunFigures& f = c.figures;
  f.epoch_loss_sum = 12.75;
  f.samples = 4096;
  f.traffic.kinds[0] = {100, 200, 3, 60, 50};
  f.traffic.kinds[2] = {8, 8, 1};
  f.epoch_traffic_start.kinds[1] = {7, 9, 11};
  EpochResult e;
  e.epoch = 1;
  e.loss = 0.5;
  e.test_accuracy = 0.75;
  e.test_loss = 0.625;
  e.samples = 4096;
  e.gradient_bytes_sent = 1234;
  e.parameter_bytes_sent = 56;
  e.wall_seconds = 1.25;
  e.train_seconds = 1.0;
  f.epochs = {e};
  EvalPoint p;
  p.step = 32;
  p.epoch = 1.0;
  p.test_accuracy = 0.75;
  p.test_loss = 0.625;
  p.gradient_bytes_sent = 1234;
  p.parameter_bytes_sent = 56;
  p.train_seconds = 1.0;
  p.wall_seconds = 1.5;
  f.history = {p, p};
  f.sync.policy = "adaptive_local_sgd";
  f.sync.gradient_exchanges = 3;
  f.sync.parameter_exchanges = 2;
  f.sync.state_exchanges = 1;
  AveragingPoint a;
  a.step = 3;
  a.local_steps = 4;
  a.k = 4;
  a.next_k = 2;
  a.has_loss = true;
  a.loss = 0.3;
  f.sync.points = {a, a};
  f.sync.points[1].requested = true;
  f.sync.points[1].fragment = 3;  // streaming diloco
  f.compression.compressor = "dgc";
  f.compression.warmup_end_step = 30;
  f.compression.steps_after_warmup = 9;
  f.compression.gradient_bytes_after_warmup = 999;
  f.compression.dense_bytes_per_step = 8000;
  f.compression.sparse_exchanges = 18;
  f.compression.dense_fallbacks = 1;
  f.wall_seconds = 3.5;
  f.train_seconds = 1.0;
  f.epoch_train_seconds = 0.25;
  f.epoch_wall_seconds = 0.5;
  return c;
}

}  // namespace gw::trainer
