// The parameter tensors of torchvision's ResNet-50 (v1.5: the stride of a downsampling bottleneck
// sits on its 3x3 conv), in registration order, with each tensor's layer and a backward cost in
// FLOPs per 224x224 image; and the fusion plan gradwire forms from tensor sizes. Shared by
// gradwire_bench_fusion and gradwire_bench_overlap.
//
// Registration order is torchvision's named_parameters() order: conv1, bn1 (weight, bias), then
// for each bottleneck of layer1..layer4 ([3, 4, 6, 3] blocks) conv1, bn1, conv2, bn2, conv3, bn3,
// and in each stage's first block downsample.0 (1x1 conv) and downsample.1 (bn), then fc (weight,
// bias): 161 tensors, 25,557,032 floats.
//
// Backward cost, per image (only its proportions matter to the benches):
//   conv   2 * 2*Cout*Cin*kh*kw*Hout*Wout   (the input gradient and the weight gradient, each as
//                                           many multiply-adds as the forward)
//   bn     4*C*Hout*Wout for each of weight and bias (an elementwise pass or two)
//   fc     2 * 2*1000*2048 for the weight, 4*1000 for the bias
// Output sizes: conv1 112, layer1 56, layers 2-4 28/14/7. In the first block of layers 2-4, conv1
// (1x1, stride 1) and bn1 still run at the previous stage's size; conv2 (3x3, stride 2) and what
// follows, and the downsample, run at the stage's size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fusion/bucket_plan.h"

namespace gw::bench {

inline constexpr std::size_t kResnet50Tensors = 161;
inline constexpr std::size_t kResnet50Numel = 25'557'032;

struct ModelTensor {
  std::string name;                // torchvision's parameter name, "layer2.0.conv2.weight"
  std::vector<std::size_t> shape;  // "64x3x7x7" as {64, 3, 7, 7}
  std::size_t numel = 0;
  std::size_t layer = 0;           // tensors of one module (a conv, a bn, fc) share a layer index
  double backward_flops = 0;       // per 224x224 image
};

// Every ResNet-50 parameter tensor, in registration order.
inline std::vector<ModelTensor> resnet50_tensors() {
  std::vector<ModelTensor> out;
  std::size_t layer = 0;
  const auto numel_of = [](const std::vector<std::size_t>& shape) {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    return n;
  };
  const auto conv = [&](const std::string& name, std::size_t cout, std::size_t cin, std::size_t k,
                        std::size_t out_hw) {
    const std::vector<std::size_t> shape{cout, cin, k, k};
    const double forward = 2.0 * cout * cin * k * k * out_hw * out_hw;
    out.push_back({name + ".weight", shape, numel_of(shape), layer++, 2.0 * forward});
  };
  const auto bn = [&](const std::string& name, std::size_t c, std::size_t out_hw) {
    const double cost = 4.0 * c * out_hw * out_hw;
    out.push_back({name + ".weight", {c}, c, layer, cost});
    out.push_back({name + ".bias", {c}, c, layer, cost});
    ++layer;
  };

  conv("conv1", 64, 3, 7, 112);
  bn("bn1", 64, 112);
  const std::size_t blocks[4] = {3, 4, 6, 3};
  const std::size_t widths[4] = {64, 128, 256, 512};
  const std::size_t sizes[4] = {56, 28, 14, 7};
  std::size_t in_channels = 64, in_size = 56;  // after the max pool
  for (int s = 0; s < 4; ++s) {
    const std::size_t width = widths[s], out_channels = 4 * width, size = sizes[s];
    for (std::size_t b = 0; b < blocks[s]; ++b) {
      const std::string p = "layer" + std::to_string(s + 1) + "." + std::to_string(b);
      const std::size_t cin = b == 0 ? in_channels : out_channels;
      const std::size_t conv1_size = b == 0 ? in_size : size;  // the stride is on conv2
      conv(p + ".conv1", width, cin, 1, conv1_size);
      bn(p + ".bn1", width, conv1_size);
      conv(p + ".conv2", width, width, 3, size);
      bn(p + ".bn2", width, size);
      conv(p + ".conv3", out_channels, width, 1, size);
      bn(p + ".bn3", out_channels, size);
      if (b == 0) {
        conv(p + ".downsample.0", out_channels, cin, 1, size);
        bn(p + ".downsample.1", out_channels, size);
      }
    }
    in_channels = out_channels;
    in_size = size;
  }
  out.push_back({"fc.weight", {1000, 2048}, 1000 * 2048, layer, 2.0 * 2.0 * 1000 * 2048});
  out.push_back({"fc.bias", {1000}, 1000, layer, 4.0 * 1000});
  return out;
}

// How many buckets gradwire's fusion forms from these tensor sizes (float32) under a threshold of
// `threshold_mib` MiB (fusion/bucket_plan.h, the planner DistributedOptimizer uses).
inline std::size_t fusion_bucket_count(const std::vector<std::size_t>& numels,
                                       double threshold_mib) {
  return fusion::plan_buckets(numels, fusion::threshold_bytes_from_mib(threshold_mib)).size();
}

}  // namespace gw::bench
