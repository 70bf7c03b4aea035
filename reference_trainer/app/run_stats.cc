#include "reference_trainer/app/run_stats.h"

namespace gw::trainer {

SyncStats RunStats::sync(const DistributedOptimizer& optimizer) const {
  const SyncStats& mine = optimizer.sync_stats();
  SyncStats out = sync_before_;
  out.policy = mine.policy;
  out.parameter_wire = mine.parameter_wire;
  out.outer_optimizer = mine.outer_optimizer;
  out.gradient_exchanges += mine.gradient_exchanges;
  out.parameter_exchanges += mine.parameter_exchanges;
  out.state_exchanges += mine.state_exchanges;
  out.points.insert(out.points.end(), mine.points.begin(), mine.points.end());
  return out;
}

CompressionStats RunStats::compression(const DistributedOptimizer& optimizer) const {
  CompressionStats out = optimizer.compression_stats();
  out.steps_after_warmup += compression_before_.steps_after_warmup;
  out.gradient_bytes_after_warmup += compression_before_.gradient_bytes_after_warmup;
  out.sparse_exchanges += compression_before_.sparse_exchanges;
  out.dense_fallbacks += compression_before_.dense_fallbacks;
  return out;
}

}  // namespace gw::trainer
