// The sparse messages one step of an exchange receives: the lengths their senders announce,
// checked before anything is received, then the messages, checked against the part of the bucket
// they are for before anything is added, then what they add into it
// (Note [Sparse message format]). The exchange's algorithms (plugin/exchange/) move the bytes;
// what the bytes say is checked and applied here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compressors/bucket_view.h"
#include "compressors/exchange_plan.h"
#include "compressors/sparse_message.h"
#include "kernels/stream.h"

namespace gw::compressors {

class SparseInbox {
 public:
  // How the messages map onto the part of the bucket they are checked against: every one onto all
  // of it, summed in entry order; or message r onto range r of its sparse tensors (the split's
  // last step: each range written from the pairs its owner kept).
  enum class Layout { kWhole, kRanges };

  // The lengths the senders announced, entry e from senders[e] (rank e where null), each checked
  // against `plan`'s most (a PayloadError naming the sender otherwise); returns room for every
  // message, back to back in entry order, in `stream`'s memory (never null).
  std::uint32_t* expect(const BucketView& bucket, const ExchangePlan& plan,
                        const std::vector<std::int64_t>& announced, const std::vector<int>* senders,
                        Layout layout, const kernels::Stream& stream);
  // The checked lengths, one per entry, their sum, and the sum of each sender's `blocks` entries.
  const std::vector<std::size_t>& words() const { return words_; }
  std::size_t total() const;
  std::vector<std::size_t> per_sender(std::size_t blocks) const;
  std::uint32_t* data() { return buffer_.data(); }
  const std::uint32_t* data() const { return buffer_.data(); }
  const ExchangePlan& plan() const { return plan_; }

  // Under kRanges: entry e holds range range_of_entry[e]'s pairs (by default entry r range r).
  void set_range_of_entry(const std::vector<std::size_t>& range_of_entry);

  // This inbox holds block m of each sender of `from` (which received `blocks` per sender):
  // entry p is sender p's, from senders[p]; copied in `stream`'s memory.
  void take_block(const SparseInbox& from, std::size_t blocks, std::size_t m,
                  const std::vector<int>& senders, const kernels::Stream& stream);

  // Checks every message against `view` (its sparse tensors, whole or one range of each laid out
  // elsewhere), as the layout says; a malformed one is a PayloadError naming its sender, the
  // bucket and the tensor, and nothing has been written.
  void check(const BucketView& view, const kernels::Stream& stream);
  // After check(): writes the messages into the view's sparse tensors (kWhole: their sum, added
  // in entry order, bit-identical wherever it runs; kRanges: each range from its message).
  void write(const kernels::Stream& stream) const;
  // After check() under kWhole: where each entry's pairs of each sparse tensor lie.
  const SparseSegments& segments() const { return segments_.front(); }
  const std::uint32_t* pairs() const;

 private:
  ExchangePlan plan_;
  Layout layout_ = Layout::kWhole;
  std::vector<int> senders_;
  std::vector<std::size_t> words_, offset_, range_;
  kernels::Buffer<std::uint32_t> buffer_;
  std::vector<BucketView> views_;             // kWhole: one; kRanges: one per message
  std::vector<SparseSegments> segments_;      // per view
  std::vector<std::size_t> one_;
};

}  // namespace gw::compressors
