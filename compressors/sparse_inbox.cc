#include "compressors/sparse_inbox.h"

#include <algorithm>

#include "compressors/split_ranges.h"

namespace gw::compressors {

std::uint32_t* SparseInbox::expect(const BucketView& bucket, const ExchangePlan& plan,
                                   const std::vector<std::int64_t>& announced,
                                   const std::vector<int>* senders, Layout layout,
                                   const kernels::Stream& stream) {
  check_message_sizes(bucket, plan, announced, words_, senders);
  plan_ = plan;
  layout_ = layout;
  senders_.resize(words_.size());
  for (std::size_t e = 0; e < words_.size(); ++e)
    senders_[e] = senders != nullptr ? (*senders)[e] : static_cast<int>(e);
  offset_.resize(words_.size());
  range_.resize(words_.size());
  std::size_t at = 0;
  for (std::size_t e = 0; e < words_.size(); ++e) {
    offset_[e] = at;
    range_[e] = e;
    at += words_[e];
  }
  return buffer_.reserve_discard(std::max<std::size_t>(at, 1), stream);
}

void SparseInbox::set_range_of_entry(const std::vector<std::size_t>& range_of_entry) {
  range_ = range_of_entry;
}

std::size_t SparseInbox::total() const {
  std::size_t total = 0;
  for (std::size_t w : words_) total += w;
  return total;
}

std::vector<std::size_t> SparseInbox::per_sender(std::size_t blocks) const {
  std::vector<std::size_t> out(words_.size() / blocks, 0);
  for (std::size_t e = 0; e < words_.size(); ++e) out[e / blocks] += words_[e];
  return out;
}

void SparseInbox::take_block(const SparseInbox& from, std::size_t blocks, std::size_t m,
                             const std::vector<int>& senders, const kernels::Stream& stream) {
  const std::size_t count = from.words_.size() / blocks;
  plan_ = from.plan_;
  layout_ = Layout::kWhole;
  senders_ = senders;
  words_.resize(count);
  offset_.resize(count);
  range_.resize(count);
  std::size_t at = 0;
  for (std::size_t p = 0; p < count; ++p) {
    words_[p] = from.words_[p * blocks + m];
    offset_[p] = at;
    range_[p] = p;
    at += words_[p];
  }
  std::uint32_t* out = buffer_.reserve_discard(std::max<std::size_t>(at, 1), stream);
  for (std::size_t p = 0; p < count; ++p) {
    kernels::copy_bytes(out + offset_[p], from.data() + from.offset_[p * blocks + m],
                        words_[p] * sizeof(std::uint32_t), stream);
  }
}

void SparseInbox::check(const BucketView& view, const kernels::Stream& stream) {
  if (layout_ == Layout::kWhole) {
    views_.assign(1, view);
    segments_.resize(1);
    validate_sparse_messages(view, plan_, data(), words_, segments_[0], stream, senders_);
    return;
  }
  const std::size_t ranges = words_.size();
  views_.resize(ranges, view);
  segments_.resize(ranges);
  for (std::size_t e = 0; e < ranges; ++e) {
    range_of_bucket(view, plan_, ranges, range_[e], views_[e]);
    one_.assign(1, words_[e]);
    validate_sparse_messages(views_[e], plan_, data() + offset_[e], one_, segments_[e], stream,
                             senders_[e]);
  }
}

void SparseInbox::write(const kernels::Stream& stream) const {
  if (layout_ == Layout::kWhole) {
    accumulate_sparse_messages(views_[0], plan_, data(), segments_[0], stream);
    return;
  }
  for (std::size_t e = 0; e < views_.size(); ++e)
    accumulate_sparse_messages(views_[e], plan_, data() + offset_[e], segments_[e], stream);
}

const std::uint32_t* SparseInbox::pairs() const {
  return segments().in_decoded ? segments().decoded.data() : data();
}

}  // namespace gw::compressors
