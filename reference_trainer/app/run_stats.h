// The sync policy's and the compressor's figures of the whole run, continued across a resume
// (Note [Checkpoint figures]).
#pragma once

#include "plugin/distributed_optimizer.h"

namespace gw::trainer {

// A checkpoint's figures, then this process's (DistributedOptimizer::load_state starts them from
// zero). A new run's start from nothing.
class RunStats {
 public:
  void resume_from(const SyncStats& sync, const CompressionStats& compression) {
    sync_before_ = sync;
    compression_before_ = compression;
  }
  SyncStats sync(const DistributedOptimizer& optimizer) const;
  CompressionStats compression(const DistributedOptimizer& optimizer) const;

 private:
  SyncStats sync_before_;
  CompressionStats compression_before_;
};

}  // namespace gw::trainer
