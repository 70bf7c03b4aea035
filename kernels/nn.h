// The reference trainer's per-element and per-row operations (reference_trainer/nn,
// reference_trainer/optim) as primitives on a Stream, so that the same models can run on a GPU:
// activations, bias, softmax cross-entropy, max pooling, the SGD and Adam updates, and the gather
// of a batch from a data set already in the stream's memory.
//
// Each primitive runs on the Stream given last, host or CUDA. The host path is the CPU layers' own
// loops (kernels/cpu/nn_cpu.cc, which the layers call); the CUDA path is the Thrust algorithms of
// kernels/thrust/nn_thrust.h (Note [One algorithm source], kernels/thrust/sparse_thrust.h), whose
// arithmetic and order of operations are the loops', each multiply, add and divide rounded on its
// own (kernels/thrust/float_ops.h). So results are bit-identical on both, except where a
// primitive calls exp or log (softmax_cross_entropy_forward): the host uses glibc's, a GPU
// CUDA's, which may differ in the last bit. Under Thrust's OpenMP system (the test of the device
// algorithms) they are glibc's too, and exact. A NaN result is NaN on every device, but its sign
// and payload are not promised: where two NaNs meet, which comes out depends on the order the
// compiler gave a commutative add's operands, and a GPU makes its own.
//
// Conventions: fp32 tensors, row-major; [rows, cols] means element (r, c) is at r * cols + c.
// Pointers are to the stream's memory; outputs do not overlap inputs unless a primitive says so.
// Nothing here allocates; nothing waits for the stream unless it returns a value to the host, and
// those say so. Indices and labels are not checked unless a primitive says so: the caller checks
// them on the host, where they come from.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/stream.h"

namespace gw::kernels {

// --- Activation ---------------------------------------------------------------------------------

// y = x > 0 ? x : 0 (so -0 and NaN become +0). y may alias x.
void relu_forward(const float* x, float* y, std::size_t n, const Stream& stream);

// dx = x > 0 ? dy : 0, x being the forward input. dx may alias dy.
void relu_backward(const float* x, const float* dy, float* dx, std::size_t n, const Stream& stream);

// --- Bias ---------------------------------------------------------------------------------------

// y[r, c] = bias[c]: the start of a fully connected layer's output, onto which the GEMM adds
// x W^T (beta = 1), as reference_trainer/nn/linear.cc does it.
void broadcast_rows(const float* bias, std::size_t rows, std::size_t cols, float* y,
                    const Stream& stream);

// db[c] = the column sum of dy [rows, cols], from 0.0f, adding rows in order r = 0, 1, ...
// (linear.cc's loop; a fixed order, so the sum is the same on every device).
void bias_grad(const float* dy, std::size_t rows, std::size_t cols, float* db,
               const Stream& stream);

// --- Softmax cross-entropy ----------------------------------------------------------------------

// Per row r of logits z [rows, classes], with m = max of the row and total = sum over c, in class
// order, of exp(z[c] - m): probs[r, c] = exp(z[c] - m) * (1 / total), and
// loss[r] = log(total) - (z[label[r]] - m), the row's cross-entropy. Labels must be below
// classes (first_bad_label checks them).
void softmax_cross_entropy_forward(const float* logits, const std::uint8_t* labels,
                                   std::size_t rows, std::size_t classes, float* probs, float* loss,
                                   const Stream& stream);

// grad = probs * scale, then grad[r, label[r]] -= scale: the gradient of scale times the sum of
// the rows' losses (the layer passes loss_scale / rows, for the mean). grad may alias probs.
void softmax_cross_entropy_backward(const float* probs, const std::uint8_t* labels,
                                    std::size_t rows, std::size_t classes, float scale, float* grad,
                                    const Stream& stream);

// The first row whose label is not below classes, or rows when every label is. Waits for the
// stream (the answer is the host's).
std::size_t first_bad_label(const std::uint8_t* labels, std::size_t rows, std::size_t classes,
                            const Stream& stream);

// How many rows' argmax equals their label. A row's argmax is the index of its largest value,
// the first of equal ones (std::max_element's rule: a later value wins only when it is greater,
// so NaN never does, and a NaN first stays). Waits for the stream.
std::size_t count_correct(const float* logits, const std::uint8_t* labels, std::size_t rows,
                          std::size_t classes, const Stream& stream);

// --- Max pooling --------------------------------------------------------------------------------

// Non-overlapping max pooling (window = stride = kernel) of `planes` planes of h x w (NCHW: planes
// = N * C) into planes of (h / kernel) x (w / kernel), a ragged edge dropped (kernel <= h, w). On
// ties the first maximum in the window's row-major order wins. argmax, when not null, receives
// per output element the offset of its maximum within its input plane (what backward reads).
void max_pool2d_forward(const float* x, std::size_t planes, std::size_t h, std::size_t w,
                        std::size_t kernel, float* y, std::uint32_t* argmax, const Stream& stream);

// dx = 0 everywhere, then dx[plane, argmax[o]] += dy[o] for every output element o (as the CPU
// layer does it, so a -0 gradient arrives as +0). The windows do not overlap, so each input
// element receives at most one gradient and the result does not depend on order: the device
// computes each input element on its own (a gather), never with atomics.
void max_pool2d_backward(const float* dy, const std::uint32_t* argmax, std::size_t planes,
                         std::size_t h, std::size_t w, std::size_t kernel, float* dx,
                         const Stream& stream);

// --- Optimizers ---------------------------------------------------------------------------------

// One SGD step's scalars, already in float. grad_scale is ParameterView::grad_scale:
// see Note [Who divides by the world size].
struct SgdCoefficients {
  float lr;
  float weight_decay;
  float momentum;
  float grad_scale;
  bool nesterov;
};

// reference_trainer/optim/sgd.cc's update, with d = g * grad_scale + weight_decay * w:
//  - momentum_buf null (plain SGD; momentum and nesterov ignored): w -= lr * d;
//  - otherwise b = momentum * buf + d; buf = b; w -= lr * b, or with nesterov w -= lr * (d +
//    momentum * b).
void sgd_update(float* w, const float* g, float* momentum_buf, std::size_t n,
                const SgdCoefficients& c, const Stream& stream);

// One Adam step's scalars, computed on the host in double and rounded once to float, as
// reference_trainer/optim/adam.cc does (step_size = lr / (1 - beta1^t), bias2_sqrt =
// sqrt(1 - beta2^t)).
struct AdamCoefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, weight_decay, step_size, bias2_sqrt, eps;
  float grad_scale;
};

// adam.cc's update: d = g * grad_scale + weight_decay * w; m = beta1 m + (1 - beta1) d;
// v = beta2 v + (1 - beta2) d^2; w -= step_size * (m / (sqrt(v) / bias2_sqrt + eps)).
void adam_update(float* w, const float* g, float* m, float* v, std::size_t n,
                 const AdamCoefficients& c, const Stream& stream);

// --- Batches ------------------------------------------------------------------------------------

// dst[i, :] = src[indices[i], :] for i < count, rows of `width` floats: a batch gathered from a
// data set in the stream's memory. The indices (in the stream's memory too) must be rows of src.
void gather_rows(const float* src, std::size_t width, const std::uint64_t* indices,
                 std::size_t count, float* dst, const Stream& stream);

// dst[i] = src[indices[i]]: the batch's labels.
void gather_bytes(const std::uint8_t* src, const std::uint64_t* indices, std::size_t count,
                  std::uint8_t* dst, const Stream& stream);

}  // namespace gw::kernels
