#include "compressors/sparse_message.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace gw::compressors {
namespace {

float word_to_float(std::uint32_t w) {
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

std::uint32_t float_to_word(float f) {
  std::uint32_t w;
  std::memcpy(&w, &f, sizeof w);
  return w;
}

[[noreturn]] void reject(int rank, const BucketView& bucket, const std::string& what) {
  throw PayloadError("sparse gradient message from rank " + std::to_string(rank) + " (bucket " +
                     std::to_string(bucket.index) + ") is malformed: " + what);
}

}  // namespace

void SparseMessageWriter::append(const std::uint32_t* indices, std::size_t count,
                                 const float* tensor) {
  const std::size_t start = words_.size();
  words_.resize(start + 1 + 2 * count);
  std::uint32_t* out = words_.data() + start;
  out[0] = static_cast<std::uint32_t>(count);
  for (std::size_t j = 0; j < count; ++j) {
    out[1 + 2 * j] = indices[j];
    out[2 + 2 * j] = float_to_word(tensor[indices[j]]);
  }
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

void SentIndices::reserve(std::size_t numel) {
  const std::size_t words = (numel + 63) / 64;
  if (bits_.size() < words) bits_.resize(words, 0);
}

void validate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                              const std::uint32_t* words,
                              const std::vector<std::size_t>& words_per_rank, SentIndices& sent) {
  for (std::size_t pos : plan.sparse) sent.reserve(bucket.tensors[pos].numel);
  std::size_t offset = 0;
  for (std::size_t r = 0; r < words_per_rank.size(); ++r) {
    const int rank = static_cast<int>(r);
    const std::uint32_t* msg = words + offset;
    const std::size_t size = words_per_rank[r];
    offset += size;
    std::size_t at = 0;
    for (std::size_t j = 0; j < plan.sparse.size(); ++j) {
      const TensorSlot& t = bucket.tensors[plan.sparse[j]];
      if (at >= size) {
        reject(rank, bucket,
               "it ends after " + std::to_string(j) + " of " + std::to_string(plan.sparse.size()) +
                   " tensors (" + std::to_string(size) + " words)");
      }
      const std::size_t count = msg[at++];
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
      const std::uint32_t* pairs = msg + at;
      // Clears what this tensor's pairs marked, so `sent` is clear for the next one (or call).
      const auto unmark_first = [&](std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) sent.unmark(pairs[2 * i]);
      };
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t index = pairs[2 * i];
        if (index >= t.numel) {
          unmark_first(i);
          reject(rank, bucket,
                 "tensor " + std::to_string(t.parameter) + " pair " + std::to_string(i) +
                     " has index " + std::to_string(index) + ", outside [0, " +
                     std::to_string(t.numel) + ")");
        }
        if (!sent.mark(index)) {
          // Summing it twice would add that element's value twice; name where it first came.
          std::size_t first = 0;
          while (pairs[2 * first] != index) ++first;
          unmark_first(i);
          reject(rank, bucket,
                 "tensor " + std::to_string(t.parameter) + " pairs " + std::to_string(first) +
                     " and " + std::to_string(i) + " both have index " + std::to_string(index) +
                     "; a rank sends each index at most once per tensor");
        }
      }
      unmark_first(count);
      at += 2 * count;
    }
    if (at != size) {
      reject(rank, bucket,
             std::to_string(size - at) + " words left over after the " +
                 std::to_string(plan.sparse.size()) + " tensors its counts describe");
    }
  }
}

void accumulate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                                const std::uint32_t* words,
                                const std::vector<std::size_t>& words_per_rank) {
  for (std::size_t pos : plan.sparse) {
    const TensorSlot& t = bucket.tensors[pos];
    std::fill(bucket.data + t.offset, bucket.data + t.offset + t.numel, 0.0f);
  }
  std::size_t offset = 0;
  for (std::size_t size : words_per_rank) {
    const std::uint32_t* msg = words + offset;
    offset += size;
    std::size_t at = 0;
    for (std::size_t pos : plan.sparse) {
      float* tensor = bucket.data + bucket.tensors[pos].offset;
      const std::size_t count = msg[at++];
      for (std::size_t i = 0; i < count; ++i) {
        tensor[msg[at + 2 * i]] += word_to_float(msg[at + 2 * i + 1]);
      }
      at += 2 * count;
    }
  }
}

}  // namespace gw::compressors
