#include "plugin/parameter_set.h"

#include <set>
#include <stdexcept>

namespace gw {

ParameterSet::ParameterSet(std::vector<ParameterSpec> params, const kernels::Stream& stream)
    : stream_(stream) {
  std::set<std::string> names;
  std::size_t offset = 0;
  for (auto& p : params) {
    if (p.value == nullptr || p.numel == 0) {
      throw std::invalid_argument("DistributedOptimizer: parameter '" + p.name +
                                  "' has no values (null pointer or zero elements)");
    }
    if (!names.insert(p.name).second) {
      throw std::invalid_argument("DistributedOptimizer: parameter name '" + p.name +
                                  "' registered twice");
    }
    if (kernels::device_of(p.value) != stream.device()) {
      throw std::invalid_argument(
          "DistributedOptimizer: parameter '" + p.name + "' has its values in " +
          to_string(kernels::device_of(p.value)) + " memory, but the optimizer works on the " +
          to_string(stream.device()) + " (DistributedOptimizerOptions::stream)");
    }
    if (p.rows != 0 && p.numel % p.rows != 0) {
      throw std::invalid_argument("DistributedOptimizer: parameter '" + p.name + "' has " +
                                  std::to_string(p.numel) + " elements, which " +
                                  std::to_string(p.rows) +
                                  " rows do not divide (rows: the leading dimension of a "
                                  "matrix-shaped parameter, or 0 for a vector)");
    }
    params_.push_back(Registered{std::move(p), offset});
    offset += params_.back().spec.numel;
  }
  numel_ = offset;
  gradients_ = kernels::Buffer<float>(numel_, stream_);
  kernels::fill_zero(gradients_.data(), numel_ * sizeof(float), stream_);
  stream_.synchronize();
  views_.reserve(params_.size());
  for (const Registered& p : params_) {
    views_.push_back(
        ParameterView{p.spec.name, p.spec.value, gradients_.data() + p.offset, p.spec.numel});
  }
}

std::vector<std::size_t> ParameterSet::numels() const {
  std::vector<std::size_t> out;
  out.reserve(params_.size());
  for (const Registered& p : params_) out.push_back(p.spec.numel);
  return out;
}

std::vector<std::size_t> ParameterSet::rows() const {
  std::vector<std::size_t> out;
  out.reserve(params_.size());
  for (const Registered& p : params_) out.push_back(p.spec.rows);
  return out;
}

std::vector<compressors::BucketView> ParameterSet::bucket_views(const fusion::BucketPlan& plan,
                                                                float* flat) const {
  std::vector<compressors::BucketView> views;
  views.reserve(plan.size());
  for (const fusion::Bucket& b : plan.buckets) {
    compressors::BucketView view;
    view.index = b.index;
    view.data = flat + b.offset;
    view.numel = b.numel;
    for (std::size_t i = b.begin; i < b.end; ++i) {
      view.tensors.push_back({i, params_[i].offset - b.offset, params_[i].spec.numel});
    }
    views.push_back(std::move(view));
  }
  return views;
}

std::string ParameterSet::bucket_names(const fusion::Bucket& bucket) const {
  const std::string& first = params_[bucket.end - 1].spec.name;
  return bucket.end - bucket.begin > 1 ? first + " .. " + params_[bucket.begin].spec.name : first;
}

std::string ParameterSet::layout_canonical() const {
  std::string out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    out += "parameter[" + std::to_string(i) + "]=" + params_[i].spec.name + " (" +
           std::to_string(params_[i].spec.numel) + " elements" +
           (params_[i].spec.rows ? ", " + std::to_string(params_[i].spec.rows) + " rows" : "") +
           ")\n";
  }
  out += "parameters=" + std::to_string(params_.size()) + "\n";
  return out;
}

void ParameterSet::gather_values(float* flat) const {
  for (const Registered& p : params_) {
    kernels::copy_bytes(flat + p.offset, p.spec.value, p.spec.numel * sizeof(float), stream_);
  }
  stream_.synchronize();
}

void ParameterSet::scatter_values(const float* flat) const {
  for (const Registered& p : params_) {
    kernels::copy_bytes(p.spec.value, flat + p.offset, p.spec.numel * sizeof(float), stream_);
  }
  stream_.synchronize();
}

void ParameterSet::broadcast_from_rank0(Communicator& comm) const {
  kernels::Buffer<float> staging(numel(), stream_);
  gather_values(staging.data());
  comm.broadcast(staging.data(), numel(), DataType::kFloat32, 0, TrafficKind::kParameter);
  scatter_values(staging.data());
}

}  // namespace gw
