// The state behind gradwire's DDP communication hook (python/gradwire/torch.py): one gradwire
// compressor over the model's parameters, a BucketExchange per DDP bucket, and the collectives on
// the process group DDP uses (ProcessGroupCommunicator), counted like every gradwire exchange.
//
// Note [The DDP hook's state]
// Compressor state (residuals, DGC's momentum and accumulator, PowerSGD's Q) is keyed by the
// parameter's index in the model's parameter order, never by DDP's bucket: DDP rebuilds its
// buckets after the first iteration (and may again), and a bucket then holds other parameters at
// other offsets. A bucket is known by the parameters it holds, in order; a composition seen for the
// first time gets the next bucket index and its own BucketExchange, and its layout is compared
// across ranks (one small allgather) before anything of it is sent, so a rank whose buckets
// differ fails on every rank with the layouts named instead of hanging in a collective. A step is
// every bucket from the first after the previous step's last (GradBucket.is_last()) on; the
// compressor's begin_step sees 0, 1, 2, ... as under gradwire's own optimizer, so warm-ups
// (GRADWIRE_DGC_RAMPUP_*, GRADWIRE_POWERSGD_START_STEP) count the same steps.
//
// What DDP expects back is the average over ranks. gradwire's exchange leaves sums (and the
// average for an fp16 dense part, whose wire divides first): the sums are divided by the world
// size per tensor afterwards, except under `none`, where the buffer is divided first and summed
// in place, as DDP's own allreduce does, which gives the same bits.
//
// Note [The DDP hook on a GPU]
// A hook made for CUDA parameters runs the compressor on the device, on a gradwire stream of the
// parameters' device (kernels::Stream::cuda): its state lives there and the bucket is encoded and
// decoded in place, in gradwire's CUDA kernels, without a copy to the host. The Python hook makes
// that stream wait for the caller's current stream, makes it the current stream while the bucket
// runs (so the process group orders its collectives on it:
// Note [Collectives on a process group]) and makes the caller's stream wait for it after, as
// DDP's own hooks order their work.
// The process group's communicator says so (orders_on), so a dense bucket (none, fp16, powersgd's
// rounds) runs without a host synchronisation (Note [Collectives ordered on a stream]); what a
// sparse part reads on the host (its counts) still waits for the stream, as on gradwire's own GPU
// path (Note [Compressors on a stream]). The results are the CPU path's bit for bit: the kernels
// promise the host's arithmetic (tests/python/ddp_hook_cuda_test.py).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compressors/compressor.h"
#include "kernels/stream.h"
#include "plugin/comm/counting_communicator.h"
#include "plugin/compressor_factory.h"
#include "plugin/config/config.h"
#include "plugin/exchange/bucket_exchange.h"

namespace gw::torch_bridge {

class DdpHook {
 public:
  // `numels` and `rows`: every parameter's element count and leading dimension (0 for a vector),
  // in the model's parameter order. `settings`: GRADWIRE_* values that override the environment.
  // `momentum`, `nesterov`: dgc's momentum correction (the optimizer then runs without momentum).
  // `device`: where the parameters are ("cpu", "cuda:0"): a CUDA device puts the compressor on
  // a gradwire stream there (Note [The DDP hook on a GPU]).
  // Collective: every rank constructs it, and the configurations must agree (a ConfigError on
  // every rank naming the differing keys otherwise).
  DdpHook(c10::intrusive_ptr<c10d::ProcessGroup> group, std::vector<std::int64_t> numels,
          std::vector<std::int64_t> rows, const std::map<std::string, std::string>& settings,
          double momentum, bool nesterov, const std::string& device = "cpu");

  // One DDP bucket: `buffer`, its flat gradients; `parameters`, the index of each of its tensors
  // in memory order; `last`, whether it is the step's last bucket. Afterwards `buffer` holds the
  // average over ranks. Collective.
  void exchange(const at::Tensor& buffer, const std::vector<std::int64_t>& parameters, bool last);

  std::string compressor() const { return compressor_->name(); }
  std::string device() const { return device_.str(); }
  // The cudaStream_t the compressor runs on, as an integer (torch.cuda.ExternalStream takes it);
  // 0 on the CPU.
  std::uintptr_t stream_handle() const {
    return reinterpret_cast<std::uintptr_t>(stream_.native());
  }
  std::int64_t step() const { return step_; }
  int world_size() const { return comm_->size(); }
  // Bytes this rank has sent for gradients, by Note [What the counters count], and the step from
  // which the exchange has its steady-state size (after warm-up).
  std::uint64_t gradient_bytes_sent() const;
  std::int64_t warmup_end_step() const { return compressor_->warmup_end_step(); }
  // What the compressor keeps of parameter p for later steps (topk: the residual; dgc: the
  // accumulated velocity; powersgd: the error-feedback residual); empty for none and fp16.
  std::vector<float> kept(std::int64_t p) const;

  // The whole state (step, compressor state) as bytes, and back: a resumed run continues exactly.
  std::string save_state() const;
  void load_state(const std::string& bytes);

 private:
  struct Bucket {
    compressors::BucketView view;  // its data pointer set at each exchange
    std::unique_ptr<BucketExchange> exchange;
  };
  Bucket& bucket_for(const std::vector<std::int64_t>& parameters);
  void end_step() {
    ++step_;
    in_step_ = false;
  }

  config::Config config_;
  CompressorSettings settings_;
  c10::Device device_;
  kernels::Stream stream_ = kernels::Stream::host();
  std::vector<std::size_t> numels_, rows_;
  std::unique_ptr<CountingCommunicator> comm_;
  std::unique_ptr<compressors::Compressor> compressor_;
  std::map<std::vector<std::int64_t>, Bucket> buckets_;
  std::int64_t step_ = 0;
  bool in_step_ = false;
};

}  // namespace gw::torch_bridge
