// The device top-k selector (kernels/thrust/topk_thrust.h) on a CUDA stream. Its decisions need
// counts on the host, so it runs with the synchronising policy throughout.
#include "kernels/cuda/topk_cuda.h"
#include "kernels/thrust/cuda_policy.h"
#include "kernels/thrust/topk_thrust.h"

namespace gw::kernels::cuda {

std::size_t select_topk(const float* v, std::size_t n, std::size_t k, double sample_ratio,
                        std::uint64_t seed, std::uint32_t* out, std::uint32_t* keys,
                        std::uint32_t* scratch, std::uint32_t* candidates, TopkStats& stats,
                        void* stream) {
  return thrust_algo::select_topk(on_stream_synced(stream), v, n, k, sample_ratio, seed, out,
                                  thrust_algo::TopkWorkspace{keys, scratch, candidates}, stats);
}

}  // namespace gw::kernels::cuda
