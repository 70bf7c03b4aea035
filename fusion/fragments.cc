#include "fusion/fragments.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace gw::fusion {

FragmentPlan plan_fragments(const BucketPlan& plan, const std::vector<std::size_t>& numels,
                            std::size_t fragments) {
  const std::size_t tensors = numels.size();
  if (fragments == 0 || fragments > tensors) {
    throw std::invalid_argument("plan_fragments: " + std::to_string(fragments) + " fragments of " +
                                std::to_string(tensors) +
                                " tensors; each fragment holds at least one whole tensor");
  }
  std::vector<std::size_t> starts(tensors + 1, 0);  // starts[p]: floats before parameter p
  for (std::size_t p = 0; p < tensors; ++p) starts[p + 1] = starts[p] + numels[p];
  const double total = static_cast<double>(starts[tensors]);

  FragmentPlan out;
  out.first.push_back(0);
  for (std::size_t f = 1; f < fragments; ++f) {
    // The boundary nearest to f / fragments of the floats, leaving every run a tensor.
    const double target = total * static_cast<double>(f) / static_cast<double>(fragments);
    const std::size_t low = out.first.back() + 1, high = tensors - (fragments - f);
    std::size_t best = low;
    for (std::size_t b = low; b <= high; ++b) {
      if (std::abs(static_cast<double>(starts[b]) - target) <
          std::abs(static_cast<double>(starts[best]) - target)) {
        best = b;
      }
    }
    out.first.push_back(best);
  }
  out.first.push_back(tensors);
  std::vector<std::size_t> fragment_of(tensors);
  for (std::size_t f = 0; f < fragments; ++f) {
    out.numel.push_back(starts[out.first[f + 1]] - starts[out.first[f]]);
    for (std::size_t p = out.first[f]; p < out.first[f + 1]; ++p) fragment_of[p] = f;
  }

  out.buckets_of.resize(fragments);
  out.buckets.bucket_of.assign(tensors, 0);
  for (const Bucket& whole : plan.buckets) {
    std::size_t begin = whole.begin;
    while (begin < whole.end) {
      const std::size_t f = fragment_of[begin];
      const std::size_t end = std::min(whole.end, out.first[f + 1]);
      Bucket piece;
      piece.index = out.buckets.buckets.size();
      piece.begin = begin;
      piece.end = end;
      piece.offset = starts[begin];
      piece.numel = starts[end] - starts[begin];
      for (std::size_t p = begin; p < end; ++p) out.buckets.bucket_of[p] = piece.index;
      out.buckets_of[f].push_back(piece.index);
      out.buckets.buckets.push_back(piece);
      begin = end;
    }
  }
  return out;
}

bool fragment_syncs_after(std::int64_t step, std::size_t f, std::size_t fragments,
                          std::int64_t period) {
  const std::int64_t offset =
      static_cast<std::int64_t>(f) * period / static_cast<std::int64_t>(fragments);
  const std::int64_t since = step + 1 - offset;  // steps from the offset to this one's end
  return since >= period && since % period == 0;
}

}  // namespace gw::fusion
