#include "kernels/topk.h"

#include "kernels/cuda/topk_cuda.h"
#include "kernels/topk_rules.h"

namespace gw::kernels {

std::size_t TopkSelector::select(const float* v, std::size_t n, std::size_t k, double sample_ratio,
                                 std::uint64_t seed, std::uint32_t* out, const Stream& stream) {
  if (stream.is_host()) return select(v, n, k, sample_ratio, seed, out);
  topk_rules::check_select_arguments(n, sample_ratio);
  // k == 0 and k >= n need no workspace (and no allocation).
  const std::size_t size = k > 0 && k < n ? n : 0;
  std::uint32_t* keys = device_keys_.reserve_discard(size, stream);
  std::uint32_t* scratch = device_scratch_.reserve_discard(size, stream);
  std::uint32_t* candidates = device_candidates_.reserve_discard(size, stream);
  return cuda::select_topk(v, n, k, sample_ratio, seed, out, keys, scratch, candidates, stats_,
                           stream.native());
}

}  // namespace gw::kernels
