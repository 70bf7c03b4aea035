#include "compressors/state_arrays.h"

#include <cstdint>

#include "compressors/state_stream.h"

namespace gw::compressors {

StateArrays::StateArrays(const std::vector<std::size_t>& numels, const std::vector<bool>& present)
    : arrays_(numels.size()) {
  for (std::size_t p = 0; p < numels.size(); ++p) {
    if (!present[p]) continue;
    arrays_[p] = kernels::Buffer<float>(numels[p], stream_);
    kernels::fill_zero(arrays_[p].data(), numels[p] * sizeof(float), stream_);
  }
}

void StateArrays::move_to(const kernels::Stream& stream) {
  if (stream == stream_) return;
  for (auto& a : arrays_) {
    if (a.empty()) continue;
    kernels::Buffer<float> moved(a.size(), stream);
    // From the old place to the new one: a device stream copies either way (cudaMemcpyDefault);
    // only host to host uses the host stream.
    const kernels::Stream& copier = stream.is_host() ? stream_ : stream;
    stream_.synchronize();
    kernels::copy_bytes(moved.data(), a.data(), a.size() * sizeof(float), copier);
    copier.synchronize();
    a = std::move(moved);
  }
  stream_ = stream;
}

std::vector<float> StateArrays::to_host(std::size_t p) const {
  std::vector<float> host(arrays_[p].size());
  stream_.synchronize();
  kernels::copy_bytes(host.data(), arrays_[p].data(), host.size() * sizeof(float), stream_);
  stream_.synchronize();
  return host;
}

std::vector<std::vector<float>> StateArrays::all_to_host() const {
  std::vector<std::vector<float>> host;
  host.reserve(arrays_.size());
  for (std::size_t p = 0; p < arrays_.size(); ++p) host.push_back(to_host(p));
  return host;
}

void StateArrays::assign(const std::vector<std::vector<float>>& host) {
  for (std::size_t p = 0; p < arrays_.size(); ++p) {
    kernels::copy_bytes(arrays_[p].data(), host[p].data(), host[p].size() * sizeof(float), stream_);
  }
  stream_.synchronize();
}

void save_state_arrays(std::ostream& out, const std::string& owner, std::int64_t step,
                       const std::vector<const StateArrays*>& groups) {
  std::vector<std::vector<float>> host;
  for (const StateArrays* g : groups) {
    for (auto& a : g->all_to_host()) host.push_back(std::move(a));
  }
  std::vector<const std::vector<float>*> arrays;
  for (const auto& a : host) arrays.push_back(&a);
  save_arrays(out, owner, step, arrays);
}

void load_state_arrays(std::istream& in, const std::string& owner, std::int64_t* step,
                       const std::vector<StateArrays*>& groups) {
  // The expected layout as host arrays of the live sizes; load_arrays checks and fills them, and
  // throws before anything is committed.
  std::vector<std::vector<std::vector<float>>> host(groups.size());
  std::vector<std::vector<float>*> arrays;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    host[g].resize(groups[g]->count());
    for (std::size_t p = 0; p < groups[g]->count(); ++p) {
      host[g][p].resize(groups[g]->size(p));
      arrays.push_back(&host[g][p]);
    }
  }
  load_arrays(in, owner, step, arrays);
  for (std::size_t g = 0; g < groups.size(); ++g) groups[g]->assign(host[g]);
}

}  // namespace gw::compressors
