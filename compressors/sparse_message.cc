#include "compressors/sparse_message.h"

#include <algorithm>
#include <string>

#include "kernels/sparse.h"

namespace gw::compressors {
namespace {

[[noreturn]] void reject(int rank, const BucketView& bucket, const std::string& what) {
  throw PayloadError("sparse gradient message from rank " + std::to_string(rank) + " (bucket " +
                     std::to_string(bucket.index) + ") is malformed: " + what);
}

// One word of a message in `stream`'s memory, read on the host.
std::uint32_t read_word(const std::uint32_t* word, const kernels::Stream& stream) {
  if (stream.is_host()) return *word;
  std::uint32_t value = 0;
  kernels::copy_bytes(&value, word, sizeof value, stream);
  stream.synchronize();
  return value;
}

}  // namespace

void SparseMessageWriter::reserve(std::size_t words, const kernels::Stream& stream) {
  if (words <= words_.size() && stream == stream_) return;
  kernels::Buffer<std::uint32_t> grown(std::max(words, 2 * words_.size()), stream);
  if (size_ > 0) {
    const kernels::Stream& copier = stream.is_host() ? stream_ : stream;
    stream_.synchronize();
    kernels::copy_bytes(grown.data(), words_.data(), size_ * sizeof(std::uint32_t), copier);
  }
  words_ = std::move(grown);
  stream_ = stream;
}

void SparseMessageWriter::append(const std::uint32_t* indices, std::size_t count,
                                 const float* tensor, const kernels::Stream& stream) {
  reserve(size_ + 1 + 2 * count, stream);
  const auto header = static_cast<std::uint32_t>(count);
  // From the host's stack: a copy from pageable memory has read it before it returns.
  kernels::copy_bytes(words_.data() + size_, &header, sizeof header, stream_);
  kernels::pack_pairs(indices, count, tensor, words_.data() + size_ + 1, stream_);
  size_ += 1 + 2 * count;
}

std::vector<std::uint32_t> SparseMessageWriter::words() const {
  std::vector<std::uint32_t> host(size_);
  stream_.synchronize();
  kernels::copy_bytes(host.data(), words_.data(), size_ * sizeof(std::uint32_t), stream_);
  stream_.synchronize();
  return host;
}

std::size_t max_message_words(const ExchangePlan& plan) {
  std::size_t words = plan.sparse.size();
  for (std::size_t k : plan.k) words += 2 * k;
  return words;
}

void check_message_sizes(const BucketView& bucket, const ExchangePlan& plan,
                         const std::vector<std::int64_t>& announced,
                         std::vector<std::size_t>& words_per_rank) {
  const std::size_t most = max_message_words(plan);
  words_per_rank.resize(announced.size());
  for (std::size_t r = 0; r < announced.size(); ++r) {
    if (announced[r] < 0 || static_cast<std::uint64_t>(announced[r]) > most) {
      reject(static_cast<int>(r), bucket,
             "it announces " + std::to_string(announced[r]) +
                 " words; this step's plan allows at most " + std::to_string(most));
    }
    words_per_rank[r] = static_cast<std::size_t>(announced[r]);
  }
}

void validate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                              const std::uint32_t* words,
                              const std::vector<std::size_t>& words_per_rank,
                              SparseSegments& segments, const kernels::Stream& stream) {
  const std::size_t tensors = plan.sparse.size();
  segments.offset.assign(words_per_rank.size() * tensors, 0);
  segments.count.assign(words_per_rank.size() * tensors, 0);
  std::size_t offset = 0;
  for (std::size_t r = 0; r < words_per_rank.size(); ++r) {
    const int rank = static_cast<int>(r);
    const std::size_t size = words_per_rank[r];
    std::size_t at = 0;
    for (std::size_t j = 0; j < tensors; ++j) {
      const TensorSlot& t = bucket.tensors[plan.sparse[j]];
      if (at >= size) {
        reject(rank, bucket,
               "it ends after " + std::to_string(j) + " of " + std::to_string(tensors) +
                   " tensors (" + std::to_string(size) + " words)");
      }
      const std::size_t count = read_word(words + offset + at, stream);
      ++at;
      if (count > plan.k[j]) {
        reject(rank, bucket,
               "tensor " + std::to_string(t.parameter) + " has " + std::to_string(count) +
                   " pairs, more than the " + std::to_string(plan.k[j]) + " a rank may send");
      }
      if (size - at < 2 * count) {
        reject(rank, bucket,
               "tensor " + std::to_string(t.parameter) + " announces " + std::to_string(count) +
                   " pairs but only " + std::to_string((size - at) / 2) + " follow");
      }
      const kernels::PairsCheck check =
          kernels::check_sparse_pairs(words + offset + at, count, t.numel, stream);
      if (check.problem == kernels::PairsProblem::kIndexOutOfRange) {
        reject(rank, bucket,
               "tensor " + std::to_string(t.parameter) + " pair " + std::to_string(check.position) +
                   " has index " + std::to_string(check.index) + ", outside [0, " +
                   std::to_string(t.numel) + ")");
      }
      if (check.problem == kernels::PairsProblem::kNotIncreasing) {
        // A repeat would add that element's value twice; any other order is not what a selector
        // sends.
        reject(rank, bucket,
               "tensor " + std::to_string(t.parameter) + " pair " + std::to_string(check.position) +
                   " has index " + std::to_string(check.index) + ", not above pair " +
                   std::to_string(check.position - 1) + "'s index " +
                   std::to_string(check.previous_index) +
                   "; a rank sends each tensor's indices in strictly increasing order");
      }
      segments.offset[r * tensors + j] = offset + at;
      segments.count[r * tensors + j] = count;
      at += 2 * count;
    }
    if (at != size) {
      reject(rank, bucket,
             std::to_string(size - at) + " words left over after the " + std::to_string(tensors) +
                 " tensors its counts describe");
    }
    offset += size;
  }
}

void accumulate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                                const std::uint32_t* words, const SparseSegments& segments,
                                const kernels::Stream& stream) {
  const std::size_t tensors = plan.sparse.size();
  for (std::size_t pos : plan.sparse) {
    const TensorSlot& t = bucket.tensors[pos];
    kernels::fill_zero(bucket.data + t.offset, t.numel * sizeof(float), stream);
  }
  const std::size_t ranks = tensors == 0 ? 0 : segments.count.size() / tensors;
  for (std::size_t r = 0; r < ranks; ++r) {
    for (std::size_t j = 0; j < tensors; ++j) {
      float* tensor = bucket.data + bucket.tensors[plan.sparse[j]].offset;
      kernels::scatter_add_pairs(words + segments.offset[r * tensors + j],
                                 segments.count[r * tensors + j], tensor, stream);
    }
  }
}

}  // namespace gw::compressors
