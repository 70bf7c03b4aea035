// How the reference trainer's ops run under mixed precision (GRADWIRE_AMP=1).
#pragma once

#include <cstddef>
#include <vector>

#include "amp/op_policy.h"
#include "kernels/half.h"
#include "reference_trainer/nn/tensor.h"

namespace gw::trainer {

// Note [CPU rendering of fp16 ops]
// On a GPU an fp16 op reads fp16 operands and, on tensor cores, multiplies them and accumulates in
// fp32 before rounding the output to fp16. The reference trainer renders exactly that on the CPU:
// an op the policy runs in fp16 (amp::OpPolicy)
//   - takes its input rounded to binary16 (cast when the input is fp32; already so when fp16),
//   - uses an fp16 working copy of each parameter (gw::Half storage, IEEE binary16 with the layout
//     of _Float16, cast from the fp32 master weight at every forward),
//   - converts those operands to fp32 and runs the fp32 code (sgemm: products and sums in fp32),
//   - rounds its output to binary16 and stores it in an fp16 Tensor, and keeps the activations it
//     needs for backward in fp16 as well.
// Its backward rounds the incoming gradient to binary16 (a scaled gradient past 65504 becomes inf:
// the overflow that dynamic loss scaling detects), rounds the gradient of every fp16 working copy
// to binary16 (where unscaled small gradients flush to zero) before it lands in the fp32 gradient
// buffer, and returns the input gradient in fp16. An fp32 op converts fp16 inputs up (exactly) and
// runs as without AMP. The conversions are kernels::cast_fp32_to_fp16 / cast_fp16_to_fp32: IEEE
// round to nearest even, bit-identical to _Float16's (Note [CPU fp16 casts]).
//
// What this renders faithfully: every value an fp16 op stores or hands on is a binary16 value, so
// range (overflow at 65504, underflow below 2^-24) and precision (11-bit significand) are those
// of fp16 training. What it does not: speed (the CPU has no fp16 arithmetic; the casts cost time)
// and the accumulation order inside a GPU GEMM.

inline DType dtype_of(amp::Precision p) {
  return p == amp::Precision::kFloat16 ? DType::kFloat16 : DType::kFloat32;
}

// x[i] = (float)(binary16) x[i]: rounds in place through binary16 (scratch holds the halves).
void round_through_half(float* x, std::size_t n, std::vector<Half>& scratch);

// t's values as an op of precision p reads them, in fp32: t.data() itself for an fp32 tensor read
// by an fp32 op (no copy); otherwise converted into `scratch` (rounded to binary16 for an fp16 op).
const float* op_view(const Tensor& t, amp::Precision p, std::vector<float>& scratch,
                     std::vector<Half>& half_scratch);

// The sum, in double and in order, of n per-sample losses, each rounded to binary16 first when the
// loss ran in fp16 (`half`): how SoftmaxCrossEntropy and gpu::DeviceModel total a batch's loss.
double sum_sample_losses(const float* losses, std::size_t n, bool half);

// dst = values (src_shape), stored as dtype (rounded when dtype is fp16).
void store(const float* values, const Shape& shape, DType dtype, Tensor& dst);

}  // namespace gw::trainer
