// The sparse part of a bucket on the wire, and its checked decoding.
//
// Note [Sparse message format]
// One message per rank per bucket, in 32-bit words, host byte order. For each tensor of the plan's
// sparse list, in plan order: the pair count c, then c pairs of (index, value): the index (uint32,
// relative to the tensor) and the value (float bits). A rank sends at most the plan's k pairs per
// tensor, each index at most once (pairs need not be in index order: a device's top-k may write
// them in any order). Receivers check every message against the plan before anything is added: a
// count above k, an index out of range or sent twice for one tensor, or a message whose length
// does not match its counts is a PayloadError that names the sending rank; nothing is written out
// of bounds and nothing is half-applied. Values are not judged: a NaN or an infinity is a gradient
// like any other, for the AMP overflow check to find (the top-k selector sends NaN on purpose).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "compressors/bucket_view.h"
#include "compressors/exchange_plan.h"

namespace gw::compressors {

// A malformed payload from a peer.
class PayloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SparseMessageWriter {
 public:
  void clear() { words_.clear(); }
  void reserve(std::size_t words) { words_.reserve(words); }
  // Appends one tensor: count, then the pairs (indices[j], tensor[indices[j]]).
  void append(const std::uint32_t* indices, std::size_t count, const float* tensor);
  const std::vector<std::uint32_t>& words() const { return words_; }

 private:
  std::vector<std::uint32_t> words_;
};

// The most words a message for `plan` can have.
std::size_t max_message_words(const ExchangePlan& plan);

// Checks the message lengths every rank announced (before anything is received) against the most
// the plan allows, and writes them to words_per_rank; throws PayloadError naming the sender.
void check_message_sizes(const BucketView& bucket, const ExchangePlan& plan,
                         const std::vector<std::int64_t>& announced,
                         std::vector<std::size_t>& words_per_rank);

// The indices of one tensor that a message has sent so far: a bit per element, to find an index
// sent twice in time proportional to the pairs. validate_sparse_messages leaves it all clear;
// reused from step to step, it allocates only when a larger tensor comes.
class SentIndices {
 public:
  // Makes room for indices in [0, numel).
  void reserve(std::size_t numel);
  // Marks `index` (< the reserved numel); false when it was marked already.
  bool mark(std::uint32_t index) {
    std::uint64_t& word = bits_[index / 64];
    const std::uint64_t bit = std::uint64_t{1} << (index % 64);
    const bool fresh = (word & bit) == 0;
    word |= bit;
    return fresh;
  }
  void unmark(std::uint32_t index) { bits_[index / 64] &= ~(std::uint64_t{1} << (index % 64)); }

 private:
  std::vector<std::uint64_t> bits_;
};

// Checks the messages of every rank (rank r's are words[offset_r, offset_r + words_per_rank[r]))
// against the plan; throws PayloadError naming the first bad sender, the bucket, the tensor and,
// for an index out of range or sent twice, the index. `sent` is scratch (left clear).
void validate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                              const std::uint32_t* words,
                              const std::vector<std::size_t>& words_per_rank, SentIndices& sent);

// After validation: sets each sparse tensor of the bucket to the sum of every rank's pairs.
void accumulate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                                const std::uint32_t* words,
                                const std::vector<std::size_t>& words_per_rank);

}  // namespace gw::compressors
