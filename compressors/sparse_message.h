// The sparse part of a bucket on the wire, and its checked decoding.
//
// Note [Sparse message format]
// One message per rank per bucket, in 32-bit words, host byte order. For each tensor of the plan's
// sparse list, in plan order: the pair count c, then c pairs of (index, value): the index (uint32,
// relative to the tensor) and the value (float bits). A rank sends at most the plan's k pairs per
// tensor. Receivers check every message against the plan before anything is added: a count above
// k, an index out of range, or a message whose length does not match its counts is a PayloadError
// that names the sending rank; nothing is written out of bounds and nothing is half-applied.
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

// Checks the messages of every rank (rank r's are words[offset_r, offset_r + words_per_rank[r]))
// against the plan; throws PayloadError naming the first bad sender, the bucket and the tensor.
void validate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                              const std::uint32_t* words,
                              const std::vector<std::size_t>& words_per_rank);

// After validation: sets each sparse tensor of the bucket to the sum of every rank's pairs.
void accumulate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                                const std::uint32_t* words,
                                const std::vector<std::size_t>& words_per_rank);

}  // namespace gw::compressors
