#include "reference_trainer/optim/parameter_state.h"

#include <algorithm>
#include <cstring>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <utility>

#include "common/binary_stream.h"

namespace gw::trainer {
namespace {

constexpr char kMagic[8] = {'G', 'W', 'O', 'P', 'T', 'S', 'T', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kMaxTagLength = 64;
// Buffers are read in chunks of this many floats, so a corrupt length fails on the short read
// instead of allocating whatever it claims.
constexpr std::size_t kReadChunk = std::size_t{1} << 20;

class Reader {
 public:
  Reader(std::istream& in, const std::string& owner) : in_(in), owner_(owner) {}

  void bytes(void* dst, std::size_t n, const char* what) {
    binary::read_bytes(in_, dst, n, owner_ + " load_state (reading " + what + ")");
  }
  template <typename T>
  T pod(const char* what) {
    T v;
    bytes(&v, sizeof(T), what);
    return v;
  }
  std::vector<float> floats(std::size_t n, const char* what) {
    std::vector<float> v;
    while (v.size() < n) {
      const std::size_t old = v.size();
      v.resize(old + std::min(kReadChunk, n - old));
      bytes(v.data() + old, (v.size() - old) * sizeof(float), what);
    }
    return v;
  }

 private:
  std::istream& in_;
  const std::string& owner_;
};

}  // namespace

ParameterState::ParameterState(std::string owner, std::size_t buffers_per_parameter,
                               kernels::Stream stream)
    : owner_(std::move(owner)),
      buffers_per_parameter_(buffers_per_parameter),
      stream_(std::move(stream)) {}

std::vector<gw::StateBuffer> ParameterState::buffers() {
  std::vector<gw::StateBuffer> out;
  out.reserve(buffers_.size());
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    out.push_back({buffers_[i].data(), sizes_[i / buffers_per_parameter_]});
  }
  return out;
}

void ParameterState::prepare(const std::vector<gw::ParameterView>& params) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].numel > 0 && (params[i].value == nullptr || params[i].grad == nullptr)) {
      throw std::invalid_argument(owner_ + " step: parameter " + std::to_string(i) + " ('" +
                                  params[i].name + "') has a null value or gradient");
    }
  }
  if (has_layout_) {
    bool same = params.size() == sizes_.size();
    for (std::size_t i = 0; same && i < params.size(); ++i) same = params[i].numel == sizes_[i];
    if (!same) {
      throw std::invalid_argument(owner_ + " step: the parameter layout changed since the first " +
                                  "step (" + std::to_string(sizes_.size()) + " parameters then, " +
                                  std::to_string(params.size()) + " now, or different sizes)");
    }
    return;
  }
  sizes_.clear();
  buffers_.clear();
  for (const gw::ParameterView& p : params) {
    sizes_.push_back(p.numel);
    for (std::size_t k = 0; k < buffers_per_parameter_; ++k) {
      buffers_.emplace_back(p.numel, stream_);
      kernels::fill_zero(buffers_.back().data(), p.numel * sizeof(float), stream_);
    }
  }
  has_layout_ = true;
}

void ParameterState::save(std::ostream& out) const {
  out.write(kMagic, sizeof(kMagic));
  binary::put(out, static_cast<std::uint32_t>(owner_.size()));
  out.write(owner_.data(), static_cast<std::streamsize>(owner_.size()));
  binary::put(out, kVersion);
  binary::put(out, step_);
  binary::put(out, static_cast<std::uint8_t>(has_layout_ ? 1 : 0));
  binary::put(out, static_cast<std::uint64_t>(sizes_.size()));
  binary::put(out, static_cast<std::uint64_t>(buffers_per_parameter_));
  std::vector<float> staged;  // a device buffer's values on the host
  for (std::size_t i = 0; i < sizes_.size(); ++i) {
    binary::put(out, static_cast<std::uint64_t>(sizes_[i]));
    for (std::size_t k = 0; k < buffers_per_parameter_; ++k) {
      const float* b = buffers_[i * buffers_per_parameter_ + k].data();
      if (!stream_.is_host()) {
        staged.resize(sizes_[i]);
        kernels::copy_bytes(staged.data(), b, sizes_[i] * sizeof(float), stream_);
        stream_.synchronize();
        b = staged.data();
      }
      out.write(reinterpret_cast<const char*>(b),
                static_cast<std::streamsize>(sizes_[i] * sizeof(float)));
    }
  }
  if (!out) throw std::runtime_error(owner_ + " save_state: write failed");
}

void ParameterState::load(std::istream& in) {
  const std::string who = owner_ + " load_state";
  Reader r(in, owner_);
  char magic[sizeof(kMagic)];
  r.bytes(magic, sizeof(magic), "the magic");
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    throw std::runtime_error(who + ": not an optimizer state stream (bad magic)");
  }
  const auto tag_length = r.pod<std::uint32_t>("the type tag");
  if (tag_length > kMaxTagLength) {
    throw std::runtime_error(who + ": corrupt type tag length " + std::to_string(tag_length));
  }
  std::string tag(tag_length, '\0');
  r.bytes(tag.data(), tag_length, "the type tag");
  if (tag != owner_) {
    throw std::runtime_error(who + ": the stream holds '" + tag + "' state, not '" + owner_ + "'");
  }
  const auto version = r.pod<std::uint32_t>("the version");
  if (version != kVersion) {
    throw std::runtime_error(who + ": format version " + std::to_string(version) + ", expected " +
                             std::to_string(kVersion));
  }
  const auto step = r.pod<std::uint64_t>("the step count");
  const bool has_layout = r.pod<std::uint8_t>("the layout flag") != 0;
  const auto count = r.pod<std::uint64_t>("the parameter count");
  const auto per_param = r.pod<std::uint64_t>("the buffer count");
  if (per_param != buffers_per_parameter_) {
    throw std::runtime_error(who + ": " + std::to_string(per_param) +
                             " buffers per parameter in the stream, " +
                             std::to_string(buffers_per_parameter_) + " expected");
  }
  if (!has_layout && count != 0) {
    throw std::runtime_error(who + ": corrupt stream (" + std::to_string(count) +
                             " parameters but no layout)");
  }
  if (has_layout_ && has_layout && count != sizes_.size()) {
    throw std::runtime_error(who + ": " + std::to_string(count) + " parameters in the stream, " +
                             std::to_string(sizes_.size()) + " here");
  }
  std::vector<std::size_t> sizes;
  std::vector<std::vector<float>> buffers;
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto numel = r.pod<std::uint64_t>("a parameter size");
    if (has_layout_ && has_layout && numel != sizes_[i]) {
      throw std::runtime_error(who + ": parameter " + std::to_string(i) + " has " +
                               std::to_string(numel) + " elements in the stream, " +
                               std::to_string(sizes_[i]) + " here");
    }
    sizes.push_back(static_cast<std::size_t>(numel));
    for (std::size_t k = 0; k < buffers_per_parameter_; ++k) {
      buffers.push_back(r.floats(static_cast<std::size_t>(numel), "a parameter buffer"));
    }
  }
  std::vector<kernels::Buffer<float>> committed;
  for (std::size_t j = 0; j < buffers.size(); ++j) {
    committed.emplace_back(buffers[j].size(), stream_);
    kernels::copy_bytes(committed.back().data(), buffers[j].data(),
                        buffers[j].size() * sizeof(float), stream_);
  }
  stream_.synchronize();  // the host copies go away here
  step_ = step;
  has_layout_ = has_layout;
  sizes_ = std::move(sizes);
  buffers_ = std::move(committed);
}

}  // namespace gw::trainer
