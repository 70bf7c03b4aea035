#include "compressors/sparse_message.h"

#include <algorithm>
#include <string>

#include "kernels/sparse.h"
#include "kernels/sparse_wire.h"

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

// validate_sparse_messages on the compact wire: each rank's segments decoded, one tensor after
// the other, into segments.decoded.
void validate_compact_messages(const BucketView& bucket, const ExchangePlan& plan,
                               const std::uint32_t* words,
                               const std::vector<std::size_t>& words_per_rank,
                               SparseSegments& segments, const kernels::Stream& stream) {
  const std::size_t tensors = plan.sparse.size();
  std::size_t all_k = 0, most_k = 0;
  for (std::size_t k : plan.k) {
    all_k += k;
    most_k = std::max(most_k, k);
  }
  std::uint32_t* decoded =
      segments.decoded.reserve_discard(2 * all_k * words_per_rank.size(), stream);
  std::uint64_t* scratch = segments.scratch.reserve_discard(kernels::wire_scratch(most_k), stream);
  std::size_t offset = 0, out = 0;
  for (std::size_t r = 0; r < words_per_rank.size(); ++r) {
    const int rank = static_cast<int>(r);
    const std::size_t size = words_per_rank[r];
    std::size_t at = 0;
    for (std::size_t j = 0; j < tensors; ++j) {
      const TensorSlot& t = bucket.tensors[plan.sparse[j]];
      const std::string tensor = "tensor " + std::to_string(t.parameter);
      const kernels::WireCheck check =
          kernels::decode_wire(words + offset + at, size - at, t.numel, plan.k[j], false,
                               decoded + out, scratch, stream);
      switch (check.problem) {
        case kernels::WireProblem::kNone:
          break;
        case kernels::WireProblem::kTruncated:
          if (size - at < 2) {
            reject(rank, bucket,
                   "it ends after " + std::to_string(j) + " of " + std::to_string(tensors) +
                       " tensors (" + std::to_string(size) + " words)");
          }
          reject(rank, bucket,
                 tensor + " announces " + std::to_string(check.pairs) + " pairs in " +
                     std::to_string(check.words) + " words, but only " + std::to_string(size - at) +
                     " are left");
        case kernels::WireProblem::kTooManyPairs:
          reject(rank, bucket,
                 tensor + " has " + std::to_string(check.value) + " pairs, more than the " +
                     std::to_string(plan.k[j]) + " a rank may send");
        case kernels::WireProblem::kBadWidth:
          reject(rank, bucket,
                 tensor + " has width byte " + std::to_string(check.position) + " = " +
                     std::to_string(check.value) +
                     "; a block's gap width is 0 to 32, and the bytes after the last block are 0");
        case kernels::WireProblem::kWrongBlockWords:
          reject(rank, bucket,
                 tensor + " announces " + std::to_string(check.value) +
                     " block words; its gap widths give " + std::to_string(check.expected));
        case kernels::WireProblem::kIndexOutOfRange:
          reject(rank, bucket,
                 tensor + " pair " + std::to_string(check.position) + " has index " +
                     std::to_string(check.value) + ", outside [0, " + std::to_string(t.numel) +
                     ")");
        case kernels::WireProblem::kNonFiniteValue:
          reject(rank, bucket, tensor + ": " + kernels::to_string(check.problem));
      }
      segments.offset[r * tensors + j] = out;
      segments.count[r * tensors + j] = check.pairs;
      out += 2 * check.pairs;
      at += check.words;
    }
    if (at != size) {
      reject(rank, bucket,
             std::to_string(size - at) + " words left over after the " + std::to_string(tensors) +
                 " tensors its segments describe");
    }
    offset += size;
  }
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
                                 const float* tensor, const kernels::Stream& stream,
                                 SparseWire wire) {
  if (wire == SparseWire::kCompact) {
    reserve(size_ + kernels::wire_max_words(count), stream);
    std::uint64_t* scratch = scratch_.reserve_discard(kernels::wire_scratch(count), stream_);
    size_ += kernels::encode_wire(indices, count, tensor, words_.data() + size_, scratch, stream_);
    return;
  }
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
  std::size_t words = 0;
  for (std::size_t k : plan.k) {
    words += plan.sparse_wire == SparseWire::kCompact ? kernels::wire_max_words(k) : 1 + 2 * k;
  }
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
  segments.in_decoded = plan.sparse_wire == SparseWire::kCompact;
  if (segments.in_decoded) {
    return validate_compact_messages(bucket, plan, words, words_per_rank, segments, stream);
  }
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
  const std::uint32_t* pairs = segments.in_decoded ? segments.decoded.data() : words;
  for (std::size_t r = 0; r < ranks; ++r) {
    for (std::size_t j = 0; j < tensors; ++j) {
      float* tensor = bucket.data + bucket.tensors[plan.sparse[j]].offset;
      kernels::scatter_add_pairs(pairs + segments.offset[r * tensors + j],
                                 segments.count[r * tensors + j], tensor, stream);
    }
  }
}

}  // namespace gw::compressors
