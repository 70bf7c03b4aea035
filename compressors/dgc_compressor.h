// GRADWIRE_COMPRESSOR=dgc: deep gradient compression (Lin et al., ICLR 2018), the whole algorithm.
//
// Note [DGC takes over the momentum]
// Momentum must be applied before sparsification, or most of the update is lost to the
// residual. So DGC keeps each rank's momentum u and accumulator v itself:
//     u = m u + g;  c = u  (Nesterov: c = g + m u);  v = v + c
// and sends the top k of |v|, zeroing v there (error feedback) and, with momentum factor masking,
// u there too. The inner SGD optimizer hands its momentum over when DGC is set up
// (Optimizer::hand_over_momentum) and then applies the exchanged update with its learning rate and
// weight decay only: w -= lr (avg + wd w). An optimizer without that form (Adam) cannot be used
// with dgc; topk can.
// Dense exchanges (warm-up steps before GRADWIRE_DGC_RAMPUP_BEGIN_STEP, tensors below
// GRADWIRE_DGC_MIN_NUMEL, fallbacks) send all of v (or c), are not masked and not clipped: with
// everything sent, sum over ranks of c is exactly ordinary momentum SGD on the averaged gradient.
// Hence DGC at sparsity 0 without masking equals dense momentum SGD (with weight decay 0; with
// weight decay, DGC's decay sits outside the momentum).
#pragma once

#include <vector>

#include "compressors/sparsifying_compressor.h"
#include "compressors/state_arrays.h"

namespace gw::compressors {

struct DgcOptions {
  SparsifyOptions sparsify;
  double momentum = 0.9;         // the inner optimizer's, handed over
  bool nesterov = false;         // likewise
  bool momentum_masking = true;  // GRADWIRE_DGC_MOMENTUM_MASKING
  double clip_norm = 0.0;        // GRADWIRE_DGC_CLIP_NORM; 0 = off
};

class DgcCompressor final : public SparsifyingCompressor {
 public:
  // Throws std::invalid_argument on momentum outside [0, 1) or a negative clip norm (and what
  // SparsifyingCompressor rejects).
  DgcCompressor(std::vector<std::size_t> numels, DgcOptions options);

  Kind kind() const override { return Kind::kDgc; }
  // Local gradient clipping applies to the tensors this step sparsifies: each is scaled to an L2
  // norm of at most clip_norm / sqrt(world_size) before it enters the momentum.
  void encode(const BucketView& bucket, const ExchangePlan& plan, int world_size,
              const EncodedBucket& out) override;
  void save_state(std::ostream& out) const override;
  void load_state(std::istream& in) override;

  // Host copies of parameter p's momentum u and accumulator v (v is empty for tensors below
  // min_numel, always sent whole).
  std::vector<float> momentum(std::size_t p) const { return momentum_.to_host(p); }
  std::vector<float> accumulator(std::size_t p) const { return accumulator_.to_host(p); }

 private:
  float* feedback(std::size_t parameter) override { return accumulator_.data(parameter); }
  void move_state_to(const kernels::Stream& stream) override {
    momentum_.move_to(stream);
    accumulator_.move_to(stream);
  }

  DgcOptions options_;
  StateArrays momentum_;     // u, every parameter
  StateArrays accumulator_;  // v, sparsifiable parameters
};

}  // namespace gw::compressors
