// kernels/sparse_wire.h on a CUDA stream: the Thrust algorithms of
// kernels/thrust/sparse_wire_thrust.h instantiated on it (Note [One algorithm source]).
#include "kernels/cuda/sparse_wire_cuda.h"
#include "kernels/thrust/cuda_policy.h"
#include "kernels/thrust/sparse_wire_thrust.h"

namespace gw::kernels::cuda {

std::size_t encode_wire(const std::uint32_t* indices, std::size_t count, const float* v,
                        std::uint32_t* words, std::uint64_t* scratch, void* stream,
                        std::uint32_t bits) {
  return thrust_algo::encode_wire(on_stream_synced(stream), indices, count, v, words, scratch,
                                  bits);
}

void keep_wire_error_at(float* x, const std::uint32_t* indices, std::size_t count, void* stream,
                        std::uint32_t bits) {
  thrust_algo::keep_wire_error_at(on_stream(stream), x, indices, count, bits);
}

WireCheck decode_wire(const std::uint32_t* words, std::size_t available, std::size_t numel,
                      std::size_t max_pairs, bool finite_values_only, std::uint32_t* pairs,
                      std::uint64_t* scratch, void* stream, std::uint32_t bits) {
  return thrust_algo::decode_wire(on_stream_synced(stream), words, available, numel, max_pairs,
                                  finite_values_only, pairs, scratch, bits);
}

}  // namespace gw::kernels::cuda
