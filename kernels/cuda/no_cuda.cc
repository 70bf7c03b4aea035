// The CUDA entry points in a build without nvcc: every call is a clear error, never a crash.
#include <stdexcept>
#include <string>

#include "kernels/cuda/elementwise_cuda.h"
#include "kernels/cuda/low_rank_cuda.h"
#include "kernels/cuda/nn_cuda.h"
#include "kernels/cuda/runtime_cuda.h"
#include "kernels/cuda/sparse_cuda.h"
#include "kernels/cuda/sparse_wire_cuda.h"
#include "kernels/cuda/topk_cuda.h"
#include "kernels/cuda/update_cuda.h"
#include "kernels/device.h"

namespace gw::kernels {

bool cuda_device_available() { return false; }
int cuda_device_count() { return 0; }

Stream::Impl::~Impl() = default;

namespace cuda {

namespace {

[[noreturn]] void throw_unavailable(const char* function) {
  throw std::runtime_error(std::string("gradwire was built without CUDA: ") + function +
                           " needs a CUDA device and is unavailable");
}

}  // namespace

// Unreachable through the public API (no CUDA Stream can be made in this build); defined so that
// the dispatch links.
void scale(float*, float, std::size_t, void*) { throw_unavailable("scale"); }
void axpy(float, const float*, float*, std::size_t, void*) { throw_unavailable("axpy"); }
void cast_fp32_to_fp16(const float*, Half*, std::size_t, void*) {
  throw_unavailable("cast_fp32_to_fp16");
}
void cast_fp16_to_fp32(const Half*, float*, std::size_t, void*) {
  throw_unavailable("cast_fp16_to_fp32");
}
double sum_of_squares(const float*, std::size_t, void*) { throw_unavailable("sum_of_squares"); }
bool all_finite(const float*, std::size_t, void*) { throw_unavailable("all_finite"); }
bool scale_and_check_finite(float*, float, std::size_t, void*) {
  throw_unavailable("scale_and_check_finite");
}

void magnitude_keys(const float*, std::size_t, std::uint32_t*, void*) {
  throw_unavailable("magnitude_keys");
}
void sample_magnitude_keys(const float*, std::size_t, std::size_t, std::uint64_t, std::uint32_t*,
                           void*) {
  throw_unavailable("sample_magnitude_keys");
}
std::uint32_t kth_largest_key(const std::uint32_t*, std::size_t, std::size_t, std::uint32_t*,
                              void*) {
  throw_unavailable("kth_largest_key");
}
std::size_t count_at_least(const float*, std::size_t, std::uint32_t, void*) {
  throw_unavailable("count_at_least");
}
std::size_t select_at_least(const float*, std::size_t, std::uint32_t, std::uint32_t*, void*) {
  throw_unavailable("select_at_least");
}
std::uint32_t keep_top_k(const float*, std::uint32_t*, std::size_t, std::size_t, std::uint32_t*,
                         void*) {
  throw_unavailable("keep_top_k");
}
std::uint32_t exact_topk_by_sort(const float*, std::size_t, std::size_t, std::uint32_t*,
                                 std::uint32_t*, void*) {
  throw_unavailable("exact_topk_by_sort");
}
void pack_pairs(const std::uint32_t*, std::size_t, const float*, std::uint32_t*, void*) {
  throw_unavailable("pack_pairs");
}
void zero_at(float*, const std::uint32_t*, std::size_t, void*) { throw_unavailable("zero_at"); }
void pair_indices(const std::uint32_t*, std::size_t, std::uint32_t*, void*) {
  throw_unavailable("pair_indices");
}
std::size_t sort_unique(std::uint32_t*, std::size_t, void*) { throw_unavailable("sort_unique"); }
void split_by_region(const std::uint32_t*, std::size_t, std::uint32_t, std::size_t, std::uint32_t*,
                     std::uint32_t*, void*) {
  throw_unavailable("split_by_region");
}
PairsCheck check_sparse_pairs(const std::uint32_t*, std::size_t, std::size_t, void*) {
  throw_unavailable("check_sparse_pairs");
}
void scatter_add_pairs(const std::uint32_t*, std::size_t, float*, void*) {
  throw_unavailable("scatter_add_pairs");
}

std::size_t encode_wire(const std::uint32_t*, std::size_t, const float*, std::uint32_t*,
                        std::uint64_t*, void*, std::uint32_t) {
  throw_unavailable("encode_wire");
}
void keep_wire_error_at(float*, const std::uint32_t*, std::size_t, void*, std::uint32_t) {
  throw_unavailable("keep_wire_error_at");
}
WireCheck decode_wire(const std::uint32_t*, std::size_t, std::size_t, std::size_t, bool,
                      std::uint32_t*, std::uint64_t*, void*, std::uint32_t) {
  throw_unavailable("decode_wire");
}
void momentum_accumulate(const float*, float*, float*, std::size_t, float, bool, void*) {
  throw_unavailable("momentum_accumulate");
}
void momentum_to(const float*, float*, float*, std::size_t, float, bool, void*) {
  throw_unavailable("momentum_to");
}
double clip_by_norm(float*, std::size_t, double, void*) { throw_unavailable("clip_by_norm"); }
void subtract(const float*, const float*, float*, std::size_t, void*) {
  throw_unavailable("subtract");
}
void add_to_anchor(const float*, float*, float*, std::size_t, void*) {
  throw_unavailable("add_to_anchor");
}
void mix(const float*, float, float*, std::size_t, void*) { throw_unavailable("mix"); }

void outer_step(const float*, float, bool, float*, float*, float*, std::size_t, const OuterStep&,
                void*) {
  throw_unavailable("outer_step");
}
void scale_to(const float*, float, float*, std::size_t, void*) { throw_unavailable("scale_to"); }
void scale_to_fp16(const float*, float, Half*, std::size_t, void*) {
  throw_unavailable("scale_to_fp16");
}

void low_rank_project(const float*, std::size_t, std::size_t, const float*, std::size_t, float*,
                      void*) {
  throw_unavailable("low_rank_project");
}
void low_rank_back(const float*, std::size_t, std::size_t, const float*, std::size_t, float*,
                   void*) {
  throw_unavailable("low_rank_back");
}
void orthonormalize_columns(float*, std::size_t, std::size_t, void*) {
  throw_unavailable("orthonormalize_columns");
}
void low_rank_restore(const float*, std::size_t, std::size_t, const float*, std::size_t, float*,
                      bool, void*) {
  throw_unavailable("low_rank_restore");
}

void relu_forward(const float*, float*, std::size_t, void*) { throw_unavailable("relu_forward"); }
void relu_backward(const float*, const float*, float*, std::size_t, void*) {
  throw_unavailable("relu_backward");
}
void broadcast_rows(const float*, std::size_t, std::size_t, float*, void*) {
  throw_unavailable("broadcast_rows");
}
void bias_grad(const float*, std::size_t, std::size_t, float*, void*) {
  throw_unavailable("bias_grad");
}
void softmax_cross_entropy_forward(const float*, const std::uint8_t*, std::size_t, std::size_t,
                                   float*, float*, void*) {
  throw_unavailable("softmax_cross_entropy_forward");
}
void softmax_cross_entropy_backward(const float*, const std::uint8_t*, std::size_t, std::size_t,
                                    float, float*, void*) {
  throw_unavailable("softmax_cross_entropy_backward");
}
std::size_t first_bad_label(const std::uint8_t*, std::size_t, std::size_t, void*) {
  throw_unavailable("first_bad_label");
}
std::size_t count_correct(const float*, const std::uint8_t*, std::size_t, std::size_t, void*) {
  throw_unavailable("count_correct");
}
void max_pool2d_forward(const float*, std::size_t, std::size_t, std::size_t, std::size_t, float*,
                        std::uint32_t*, void*) {
  throw_unavailable("max_pool2d_forward");
}
void max_pool2d_backward(const float*, const std::uint32_t*, std::size_t, std::size_t, std::size_t,
                         std::size_t, float*, void*) {
  throw_unavailable("max_pool2d_backward");
}
void sgd_update(float*, const float*, float*, std::size_t, const SgdCoefficients&, void*) {
  throw_unavailable("sgd_update");
}
void adam_update(float*, const float*, float*, float*, std::size_t, const AdamCoefficients&,
                 void*) {
  throw_unavailable("adam_update");
}
void gather_rows(const float*, std::size_t, const std::uint64_t*, std::size_t, float*, void*) {
  throw_unavailable("gather_rows");
}
void gather_bytes(const std::uint8_t*, const std::uint64_t*, std::size_t, std::uint8_t*, void*) {
  throw_unavailable("gather_bytes");
}

std::size_t select_topk(const float*, std::size_t, std::size_t, double, std::uint64_t,
                        std::uint32_t*, std::uint32_t*, std::uint32_t*, std::uint32_t*, TopkStats&,
                        void*) {
  throw_unavailable("TopkSelector::select");
}

std::shared_ptr<Stream::Impl> create_stream(int) { throw_unavailable("Stream::cuda"); }
void stream_synchronize(const Stream::Impl&) { throw_unavailable("Stream::synchronize"); }
void set_device(int) { throw_unavailable("Stream::make_current"); }
void* event_create(int) { throw_unavailable("Event::record"); }
void event_destroy(void*, int) noexcept {}
void event_record(void*, const Stream::Impl&) { throw_unavailable("Event::record"); }
void stream_wait_event(const Stream::Impl&, void*) { throw_unavailable("Event::make_wait"); }
void event_synchronize(void*) { throw_unavailable("Event::synchronize"); }
bool event_query(void*) { throw_unavailable("Event::completed"); }
float event_elapsed_ms(void*, void*) { throw_unavailable("Event::elapsed_ms_since"); }
void* malloc_device(std::size_t, int) { throw_unavailable("device memory"); }
void free_device(void*, int) noexcept {}
void* malloc_pinned(std::size_t) { throw_unavailable("pinned memory"); }
void free_pinned(void*) noexcept {}
void memcpy_async(void*, const void*, std::size_t, const Stream::Impl&) {
  throw_unavailable("copy_bytes");
}
void memset_async(void*, std::size_t, const Stream::Impl&) { throw_unavailable("fill_zero"); }
Device pointer_device(const void*) noexcept { return Device::kHost; }
int pointer_device_ordinal(const void*) noexcept { return -1; }

}  // namespace cuda

std::string cuda_device_bus_id(int) { cuda::throw_unavailable("cuda_device_bus_id"); }
std::string cuda_device_name(int) { cuda::throw_unavailable("cuda_device_name"); }
}  // namespace gw::kernels
