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

// Where one tensor's checked pairs lie (in the message, or decoded) and the words its segment took.
struct Segment {
  const std::uint32_t* pairs;
  std::size_t count;
  std::size_t words;
};

std::string tensor_name(const TensorSlot& t) { return "tensor " + std::to_string(t.parameter); }

// A pairs-format segment (Note [Sparse message format]) at msg[0..left), left >= 1, checked where
// it lies.
Segment check_pairs_segment(const std::uint32_t* msg, std::size_t left, std::size_t k,
                            const TensorSlot& t, int rank, const BucketView& bucket,
                            const kernels::Stream& stream) {
  const std::size_t count = read_word(msg, stream);
  if (count > k) {
    reject(rank, bucket,
           tensor_name(t) + " has " + std::to_string(count) + " pairs, more than the " +
               std::to_string(k) + " a rank may send");
  }
  if (left - 1 < 2 * count) {
    reject(rank, bucket,
           tensor_name(t) + " announces " + std::to_string(count) + " pairs but only " +
               std::to_string((left - 1) / 2) + " follow");
  }
  const kernels::PairsCheck check = kernels::check_sparse_pairs(msg + 1, count, t.numel, stream);
  if (check.problem == kernels::PairsProblem::kIndexOutOfRange) {
    reject(rank, bucket,
           tensor_name(t) + " pair " + std::to_string(check.position) + " has index " +
               std::to_string(check.index) + ", outside [0, " + std::to_string(t.numel) + ")");
  }
  if (check.problem == kernels::PairsProblem::kNotIncreasing) {
    // A repeat would add that element's value twice; any other order is not what a selector
    // sends.
    reject(rank, bucket,
           tensor_name(t) + " pair " + std::to_string(check.position) + " has index " +
               std::to_string(check.index) + ", not above pair " +
               std::to_string(check.position - 1) + "'s index " +
               std::to_string(check.previous_index) +
               "; a rank sends each tensor's indices in strictly increasing order");
  }
  return {msg + 1, count, 1 + 2 * count};
}

// A compact segment (Note [Compact sparse wire]) at msg[0..left), left >= 1, checked and decoded
// to `decoded` (room for 2k words).
Segment decode_compact_segment(const std::uint32_t* msg, std::size_t left, std::size_t k,
                               const TensorSlot& t, SparseWire wire, std::uint32_t* decoded,
                               std::uint64_t* scratch, int rank, const BucketView& bucket,
                               const kernels::Stream& stream) {
  const kernels::WireCheck check = kernels::decode_wire(msg, left, t.numel, k, false, decoded,
                                                        scratch, stream, wire_value_bits(wire));
  switch (check.problem) {
    case kernels::WireProblem::kNone:
      return {decoded, check.pairs, check.words};
    case kernels::WireProblem::kTruncated:
      reject(rank, bucket,
             tensor_name(t) + " announces " + std::to_string(check.pairs) + " pairs in " +
                 std::to_string(check.words) + " words, but only " + std::to_string(left) +
                 " are left");
    case kernels::WireProblem::kTooManyPairs:
      reject(rank, bucket,
             tensor_name(t) + " has " + std::to_string(check.value) + " pairs, more than the " +
                 std::to_string(k) + " a rank may send");
    case kernels::WireProblem::kBadWidth:
      reject(rank, bucket,
             tensor_name(t) + " has width byte " + std::to_string(check.position) + " = " +
                 std::to_string(check.value) +
                 "; a block's gap width is 0 to 32, and the bytes after the last block are 0");
    case kernels::WireProblem::kWrongBlockWords:
      reject(rank, bucket,
             tensor_name(t) + " announces " + std::to_string(check.value) +
                 " block words; its gap widths give " + std::to_string(check.expected));
    case kernels::WireProblem::kIndexOutOfRange:
      reject(rank, bucket,
             tensor_name(t) + " pair " + std::to_string(check.position) + " has index " +
                 std::to_string(check.value) + ", outside [0, " + std::to_string(t.numel) + ")");
    case kernels::WireProblem::kNonFiniteValue:
      break;  // not asked for: values are not judged
  }
  reject(rank, bucket, tensor_name(t) + ": " + kernels::to_string(check.problem));
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
  if (is_compact(wire)) {
    const unsigned bits = wire_value_bits(wire);
    reserve(size_ + kernels::wire_max_words(count, bits), stream);
    std::uint64_t* scratch = scratch_.reserve_discard(kernels::wire_scratch(count), stream_);
    size_ +=
        kernels::encode_wire(indices, count, tensor, words_.data() + size_, scratch, stream_, bits);
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
    words += is_compact(plan.sparse_wire)
                 ? kernels::wire_max_words(k, wire_value_bits(plan.sparse_wire))
                 : 1 + 2 * k;
  }
  return words;
}

std::size_t compact_segment_most_words(std::size_t count, std::size_t numel, unsigned value_bits) {
  if (count == 0) return 2;
  // A segment is 2 + ceil(nb / 4) + sum over blocks of ceil(n_b w_b / 32) + the value words
  // (Note [Compact sparse wire]); with n_b <= 32 the gap words of a block are at most w_b.
  // Every term grows with the count and the size, so the bound at (count, numel) holds for fewer
  // pairs too. A block's gaps need w bits only if its largest gap is at least 2^(w - 1), and the
  // gaps of a segment add up to less than numel (they are the indices' distances): the budget
  // numel shared by nb blocks. Raising one block from width w to w + 1 costs 2^(w - 1) of it (1
  // for 0 to 1), costs that never fall as w grows, so an even spread of the widths gives the
  // largest total: every block at the largest w with nb 2^(w - 1) <= numel, and as many as the
  // rest affords one bit wider.
  const std::size_t blocks = kernels::wire_blocks(count);
  const std::size_t budget = numel;
  std::size_t widths = 0;
  if (budget < blocks) {
    widths = budget;  // that many blocks with a largest gap of 1
  } else {
    std::size_t w = 1;
    while (w < 32 && blocks * (std::size_t{1} << w) <= budget) ++w;
    const std::size_t cost = std::size_t{1} << (w - 1);
    const std::size_t wider = w < 32 ? std::min(blocks, (budget - blocks * cost) / cost) : 0;
    widths = blocks * w + wider;
  }
  const std::size_t full = count / kernels::kWireBlockPairs,
                    last = count % kernels::kWireBlockPairs;
  const std::size_t values =
      full * kernels::wire_value_words(kernels::kWireBlockPairs, value_bits) +
      (last > 0 ? kernels::wire_value_words(last, value_bits) : 0);
  return std::min(2 + (blocks + 3) / 4 + widths + values,
                  kernels::wire_max_words(count, value_bits));
}

std::size_t padded_message_words(const BucketView& bucket, const ExchangePlan& plan) {
  if (!is_compact(plan.sparse_wire)) return max_message_words(plan);
  std::size_t words = 0;
  for (std::size_t j = 0; j < plan.sparse.size(); ++j) {
    words += compact_segment_most_words(plan.k[j], bucket.tensors[plan.sparse[j]].numel,
                                        wire_value_bits(plan.sparse_wire));
  }
  return words;
}

void check_message_sizes(const BucketView& bucket, const ExchangePlan& plan,
                         const std::vector<std::int64_t>& announced,
                         std::vector<std::size_t>& words_per_rank,
                         const std::vector<int>* senders) {
  const std::size_t most = max_message_words(plan);
  words_per_rank.resize(announced.size());
  for (std::size_t r = 0; r < announced.size(); ++r) {
    if (announced[r] < 0 || static_cast<std::uint64_t>(announced[r]) > most) {
      reject(senders != nullptr ? senders->at(r) : static_cast<int>(r), bucket,
             "it announces " + std::to_string(announced[r]) +
                 " words; this step's plan allows at most " + std::to_string(most));
    }
    words_per_rank[r] = static_cast<std::size_t>(announced[r]);
  }
}

namespace {
void validate_messages(const BucketView& bucket, const ExchangePlan& plan,
                       const std::uint32_t* words, const std::vector<std::size_t>& words_per_rank,
                       SparseSegments& segments, const kernels::Stream& stream, int first_rank,
                       const std::vector<int>* senders) {
  const std::size_t tensors = plan.sparse.size();
  segments.offset.assign(words_per_rank.size() * tensors, 0);
  segments.count.assign(words_per_rank.size() * tensors, 0);
  segments.in_decoded = is_compact(plan.sparse_wire);
  // The compact wire decodes every rank's pairs into segments.decoded, 2k words per tensor each.
  std::uint32_t* decoded = nullptr;
  std::uint64_t* scratch = nullptr;
  if (segments.in_decoded) {
    std::size_t all_k = 0, most_k = 0;
    for (std::size_t k : plan.k) {
      all_k += k;
      most_k = std::max(most_k, k);
    }
    decoded = segments.decoded.reserve_discard(2 * all_k * words_per_rank.size(), stream);
    scratch = segments.scratch.reserve_discard(kernels::wire_scratch(most_k), stream);
  }
  std::size_t offset = 0, out = 0;
  for (std::size_t r = 0; r < words_per_rank.size(); ++r) {
    const int rank = senders != nullptr ? (*senders)[r] : first_rank + static_cast<int>(r);
    const std::size_t size = words_per_rank[r];
    std::size_t at = 0;
    for (std::size_t j = 0; j < tensors; ++j) {
      const TensorSlot& t = bucket.tensors[plan.sparse[j]];
      if (at >= size) {
        reject(rank, bucket,
               "it ends after " + std::to_string(j) + " of " + std::to_string(tensors) +
                   " tensors (" + std::to_string(size) + " words)");
      }
      const std::uint32_t* msg = words + offset + at;
      const Segment seg =
          segments.in_decoded
              ? decode_compact_segment(msg, size - at, plan.k[j], t, plan.sparse_wire,
                                       decoded + out, scratch, rank, bucket, stream)
              : check_pairs_segment(msg, size - at, plan.k[j], t, rank, bucket, stream);
      const std::uint32_t* base = segments.in_decoded ? decoded : words;
      segments.offset[r * tensors + j] = static_cast<std::size_t>(seg.pairs - base);
      segments.count[r * tensors + j] = seg.count;
      if (segments.in_decoded) out += 2 * seg.count;
      at += seg.words;
    }
    if (at != size) {
      reject(rank, bucket,
             std::to_string(size - at) + " words left over after the " + std::to_string(tensors) +
                 " tensors it describes");
    }
    offset += size;
  }
}
}  // namespace

void validate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                              const std::uint32_t* words,
                              const std::vector<std::size_t>& words_per_rank,
                              SparseSegments& segments, const kernels::Stream& stream,
                              int first_rank) {
  validate_messages(bucket, plan, words, words_per_rank, segments, stream, first_rank, nullptr);
}

void validate_sparse_messages(const BucketView& bucket, const ExchangePlan& plan,
                              const std::uint32_t* words,
                              const std::vector<std::size_t>& words_per_rank,
                              SparseSegments& segments, const kernels::Stream& stream,
                              const std::vector<int>& senders) {
  if (senders.size() != words_per_rank.size()) {
    throw std::invalid_argument("validate_sparse_messages: " + std::to_string(senders.size()) +
                                " senders for " + std::to_string(words_per_rank.size()) +
                                " messages");
  }
  validate_messages(bucket, plan, words, words_per_rank, segments, stream, 0, &senders);
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
