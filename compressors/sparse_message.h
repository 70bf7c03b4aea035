// The sparse part of a bucket on the wire, and its checked decoding.
//
// Note [Sparse message format]
// One message per rank per bucket, in 32-bit words, host byte order. For each tensor of the plan's
// sparse list, in plan order: the pair count c, then c pairs of (index, value): the index (uint32,
// relative to the tensor) and the value (float bits). A rank sends at most the plan's k pairs per
// tensor, in strictly increasing index order (the selectors, host and device, write ascending
// indices), so no index comes twice. Receivers check every message against the plan before
// anything is added: a count above k, an index out of range or not above the one before it, or a
// message whose length does not match its counts is a PayloadError that names the sending rank;
// nothing is written out of bounds and nothing is half-applied. Messages live where the exchange
// runs (host or device memory, Note [Compressors on a stream]): the receiver reads the count words
// to the host and checks the pairs where they are (kernels::check_sparse_pairs). Values are not
// judged: a NaN or an infinity is a gradient like any other, for the AMP overflow check to find
// (the top-k selector sends NaN on purpose).
// On the compact wire (ExchangePlan::sparse_wire; Note [Compact sparse wire], kernels/
// sparse_wire.h; its values binary16 or low-bit, Note [Low-bit wire values]) each tensor's count
// and pairs are one compact segment instead, checked the same way (kernels::decode_wire: too many
// pairs, a segment longer than what is left, a bad gap width, block lengths that do not add up, an
// index out of range) and decoded to pairs before anything is added; indices ascend by
// construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "compressors/bucket_view.h"
#include "compressors/exchange_plan.h"
#include "kernels/sparse_wire.h"
#include "kernels/stream.h"

namespace gw::compressors {

// A malformed payload from a peer.
class PayloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SparseMessageWriter {
 public:
  void clear() { size_ = 0; }
  // Room for `words` words in `stream`'s memory; what was written is kept.
  void reserve(std::size_t words, const kernels::Stream& stream = kernels::Stream::host());
  // Appends one tensor: count, then the pairs (indices[j], tensor[indices[j]]); indices ascending.
  // On the compact wire, the tensor's compact segment of those pairs. indices and tensor are in
  // `stream`'s memory; the words go there too.
  void append(const std::uint32_t* indices, std::size_t count, const float* tensor,
              const kernels::Stream& stream = kernels::Stream::host(),
              SparseWire wire = SparseWire::kPairs);
  const std::uint32_t* data() const { return words_.data(); }
  std::size_t size() const { return size_; }
  // A host copy of the message (synchronises the stream it was written on).
  std::vector<std::uint32_t> words() const;

 private:
  kernels::Stream stream_ = kernels::Stream::host();
  kernels::Buffer<std::uint32_t> words_;
  kernels::Buffer<std::uint64_t> scratch_;  // the compact encoder's
  std::size_t size_ = 0;
};

// The most words a message for `plan` can have.
std::size_t max_message_words(const ExchangePlan& plan);

// The most words the compact segment of at most `count` pairs can take when every index is below
// `numel` (Note [Sparse allgather in one round]), value_bits bits per value (16, 4 or 2); never
// above kernels::wire_max_words(count, value_bits).
std::size_t compact_segment_most_words(std::size_t count, std::size_t numel,
                                       unsigned value_bits = kernels::kWireHalfBits);
// The most words a message for `plan` over `bucket` can take, known from the plan and the layout
// alone: the room of a padded block (Note [Sparse allgather in one round]).
std::size_t padded_message_words(const BucketView& bucket, const ExchangePlan& plan);

// Checks the message lengths every rank announced (before anything is received) against the most
// the plan allows, and writes them to words_per_rank; throws PayloadError naming the sender: entry
// r's is rank r, or senders[r] where given.
void check_message_sizes(const BucketView& bucket, const ExchangePlan& plan,
                         const std::vector<std::int64_t>& announced,
                         std::vector<std::size_t>& words_per_rank,
                         const std::vector<int>* senders = nullptr);

// Where each rank's pairs for each sparse tensor lie, once validated: entry r * (sparse tensors)
// + j. On the pairs wire, in the received words; on the compact wire, in `decoded` (the segments
// decoded to pairs, in the received words' memory).
struct SparseSegments {
  std::vector<std::size_t> offset;  // the first pair's word
  std::vector<std::size_t> count;   // pairs
  bool in_decoded = false;
  kernels::Buffer<std::uint32_t> decoded;
  kernels::Buffer<std::uint64_t> scratch;  // the compact decoder's
};

// Checks the messages of every rank (rank r's are words[offset_r, offset_r + words_per_rank[r]),
// in `stream`'s memory) against the plan; throws PayloadError naming the first bad sender, the
// bucket, the tensor and, for a bad index, the pair and the index. Fills `segments`. The messages
// are those of ranks first_rank, first_rank + 1, ... (error messages name them so).
void validate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                              const std::uint32_t* words,
                              const std::vector<std::size_t>& words_per_rank,
                              SparseSegments& segments,
                              const kernels::Stream& stream = kernels::Stream::host(),
                              int first_rank = 0);
// The same, for messages whose senders are not consecutive: message r's is senders[r].
void validate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                              const std::uint32_t* words,
                              const std::vector<std::size_t>& words_per_rank,
                              SparseSegments& segments, const kernels::Stream& stream,
                              const std::vector<int>& senders);

// After validation: sets each sparse tensor of the bucket to the sum of every rank's pairs, added
// rank by rank in rank order (bit-identical on every rank and device).
void accumulate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                                const std::uint32_t* words, const SparseSegments& segments,
                                const kernels::Stream& stream = kernels::Stream::host());

}  // namespace gw::compressors
